"""The offline rules extractor on labelled and real statements: `python bench/extraction.py`.

1. The labelled self-statements in lifecycle/extraction/data/extraction_{zh,en}.jsonl
   (written for this project: moves, family and people, work and school, likes, diet and
   allergies, habits,
   plans, hedges, negations and changes of mind, other people, questions and chit-chat that
   must give nothing): coverage (statements whose expected candidates were all found) and
   precision (candidates that were expected), by the scorer of tests/extraction_eval.py.
2. LoCoMo (../shared/data, CC BY-NC 4.0): the turns its `observation` field cites (what an
   LLM found worth remembering in real conversations), and the share of them for which the
   rules give at least one candidate; beside it the share for the turns no observation
   cites. Sentences nobody wrote for this extractor: a figure it cannot be tuned to.

No database and no Django: the rules are pure functions (lifecycle/extraction/rules.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.retrieval_kit import table  # noqa: E402
from lifecycle.extraction.rules import extract  # noqa: E402
from tests.extraction_eval import NOW, score  # noqa: E402

# The shared data sits beside the checkout (/work/main -> /work/shared) or beside the
# worktrees' folder (/work/wt/<branch> -> /work/shared).
_NEAR = [ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"]
DATA = Path(os.environ.get("BENCH_DATA") or next((p for p in _NEAR if p.exists()), _NEAR[0]))


def labelled() -> list[list]:
    rows = []
    for part, lang in (("", "zh"), ("", "en"), ("heldout", "zh"), ("heldout", "en")):
        result = score(lang, part)
        name = f"{part} {lang}".strip()
        rows.append([name, result.statements, result.coverage, result.candidates,
                     result.precision, len(result.misses), len(result.wrong)])  # fmt: skip
    return rows


def locomo() -> tuple[list[list], Counter]:
    convs = json.loads((DATA / "locomo" / "locomo10.json").read_text())
    cited_hits = cited_n = other_hits = other_n = 0
    patterns: Counter = Counter()
    for conv in convs:
        c = conv["conversation"]
        cited = {
            dia
            for by_speaker in conv["observation"].values()
            for items in by_speaker.values()
            for _text, dias in items
            for dia in (dias if isinstance(dias, list) else [dias])
        }
        n = 1
        while f"session_{n}" in c:
            for turn in c[f"session_{n}"]:
                found = extract(turn["text"], now=NOW)
                patterns.update(f.pattern for f in found)
                if turn["dia_id"] in cited:
                    cited_n, cited_hits = cited_n + 1, cited_hits + bool(found)
                else:
                    other_n, other_hits = other_n + 1, other_hits + bool(found)
            n += 1
    rows = [
        ["turns cited by an observation", cited_n, cited_hits, cited_hits / cited_n],
        ["turns no observation cites", other_n, other_hits, other_hits / other_n],
    ]
    return rows, patterns


def main() -> None:
    started = time.monotonic()
    print("\n### labelled self-statements (lifecycle/extraction/data/extraction_*.jsonl)\n")
    headers = ["set", "statements with an expectation", "coverage", "candidates", "precision",
               "missed", "wrong"]  # fmt: skip
    print(table(headers, labelled()))
    rows, patterns = locomo()
    print("\n### LoCoMo turns: share giving at least one candidate\n")
    print(table(["turns", "n", "with a candidate", "share"], rows))
    top = ", ".join(f"{name} {count}" for name, count in patterns.most_common(8))
    print(f"\nmost frequent patterns on LoCoMo: {top}")
    print(f"({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
