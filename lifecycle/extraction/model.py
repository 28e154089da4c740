"""The learned extractor: is this turn about the person and worth remembering, and as what.

A small network (training.py) reads the turn's e5 vector, the one indexing stores anyway,
and the cheap features of features.py. Its weights are model.npz beside this file with the
manifest model.json (sha256, array shapes, the figures of its training run); `make
extractor` rebuilds both from the labelled data. Loaded once, never downloaded: a missing or
damaged file (another hash, other shapes) leaves the rules alone, logged once and reported
by /health (`problem()`).

What it accepts becomes a memory in the speaker's language and in the third person
("用户上个月去了杭州（上个月：2026-10）", "The user went to a pottery class (last week:
2026-11-16)"): the statement clauses of the turn (the rules' own filters drop questions,
hypotheticals, someone else's words), relative times resolved to dates by ruledates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from lifecycle.extraction import features, ruledates, rules
from lifecycle.extraction.rulebase import Ctx, third, zh_about

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
WEIGHTS = HERE / "model.npz"
DIMENSION = 384  # multilingual-e5-small
# Confidence at the two thresholds the training chose: `accept` is the review floor, `write`
# the default write threshold; the calibration page tunes the source "learned" from there.
CONFIDENCE_AT_ACCEPT, CONFIDENCE_AT_WRITE, CONFIDENCE_TOP = 0.60, 0.85, 0.95


@dataclass(frozen=True)
class Decision:
    keep: float  # probability that the turn holds something worth remembering
    type: str
    confidence: float  # 0 when below the accept threshold


class Model:
    def __init__(self, arrays: dict[str, np.ndarray]):
        self.w1, self.b1 = arrays["w1"], arrays["b1"]
        self.w2, self.b2 = arrays["w2"], arrays["b2"]
        self.accept, self.write = (float(v) for v in arrays["thresholds"])
        self.types = [str(t) for t in arrays["types"]]

    def probabilities(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(x @ self.w1 + self.b1, 0.0)
        out = hidden @ self.w2 + self.b2
        keep = 1.0 / (1.0 + np.exp(-out[:, 0]))
        return keep, out[:, 1:].argmax(axis=1)

    def decide(self, vectors: np.ndarray, texts: list[str]) -> list[Decision]:
        cheap = np.stack([features.vector(t) for t in texts])
        keep, kinds = self.probabilities(np.hstack([vectors, cheap]).astype(np.float32))
        return [
            Decision(float(p), self.types[k], self.confidence(float(p)))
            for p, k in zip(keep, kinds, strict=True)
        ]

    def confidence(self, p: float) -> float:
        """Piecewise linear: accept -> 0.60 (review), write -> 0.85 (written), 1 -> 0.95."""
        if p < self.accept:
            return 0.0
        if p < self.write:
            share = (p - self.accept) / max(1e-6, self.write - self.accept)
            return round(CONFIDENCE_AT_ACCEPT + share * (CONFIDENCE_AT_WRITE - 0.01 - 0.60), 2)
        share = (p - self.write) / max(1e-6, 1.0 - self.write)
        return round(CONFIDENCE_AT_WRITE + share * (CONFIDENCE_TOP - CONFIDENCE_AT_WRITE), 2)


# --------------------------------------------------------------------------------------
# Loading and checking the file
# --------------------------------------------------------------------------------------

_lock = threading.Lock()
_state: dict = {}


def check(path: Path) -> tuple[Model | None, str | None]:
    """(the model, None) or (None, what is wrong with the file)."""
    manifest_path = path.with_suffix(".json")
    try:
        data = path.read_bytes()
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"cannot read {path.name} or its manifest ({exc})"
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest.get("sha256"):
        return None, f"{path.name} is damaged (sha256 {digest[:12]}, expected "
        f"{str(manifest.get('sha256'))[:12]})"
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {k: stored[k] for k in stored.files}
    except (OSError, ValueError) as exc:
        return None, f"{path.name} is not a weights file ({exc})"
    size = DIMENSION + features.SIZE
    shapes = {k: tuple(v.shape) for k, v in arrays.items()}
    hidden = shapes.get("w1", (0, 0))[1]
    wanted = {"w1": (size, hidden), "b1": (hidden,), "w2": (hidden, 1 + len(arrays.get(
        "types", []))), "thresholds": (2,)}  # fmt: skip
    if any(shapes.get(k) != v for k, v in wanted.items()) or not hidden:
        return None, f"{path.name} has shapes {shapes}, this code reads {wanted}"
    return Model(arrays), None


def load(path: Path | None = None) -> Model | None:
    """The model, checked once per process; None (rules only) when the file is not usable."""
    path = path or WEIGHTS
    with _lock:
        if path not in _state:
            model, problem = check(path)
            if problem:
                log.warning("learned extractor unavailable, the rules extract alone: %s", problem)
            _state[path] = (model, problem)
        return _state[path][0]


def problem(path: Path | None = None) -> str | None:
    """What /health reports: why the learned extractor is not used, or None."""
    load(path)
    return _state[path or WEIGHTS][1]


def forget() -> None:
    """Check the file again on next use (tests that damage or replace it)."""
    with _lock:
        _state.clear()


# --------------------------------------------------------------------------------------
# The memory text
# --------------------------------------------------------------------------------------

_PAST = set(
    "was were had did went got made took saw came found felt gave kept left lost met paid ran "
    "said sent spent sat thought told won wrote bought brought built caught began broke chose "
    "drove ate fell flew forgot grew heard knew led rode sang sold slept spoke stood swam "
    "taught threw wore tried used".split()
)
_MODAL = {"will", "can", "could", "would", "should", "might", "may", "must", "'ll", "'d"}
_EN_I = re.compile("\\bI('m|'ve|'ll|'d| am| have)?\\b")
_CONTRACTED = {"'m": "is", " am": "is", "'ve": "has", " have": "has", "'ll": "will", "'d": "would"}


def _en_third(text: str, who: Ctx) -> str:
    """ "Last week I went to a pottery class with my sister" -> "Last week the user went to a
    pottery class with their sister": each "I" and the verb after it, then the pronouns."""
    out, rest, subject = [], text, who.en if who.en != "The user" else "the user"
    while m := _EN_I.search(rest):
        out.append(rest[: m.start()])
        rest = rest[m.end() :].lstrip()
        if m[1]:
            out.append(f"{subject} {_CONTRACTED[m[1]]} ")
            continue
        word = rest.split(" ", 1)[0].lower()
        if word in _PAST or word in _MODAL or word.endswith("ed") or not word.isalpha():
            out.append(f"{subject} ")
        else:
            verb, _sep, tail = rest.partition(" ")
            rest = third(verb) + (" " + tail if tail else "")
            out.append(f"{subject} ")
    text = "".join(out) + rest
    text = third_pronouns(text)
    return text[:1].upper() + text[1:]


def third_pronouns(text: str) -> str:
    for old, new in (("myself", "themselves"), ("my", "their"), ("mine", "theirs"),
                     ("me", "them"), ("we", "they"), ("our", "their"), ("us", "them")):  # fmt: skip
        text = re.sub(f"\\b{old}\\b", new, text, flags=re.I)
    return text


def _date_note(text: str, now: datetime, zh: bool) -> str:
    span = ruledates.past(text, now) or ruledates.future(text, now)
    if span is None:
        return ""
    when = ruledates.label(span)
    return f"（{span.text}：{when}）" if zh else f" ({span.text.strip()}: {when})"


def _zh_said(body: str, who: Ctx, first: bool) -> str:
    """ "我上个月去了杭州" -> "用户上个月去了杭州"; "上个月去了杭州" (no subject, as Chinese
    often says it) -> "用户上个月去了杭州"; the clauses after the first keep their subject."""
    said = zh_about(body, who)
    if not first or said.startswith(who.zh):
        return said
    return f"{who.zh}说{said}" if said[:1] in "你您他她它这那" else who.zh + said


def _not_theirs(clause) -> bool:
    """Not about the person: small talk ("Hey Mel", "Wow", "哈哈", "好的"), or said of the
    listener ("你太厉害了", "Your kids must love it"). English says its subject, so a clause
    without I / my / we is not the speaker's; Chinese often drops it ("上周去爬了黄山"), so
    there only a clause that starts with 你 / 您 is left out."""
    text = clause.text.strip().lower()
    if clause.lang == "zh":
        return len(text) <= 2 or text in features.ZH["greeting"] or text[:1] in "你您"
    return not any(w.strip(",.!?;:\"'") in features.EN["first"] for w in text.split())


_ZH_ASKS = ("帮我", "请你", "请帮", "麻烦你", "麻烦帮", "给我", "告诉我", "你能", "你可以",
            "能不能")  # fmt: skip
_EN_ASKS = ("please", "can you", "could you", "would you", "help me", "tell me", "show me",
            "let me know", "remind me", "check ", "fix ", "find ")  # fmt: skip


def asks_the_assistant(clause) -> bool:
    """ "帮我看看是哪个进程", "can you check the deploy": a task for the assistant; what the
    turn says beside it is the task's detail ("the worker is at 3 GB"), not the person's."""
    text = clause.text.strip().lower()
    if clause.lang == "zh":
        return any(a in text for a in _ZH_ASKS)
    return text.startswith(_EN_ASKS) or any(f" {a}" in text for a in _EN_ASKS[:7])


def memory_text(text: str, now: datetime, name: str = "") -> str:
    """The turn's statements said of the person, with dates; "" when none is left or the
    turn asks the assistant to do something."""
    who = Ctx(name.strip())
    said = rules.clauses(text)
    if any(asks_the_assistant(c) for c in said):
        return ""
    kept = [c for c in said if not rules.skipped(c) and not _not_theirs(c)]
    zh = [_zh_said(c.text.strip(), who, not n) for n, c in enumerate(kept) if c.lang == "zh"]
    en = [_en_third(c.text.strip(), who).rstrip(".!;, ") for c in kept if c.lang == "en"]
    if zh and len(zh) >= len(en):
        return "，".join(zh) + _date_note(text, now, True) + "。"
    if not en:
        return ""
    content = ". ".join(en)
    if who.en.lower() not in content.lower():
        content = f"{who.en} said: {content}"
    return content + _date_note(text, now, False) + "."
