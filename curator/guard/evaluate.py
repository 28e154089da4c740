"""Precision and recall of the built-in detectors on a labelled set (pure, no Django).

Each sample is a sentence with the detectors that should fire on it (none for a clean one);
a detector counts as firing when it finds any span. bench/guard.py prints the figures and
tests/test_guard_detectors.py holds the secrets to their targets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from curator.guard.detectors import DETECTORS, SECRET, detect

SECRETS = tuple(k for k, d in DETECTORS.items() if d.category == SECRET)


@dataclass
class Score:
    name: str
    positives: int  # samples labelled with it
    true_pos: int
    false_pos: int
    misses: list[str]
    false_alarms: list[str]

    @property
    def precision(self) -> float:
        fired = self.true_pos + self.false_pos
        return self.true_pos / fired if fired else 1.0

    @property
    def recall(self) -> float:
        return self.true_pos / self.positives if self.positives else 1.0


def load(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _score(name: str, samples: list[dict], keys: tuple[str, ...]) -> Score:
    score = Score(name, 0, 0, 0, [], [])
    for sample in samples:
        wanted = any(k in sample["labels"] for k in keys)
        fired = any(detect(k, sample["text"]) for k in keys)
        score.positives += wanted
        if fired and wanted:
            score.true_pos += 1
        elif fired:
            score.false_pos += 1
            score.false_alarms.append(sample["text"])
        elif wanted:
            score.misses.append(sample["text"])
    return score


def evaluate(samples: list[dict]) -> list[Score]:
    """One score per detector, then "secrets" (any secret detector, any secret label)."""
    scores = [_score(key, samples, (key,)) for key in DETECTORS]
    return [*scores, _score("secrets", samples, SECRETS)]
