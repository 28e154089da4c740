"""Retrieval quality on public data: `python bench/recall.py [--sets locomo,zh,en,zhdaily,zhhard]`.

Loads ../shared/data (read in place, never copied) into a throwaway database through the
product's own models and indexer, then asks every question through the same `search()`
the API and the debugger call, and prints recall@1/5/10 and MRR per retriever:

- LoCoMo (snap-research, CC BY-NC 4.0): each conversation is one owner, its sessions and
  turns (content "Speaker: text", image captions appended, timestamps from the session
  dates); questions of categories 1-4, searched within their conversation; gold = the
  evidence dialog ids (normalised as ../shared/data/README.md says). "now" = the day after
  the last session, as if the questions were asked then.
- MADial-Bench zh and en (MIT): memories are episodes of their user (time = the memory's
  date); the query is the dialogue before the test turn; gold = relevant ids.
- zhdaily: a small Chinese daily-life check (bench/data/zh_daily.json), a check and not a
  target: MADial zh's memories told in the first person as chat turns with small talk as
  noise, and hand-written questions about people, events, items and places.
- zhhard: a harder Chinese daily-life check (bench/data/zh_daily_hard.json), a check and not
  a target: two invented people's chats (about 130 turns each, small talk included) and
  questions that paraphrase the turn they are about.

Retrievers: keyword only (BM25, weight 1), vector only (cosine, weight 1), the default
preset `curator` (hybrid), `plain` (the default without the query's signals: memory keys,
the turn before, time, names, parts) and the three seed presets, with their fixed weights
(the product defaults, the same on every set). Per set and category it prints hybrid,
keyword and semantic R@5 / R@10 and hybrid's margin over the better single channel, for all
questions, the tuning split and the held-out split (docs/retrieval.md#held-out-splits).
`--memories` adds LoCoMo's observations as facts tied to their turns: a stand-in (gold data
in place of extraction), so its figure is the memory keys' ceiling.

`--real` measures the product as a user's agent runs it: each set is recorded through the API
(bench/realpipe.py: turns posted, sessions ended, the product's own extraction, indexing and
episodes; LoCoMo's person set up with their name, speaker A's, as onboarding asks), then every
question asks for turns through the same search(), so the extractor's memories are keys to
their turns. Beside it, on the same recorded turns: "turns only" (every memory deleted) and, for
LoCoMo, "gold keys" (its observations in place of the extractor's memories: the ceiling).
`--keep DIR` keeps each recording, `--reuse DIR` measures a kept one again with the current
code (every keyword row rewritten), `--conversations conv-41,...` picks LoCoMo conversations.
Vectors are
cached in bench/.cache (the first run embeds ~6,200 texts and ~1,900 queries: about 3-5
minutes on two cores; later runs take about two minutes).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import DiskCachedEmbedder, setup_django, shared_data, table  # noqa: E402

DATA = shared_data()
RETRIEVERS = {
    "keyword": {"mode": "keyword", "weights": {"keyword": 1}},
    "vector": {"mode": "semantic", "weights": {"semantic": 1}},
    "curator": {"preset": "curator"},
    # The default ranking without the query's signals (memory keys, time, names, parts).
    "plain": {"preset": "curator", "use_signals": False},
    "shiyi": {"preset": "shiyi"},
    "semibot": {"preset": "semibot"},
    "openakita": {"preset": "openakita"},
}
BM25_REFERENCE = {"locomo": (0.263, 0.468, 0.549), "zh": (0.223, 0.469, 0.612), "en": None}
TARGET_R5 = {"locomo": 0.66, "zh": 0.69, "en": 0.62}
# Issue 31's goals per LoCoMo category (R@5 of the default).
TARGET_CATEGORY_R5 = {"cat1": 0.40, "cat3": 0.45}
CATEGORY_NAMES = {
    "cat1": "multi-hop",
    "cat2": "temporal",
    "cat3": "open-domain",
    "cat4": "single-hop",
}
# Held-out splits (docs/retrieval.md#held-out-splits): no weight, rule or threshold is chosen
# on them. LoCoMo conv-26 and conv-30 are reserved for evaluation; MADial's questions alternate
# (every second dialogue of the file, counted from 0, is held out: both users keep memories).
HELD_OUT_LOCOMO = {"conv-26", "conv-30"}


def madial_split(index: int) -> str:
    return "held-out" if index % 2 else "tuned"


# --------------------------------------------------------------------------------------
# Loading the data through the product's models
# --------------------------------------------------------------------------------------


def _evidence_ids(raw: list[str]) -> set[str]:
    out = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", item):
            if m := re.match(r"D:?(\d+):0*(\d+)", part):
                out.add(f"D{int(m[1])}:{int(m[2])}")
    return out


def load_locomo(limit: int | None, speaker: bool = True) -> list[dict]:
    from curator.models import ConversationTurn, Owner, Session, Source  # noqa: F401

    convs = json.loads((DATA / "locomo" / "locomo10.json").read_text())[:limit]
    questions = []
    for conv in convs:
        owner = Owner.objects.create(key=f"locomo-{conv['sample_id']}")
        c = conv["conversation"]
        by_dia, last = {}, None
        n = 1
        while f"session_{n}" in c:
            when = datetime.strptime(c[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            when = when.replace(tzinfo=UTC)
            session = Session.objects.create(
                owner=owner, external_id=f"locomo-{conv['sample_id']}-{n}", started_at=when
            )
            turns = []
            for j, t in enumerate(c[f"session_{n}"]):
                text = f"{t['speaker']}: {t['text']}" if speaker else t["text"]
                if t.get("blip_caption"):
                    text += f" [shares an image: {t['blip_caption']}]"
                turns.append(
                    ConversationTurn(
                        session=session,
                        turn_index=j,
                        role="user" if t["speaker"] == c["speaker_a"] else "assistant",
                        content=text,
                        timestamp=when + timedelta(minutes=j),
                    )
                )
            for turn, t in zip(
                ConversationTurn.objects.bulk_create(turns), c[f"session_{n}"], strict=True
            ):
                by_dia[t["dia_id"]] = turn.pk
            last = when
            n += 1
        now = last + timedelta(days=1)
        for qa in conv["qa"]:
            if qa["category"] not in (1, 2, 3, 4):
                continue
            gold = {
                ("turn", by_dia[d]) for d in _evidence_ids(qa.get("evidence", [])) if d in by_dia
            }
            if gold:
                questions.append(
                    {
                        "owner": owner.pk,
                        "query": qa["question"],
                        "gold": gold,
                        "now": now,
                        "group": f"cat{qa['category']}",
                        "split": "held-out" if conv["sample_id"] in HELD_OUT_LOCOMO else "tuned",
                    }
                )
    return questions


def add_observations(limit: int | None) -> int:
    """--memories: LoCoMo's observations (what an LLM extractor made of each turn, with the
    turns they cite) become facts tied to their first cited turn. Questions then ask for
    turns only, so a fact is a key to its turn (memory keys), never an answer."""
    from curator.models import ConversationTurn, Owner

    made = 0
    for conv in json.loads((DATA / "locomo" / "locomo10.json").read_text())[:limit]:
        owner = Owner.objects.get(key=f"locomo-{conv['sample_id']}")
        c = conv["conversation"]
        turn_of = {}
        for turn in ConversationTurn.objects.filter(session__owner=owner).select_related("session"):
            n = int(turn.session.external_id.rsplit("-", 1)[1])
            turn_of[c[f"session_{n}"][turn.turn_index]["dia_id"]] = turn.pk
        made += observation_facts(conv, owner, turn_of)
    return made


def observations(conv: dict, turn_of: dict[str, int]):
    """A LoCoMo conversation's observations: (speaker, text, when, the pks of the turns it
    cites) for each (turn_of: LoCoMo's dialog id -> turn pk)."""
    c = conv["conversation"]
    for key, by_speaker in conv["observation"].items():
        n = int(key.split("_")[1])
        when = datetime.strptime(c[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for speaker, items in by_speaker.items():
            for text, dia in items:
                dias = dia if isinstance(dia, list) else [dia]
                turns = [turn_of[d] for d in dias if isinstance(d, str) and d in turn_of]
                yield speaker, text, when.replace(tzinfo=UTC), turns


def observation_facts(conv: dict, owner, turn_of: dict[str, int]) -> int:
    """A conversation's observations as facts of `owner`, each tied to the first turn it
    cites (turn_of: LoCoMo's dialog id -> turn pk); returns how many."""
    from curator.models import Fact

    made = [
        Fact(
            owner=owner,
            subject=speaker,
            content=text,
            source="llm",
            source_turn_id=turns[0] if turns else None,
            created_at=when,
            updated_at=when,
        )
        for speaker, text, when, turns in observations(conv, turn_of)
    ]
    Fact.objects.bulk_create(made)
    return len(made)


def _dialogue_query(lines: list[str], upto: int) -> str:
    out = []
    for line in lines[:upto]:
        line = line.strip()
        if line in ("<BOD>", "<EOD>") or not line:
            continue
        if m := re.match(r"<([^>]+)>:\s*\"?(.*?)\"?$", line):
            line = f"{m[1]}: {m[2]}"
        out.append(line)
    return "\n".join(out)


def load_madial(lang: str) -> list[dict]:
    from curator.models import Episode, Owner

    base = DATA / "madial_bench"
    zh_memory = [json.loads(x) for x in (base / "MADial-Bench-zh-memory.json").open() if x.strip()]
    user_of = {k: v["user-id"] for d in zh_memory for k, v in d.items()}
    memory = [
        json.loads(x) for x in (base / f"MADial-Bench-{lang}-memory.json").open() if x.strip()
    ]
    owners, ids = {}, {}
    for line in memory:
        for mid, m in line.items():
            uid = m.get("user-id", user_of.get(mid))
            if uid not in owners:
                owners[uid] = Owner.objects.create(key=f"madial-{lang}-{uid}")
            when = datetime.strptime(m["time"], "%Y-%m-%d").replace(tzinfo=UTC)
            ep = Episode.objects.create(
                owner=owners[uid],
                summary=m["event"],
                started_at=when,
                ended_at=when,
                source="bench",
            )
            ids[mid] = (ep.pk, uid, when)
    latest = {uid: max(w for _, u, w in ids.values() if u == uid) for uid in owners}
    questions = []
    dialogues = base / f"MADial-Bench-{lang}-dialogue.json"
    lines = [line for line in dialogues.open() if line.strip()]
    for index, line in enumerate(lines):
        d = json.loads(line)
        uid = d["user-id"]
        gold = {("episode", ids[str(r)][0]) for r in d["relevant-id"] if str(r) in ids}
        if gold and uid in owners:
            questions.append(
                {
                    "owner": owners[uid].pk,
                    "query": _dialogue_query(d["dialogue"], d["test-turn"][0]),
                    "gold": gold,
                    "now": latest[uid] + timedelta(days=1),
                    "group": "all",
                    "split": madial_split(index),
                }
            )
    return questions


def zh_daily_sessions():
    """Per MADial zh user of the zh daily-life check: (user id, its sessions in time order as
    (when, memory id or None for small talk, what the person said, the assistant's reply),
    the check's spec). The same sessions for the loaded and the recorded (--real) check."""
    import random

    spec = json.loads((Path(__file__).parent / "data" / "zh_daily.json").read_text())
    chitchat = json.loads((Path(__file__).parent / "data" / "chitchat.json").read_text())["zh"]
    base = DATA / "madial_bench"
    memory = [json.loads(x) for x in (base / "MADial-Bench-zh-memory.json").open() if x.strip()]
    rng = random.Random(31)
    by_user: dict[int, list] = defaultdict(list)
    for line in memory:
        for mid, m in line.items():
            by_user[m["user-id"]].append((mid, m))
    for uid, memories in sorted(by_user.items()):
        name = "Bart" if uid == 1 else "Lisa"
        days = [(datetime.strptime(m["time"], "%Y-%m-%d"), mid, m["event"]) for mid, m in memories]
        noise = [(rng.choice(days)[0] + timedelta(hours=2), None, line) for line in chitchat]
        sessions = []
        for day, mid, text in sorted(days + noise, key=lambda x: (x[0], x[1] or "")):
            when = day.replace(tzinfo=UTC, hour=max(day.hour, 20))
            sessions.append((when, mid, text.replace(name, "我"), rng.choice(spec["replies"])))
        yield uid, sessions, spec


def load_zh_daily() -> list[dict]:
    """A small Chinese daily-life check (bench/data/zh_daily.json; a check, not a target: no
    weight or rule is chosen on it). Each MADial zh user is a person whose memories are told
    in the first person as chat turns, one session a day with an assistant's reply, with small
    talk sessions between them as noise; the questions are hand-written, in the person's own
    words, about people, events, items and places."""
    from curator.models import Owner

    questions = []
    for uid, sessions, spec in zh_daily_sessions():
        owner, turn_of, last = Owner.objects.create(key=f"zhdaily-{uid}"), {}, None
        for n, (when, mid, said, reply) in enumerate(sessions):
            turn = _chat_day(owner, f"zhdaily-{uid}-{n}", when, said, reply)
            if mid is not None:
                turn_of[mid] = turn.pk
            last = when
        for q in spec["questions"]:
            if q["user"] == uid:
                gold = {("turn", turn_of[str(g)]) for g in q["gold"] if str(g) in turn_of}
                questions.append(
                    {
                        "owner": owner.pk,
                        "query": q["q"],
                        "gold": gold,
                        "now": last + timedelta(days=1),
                        "group": "all",
                        "split": "check",
                    }
                )
    return questions


def _chat_day(owner, external_id: str, when, said: str, reply: str):
    """One day's session of a zh check: the person's line and the assistant's reply a minute
    later; returns the person's turn."""
    from curator.models import ConversationTurn, Session

    session = Session.objects.create(owner=owner, external_id=external_id, started_at=when)
    turn = ConversationTurn.objects.create(
        session=session, turn_index=0, role="user", content=said, timestamp=when
    )
    ConversationTurn.objects.create(
        session=session,
        turn_index=1,
        role="assistant",
        content=reply,
        timestamp=when + timedelta(minutes=1),
    )
    return turn


def load_zh_hard() -> list[dict]:
    """A harder Chinese daily-life check (bench/data/zh_daily_hard.json; a check, not a target:
    no weight, rule or threshold is chosen on it). Two invented people chat with an assistant,
    one session a day (their line and the assistant's reply), facts and small talk shuffled
    with a fixed seed, about 130 turns each; the questions paraphrase the gold turn (few
    shared words: synonyms, colloquial words, relations instead of names)."""
    import random

    from curator.models import Owner

    spec = json.loads((Path(__file__).parent / "data" / "zh_daily_hard.json").read_text())
    rng = random.Random(31)
    questions, turn_of = [], {}
    for number, person in enumerate(spec["people"]):
        owner = Owner.objects.create(key=f"zhhard-{number}")
        entries = list(person["entries"])
        rng.shuffle(entries)
        when = datetime.strptime(person["start"], "%Y-%m-%d").replace(tzinfo=UTC, hour=21)
        for n, (gid, said, reply) in enumerate(entries):
            when += timedelta(days=rng.choice((1, 1, 2, 3)))
            reply = reply or rng.choice(spec["replies"])
            turn = _chat_day(owner, f"zhhard-{number}-{n}", when, said, reply)
            if gid:
                turn_of[gid] = turn.pk
        questions += [
            {
                "owner": owner.pk,
                "query": q["q"],
                "gold": {("turn", turn_of[g]) for g in q["gold"]},
                "now": when + timedelta(days=1),
                "group": "all",
                "split": "check",
            }
            for q in spec["questions"]
            if q["person"] == number
        ]
    return questions


def index_everything() -> None:
    from retrieval.reindex import reindex

    started = time.monotonic()
    summary = reindex()
    print(f"  indexed {summary.done} items in {time.monotonic() - started:.0f}s", file=sys.stderr)


# --------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------


def evaluate(questions: list[dict], retriever: dict) -> dict[str, dict[str, float]]:
    from retrieval.search import search

    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for q in questions:
        result = search(
            q["query"],
            owner=q["owner"],
            limit=10,
            now=q["now"],
            record=False,
            kinds=q.get("kinds"),
            **retriever,
        )
        keys = [(i.kind, i.id) for i in result.items]
        gold = q["gold"]
        first = next((n for n, key in enumerate(keys, 1) if key in gold), None)
        values = {f"R@{k}": len(gold & set(keys[:k])) / len(gold) for k in (1, 5, 10)}
        values["MRR"] = 1 / first if first else 0.0
        # R@5 counts the share of a question's gold within five: with more than five gold
        # turns no ranking reaches 1, so the best any ranking could reach is 5/len(gold).
        values["ceiling R@5"] = min(len(gold), 5) / len(gold)
        for group in {"all", q["group"]}:
            for split in ("", f"/{q['split']}"):
                sums[group + split]["n"] += 1
                for name, value in values.items():
                    sums[group + split][name] += value
    return {g: {k: (v / s["n"] if k != "n" else v) for k, v in s.items()} for g, s in sums.items()}


def apply_experiments(patches: list[str], tokenizer: str | None) -> None:
    import importlib

    from django.db import connection

    from retrieval import schema

    for item in patches:
        target, value = item.split("=", 1)
        module, name = target.rsplit(".", 1)
        setattr(importlib.import_module(module), name, json.loads(value))
    if tokenizer:
        with connection.cursor() as cur:
            cur.execute("DROP TABLE search_fts")
            cur.execute(
                "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, grams, context, "
                f"tokenize='{tokenizer}')"
            )
            for sql in schema.FTS_TRIGGERS:
                cur.execute(sql)


def run_set(args) -> dict:
    """One data set in its own database (BM25 statistics are per index, as in a real install)."""
    overrides = dict(item.split("=", 1) for item in args.set)
    if args.real:
        overrides.setdefault("API_RATE_LIMIT", "1000000")
    reuse = Path(args.reuse) / args.single if args.reuse else None
    setup_django(f"recall-{args.single}", overrides, copy_of=reuse)
    apply_experiments(args.patch, args.fts_tokenizer)
    from retrieval.embedders import get_embedder, use_embedder

    embedder = DiskCachedEmbedder(get_embedder())
    use_embedder(embedder)
    if args.real:
        return run_real(args, embedder)
    if args.single == "locomo":
        questions = load_locomo(args.limit_conversations, speaker=not args.no_speaker)
        if args.memories:
            print(f"  {add_observations(args.limit_conversations)} observations", file=sys.stderr)
            for q in questions:
                q["kinds"] = ["turn"]
    elif args.single == "zhdaily":
        questions = load_zh_daily()
    elif args.single == "zhhard":
        questions = load_zh_hard()
    else:
        questions = load_madial(args.single)
    index_everything()
    embedder.warm_queries([q["query"] for q in questions])
    return evaluate_all(args, questions)


def evaluate_all(args, questions: list[dict], suffix: str = "") -> dict:
    results = {}
    for name in args.names:
        started = time.monotonic()
        results[name + suffix] = evaluate(questions, RETRIEVERS[name])
        took = time.monotonic() - started
        print(f"  {args.single}/{name}{suffix}: {took:.0f}s", file=sys.stderr)
    return results


# --------------------------------------------------------------------------------------
# --real: the product as a user's agent runs it
# --------------------------------------------------------------------------------------

# The three measurements of --real, on the same recorded turns (suffixes of the results).
REAL = ""  # the memories the product's extractor made are the keys
TURNS_ONLY = " | turns only"  # the same turns, no memories (every fact deleted)
CEILING = " | gold keys"  # LoCoMo's observations in place of the extractor's memories


def locomo_samples(args) -> list[str]:
    convs = json.loads((DATA / "locomo" / "locomo10.json").read_text())
    if args.conversations:
        return args.conversations.split(",")
    return [c["sample_id"] for c in convs[: args.limit_conversations]]


def record_real(args) -> list[dict]:
    """The set recorded through the API (bench/realpipe.py: turns posted, sessions ended, the
    product's own jobs: extraction, indexing, episodes); questions ask for turns only, so a
    memory is a key to its turn (gold: the evidence turns)."""
    import realpipe

    agent = realpipe.Agent()
    if args.single == "locomo":
        samples = tuple(locomo_samples(args))
        raw, _yields = realpipe.record_locomo(agent, samples, named=not args.unnamed)
        for q in raw:
            q["split"] = "held-out" if q["group"] in HELD_OUT_LOCOMO else "tuned"
            q["group"] = f"cat{q['category']}"
    elif args.single == "zhdaily":
        raw = realpipe.record_zh_daily(agent)
        for q in raw:
            q["split"], q["group"] = "check", "all"
    else:
        raw, _yields = realpipe.record_madial(agent, args.single)
        for q in raw:
            q["split"] = "tuned" if q["group"] == "tune" else "held-out"
            q["group"] = "all"
    for q in raw:
        q["gold"] = {tuple(g) for g in q["gold"] if g[0] == "turn"}
        q["kinds"] = ["turn"]
    return raw


def _save_questions(questions: list[dict], path: Path) -> None:
    rows = [{**q, "gold": sorted(q["gold"]), "now": q["now"].isoformat()} for q in questions]
    path.write_text(json.dumps(rows))


def _load_questions(path: Path) -> list[dict]:
    rows = json.loads(path.read_text())
    for q in rows:
        q["gold"], q["now"] = {tuple(g) for g in q["gold"]}, datetime.fromisoformat(q["now"])
    return rows


def run_real(args, embedder) -> dict:
    """Record (or reuse a kept recording, reindexed with the current code), then measure the
    real pipeline, the same turns without memories, and for LoCoMo its observations as keys."""
    import shutil

    from django.conf import settings
    from django.db import connection

    from curator.models import Fact

    started = time.monotonic()
    if args.reuse:
        questions = _load_questions(settings.DATA_DIR / "bench-questions.json")
        from retrieval.models import SearchDoc

        SearchDoc.objects.update(fts_version="")  # every keyword row as the current code writes
        index_everything()
        if args.single == "locomo" and args.conversations:  # a part of the kept recording
            from curator.models import Owner

            wanted = {f"bench-{sample}" for sample in locomo_samples(args)}
            owners = set(Owner.objects.filter(key__in=wanted).values_list("pk", flat=True))
            questions = [q for q in questions if q["owner"] in owners]
    else:
        questions = record_real(args)
        print(f"  recorded in {time.monotonic() - started:.0f}s", file=sys.stderr)
        _save_questions(questions, settings.DATA_DIR / "bench-questions.json")
        if args.keep:
            connection.close()
            shutil.copytree(settings.DATA_DIR, Path(args.keep) / args.single, dirs_exist_ok=True)
    embedder.warm_queries([q["query"] for q in questions])
    facts = Fact.objects.count()
    print(f"  {facts} memories extracted", file=sys.stderr)
    results = evaluate_all(args, questions, REAL)
    if args.real_only:
        return {"results": results, "facts": facts}
    Fact.objects.all().delete()
    index_everything()
    results |= evaluate_all(args, questions, TURNS_ONLY)
    if args.single == "locomo":
        _observations_as_keys(args)
        index_everything()
        results |= evaluate_all(args, questions, CEILING)
    return {"results": results, "facts": facts}


def _observations_as_keys(args) -> None:
    """LoCoMo's observations tied to the recorded turns (session "<sample>-s<n>", index j)."""
    from curator.models import ConversationTurn, Owner

    convs = {c["sample_id"]: c for c in json.loads((DATA / "locomo" / "locomo10.json").read_text())}
    for sample in locomo_samples(args):
        conv, owner = convs[sample], Owner.objects.get(key=f"bench-{sample}")
        c, turn_of = conv["conversation"], {}
        rows = ConversationTurn.objects.filter(session__owner=owner).select_related("session")
        for turn in rows:
            n = int(turn.session.external_id.rsplit("-s", 1)[1])
            turn_of[c[f"session_{n}"][turn.turn_index]["dia_id"]] = turn.pk
        observation_facts(conv, owner, turn_of)


def print_set(set_name: str, names: list[str], results: dict, title: str = "") -> list:
    whole = sorted((g for g in results[names[0]] if "/" not in g), key=lambda g: (g != "all", g))
    set_name, label = set_name, f"{set_name}{title}"
    rows = []
    for g in whole:
        for r in names:
            m = results[r][g]
            rows.append([g, r, int(m["n"]), m["R@1"], m["R@5"], m["R@10"], m["MRR"]])
    if ref := BM25_REFERENCE.get(set_name):
        rows.append(["all", "BM25 only (data README)", "", *ref, ""])
    print(f"### {label}\n")
    print(table(["group", "retriever", "n", "R@1", "R@5", "R@10", "MRR"], rows))
    print()
    print_ceiling(set_name, results[names[0]], whole)
    if not {"keyword", "vector", "curator"} <= set(names):
        return []
    print(f"#### {label}: hybrid (curator) against the best single channel, per split\n")
    print(table(MARGIN_HEADER, margin_rows(results, whole)))
    print()
    splits = ("", "/tuned", "/held-out") if set_name in TARGET_R5 else ("",)
    splits = [split for split in splits if "all" + split in results["curator"]]
    rows = [summary_row(set_name, results, split) for split in splits]
    return [[label, *row[1:]] for row in rows]


REAL_TITLES = {
    REAL: ", real pipeline (recorded through the API; the extractor's memories as keys)",
    TURNS_ONLY: ", the same recorded turns without memories (turns only)",
    CEILING: ", ceiling: LoCoMo's gold observations as keys in place of the extractor's",
}


def print_real_set(set_name: str, names: list[str], out: dict) -> list:
    """--real: each measurement's tables, then the three side by side per group and split."""
    results, summary, phases = out["results"], [], []
    for suffix, title in REAL_TITLES.items():
        if all(name + suffix in results for name in names):
            phases.append(suffix)
            part = {name: results[name + suffix] for name in names}
            summary += print_set(set_name, names, part, title)
    if "curator" not in names:
        return summary
    print(f"#### {set_name}: hybrid R@5 (keyword / semantic alone), {out['facts']} memories\n")
    rows = []
    for key in sorted(results["curator"], key=lambda g: (g.split("/")[0] != "all", g)):
        group, _, split = key.partition("/")
        row = [f"{group} ({CATEGORY_NAMES[group]})" if group in CATEGORY_NAMES else group]
        row += [split or "all", int(results["curator"][key]["n"])]
        for suffix in phases:
            cells = [results[r + suffix][key]["R@5"] for r in ("curator", "keyword", "vector")
                     if r + suffix in results]  # fmt: skip
            row.append(" / ".join(f"{v:.3f}" for v in cells))
        rows.append(row)
    labels = {REAL: "real pipeline", TURNS_ONLY: "turns only", CEILING: "gold keys (ceiling)"}
    print(table(["group", "split", "n", *(labels[p] for p in phases)], rows))
    print()
    return summary


def print_ceiling(set_name: str, result: dict, groups: list[str]) -> None:
    """CEILING: the best R@5 any ranking could reach with k=5, per group and split (a
    question with more than five gold turns caps at 5/len(gold)), so a goal can be read
    against what k=5 allows."""
    cells = []
    for g in groups:
        label = f"{g} ({CATEGORY_NAMES[g]})" if g in CATEGORY_NAMES else g
        values = [
            f"{split[1:] or 'all'} {result[g + split]['ceiling R@5']:.3f}"
            for split in ("", "/tuned", "/held-out")
            if g + split in result and "ceiling R@5" in result[g + split]
        ]
        cells.append(f"{label}: {' / '.join(values)}")
    print(f"CEILING {set_name} (best R@5 any ranking could reach, k=5): " + "; ".join(cells))
    print()


MARGIN_HEADER = [
    "group", "split", "n", "hybrid R@5", "hybrid R@10", "keyword R@5", "semantic R@5",
    "margin R@5", "margin R@10",
]  # fmt: skip


def margin_rows(results: dict, groups: list[str]) -> list[list]:
    """Per group and split: hybrid R@5/R@10, each channel alone, and hybrid's margin over the
    better of the two (negative: the fusion lost to a single channel)."""
    rows = []
    for g in groups:
        for split in ("", "/tuned", "/held-out"):
            key = g + split
            if key not in results["curator"]:
                continue
            hybrid, kw, sem = (results[r][key] for r in ("curator", "keyword", "vector"))
            best5, best10 = (max(kw[m], sem[m]) for m in ("R@5", "R@10"))
            label = f"{g} ({CATEGORY_NAMES[g]})" if g in CATEGORY_NAMES else g
            rows.append([
                label, split[1:] or "all", int(hybrid["n"]), hybrid["R@5"], hybrid["R@10"],
                kw["R@5"], sem["R@5"], f"{hybrid['R@5'] - best5:+.3f}",
                f"{hybrid['R@10'] - best10:+.3f}",
            ])  # fmt: skip
    return rows


def summary_row(set_name: str, results: dict, split: str) -> list:
    key = "all" + split
    default = results["curator"][key]
    best = max(results["keyword"][key]["R@5"], results["vector"][key]["R@5"])
    target = TARGET_R5.get(set_name, 0.0)  # zhdaily, zhhard: checks, no target
    met = default["R@5"] >= best and default["R@5"] >= target
    if set_name == "locomo":
        for g, target in TARGET_CATEGORY_R5.items():
            met = met and results["curator"].get(g + split, {}).get("R@5", 0) >= target
    return [
        set_name,
        split[1:] or "all",
        default["R@5"],
        default["R@10"],
        best,
        f"{default['R@5'] - best:+.3f}",
        TARGET_R5.get(set_name, "check"),
        "yes" if met else "no",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--sets",
        default="locomo,zh,en,zhdaily,zhhard",
        help="comma list of locomo, zh, en, zhdaily, zhhard",
    )
    parser.add_argument("--retrievers", default=",".join(RETRIEVERS))
    parser.add_argument("--limit-conversations", type=int, default=None, help="LoCoMo subset")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a MEMSITE_ setting, e.g. --set SEARCH_TOP_K=20",
    )
    parser.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="module.NAME=VALUE",
        help="experiment: set a module constant, e.g. --patch retrieval.backends.GRAMS_WEIGHT=0",
    )
    parser.add_argument(
        "--fts-tokenizer", help="experiment: rebuild search_fts with this tokenizer"
    )
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar='NAME={"weights": {...}}',
        help="experiment: another retriever (search() keyword arguments as JSON)",
    )
    parser.add_argument(
        "--no-speaker",
        action="store_true",
        help="experiment: LoCoMo turns without the speaker name",
    )
    parser.add_argument(
        "--memories",
        action="store_true",
        help="LoCoMo: its observations as facts tied to their turns (memory keys); "
        "questions ask for turns only",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="record each set through the API (bench/realpipe.py) and measure the product's "
        "own memories as keys, beside the same turns without memories and (LoCoMo) its "
        "gold observations as keys, a ceiling",
    )
    parser.add_argument("--conversations", help="--real: LoCoMo sample ids, comma separated")
    parser.add_argument(
        "--unnamed",
        action="store_true",
        help="--real: LoCoMo's person (speaker A) without the name they set up with",
    )
    parser.add_argument("--real-only", action="store_true", help="--real: skip the comparisons")
    parser.add_argument("--keep", metavar="DIR", help="--real: keep each recording in DIR/<set>")
    parser.add_argument(
        "--reuse", metavar="DIR", help="--real: measure recordings kept with --keep (reindexed)"
    )
    parser.add_argument("--single", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for item in args.extra:
        name, spec = item.split("=", 1)
        RETRIEVERS[name] = json.loads(spec)
    if args.real and args.retrievers == ",".join(RETRIEVERS):  # three measurements each
        args.retrievers = "keyword,vector,curator"
    args.names = args.retrievers.split(",") + [item.split("=", 1)[0] for item in args.extra]
    if args.single:
        print("RESULT " + json.dumps(run_set(args)))
        return
    print(f"\nRetrieval recall, top 10 per question ({' '.join(sys.argv[1:]) or 'defaults'})\n")
    summary = []
    for set_name in args.sets.split(","):
        print(f"{set_name}: loading, indexing, searching", file=sys.stderr)
        cmd = [sys.executable, __file__, "--single", set_name, *sys.argv[1:]]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
        if args.real:
            summary += print_real_set(set_name, args.names, json.loads(line[7:]))
        else:
            summary += print_set(set_name, args.names, json.loads(line[7:]))
    if summary:
        print("### the default (curator) against the best single channel and the targets\n")
        header = ["set", "split", "R@5", "R@10", "best single R@5", "margin", "target R@5", "met"]
        print(table(header, summary))
        print("\n(LoCoMo's 'met' also needs multi-hop >= .40 and open-domain >= .45.)")


if __name__ == "__main__":
    main()
