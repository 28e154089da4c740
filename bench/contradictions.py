"""Precision and recall of the offline contradiction rules on the labelled pairs.

    python bench/contradictions.py [--errors] [--split dev|holdout]

tests/data/contradictions.jsonl holds pairs of memories written for this measurement,
Chinese and English: "contradiction" (they cannot both be true now) or "compatible" (near
duplicates, refinements, other objects, other times of day, the past ...). The "holdout"
pairs were written together with the others, before the rules, and never used to tune them.
"""

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lifecycle.extraction.contradiction_rules import verdict  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "contradictions.jsonl"


def load(split: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if split is None or r["split"] == split]


def scores(rows: list[dict]) -> dict:
    c = Counter(tp=0, fp=0, fn=0, tn=0)
    for r in rows:
        found = verdict(r["a"], r["b"]) is not None
        truth = r["label"] == "contradiction"
        c["tp" if found and truth else "fp" if found else "fn" if truth else "tn"] += 1
    precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
    recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
    return {"n": len(rows), "precision": precision, "recall": recall, **c}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", action="store_true", help="list the misjudged pairs")
    parser.add_argument("--split", choices=["dev", "holdout"], help="only this split")
    parser.add_argument("--scale", type=int, default=0, help="also time a scan of N facts")
    args = parser.parse_args()
    if args.scale:
        scale(args.scale)
    rows = load(args.split)
    started = time.perf_counter()
    verdict(rows[0]["a"], rows[0]["b"])  # jieba's dictionary loads once
    loaded = time.perf_counter()
    print(f"{'set':<18}{'pairs':>6}{'precision':>11}{'recall':>8}   tp  fp  fn  tn")
    groups = {"all": rows}
    for split in sorted({r["split"] for r in rows}):
        groups[split] = [r for r in rows if r["split"] == split]
    for lang in ("en", "zh"):
        groups[lang] = [r for r in rows if r["lang"] == lang]
    for name, group in groups.items():
        s = scores(group)
        print(
            f"{name:<18}{s['n']:>6}{s['precision']:>11.3f}{s['recall']:>8.3f}"
            f"  {s['tp']:>3} {s['fp']:>3} {s['fn']:>3} {s['tn']:>3}"
        )
    done = time.perf_counter()
    per_pair = (done - loaded) / (len(rows) * (len(groups) + 1)) * 1000
    print(f"\n{per_pair:.3f} ms a pair (dictionary load {1000 * (loaded - started):.0f} ms)")
    if args.errors:
        for r in rows:
            found = verdict(r["a"], r["b"])
            if (found is not None) != (r["label"] == "contradiction"):
                why = found.to_dict() if found else "-"
                print(f"[{r['split']}/{r['label']}] {r['a']}  |  {r['b']}  -> {why}")


def synthetic(n: int, seed: int = 7) -> list[str]:
    """N memories: every labelled text once, then filler in the same style (half Chinese)
    that shares words with them but contradicts nothing (each friend has one city)."""
    import random

    rng = random.Random(seed)
    out = list(dict.fromkeys(r[side] for r in load() for side in ("a", "b")))
    en_objects = "coffee tea jazz sushi hiking chess python rust vim tennis opera wine".split()
    zh_objects = "咖啡 茶 爵士乐 寿司 爬山 围棋 跑步 游泳 钢琴 红酒 火锅 篮球".split()
    while len(out) < n:
        i = len(out)
        en, zh = rng.choice(en_objects), rng.choice(zh_objects)
        out.append(
            rng.choice(
                [
                    f"The user talked with Friend{i} about {en}",
                    f"The user plans a {en} evening on day {i}",
                    f"The user's friend Person{i} lives in city {i}",
                    f"The user read article {i} about {en}",
                    f"用户第{i}天聊到{zh}",
                    f"用户和同事{i}号一起去{zh}",
                    f"用户最近在研究第{i}种{zh}",
                    f"用户收藏了第{i}篇关于{zh}的文章",
                ]
            )
        )
    return out[:n]


def scale(n: int) -> None:
    """Time the job on N active facts in a fresh database (the rules only, no LLM)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from retrieval_kit import setup_django

    setup_django(f"contradictions-{n}", {"HUEY_IMMEDIATE": "0"})
    from curator.models import Contradiction, Fact, Owner
    from lifecycle import contradictions

    owner = Owner.default()
    Fact.objects.bulk_create(
        [
            Fact(owner=owner, content=text, content_key=f"k{i}")
            for i, text in enumerate(synthetic(n))
        ],
        batch_size=2000,
    )
    started = time.perf_counter()
    rows = contradictions._rows(None)
    pairs = contradictions.rule_pairs(rows, None)
    paired = time.perf_counter()
    report = contradictions.scan(use_llm=False)
    done = time.perf_counter()
    labelled = {r[side] for r in load() for side in ("a", "b")}
    filler = Contradiction.objects.exclude(left__content__in=labelled, right__content__in=labelled)
    print(
        f"\nscan of {n} active facts (cold): {paired - started:.2f} s to read them and pair "
        f"{len(pairs)} candidates; a second scan (texts cached) {done - paired:.2f} s; "
        f"{report.total} contradictions, {filler.count()} of them involving filler facts "
        "(which contradict nothing)"
    )


if __name__ == "__main__":
    main()
