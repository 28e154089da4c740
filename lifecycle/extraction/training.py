"""Training the learned extractor (pure numpy, no Django): the examples, the network, its file.

Examples (`examples()`), each a turn with a label "worth remembering" and, when known, a type:
- the team's labelled self-statements (data/extraction_{zh,en}.jsonl): a statement that
  must give a memory is positive, one that must give nothing (questions, chit-chat, other
  people) negative; its type is the one the rules give it. The held-out files
  (data/extraction_heldout_*.jsonl) are never read here: they score the result only.
- MADial-Bench: its memory annotations ("Bart danced at the Christmas party ...") said by
  the person ("I danced at the Christmas party ..."), positive; the persons' questions in its
  dialogues, negative.
- LoCoMo: the turns an `observation` cites, positive; the turns none cites, negative. Never
  conv-26 and conv-30: they are reserved for evaluation (EVALUATION_ONLY).

The network: the turn's e5 vector (384) and the cheap features (features.py) -> 64 ReLU ->
one "keep" logit and one logit per memory type. Full-batch Adam with a fixed seed, so the
same data gives the same file. Sources are weighted so that each counts about as much as the
others (LoCoMo alone has thousands of turns). A dev split (DEV_SHARE of every source, chosen by
the seed) picks the two thresholds (`thresholds()`): `accept` (a candidate for review) and
`write` (precise enough to write directly); the held-out files and conv-26/30 play no part in
either.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifecycle.extraction import features, rules

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
EVALUATION_ONLY = ("conv-26", "conv-30")
# LoCoMo's dev split is whole conversations the network never sees (the ones the context
# gates are tuned on, bench/realpipe.py): a cut chosen on turns of conversations it trained
# on lets more of a new conversation's chit-chat through than it promised.
DEV_CONVERSATIONS = ("conv-49", "conv-50")
TYPES = ("fact", "preference", "rule", "skill", "error", "identity", "constraint", "experience")
SEED = 20261127
DEV_SHARE = 0.15
HIDDEN = 64
EPOCHS = 300
RATE = 3e-3
DECAY = 1e-4
TYPE_WEIGHT = 0.5
UNCITED_MAX = 0.08  # rules and model together; the bench's goal is <= 0.10
WRITE_PRECISION = 0.92


@dataclass
class Example:
    text: str
    keep: bool
    type: str | None  # None: unknown (the type head does not learn from it)
    source: str  # labelled-zh, labelled-en, madial-zh, madial-en, locomo
    group: str = ""  # LoCoMo: the conversation


# --------------------------------------------------------------------------------------
# Examples
# --------------------------------------------------------------------------------------


def labelled(lang: str, part: str = "") -> list[dict]:
    name = f"extraction_{part}_{lang}.jsonl" if part else f"extraction_{lang}.jsonl"
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _rule_type(text: str) -> str | None:
    found = rules.extract(text)
    return found[0].type if found and found[0].type in TYPES else None


def from_labelled() -> list[Example]:
    out = []
    for lang in ("zh", "en"):
        for case in labelled(lang):
            keep = bool(case["expect"])
            kind = _rule_type(case["text"]) if keep else None
            out.append(Example(case["text"], keep, kind, f"labelled-{lang}"))
    return out


_EN_PRONOUNS = [("himself", "myself"), ("herself", "myself"), ("his", "my"), ("her", "my"),
                ("him", "me"), ("he", "I"), ("she", "I")]  # fmt: skip


def said_by_them(event: str, names: set[str], zh: bool) -> str:
    """A MADial memory ("Bart danced ...", "Bart在圣诞节晚会上跳舞") as the person says it."""
    for name in sorted(names, key=len, reverse=True):
        event = event.replace(f"{name}'s", "my").replace(name, "我" if zh else "I")
    if zh:
        for old in ("他的", "她的"):
            event = event.replace(old, "我的")
        return event.replace("他", "我").replace("她", "我")
    for old, new in _EN_PRONOUNS:
        event = re.sub(f"\\b{old}\\b", new, event)
    return event


_SPEAKER = re.compile('^<(?P<who>[^>]+)>: *"?(?P<text>.*?)"?$')


def from_madial(root: Path) -> list[Example]:
    out = []
    for lang in ("zh", "en"):
        base = root / "madial_bench"
        names: set[str] = set()
        for line in (base / f"MADial-Bench-{lang}-dialogue.json").read_text().splitlines():
            if not line.strip():
                continue
            for said in json.loads(line)["dialogue"]:
                m = _SPEAKER.match(said.strip())
                if not m or m["who"] in ("Assistant", "助手", "AI"):
                    continue
                names.add(m["who"])
                if m["text"].rstrip().endswith(("?", "？")):
                    out.append(Example(m["text"], False, None, f"madial-{lang}"))
        for line in (base / f"MADial-Bench-{lang}-memory.json").read_text().splitlines():
            if not line.strip():
                continue
            for memory in json.loads(line).values():
                liked = memory["scene"] in ("Preferences", "喜好类")
                kind = "preference" if liked else "experience"
                text = said_by_them(memory["event"], names, lang == "zh")
                out.append(Example(text, True, kind, f"madial-{lang}"))
    return out


def locomo_turns(root: Path, convs: tuple[str, ...] | None = None, skip: tuple = ()):
    """(conversation id, speaker, turn, cited?) for LoCoMo's turns."""
    for conv in json.loads((root / "locomo" / "locomo10.json").read_text()):
        if conv["sample_id"] in skip or (convs and conv["sample_id"] not in convs):
            continue
        cited = {
            dia
            for by_speaker in conv["observation"].values()
            for items in by_speaker.values()
            for _text, dias in items
            for dia in (dias if isinstance(dias, list) else [dias])
        }
        c, n = conv["conversation"], 1
        while f"session_{n}" in c:
            for turn in c[f"session_{n}"]:
                yield conv["sample_id"], turn["speaker"], turn, turn["dia_id"] in cited
            n += 1


def as_recorded(turn: dict) -> str:
    """A LoCoMo turn as an agent records it: a shared image's caption after the words (as
    bench/realpipe.py sends it), which the extractor then reads too."""
    caption = turn.get("blip_caption")
    return f"{turn['text']} [shares an image: {caption}]" if caption else turn["text"]


def from_locomo(root: Path) -> list[Example]:
    """Each turn as said and, when it shared an image, as recorded with the caption too."""
    out = []
    for conv, _who, turn, cited in locomo_turns(root, skip=EVALUATION_ONLY):
        for text in dict.fromkeys((turn["text"], as_recorded(turn))):
            out.append(Example(text, cited, None, "locomo", conv))
    return out


def examples(root: Path | None) -> list[Example]:
    """All training examples; without the shared data (root None) the labelled sets only."""
    out = from_labelled()
    if root is not None and root.exists():
        out += from_madial(root) + from_locomo(root)
    return out


# --------------------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------------------


@dataclass
class Weights:
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray  # hidden -> [keep, *types]
    b2: np.ndarray
    accept: float
    write: float

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "w1": self.w1,
            "b1": self.b1,
            "w2": self.w2,
            "b2": self.b2,
            "thresholds": np.asarray([self.accept, self.write], dtype=np.float32),
            "types": np.asarray(TYPES),
        }


def forward(x: np.ndarray, w: Weights) -> tuple[np.ndarray, np.ndarray]:
    """(probability of keep per row, type probabilities per row)."""
    hidden = np.maximum(x @ w.w1 + w.b1, 0.0)
    out = hidden @ w.w2 + w.b2
    keep = 1.0 / (1.0 + np.exp(-out[:, 0]))
    logits = out[:, 1:] - out[:, 1:].max(axis=1, keepdims=True)
    types = np.exp(logits)
    return keep, types / types.sum(axis=1, keepdims=True)


def inputs(vectors: np.ndarray, texts: list[str]) -> np.ndarray:
    cheap = np.stack([features.vector(t) for t in texts]) if texts else np.zeros((0, 0))
    return np.hstack([vectors.astype(np.float32), cheap]).astype(np.float32)


def split(rows: list[Example], seed: int = SEED) -> np.ndarray:
    """True for the dev rows: LoCoMo's DEV_CONVERSATIONS whole, and DEV_SHARE of every other
    source, drawn with the seed."""
    rng = np.random.default_rng(seed)
    dev = np.asarray([r.group in DEV_CONVERSATIONS for r in rows], dtype=bool)
    for source in sorted({r.source for r in rows} - {"locomo"}):
        index = np.flatnonzero([r.source == source for r in rows])
        chosen = rng.choice(index, size=int(round(len(index) * DEV_SHARE)), replace=False)
        dev[chosen] = True
    return dev


def source_weights(rows: list[Example]) -> np.ndarray:
    """Each source weighs about as much in total: sqrt-balanced, so big ones still count more."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.source] = counts.get(r.source, 0) + 1
    mean = np.mean([np.sqrt(c) for c in counts.values()])
    weights = np.asarray([mean / np.sqrt(counts[r.source]) for r in rows], dtype=np.float32)
    return weights / weights.mean()


def train(x: np.ndarray, rows: list[Example], seed: int = SEED, epochs: int = EPOCHS) -> Weights:
    rng = np.random.default_rng(seed)
    n, d = x.shape
    keep = np.asarray([r.keep for r in rows], dtype=np.float32)
    typed = np.asarray([r.type is not None for r in rows], dtype=np.float32)
    target = np.zeros((n, len(TYPES)), dtype=np.float32)
    for i, r in enumerate(rows):
        if r.type is not None:
            target[i, TYPES.index(r.type)] = 1.0
    weight = source_weights(rows)
    params = {
        "w1": rng.normal(0, np.sqrt(2.0 / d), (d, HIDDEN)).astype(np.float32),
        "b1": np.zeros(HIDDEN, dtype=np.float32),
        "w2": rng.normal(0, np.sqrt(1.0 / HIDDEN), (HIDDEN, 1 + len(TYPES))).astype(np.float32),
        "b2": np.zeros(1 + len(TYPES), dtype=np.float32),
    }
    moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    for step in range(1, epochs + 1):
        pre = x @ params["w1"] + params["b1"]
        hidden = np.maximum(pre, 0.0)
        out = hidden @ params["w2"] + params["b2"]
        p = 1.0 / (1.0 + np.exp(-out[:, 0]))
        logits = out[:, 1:] - out[:, 1:].max(axis=1, keepdims=True)
        q = np.exp(logits)
        q /= q.sum(axis=1, keepdims=True)
        grad_out = np.zeros_like(out)
        grad_out[:, 0] = (p - keep) * weight / n
        grad_out[:, 1:] = TYPE_WEIGHT * (q - target) * (typed * weight)[:, None] / n
        grads = {"w2": hidden.T @ grad_out, "b2": grad_out.sum(axis=0)}
        grad_hidden = (grad_out @ params["w2"].T) * (pre > 0)
        grads["w1"] = x.T @ grad_hidden
        grads["b1"] = grad_hidden.sum(axis=0)
        for k, g in grads.items():
            if k.startswith("w"):
                g = g + DECAY * params[k]
            m, v = moments[k]
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            m_hat, v_hat = m / (1 - 0.9**step), v / (1 - 0.999**step)
            params[k] -= (RATE * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)
    return Weights(**params, accept=0.5, write=0.9)


def thresholds(
    p: np.ndarray, keep: np.ndarray, sources: list[str], ruled: np.ndarray
) -> tuple[float, float]:
    """`accept`: the lowest cut at which at most UNCITED_MAX of the dev conversations' LoCoMo
    turns that no observation cites give a memory, the rules' (`ruled`: the model only sees
    what they leave) and the model's together (real conversation, where most turns are not
    worth a memory); `write`: the lowest cut whose precision on all dev rows is at least
    WRITE_PRECISION (written without asking; between the two, the person reviews)."""
    talk = np.asarray([s == "locomo" for s in sources])
    cuts = [round(float(c), 2) for c in np.arange(0.30, 0.99, 0.01)]
    gives = [ruled | (p >= c) for c in cuts]
    accept = next((c for c, g in zip(cuts, gives, strict=True)
                   if np.mean(g[talk & ~keep]) <= UNCITED_MAX), 0.99)  # fmt: skip
    write = next(
        (c for c in cuts if c >= accept and (p >= c).sum() >= 5 and keep[p >= c].mean()
         >= WRITE_PRECISION), 0.99
    )  # fmt: skip
    return accept, write


# --------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------


def save(weights: Weights, path: Path, figures: dict) -> str:
    """The .npz and its manifest (sha256, shapes, figures): the loader checks both."""
    arrays = weights.arrays()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():  # fixed entry dates: same weights, same bytes
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as entry:
                np.lib.format.write_array(entry, np.ascontiguousarray(array), allow_pickle=False)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = {
        "sha256": digest,
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        "features": list(features.NAMES),
        "embedding": "multilingual-e5-small passage vectors (384)",
        "seed": SEED,
        "figures": figures,
    }
    manifest_path = path.with_suffix(".json")
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return digest
