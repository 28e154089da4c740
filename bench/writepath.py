"""The per-memory cost of the write path: `python bench/writepath.py [--memories N] [--profile]`.

Memories are proposed as the consumer's extraction proposes them (lifecycle/extraction/
extract.py `_commit`): actor "job", an operation id per candidate, the source turn set, inside
the transaction that also marks the turn extracted; the keyword index is written in that
transaction (curator.signals.item_written) as in the product. Three kinds, in turn:

- written: a new memory of the learned extractor (no subject, no predicate);
- superseded: a rules memory with a subject + predicate that an earlier one held;
- boosted: a rules memory said again.

Printed per kind: milliseconds (wall and this process's CPU) and SQL statements per memory
(every statement the connection ran, savepoints included), with `--facts` memories and
`--items` decided review items already there (the routing reads must not grow with them).

Before the write path was reworked it cost about 53 ms and 20 statements per written memory
(measured with a profiler at load 2-5); this bench on that code, same run conditions: see
docs/performance.md "The write path".
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from retrieval_kit import setup_django, table  # noqa: E402

CITIES = ["杭州", "上海", "Munich", "Berlin", "成都", "Lisbon", "大理", "Oslo"]


def turns(count: int) -> list:
    """`count` user turns, one session, recorded as the API records them."""
    from curator.conversations import record_turn
    from curator.models import ConversationTurn

    ids = [
        record_turn("bench-writepath", i, "user", f"turn {i}: I went hiking on trail {i}").turn.pk
        for i in range(count)
    ]
    return list(ConversationTurn.objects.filter(pk__in=ids).select_related("session__owner"))


def candidates(kind: str, turn, n: int):
    """The candidate extraction would make from `turn` (the n-th memory of this kind)."""
    from curator.writepath import Candidate

    if kind == "written":
        return Candidate(
            content=f"The user went hiking on trail {n} with friend {n * 7}",
            confidence=0.9,
            source="learned",
            source_turn_id=turn.pk,
        )
    if kind == "superseded":
        return Candidate(
            content=f"The user lives in {CITIES[n % len(CITIES)]} (move {n})",
            subject="user",
            predicate="location",
            confidence=0.9,
            source="rules",
            source_turn_id=turn.pk,
        )
    return Candidate(  # boosted: the same statement again
        content="The user likes oolong tea",
        subject="user",
        predicate="likes: tea",
        type="preference",
        confidence=0.9,
        source="rules",
        source_turn_id=turn.pk,
    )


def propose_one(kind: str, turn, n: int):
    """One memory as extract._commit proposes it, in its own outer transaction."""
    from django.db import transaction

    from curator.models import ConversationTurn
    from curator.writepath import propose

    with transaction.atomic():
        result = propose(
            candidates(kind, turn, n),
            actor="job",
            owner=turn.session.owner,
            operation_id=f"extract:{turn.pk}:{kind}:{n}",
            scopes=None,
        )
        ConversationTurn.objects.filter(pk=turn.pk).update(extracted=True)
    assert result.outcome == kind, (kind, result.outcome, result.event.payload)
    return result


def existing(facts: int, items: int) -> None:
    """An install in use: `facts` memories (a third with a subject + predicate, as the rules
    write them; the rest without, as the learned model does) and `items` decided review items.
    Written in bulk, not through the write path: they are the background, not the figure."""
    from curator.models import Fact, Owner, PendingItem
    from curator.normalize import content_key

    owner = Owner.default()
    rows = []
    for i in range(facts):
        text = f"The user mentioned old thing number {i}"
        slot = ("user", f"old: {i}") if i % 3 == 0 else ("", "")
        rows.append(
            Fact(owner=owner, content=text, content_key=content_key(text), subject=slot[0],
                 predicate=slot[1], confidence=0.9)
        )  # fmt: skip
    Fact.objects.bulk_create(rows, batch_size=1000)
    PendingItem.objects.bulk_create(
        (
            PendingItem(
                owner=owner,
                candidate={"content": f"old {i}", "content_key": f"old{i}", "subject": ""},
                confidence=0.6,
                reason="low_confidence",
                status="rejected" if i % 2 else "confirmed",
            )
            for i in range(items)
        ),
        batch_size=1000,
    )


def _seed_boost(turn) -> None:
    from curator.writepath import propose

    propose(candidates("boosted", turn, 0), actor="job")


def measure(kind: str, pool: list, start: int, count: int, profile: cProfile.Profile | None):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        began, cpu = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        for n in range(start, start + count):
            propose_one(kind, pool[n % len(pool)], n)
        if profile:
            profile.disable()
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    # the outer transaction and the turn's update belong to the caller, not the write path
    own = [q for q in queries.captured_queries if not _callers(q["sql"])]
    return seconds * 1000 / count, cpu * 1000 / count, len(own) / count, len(queries) / count


def _callers(sql: str) -> bool:
    return sql.startswith(("BEGIN", "COMMIT")) or 'SET "extracted"' in sql


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=300, help="per kind")
    parser.add_argument("--facts", type=int, default=5000, help="memories there already")
    parser.add_argument("--items", type=int, default=2000, help="review items there already")
    parser.add_argument("--profile", action="store_true", help="cProfile of the written kind")
    args = parser.parse_args()
    # The queue stores its jobs (as with a consumer running): a write's cost includes
    # enqueueing its index job and card refresh, not running them.
    setup_django("writepath", {"HUEY_IMMEDIATE": "0"})
    from collections import deque

    from django.db import connection

    connection.queries_log = deque(maxlen=10**7)  # CaptureQueriesContext keeps them all

    from curator.models import Fact

    existing(args.facts, args.items)
    pool = turns(50)
    for n in range(5):  # warm caches (guardrail rules, jieba, thresholds) outside the figures
        propose_one("written", pool[0], 10_000 + n)
    profile = cProfile.Profile() if args.profile else None
    rows = []
    for kind in ("written", "superseded", "boosted"):
        if kind == "boosted":
            _seed_boost(pool[0])
        if kind == "superseded":
            propose_one("written", pool[0], 20_000)  # unrelated; the chain starts below
            from curator.writepath import Candidate, propose

            propose(
                Candidate(content="The user lives in Kyoto", subject="user", predicate="location"),
                actor="job",
            )
        ms, cpu, own, total = measure(
            kind, pool, 0, args.memories, profile if kind == "written" else None
        )
        rows.append([kind, round(ms, 2), round(cpu, 2), round(own, 1), round(total, 1)])
    print(
        f"{args.memories} memories per kind, {args.facts} facts and {args.items} review items "
        f"there before; {Fact.objects.count()} facts at the end; load {os.getloadavg()[0]:.1f}"
    )
    print(
        table(
            [
                "memory",
                "ms per memory",
                "CPU ms",
                "write-path statements",
                "statements incl. caller",
            ],
            rows,
        )
    )
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
