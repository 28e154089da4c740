"""Turns in batches: a chat import's indexing and extraction, many turns per embedder call.

A live turn is indexed and extracted by its own tasks (`index_item`, `extract_turn`) the moment
it is recorded, so it is searchable within seconds. A bulk of turns (a chat import) would make
two tasks per turn, each paying its own transactions, one embedder call of one text and one
decision of the learned model: about 30 turns/s. Inside `collecting()`, the receivers hand the
turns of this thread to a collector instead; every `BATCH` turns (and at the end) it queues one
`index_turns` task, which indexes them together (keyword rows in one transaction, also those
the write would have made one by one: `indexing.turn_keywords_later`; vectors in one embedder
call) and extracts the person's turns on the vectors just made
(lifecycle.extraction.extract.run_turns). Everything else (facts, episodes, other threads'
turns) keeps its own task.

The task is as safe to repeat as the per-turn ones: indexing skips what is current and
extraction what is extracted. A batch whose indexing fails (a busy database, the embedder) is
tried again by the task a little later, then each turn falls back to its own tasks, whose
retries and dead letters are per item.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lifecycle.extraction import extract
from retrieval import indexing
from retrieval.models import Kind

log = logging.getLogger(__name__)
# Turns per task: one embedder call of 64 short turns takes about 0.4 s on one core, so a
# task stays short (the queue's other work waits little behind it), while the per-call and
# per-transaction costs are spread over enough turns to disappear.
BATCH = 64

_local = threading.local()


class Collector:
    """The turns recorded in this thread while a bulk runs, in order, each with what it needs
    (index, extract): a turn's two signals arrive one after the other, so a batch is queued
    when the turn after its last one arrives, and holds both of its turns' needs."""

    def __init__(self, queue: Callable[..., object], size: int):
        self.queue, self.size = queue, size
        self.pending: dict[int, set[str]] = {}
        self.sessions: list[int] = []

    def end_after(self, session_pk: int) -> None:
        """The session's episode is queued by the batch that holds its last turns, once they
        are extracted (queued before, it would extract them one by one itself)."""
        self.sessions.append(session_pk)

    def add(self, turn_id: int, need: str) -> None:
        if turn_id not in self.pending and len(self.pending) >= self.size:
            self.flush()
        self.pending.setdefault(turn_id, set()).add(need)

    def flush(self) -> None:
        if not self.pending and not self.sessions:
            return
        pending, self.pending, sessions, self.sessions = self.pending, {}, self.sessions, []
        self.queue(
            [pk for pk, needs in pending.items() if "index" in needs],
            [pk for pk, needs in pending.items() if "extract" in needs],
            sessions,
        )


@contextmanager
def collecting(queue: Callable[..., object], size: int | None = None) -> Iterator[Collector]:
    """Turns recorded in this thread meanwhile go to `queue(index_ids, extract_ids,
    session_ids)` in batches of `size` turns (the rest when the block ends, also when it
    ends by an error: what was committed is queued)."""
    outer = getattr(_local, "collector", None)
    collector = _local.collector = Collector(queue, size or BATCH)
    try:
        with indexing.turn_keywords_later():
            yield collector
    finally:
        _local.collector = outer
        collector.flush()


def _collector() -> Collector | None:
    return getattr(_local, "collector", None)


def take_index(kind: str, object_id: int) -> bool:
    """A committed change of a turn while collecting, or of anything while a batch extracts
    (the facts it writes): batched (True), else its own task."""
    if (written := getattr(_local, "written", None)) is not None:
        written.setdefault(kind, []).append(object_id)
        return True
    if (collector := _collector()) is None or kind != Kind.TURN:
        return False
    collector.add(object_id, "index")
    return True


def take_extract(turn_id: int) -> bool:
    """A recorded turn while collecting: batched (True), else its own task."""
    if (collector := _collector()) is None:
        return False
    collector.add(turn_id, "extract")
    return True


@dataclass
class Outcome:
    """What a batch leaves to the per-item tasks: turns whose indexing failed (all of the
    batch's, which then extract one by one too), turns the LLM extracts, items whose indexing
    failed after extraction wrote them."""

    unindexed: list[int] = field(default_factory=list)
    extract: list[int] = field(default_factory=list)
    items: list[tuple[str, int]] = field(default_factory=list)


def run(index_ids: list[int], extract_ids: list[int]) -> Outcome:
    """Index and extract a batch of turns, then index what extraction wrote (the facts) in
    one batch per kind, as the turns were."""
    try:
        vectors = indexing.reindex_many(Kind.TURN, index_ids) if index_ids else {}
    except Exception as exc:  # the embedder or a locked database: the per-item tasks retry
        log.warning("indexing a batch of %d turns failed: %s", len(index_ids), exc)
        return Outcome(unindexed=list(index_ids), extract=list(extract_ids))
    outer, _local.written = getattr(_local, "written", None), {}
    written = _local.written
    try:
        outcome = Outcome(extract=extract.run_turns(extract_ids, vectors))
    except Exception as exc:  # a locked database: each turn's own task extracts it
        log.warning("extracting a batch of %d turns failed: %s", len(extract_ids), exc)
        outcome = Outcome(extract=list(extract_ids))  # those done are skipped by extract_turn
    finally:
        _local.written = outer
    for kind, ids in written.items():
        try:
            indexing.reindex_many(kind, list(dict.fromkeys(ids)))
        except Exception as exc:
            log.warning("indexing %d %s items after a batch failed: %s", len(ids), kind, exc)
            outcome.items += [(kind, pk) for pk in dict.fromkeys(ids)]
    return outcome
