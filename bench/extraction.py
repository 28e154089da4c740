"""The offline extractor (rules, then the learned model) measured through the consumer's own
entry point: `python bench/extraction.py`.

Every statement is recorded as a user turn (curator.conversations.record_turn, as the API
does) in a throwaway database, indexed by the index job's own function (bundled e5; vectors
cached in bench/.cache), then extracted by `extract_turn`, what the consumer's task runs;
a turn "gives a memory" when the write path wrote it or queued it for review.

1. The held-out split (lifecycle/extraction/data/extraction_heldout_{zh,en}.jsonl): never
   trained on, and no threshold was chosen on it. Per language, at the statement level:
   precision (statements that gave a memory and should have) and recall (statements that
   should give a memory and did). Beside it the rules alone on all labelled sets with the
   strict scorer of tests/extraction_eval.py (predicate and words must match).
2. LoCoMo conv-26 and conv-30 (reserved for evaluation; ../shared/data, CC BY-NC 4.0): every
   turn recorded as the person's (both speakers talk about themselves; each LoCoMo session one
   session, dated as LoCoMo dates it). Yield: the share of turns an `observation` cites that
   gave a memory (goal >= 0.60), and the share of the turns none cites (goal <= 0.10).
3. Speed: turns/s of `extract_turn` over all those turns once indexed (the consumer reuses the
   index's vector), without the indexing itself, which recording pays anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from retrieval_kit import DiskCachedEmbedder, setup_django, table  # noqa: E402

_NEAR = [ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"]
DATA = Path(os.environ.get("BENCH_DATA") or next((p for p in _NEAR if p.exists()), _NEAR[0]))
EVALUATION = ("conv-26", "conv-30")
SAID_AT = datetime(2026, 11, 24, 10, 0)  # the labelled sets' "now" (tests/extraction_eval.py)


def locomo_time(value: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(value.replace("  ", " "), "%I:%M %p on %d %B, %Y")


def record(items: list[tuple[str, int, str, datetime]]) -> list[int]:
    """(session id, index, text, said at) as user turns, indexed; their ids in order."""
    from django.utils import timezone

    from curator.conversations import record_turn
    from retrieval.indexing import index_items
    from retrieval.models import Kind

    turns = []
    for session_id, index, text, said_at in items:
        when = timezone.make_aware(said_at)
        turns.append(record_turn(session_id, index, "user", text, timestamp=when).turn)
    for start in range(0, len(turns), 64):
        index_items(Kind.TURN, turns[start : start + 64])
    return [t.pk for t in turns]


def extract_all(ids: list[int]) -> tuple[dict[int, list], float]:
    """{turn id: [source of each memory]} through extract_turn, and the seconds it took."""
    from curator.models import ConversationTurn
    from lifecycle.extraction.extract import extract_turn

    made: dict[int, list] = {}
    turns = ConversationTurn.objects.select_related("session__owner").filter(pk__in=ids)
    started = time.monotonic()
    for turn in turns.order_by("pk"):
        results = extract_turn(turn, job_run="bench")
        made[turn.pk] = [
            (r.fact.source, "written")
            if r.fact is not None
            else (r.pending.candidate.get("source", "?"), "review")
            for r in results
            if r.fact is not None or r.pending is not None
        ]
    return made, time.monotonic() - started


def decide_only(ids: list[int]) -> float:
    """turns/s of the offline extractors alone (rules, then the model on the stored vector),
    without the write path: what deciding costs, apart from storing what was decided."""
    from curator.models import ConversationTurn
    from lifecycle.extraction.extract import offline_candidates

    turns = list(ConversationTurn.objects.select_related("session__owner").filter(pk__in=ids))
    started = time.monotonic()
    for turn in turns:
        offline_candidates(turn)
    return len(turns) / (time.monotonic() - started)


def heldout() -> tuple[list[list], int, float]:
    from lifecycle.extraction.training import labelled

    rows, turns, seconds = [], 0, 0.0
    for lang in ("zh", "en"):
        cases = labelled(lang, "heldout")
        items = [(f"heldout-{lang}-{n}", 0, c["text"], SAID_AT) for n, c in enumerate(cases)]
        ids = record(items)
        made, took = extract_all(ids)
        turns, seconds = turns + len(ids), seconds + took
        want = [bool(c["expect"]) for c in cases]
        gave = [bool(made.get(i)) for i in ids]
        hits = sum(w and g for w, g in zip(want, gave, strict=True))
        by = Counter(s for i in ids for s, _how in made.get(i, []))
        sources = ", ".join(f"{k} {v}" for k, v in by.items())
        precision, recall = hits / max(1, sum(gave)), hits / max(1, sum(want))
        rows.append([lang, len(cases), sum(want), sum(gave), precision, recall, sources])
    return rows, turns, seconds


def rules_alone() -> list[list]:
    from tests.extraction_eval import score

    rows = []
    for part, lang in (("", "zh"), ("", "en"), ("heldout", "zh"), ("heldout", "en")):
        result = score(lang, part)
        rows.append([f"{part} {lang}".strip(), result.statements, result.coverage,
                     result.candidates, result.precision])  # fmt: skip
    return rows


def locomo() -> tuple[list[list], int, float]:
    from lifecycle.extraction.training import locomo_turns

    convs = json.loads((DATA / "locomo" / "locomo10.json").read_text())
    dates = {
        (c["sample_id"], n): locomo_time(c["conversation"][f"session_{n}_date_time"])
        for c in convs
        for n in range(1, 40)
        if f"session_{n}_date_time" in c["conversation"]
    }
    items, cited = [], []
    for conv, _who, turn, is_cited in locomo_turns(DATA, convs=EVALUATION):
        session = int(turn["dia_id"].split(":")[0][1:])
        index = int(turn["dia_id"].split(":")[1])
        items.append((f"{conv}-s{session}", index, turn["text"], dates[(conv, session)]))
        cited.append((conv, is_cited))
    ids = record(items)
    made, seconds = extract_all(ids)
    rows = []
    for conv in (*EVALUATION, "both"):
        for flag, label in ((True, "cited by an observation"), (False, "cited by none")):
            chosen = [i for i, (c, f) in zip(ids, cited, strict=True)
                      if f == flag and conv in (c, "both")]  # fmt: skip
            gave = sum(bool(made.get(i)) for i in chosen)
            written = sum(any(how == "written" for _s, how in made.get(i, [])) for i in chosen)
            n = max(1, len(chosen))
            rows.append([conv, label, len(chosen), gave, gave / n, written / n])
    return rows, ids, seconds


def record_llm(path: Path) -> None:
    """Ask the configured LLM (MEMSITE_LLM_*) about every held-out statement with the
    extractor's own prompt and keep its answers: tests/test_llm_replay.py replays them."""
    from django.conf import settings

    from lifecycle import llm
    from lifecycle.extraction import extract
    from lifecycle.extraction.training import labelled

    if not llm.configured():
        raise SystemExit("no LLM configured (MEMSITE_LLM_MODEL, MEMSITE_LLM_BASE_URL ...)")
    cases = [c for lang in ("zh", "en") for c in labelled(lang, "heldout")]
    ids = record([(f"llm-{n}", 0, c["text"], SAID_AT) for n, c in enumerate(cases)])
    from curator.models import ConversationTurn

    with path.open("w", encoding="utf-8") as out:
        for turn in ConversationTurn.objects.filter(pk__in=ids).order_by("pk"):
            prompt, _ids = extract.build_prompt(turn, [])
            ops = llm.chat_json(extract.SYSTEM_PROMPT, prompt, extract.validate_operations)
            reply = json.dumps({"operations": ops}, ensure_ascii=False)
            row = {"text": turn.content, "reply": reply, "recorded_by": settings.LLM_MODEL}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"recorded {len(ids)} answers in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record-llm", type=Path, metavar="FILE", help="record the configured LLM's answers"
    )
    args = parser.parse_args()
    started = time.monotonic()
    if not args.record_llm:  # the offline extractors are measured, never a configured LLM
        for name in [k for k in os.environ if k.startswith("MEMSITE_LLM_")]:
            os.environ.pop(name)
    data = setup_django("extraction", {"HUEY_IMMEDIATE": "0"})
    try:
        if args.record_llm:
            return record_llm(args.record_llm)
        from lifecycle.extraction import model
        from retrieval.embedders import LocalEmbedder, use_embedder

        use_embedder(DiskCachedEmbedder(LocalEmbedder(), verbose=False))
        print(f"learned model: {model.problem() or 'loaded'} ({model.WEIGHTS.name})")
        rows, n1, s1 = heldout()
        print("\n### held-out split through extract_turn (statement level)\n")
        print(table(["lang", "statements", "should give", "gave", "precision", "recall",
                     "memories by source"], rows))  # fmt: skip
        print("\n### the rules alone, strict scorer (predicate and words)\n")
        print(table(["set", "with an expectation", "coverage", "candidates", "precision"],
                    rules_alone()))  # fmt: skip
        rows, ids, s2 = locomo()
        n2 = len(ids)
        print("\n### LoCoMo conv-26 / conv-30 through extract_turn: turns giving a memory\n")
        print(table(["conversation", "turns", "n", "gave a memory (written or for review)",
                     "share", "share written"], rows))  # fmt: skip
        print(
            f"\nextract_turn: {n1 + n2} turns in {s1 + s2:.1f} s = "
            f"{(n1 + n2) / (s1 + s2):.0f} turns/s (indexing excluded, write path included)"
        )
        print(f"deciding alone (rules, then the model on the index's vector): "
              f"{decide_only(ids):.0f} turns/s")  # fmt: skip
    finally:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(data, ignore_errors=True)
    print(f"({time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
