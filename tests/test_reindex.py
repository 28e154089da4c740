"""`manage.py reindex`: all or one kind, progress, resumable, and --check for drift."""

import io

import pytest
from django.core.management import call_command
from django.db import connection

from curator.models import Fact, FactStatus, Owner
from retrieval import text as seg
from retrieval import userdict
from retrieval.models import SearchDoc
from retrieval.reindex import Progress, check, reindex
from tests.search_helpers import episode


@pytest.fixture
def owner(db):
    return Owner.default()


def facts(owner, n):
    return [Fact.objects.create(owner=owner, content=f"第 {i} 条：杭州 orchard") for i in range(n)]


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("reindex", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_it_indexes_everything_and_shows_rate_and_eta(owner):
    facts(owner, 5)
    episode(owner, "排查 orchard")
    code, out, err = run("--batch", "2")
    assert code == 0 and "Examined 6 items: 5 (re)indexed" in out
    assert "items/s" in err and "ETA" in err and "5/5 100%" in err
    assert SearchDoc.objects.count() == 6


def test_one_kind_only(owner):
    facts(owner, 2)
    episode(owner, "排查 orchard")  # indexed on creation
    SearchDoc.objects.filter(kind="episode").delete()
    code, out, _ = run("--kind", "episode")
    assert code == 0 and "Examined 1 items: 1 (re)indexed" in out
    assert not SearchDoc.objects.filter(kind="fact").exists()
    report = check("episode")
    assert (report.stray_keyword_rows, report.stray_vector_rows, report.problems) == (0, 0, 0)


def test_check_reports_missing_and_stale_items_and_fails(owner):
    items = facts(owner, 3)
    code, out, _ = run("--check")
    assert code == 1 and "3 problems" in out
    reindex()
    assert run("--check")[0] == 0
    Fact.objects.filter(pk=items[0].pk).update(content="changed behind the index's back")
    Fact.objects.filter(pk=items[1].pk).update(status=FactStatus.ARCHIVED)
    report = check("fact").kinds[0]
    assert (report.stale_keywords, report.stale_filters, report.stale_vectors) == (1, 1, 1)
    Fact.objects.filter(pk=items[2].pk).delete()
    assert check("fact").kinds[0].orphans == 1
    reindex()
    assert check().problems == 0


def test_an_interrupted_run_resumes_where_it_stopped(owner):
    facts(owner, 6)
    seen = []

    def stop_after_two_batches():
        return len(seen) >= 2

    first = reindex(batch=2, progress=seen.append, should_stop=stop_after_two_batches)
    assert first.interrupted and first.done == 4 and SearchDoc.objects.count() == 4
    assert isinstance(seen[-1], Progress) and seen[-1].eta is not None
    second = reindex(batch=2)
    assert (second.planned, second.done) == (2, 2) and check().problems == 0


def test_keywords_only_leaves_vectors_alone(owner):
    facts(owner, 2)
    assert run("--keywords-only")[0] == 0
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vecf")
        assert cur.fetchone()[0] == 0
    assert check().kinds[0].missing_vectors == 2


def test_a_new_dictionary_word_marks_keyword_rows_stale(owner, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    facts(owner, 2)
    reindex()
    userdict.add("杭州orchard")
    try:
        assert check("fact").kinds[0].stale_keywords == 2
        summary = reindex()
        assert summary.done == 2 and check().problems == 0
    finally:
        userdict.remove("杭州orchard")


def fts_rows() -> dict:
    with connection.cursor() as cur:
        cur.execute("SELECT rowid, tokens, grams, context FROM search_fts ORDER BY rowid")
        return {row[0]: row[1:] for row in cur.fetchall()}


class _Watched:
    """A helper pool that counts the batches sent to it, started before the first one (a
    reindex sends none until the helper has started)."""

    def __init__(self, pool, used: list):
        self.pool, self.used = pool, used

    def submit(self, fn, *args):
        future = self.pool.submit(fn, *args)
        if fn is seg.segment_pairs:
            self.used.append(len(args[0]))
        else:
            future.result()  # the reindex's "has it started?" probe: wait for it here
        return future

    def shutdown(self, **kwargs):
        self.pool.shutdown(**kwargs)


def test_a_bulk_reindex_segments_half_of_each_batch_in_a_helper_alike(
    owner, monkeypatch, settings, tmp_path
):
    """The helper process cuts text exactly as this one, the person's own words included."""
    from retrieval import reindex as reindexing

    texts = ["李雷周末在杭州喜欢乌龙茶", "orchard 项目的 search 由韩梅梅负责", "Anna prefers Rust"]
    for i in range(12):
        Fact.objects.create(owner=owner, content=f"{texts[i % 3]}（第{i}条）向量检索很好用")
    settings.DATA_DIR = tmp_path
    userdict.add("向量检索很好用")
    try:
        reindex(embed=False)
        alone = fts_rows()
        used = []
        real_helper = seg.helper
        monkeypatch.setattr(reindexing, "PARALLEL_MIN", 2)
        monkeypatch.setattr(seg, "helper", lambda: _Watched(real_helper(), used))
        SearchDoc.objects.update(fts_version="")  # every keyword row out of date
        summary = reindex(embed=False, batch=4)
        assert len(used) == 3 and summary.done == 12  # every batch half cut by the helper
        assert fts_rows() == alone
        assert "向量检索很好用" in " ".join(tokens for tokens, _, _ in alone.values())
    finally:
        userdict.remove("向量检索很好用")
