"""Bad configuration stops start-up with one plain sentence."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from memsite.core import checks
from retrieval import checks as vector_checks
from retrieval.embedders import get_embedder
from retrieval.models import EmbeddingSpace

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def remote_embedder(settings):
    """Configure an OpenAI-compatible embedder for one test."""
    get_embedder.cache_clear()
    settings.EMBEDDING_MODEL, settings.EMBEDDING_BASE_URL = "bge-m3", "http://127.0.0.1:9/v1"
    yield settings
    get_embedder.cache_clear()


def _store_one_vector():
    blob = np.ones(384, dtype=np.float32).tobytes()
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO search_vec(doc_id, owner_id, embedding, bits, kind, live, expires, ts, "
            "session_id) VALUES (1, 1, %s, vec_quantize_binary(%s), 'fact', 1, 0, 0, 0)",
            [blob, blob],
        )
        cur.execute("INSERT INTO search_vecf(doc_id, embedding) VALUES (1, %s)", [blob])


def test_a_remote_model_needs_its_dimension(db, remote_embedder):
    remote_embedder.EMBEDDING_DIM = 0
    [error] = checks.embedding_settings(None)
    assert error.id == "memsite.E002" and "MEMSITE_EMBEDDING_DIM" in error.msg


def test_a_dimension_that_contradicts_the_stored_vectors_is_an_error(db, remote_embedder):
    remote_embedder.EMBEDDING_DIM = 1024
    EmbeddingSpace.objects.create(model_name="bge-m3", dimension=384)
    _store_one_vector()
    [error] = vector_checks.stored_vectors_match(None)
    assert error.id == "memsite.E003"
    assert "MEMSITE_EMBEDDING_DIM is 1024 but the 1 stored vectors of bge-m3 have 384" in error.msg


def test_another_model_only_degrades_search(db):
    EmbeddingSpace.objects.create(model_name="text-embedding-3-small", dimension=384)
    _store_one_vector()
    [warning] = vector_checks.stored_vectors_match(None)
    assert warning.id == "memsite.W001" and "keywords only" in warning.msg


def test_the_default_configuration_passes(db):
    assert checks.embedding_settings(None) == []
    assert checks.sqlite_extensions(None) == []


def test_a_missing_extension_is_explained(monkeypatch):
    def broken(conn):
        raise OSError("vec0.so: cannot open shared object file")

    monkeypatch.setattr(checks, "load_vec", broken)
    [error] = checks.sqlite_extensions(None)
    assert error.id == "memsite.E001" and "sqlite-vec" in error.msg


def test_an_unwritable_data_dir_stops_with_one_sentence(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {**os.environ, "MEMSITE_DATA_DIR": str(blocker / "data")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Memory Curator cannot start: The data directory {blocker / 'data'} is not writable "
        "(Not a directory); set MEMSITE_DATA_DIR to a folder you can write to."
    ]


def test_a_prune_share_outside_zero_to_one_stops_with_one_sentence(tmp_path):
    env = {**os.environ, "MEMSITE_DATA_DIR": str(tmp_path), "MEMSITE_SEARCH_PRUNE_SHARE": "0"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "Memory Curator cannot start: MEMSITE_SEARCH_PRUNE_SHARE must be above 0 and at most 1."
    ]
