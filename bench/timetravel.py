"""How long looking back takes: the Facts page / GET /memories as of a moment, a fact's
history with its intervals, and a search as of a moment, over N facts with a history.

    python bench/timetravel.py [--facts 5000] [--edits 2000]

Facts are written through the write path (each with its event), then edited, superseded and
archived at random, so the event log has several changes per fact; "as of" is the moment
half of the writes had happened.
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_kit import setup_django  # noqa: E402


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    runs, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=5000)
    parser.add_argument("--edits", type=int, default=2000)
    args = parser.parse_args()
    setup_django("timetravel", {"HUEY_IMMEDIATE": "0"})
    from django.utils import timezone

    from curator import timetravel
    from curator import writepath as wp
    from curator.models import Fact, MemoryEvent, Owner
    from retrieval.indexing import index_items
    from retrieval.search import search

    rng = random.Random(3)
    owner = Owner.default()
    started = time.perf_counter()
    ids, middle = [], None
    for n in range(args.facts):
        subject = f"topic {n % 700}" if n % 3 == 0 else ""
        candidate = wp.Candidate(
            content=f"The user noted fact {n} about topic {n % 700} and item {rng.random():.5f}",
            subject=subject,
            predicate="state" if subject else "",
            confidence=0.95,
        )
        ids.append(wp.propose(candidate, actor="agent").fact.pk)
        if n == args.facts // 2:
            middle = timezone.now()
    active = list(Fact.objects.active().values_list("pk", flat=True))
    for pk in rng.sample(active, min(args.edits, len(active))):
        if rng.random() < 0.8:
            wp.edit_fact(pk, {"content": f"Edited fact {pk} {rng.random():.5f}"}, actor="person")
        else:
            wp.archive_fact(pk, actor="person")
    index_items("fact", list(Fact.objects.all()))
    built = time.perf_counter() - started
    events = MemoryEvent.objects.count()
    print(f"{args.facts} facts, {events} events (built in {built:.0f} s); as of the middle\n")

    ms, then = timed(lambda: timetravel.facts_as_of(owner, middle))
    print(f"facts active as of the middle (Facts page, GET /memories): {ms:8.1f} ms ({len(then)})")
    ms, now = timed(lambda: timetravel.facts_as_of(owner, timezone.now()))
    print(f"facts active as of now:                                  {ms:8.1f} ms ({len(now)})")
    fact = Fact.objects.get(pk=ids[len(ids) // 3])
    ms, _ = timed(lambda: timetravel.lifetimes(fact.chain()))
    print(f"one fact's version intervals (its page):                 {ms:8.1f} ms")
    query = "what did the user note about topic 42"
    ms, _ = timed(lambda: search(query, owner=owner, record=False))
    print(f"search now:                                              {ms:8.1f} ms")
    ms, _ = timed(lambda: search(query, owner=owner, record=False, as_of=middle))
    print(f"search as of the middle:                                 {ms:8.1f} ms")


if __name__ == "__main__":
    main()
