"""A chat import's turns are indexed and extracted in batches (lifecycle/turnbatch.py); a live
turn keeps its own tasks. Real Huey tasks (immediate), real SQLite with sqlite-vec, the
bundled embedder; transactional tests, so the signals fire when each conversation commits, as
in production."""

import json

import numpy as np
import pytest
from django.db import connection
from huey.contrib.djhuey import HUEY

from curator import conversations
from curator.models import ConversationTurn, Episode, Fact, MemoryEvent, Owner, PendingItem
from lifecycle import chat_import, tasks, turnbatch
from lifecycle.models import ExtractionItem, JobRun
from retrieval.backends import Filters, keyword_hits, vector_hits
from retrieval.embedders import EmbeddingError, LocalEmbedder
from retrieval.models import SearchDoc

STATEMENTS = [
    "I live in Lisbon and work as a nurse.",
    "我住在成都，平时喜欢打羽毛球。",
    "My sister Ana is a violinist in Porto.",
    "我最喜欢的编辑器是 Vim。",
]


def write_export(path, conversations_count: int, turns_each: int) -> None:
    """JSONL of conversations alternating the person and the assistant; no two texts alike."""
    lines = []
    for c in range(conversations_count):
        for t in range(turns_each):
            user = t % 2 == 0
            text = STATEMENTS[(c + t // 2) % len(STATEMENTS)] if user else f"Noted, item {c}.{t}."
            if user and t >= 2:
                text = f"About the weekend plan number {c}{t}: what time is it best to leave?"
            lines.append(
                {
                    "session_id": f"export-{c}",
                    "role": "user" if user else "assistant",
                    "content": text,
                    "timestamp": f"2024-03-{c + 1:02d}T10:{t:02d}:00+00:00",
                }
            )
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")


def run_import(path):
    job = chat_import.queue(chat_import.prepare(path, "jsonl"))
    return chat_import.run(
        job.pk, finish_session=tasks.end_imported_session, batches=tasks.queue_turn_batch
    )


@pytest.fixture
def spies(monkeypatch):
    """What reached the per-item tasks and the embedder (and still runs it)."""
    seen = {"index_item": [], "extract_turn": [], "index_turns": [], "embedded": []}
    for name in ("index_item", "extract_turn", "index_turns"):
        real = getattr(tasks, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen[_name].append(args)
            return _real(*args, **kwargs)

        monkeypatch.setattr(tasks, name, spy)
    real_passages = LocalEmbedder.passages

    def passages(self, texts):
        seen["embedded"].append(list(texts))
        return real_passages(self, texts)

    monkeypatch.setattr(LocalEmbedder, "passages", passages)
    return seen


def vector_rows() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vecf")
        return cur.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_chat_import_is_indexed_and_extracted_in_batches(tmp_path, spies):
    path = tmp_path / "export.jsonl"
    write_export(path, conversations_count=5, turns_each=16)  # 80 turns: two batches of 64
    job = run_import(path)
    assert job.turns_added == 80

    turns = list(ConversationTurn.objects.all())
    docs = {d.object_id: d for d in SearchDoc.objects.filter(kind="turn")}
    assert len(docs) == 80
    for turn in turns:
        doc = docs[turn.pk]
        assert doc.fts_at is not None and doc.embedded_hash == doc.content_hash, turn.content
    assert vector_rows() >= 80
    assert not ConversationTurn.objects.filter(role="user", extracted=False).exists()

    # the turns went through two batch tasks, none through the per-turn ones
    assert [len(args[0]) for args in spies["index_turns"]] == [64, 16]
    assert not [a for a in spies["index_item"] if a[0] == "turn"] and not spies["extract_turn"]
    turn_texts = {t.content for t in turns}
    turn_calls = [call for call in spies["embedded"] if turn_texts & set(call)]
    assert sorted(len(call) for call in turn_calls) == [16, 64]  # every turn embedded once

    owner = Owner.default()
    facts = " ".join(Fact.objects.values_list("content", flat=True))
    assert "Lisbon" in facts and "成都" in facts  # extraction saw the imported statements
    # the statements move between Lisbon and 成都, so each new one supersedes the last
    lisbon = set(
        Fact.objects.active().filter(content__contains="Lisbon").values_list("pk", flat=True)
    )
    facts_only = Filters(owner.id, kinds=("fact",))
    assert lisbon and lisbon <= {
        h.object_id for h in keyword_hits("Lisbon nurse", owner.id, 50, facts_only)
    }
    kinds = Filters(owner.id, kinds=("turn",))
    found = [h.object_id for h in vector_hits("who plays the violin in Porto", owner.id, 5, kinds)]
    assert ConversationTurn.objects.get(pk=found[0]).content.startswith("My sister Ana")
    said = ConversationTurn.objects.filter(content__contains="weekend plan number 36").first()
    assert said.pk in [h.object_id for h in keyword_hits("weekend plan number 36", owner.id)]
    assert Episode.objects.count() == 5  # each conversation's episode, after its turns


@pytest.mark.django_db(transaction=True)
def test_a_lone_live_turn_is_indexed_by_its_own_task(spies):
    result = conversations.record_turn("live-chat", 0, "user", "I live in Lisbon.")
    turn = result.turn
    assert ("turn", turn.pk) in spies["index_item"] and (turn.pk,) in spies["extract_turn"]
    assert spies["index_turns"] == []
    doc = SearchDoc.objects.get(kind="turn", object_id=turn.pk)
    assert doc.embedded_hash == doc.content_hash
    assert ConversationTurn.objects.get(pk=turn.pk).extracted


def what_the_turns_gave() -> dict:
    """Everything indexing and extraction leave for an import's turns, by content (not by
    id or time): the memories and review items, each turn's keyword row and vector."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT t.content, f.tokens, f.grams, f.context, v.embedding "
            f"FROM {ConversationTurn._meta.db_table} t JOIN {SearchDoc._meta.db_table} d "
            "ON d.kind = 'turn' AND d.object_id = t.id "
            "JOIN search_fts f ON f.rowid = d.id LEFT JOIN search_vecf v ON v.doc_id = d.id"
        )
        rows = cur.fetchall()
    return {
        "facts": sorted(
            Fact.objects.values_list(
                "content", "status", "subject", "predicate", "type", "hit_count", "source"
            )
        ),
        "pending": sorted(
            PendingItem.objects.values_list("candidate__content", "reason", "status")
        ),
        "extracted": sorted(ConversationTurn.objects.values_list("content", "extracted")),
        "keyword rows": sorted(row[:4] for row in rows),
        "vectors": {row[0]: np.frombuffer(bytes(row[4]), np.float32) for row in rows if row[4]},
    }


def forget_what_the_turns_gave() -> None:
    """Back to turns only stored: no memories, events, index rows or vectors."""
    for model in (MemoryEvent, PendingItem, Fact, ExtractionItem, JobRun, SearchDoc):
        model.objects.all().delete()
    with connection.cursor() as cur:
        for table in ("search_fts", "search_vec", "search_vecf"):
            cur.execute(f"DELETE FROM {table}")
    ConversationTurn.objects.update(extracted=False)


@pytest.mark.django_db(transaction=True)
def test_batches_index_and_extract_an_import_exactly_as_one_task_per_turn(tmp_path):
    path = tmp_path / "export.jsonl"
    write_export(path, conversations_count=3, turns_each=16)
    job = chat_import.queue(chat_import.prepare(path, "jsonl"))
    chat_import.run(job.pk, finish_session=lambda pk: None)  # each turn its own tasks
    one_by_one = what_the_turns_gave()
    assert one_by_one["facts"] and len(one_by_one["vectors"]) == 48

    forget_what_the_turns_gave()
    ids = list(
        ConversationTurn.objects.order_by("session_id", "turn_index").values_list("pk", flat=True)
    )
    for start in range(0, len(ids), 20):  # batches that cut conversations in the middle
        tasks.index_turns(ids[start : start + 20], ids[start : start + 20], [])
    batched = what_the_turns_gave()

    for key in ("facts", "pending", "extracted", "keyword rows"):
        assert batched[key] == one_by_one[key], key
    assert batched["vectors"].keys() == one_by_one["vectors"].keys()
    for text, vector in batched["vectors"].items():  # one engine call for many or for one
        assert float(vector @ one_by_one["vectors"][text]) > 0.9999, text


def stored_state() -> tuple:
    """What a batch writes: memories, review items, events, job runs, vectors, index rows."""
    return (
        Fact.objects.count(),
        PendingItem.objects.count(),
        MemoryEvent.objects.count(),
        JobRun.objects.count(),
        vector_rows(),
        list(SearchDoc.objects.values_list("id", "content_hash", "embedded_at", "fts_at")),
    )


@pytest.mark.django_db(transaction=True)
def test_running_a_batch_again_writes_nothing_twice(tmp_path, spies):
    path = tmp_path / "export.jsonl"
    write_export(path, conversations_count=2, turns_each=8)
    run_import(path)
    ids = list(ConversationTurn.objects.values_list("pk", flat=True))
    before = stored_state()
    spies["embedded"].clear()
    tasks.index_turns(ids, ids, [])
    after = stored_state()
    assert after == before
    assert spies["embedded"] == []  # nothing embedded again


@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_embedding_fails_leaves_each_turn_to_its_own_tasks(
    tmp_path, spies, monkeypatch
):
    def broken(self, texts):
        raise EmbeddingError("the engine is away")

    monkeypatch.setattr(LocalEmbedder, "passages", broken)
    path = tmp_path / "export.jsonl"
    write_export(path, conversations_count=1, turns_each=4)
    run_import(path)
    ids = set(ConversationTurn.objects.values_list("pk", flat=True))
    assert {a[1] for a in spies["index_item"] if a[0] == "turn"} == ids  # retried one by one
    owner = Owner.default()
    said = ConversationTurn.objects.get(turn_index=0)
    assert said.pk in [h.object_id for h in keyword_hits("Lisbon nurse", owner.id)]
    assert not ConversationTurn.objects.filter(role="user", extracted=False).exists()


def test_an_imports_batches_wait_behind_what_live_turns_queue():
    HUEY.immediate = False
    try:
        HUEY.flush()
        tasks.queue_turn_batch([1, 2], [1], [7])
        tasks.index_item("turn", 3)
        assert HUEY.dequeue().name == tasks.index_item.task_class.__name__
        assert HUEY.dequeue().name == tasks.index_turns.task_class.__name__
    finally:
        HUEY.flush()
        HUEY.immediate = True


def test_the_collector_queues_each_turns_needs_together_and_the_rest_at_the_end():
    queued = []
    with turnbatch.collecting(lambda *batch: queued.append(batch), size=2) as collector:
        for turn_id in (1, 2, 3):
            assert turnbatch.take_index("turn", turn_id)
            assert turnbatch.take_extract(turn_id)
        assert not turnbatch.take_index("fact", 9)  # anything else keeps its own task
        collector.end_after(40)
    assert queued == [([1, 2], [1, 2], []), ([3], [3], [40])]
    assert not turnbatch.take_index("turn", 4)  # outside the block: the per-turn tasks


def test_a_failed_batch_is_tried_again_before_each_turn_gets_its_own_tasks(monkeypatch):
    monkeypatch.setattr(
        turnbatch, "run", lambda index, extract: turnbatch.Outcome(unindexed=index, extract=extract)
    )
    HUEY.immediate = False
    try:
        HUEY.flush()
        tasks.index_turns.call_local([1, 2], [1], [7])
        retry = HUEY.dequeue()  # the consumer moves it to its schedule until its time
        assert retry.name == tasks.index_turns.task_class.__name__ and retry.args[-1] == 1
        assert retry.eta is not None and HUEY.dequeue() is None  # nothing else yet
        tasks.index_turns.call_local([1, 2], [1], [7], len(tasks.BATCH_RETRIES))
        queued = []
        while (task := HUEY.dequeue()) is not None:
            queued.append((task.name, task.args))
        names = {
            name: getattr(tasks, name).task_class.__name__
            for name in ("index_item", "extract_turn", "end_session")
        }
        assert queued == [
            (names["index_item"], ("turn", 1)),
            (names["index_item"], ("turn", 2)),
            (names["extract_turn"], (1,)),
            (names["end_session"], (7,)),
        ]
    finally:
        HUEY.flush()
        HUEY.immediate = True
