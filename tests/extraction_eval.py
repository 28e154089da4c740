"""Scoring the rules extractor against the labelled self-statements in tests/data/ (pure).

Each line of extraction_<lang>.jsonl is {"text", "expect": [{"p", "has", "review"?}]}: the
candidates the statement must give (predicate "p", exact, or a prefix when it ends with "*";
words the content must hold; "review": true when the person hedged, so it must wait for
review). An empty "expect" means nothing may be extracted (questions, chit-chat, other
people). Coverage: the share of statements with expectations whose every expected candidate
was found. Precision: the share of all candidates found that match an expectation.
Used by tests/test_extraction_sets.py and printed by bench/extraction.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from lifecycle.extraction.rules import extract

DATA = Path(__file__).resolve().parents[1] / "lifecycle" / "extraction" / "data"
WRITE, PENDING = 0.85, 0.60  # the default thresholds (MEMSITE_CONFIDENCE_WRITE / _PENDING)
NOW = datetime(2026, 11, 24, 10, 0)


def load(lang: str, part: str = "") -> list[dict]:
    """One labelled file: extraction_<lang>.jsonl, or extraction_<part>_<lang>.jsonl (the
    held-out sets: written before the rules were tuned, and never tuned on)."""
    path = DATA / (f"extraction_{part}_{lang}.jsonl" if part else f"extraction_{lang}.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def matches(candidate, expected: dict) -> bool:
    wanted = expected["p"]
    if wanted.endswith("*"):
        same = candidate.predicate.startswith(wanted[:-1])
    else:
        same = candidate.predicate == wanted
    text = candidate.content.lower()
    if not same or not all(word.lower() in text for word in expected.get("has", [])):
        return False
    if "review" in expected:
        waits = PENDING <= candidate.confidence < WRITE
        return waits == expected["review"]
    return True


@dataclass
class Score:
    statements: int = 0
    covered: int = 0
    candidates: int = 0
    right: int = 0
    misses: list = field(default_factory=list)  # (text, expected, found)
    wrong: list = field(default_factory=list)  # (text, candidate)

    @property
    def coverage(self) -> float:
        return self.covered / self.statements if self.statements else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.candidates if self.candidates else 0.0


def score(lang: str, part: str = "") -> Score:
    result = Score()
    for case in load(lang, part):
        found = extract(case["text"], now=NOW)
        expected = case["expect"]
        if expected:
            result.statements += 1
            if all(any(matches(c, e) for c in found) for e in expected):
                result.covered += 1
            else:
                result.misses.append((case["text"], expected, found))
        for candidate in found:
            result.candidates += 1
            if any(matches(candidate, e) for e in expected):
                result.right += 1
            else:
                result.wrong.append((case["text"], candidate))
    return result


def statement_level(want: list[bool], gave: list[bool]) -> tuple[float, float]:
    """(precision, recall) of "this statement gave a memory" against "it should": how the
    held-out split scores any extractor through extract_turn (bench/extraction.py, the LLM
    replay test)."""
    hits = sum(w and g for w, g in zip(want, gave, strict=True))
    return hits / max(1, sum(gave)), hits / max(1, sum(want))
