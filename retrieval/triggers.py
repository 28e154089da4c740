"""When does a message call for long-term memory? (seed 000 section 5, step 3; pure)

Phrases that point back in time (之前, 还记得, 上次, 历史, 以前, remember, last time ...), a time
expression (昨天, 上周二, 2026-03-01, last Tuesday ...) or a file name. Context assembly only
searches long-term memory when one of these is present (or when the caller asks).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime

from retrieval.timeparse import TimeRange, scan_times

PHRASES_ZH = (
    "还记得",
    "记得吗",
    "记不记得",
    "之前",
    "以前",
    "上次",
    "上回",
    "那次",
    "历史",
    "曾经",
    "说过",
    "提过",
    "聊过",
    "讲过",
    "告诉过",
    "回忆",
    "当时",
)
PHRASES_EN = (
    r"remember",
    r"recall",
    r"last time",
    r"previously",
    r"you said",
    r"i told you",
    r"i mentioned",
    r"we discussed",
    r"we talked about",
    r"as before",
    r"history",
    r"the other day",
)
FILE_NAME = re.compile(
    r"[\w\u4e00-\u9fff\-.]+\.(?:pdf|docx?|xlsx?|pptx?|csv|tsv|txt|md|json|ya?ml|toml|png|jpe?g"
    r"|gif|webp|svg|zip|tar|gz|py|js|ts|go|rs|java|html?|css|log|sql|ipynb|mp3|mp4|wav)\b",
    re.IGNORECASE,
)
_EN = re.compile(r"\b(?:" + "|".join(PHRASES_EN) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Trigger:
    kind: str  # "phrase", "time" or "file"
    text: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Detection:
    triggers: tuple[Trigger, ...]
    times: tuple[TimeRange, ...]
    # Time expressions that cannot be a filter ("9999-12-31"): not triggers, shown as ignored.
    ignored_times: tuple[str, ...] = ()

    @property
    def triggered(self) -> bool:
        return bool(self.triggers)

    def to_dict(self) -> dict:
        return {
            "triggered": self.triggered,
            "triggers": [t.to_dict() for t in self.triggers],
            "times": [t.to_dict() for t in self.times],
            "ignored_times": list(self.ignored_times),
        }


def detect(text: str, now: datetime) -> Detection:
    text = text or ""
    found = [Trigger("phrase", p) for p in PHRASES_ZH if p in text]
    found += [Trigger("phrase", m[0]) for m in _EN.finditer(text)]
    times, ignored = scan_times(text, now)
    found += [Trigger("time", t.text) for t in times]
    found += [Trigger("file", m[0]) for m in FILE_NAME.finditer(text)]
    return Detection(tuple(dict.fromkeys(found)), tuple(times), tuple(ignored))
