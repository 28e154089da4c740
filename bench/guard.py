"""Precision and recall of the guardrails' built-in detectors on the labelled set.

    python bench/guard.py [--path tests/data/guard_labelled.jsonl] [--show]

The set holds Chinese and English sentences with and without secrets and personal data,
written by hand (hard negatives included: "I forgot my password", order numbers, hashes,
numbers that fail their checksum). A detector fires on a sentence when it finds any span.
Target: recall >= 0.95 with precision >= 0.9 for secrets. --show lists misses and false
alarms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from retrieval_kit import table  # noqa: E402

from curator.guard.evaluate import evaluate, load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", default=str(ROOT / "tests/data/guard_labelled.jsonl"))
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    samples = load(args.path)
    langs = {lang: sum(s["lang"] == lang for s in samples) for lang in ("zh", "en")}
    began = time.perf_counter()
    scores = evaluate(samples)
    took = time.perf_counter() - began
    print(f"{len(samples)} sentences ({langs['zh']} zh, {langs['en']} en)")
    rows = [
        [s.name, s.positives, s.true_pos, s.false_pos, round(s.precision, 3), round(s.recall, 3)]
        for s in scores
    ]
    print(table(["detector", "labelled", "found", "false alarms", "precision", "recall"], rows))
    per_sentence = took / (len(samples) * len(scores)) * 1e6
    print(f"{per_sentence:.1f} µs per sentence and detector")
    if args.show:
        for s in scores:
            for text in s.misses:
                print(f"MISS  {s.name}: {text}")
            for text in s.false_alarms:
                print(f"FALSE {s.name}: {text}")


if __name__ == "__main__":
    main()
