"""The real pipeline for bench/context.py --real: data recorded as an agent records it.

Every turn goes through `POST /api/v1/turns` with an API token (Django's test client: the
same URLconf, middleware, authentication and write path as the running server), every
session is ended with `POST /api/v1/sessions/{id}/end`, and the product's own jobs run:
extraction of each turn, indexing, the episode of each ended session (Huey in immediate
mode: the real task functions, inline). Nothing is loaded from a gold field: LoCoMo's
observations and session summaries and MADial's memory ids only decide what counts as gold
afterwards.

The product holds one person per data directory (`Owner.default()`). To ask each LoCoMo
conversation (and each MADial user) within its own memory, the owner that was just recorded
is renamed once its sessions ended, so the next one's turns go to a new owner; questions are
then asked with `assemble(owner=...)`, the function POST /context runs.

- LoCoMo: speaker A is the person (role user), speaker B the other side (role assistant);
  a turn's content is what was said (an image's caption appended as "[shares an image: ...]"),
  at the session's date plus a minute per turn. Gold = the question's evidence turns, the
  facts extraction made from them, and an episode whose session holds only gold turns.
- MADial (zh, en): each memory is something the person told the assistant on its date: one
  user turn (the memory's event text) in a session of its own, ended. Gold = that turn, the
  facts made from it and its session's episode.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from recall import DATA, _dialogue_query, _evidence_ids

LOCOMO_EVAL = ("conv-26", "conv-30")  # reserved for evaluation: never tuned on
LOCOMO_TUNE = ("conv-49", "conv-50")  # the gates were chosen on these (and a MADial half)


class Agent:
    """An agent with its own token, talking to the API in process."""

    def __init__(self):
        # bench/mcp.py would shadow the MCP SDK that the URLconf imports: bench's folder last.
        here = str(Path(__file__).resolve().parent)
        sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != here] + [here]
        sys.modules.pop("mcp", None)
        from django.test import Client

        from memsite.core.tokens import create_token

        raw = create_token("bench-agent")
        token = raw[1] if isinstance(raw, tuple) else raw
        self.client = Client(HTTP_HOST="127.0.0.1")
        self.headers = {"Authorization": f"Bearer {token}"}

    def say(self, session: str, index: int, role: str, content: str, when: datetime) -> int:
        body = {
            "session_id": session,
            "turn_index": index,
            "role": role,
            "content": content,
            "timestamp": when.isoformat(),
        }
        response = self.client.post(
            "/api/v1/turns", json.dumps(body), content_type="application/json",
            headers=self.headers,
        )  # fmt: skip
        if response.status_code not in (200, 201):
            raise RuntimeError(f"POST /turns: {response.status_code} {response.content[:200]}")
        return response.json()["id"]

    def end(self, session: str) -> None:
        response = self.client.post(f"/api/v1/sessions/{session}/end", headers=self.headers)
        if response.status_code != 202:
            raise RuntimeError(f"end session: {response.status_code} {response.content[:200]}")


def _close_owner(name: str) -> int:
    """The default owner just recorded becomes `name`; the next turns start a new one."""
    from curator.models import Owner

    owner = Owner.default()
    Owner.objects.filter(pk=owner.pk).update(key=name)
    return owner.pk


def _name_owner(name: str) -> None:
    """The person about to be recorded says who they are (onboarding's name)."""
    from curator.models import Owner

    Owner.objects.filter(pk=Owner.default().pk).update(display_name=name)


def _progress(label: str, done: int, total: int, started: float) -> None:
    rate = done / max(1e-9, time.monotonic() - started)
    print(f"\r  {label}: {done}/{total} turns ({rate:.0f}/s)", end="", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------------------


def record_locomo(
    agent: Agent, sample_ids: tuple[str, ...], named: bool = False
) -> tuple[list[dict], dict]:
    """Record the conversations; returns their questions and the yield counts. Each turn's
    session is "<sample>-s<n>" and its index the turn's place in LoCoMo's session n.
    `named`: the person gave their name (speaker A's) as a person does when setting up
    (the owner's display name, which extraction writes memories with: "Evan went ...")."""
    convs = {c["sample_id"]: c for c in json.loads((DATA / "locomo" / "locomo10.json").read_text())}
    questions, yields = [], defaultdict(int)
    for sample in sample_ids:
        conv = convs[sample]
        c, by_dia, user_turns = conv["conversation"], {}, set()
        total = sum(len(v) for k, v in c.items() if k.startswith("session_") and type(v) is list)
        started, done, n, last = time.monotonic(), 0, 1, None
        if named:
            _name_owner(c["speaker_a"])
        while f"session_{n}" in c:
            when = datetime.strptime(c[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            when = when.replace(tzinfo=UTC)
            session = f"{sample}-s{n}"
            for j, t in enumerate(c[f"session_{n}"]):
                text = t["text"]
                if t.get("blip_caption"):
                    text += f" [shares an image: {t['blip_caption']}]"
                role = "user" if t["speaker"] == c["speaker_a"] else "assistant"
                pk = agent.say(session, j, role, text, when + timedelta(minutes=j))
                by_dia[t["dia_id"]] = pk
                if role == "user":
                    user_turns.add(pk)
                done += 1
                if done % 25 == 0:
                    _progress(sample, done, total, started)
            agent.end(session)
            last, n = when, n + 1
        print(file=sys.stderr)
        owner = _close_owner(f"bench-{sample}")
        cited = {
            by_dia[d]
            for items in conv["observation"].values()
            for by_speaker in items.values()
            for _text, dia in by_speaker
            for d in (dia if isinstance(dia, list) else [dia])
            if isinstance(d, str) and d in by_dia
        }
        _count_yield(yields, user_turns, cited)
        made = _memories_from_turns(owner)
        for qa in conv["qa"]:
            if qa["category"] not in (1, 2, 3, 4):
                continue
            turns = {by_dia[d] for d in _evidence_ids(qa.get("evidence", [])) if d in by_dia}
            if turns:
                questions.append(
                    {
                        "owner": owner,
                        "query": qa["question"],
                        "gold": _gold(turns, made),
                        "now": last + timedelta(days=1),
                        "group": sample,
                        "category": qa["category"],
                    }
                )
    return questions, dict(yields)


def _count_yield(yields: dict, user_turns: set[int], cited: set[int]) -> None:
    from curator.models import Fact, PendingItem

    gave = set()
    for model in (Fact, PendingItem):
        rows = model.objects.filter(source_turn__in=user_turns)
        gave |= set(rows.values_list("source_turn", flat=True))
    cited_user = user_turns & cited
    uncited = user_turns - cited
    yields["cited"] += len(cited_user)
    yields["cited_gave"] += len(cited_user & gave)
    yields["uncited"] += len(uncited)
    yields["uncited_gave"] += len(uncited & gave)
    yields["facts"] += Fact.objects.filter(source_turn__in=user_turns).count()


def _memories_from_turns(owner: int) -> dict:
    """turn -> facts made from it; session -> (its episodes, its turns)."""
    from curator.models import ConversationTurn, Episode, Fact

    facts = defaultdict(set)
    for pk, turn in Fact.objects.filter(owner=owner, source_turn__isnull=False).values_list(
        "pk", "source_turn"
    ):
        facts[turn].add(pk)
    turns_of = defaultdict(set)
    for pk, session in ConversationTurn.objects.filter(session__owner=owner).values_list(
        "pk", "session"
    ):
        turns_of[session].add(pk)
    rows = Episode.objects.filter(owner=owner).values_list("pk", "session")
    episodes = [(pk, turns_of[session]) for pk, session in rows]
    return {"facts": facts, "episodes": episodes}


def _gold(turns: set[int], made: dict) -> set[tuple[str, int]]:
    gold = {("turn", t) for t in turns}
    gold |= {("fact", f) for t in turns for f in made["facts"].get(t, ())}
    gold |= {("episode", e) for e, of in made["episodes"] if of and of <= turns}
    return gold


# --------------------------------------------------------------------------------------
# MADial
# --------------------------------------------------------------------------------------


def record_madial(agent: Agent, lang: str) -> tuple[list[dict], dict]:
    """Each memory told on its date in a session of its own; questions split by dialogue id
    parity into `tune` (even) and `held-out` (odd) (an English dialogue's id: its line)."""
    base = DATA / "madial_bench"
    zh_memory = [json.loads(x) for x in (base / "MADial-Bench-zh-memory.json").open() if x.strip()]
    user_of = {k: v["user-id"] for d in zh_memory for k, v in d.items()}
    memory = [
        (mid, m)
        for line in (base / f"MADial-Bench-{lang}-memory.json").open()
        if line.strip()
        for mid, m in json.loads(line).items()
    ]
    by_user = defaultdict(list)
    for mid, m in memory:
        by_user[m.get("user-id", user_of.get(mid))].append((mid, m))
    questions, yields, dialogues = [], defaultdict(int), []
    for line in (base / f"MADial-Bench-{lang}-dialogue.json").open():
        if line.strip():  # the English lines have no "id": their position is it
            dialogues.append({"id": len(dialogues), **json.loads(line)})
    for uid, items in sorted(by_user.items(), key=lambda kv: str(kv[0])):
        turn_of, latest, started = {}, None, time.monotonic()
        for n, (mid, m) in enumerate(sorted(items, key=lambda x: x[1]["time"]), 1):
            when = datetime.strptime(m["time"], "%Y-%m-%d").replace(tzinfo=UTC, hour=20)
            session = f"madial-{lang}-{uid}-{mid}"
            turn_of[mid] = agent.say(session, 0, "user", m["event"], when)
            agent.end(session)
            latest = max(latest or when, when)
            if n % 25 == 0:
                _progress(f"{lang} user {uid}", n, len(items), started)
        print(file=sys.stderr)
        owner = _close_owner(f"bench-madial-{lang}-{uid}")
        every = set(turn_of.values())
        _count_yield(yields, every, every)  # every memory is something worth remembering
        made = _memories_from_turns(owner)
        for d in dialogues:
            if d["user-id"] != uid:
                continue
            turns = {turn_of[str(r)] for r in d["relevant-id"] if str(r) in turn_of}
            if turns:
                questions.append(
                    {
                        "owner": owner,
                        "query": _dialogue_query(d["dialogue"], d["test-turn"][0]),
                        "gold": _gold(turns, made),
                        "now": latest + timedelta(days=1),
                        "group": "tune" if d["id"] % 2 == 0 else "held-out",
                    }
                )
    return questions, dict(yields)


# --------------------------------------------------------------------------------------
# The zh daily-life check (bench/recall.py --sets zhdaily)
# --------------------------------------------------------------------------------------


def record_zh_daily(agent: Agent) -> list[dict]:
    """recall.load_zh_daily's sessions told through the API: per MADial zh user, one session a
    day (the memory in the first person, then an assistant's reply) with small talk sessions
    between, each ended. Gold = the turns of the memories a question asks about."""
    from recall import zh_daily_sessions

    questions = []
    for uid, sessions, spec in zh_daily_sessions():
        turn_of, last, started = {}, None, time.monotonic()
        for n, (when, mid, said, reply) in enumerate(sessions):
            session = f"zhdaily-{uid}-{n}"
            pk = agent.say(session, 0, "user", said, when)
            agent.say(session, 1, "assistant", reply, when + timedelta(minutes=1))
            agent.end(session)
            if mid is not None:
                turn_of[mid] = pk
            last = when
            if (n + 1) % 25 == 0:
                _progress(f"zhdaily user {uid}", n + 1, len(sessions), started)
        print(file=sys.stderr)
        owner = _close_owner(f"bench-zhdaily-{uid}")
        for q in spec["questions"]:
            if q["user"] == uid:
                gold = {("turn", turn_of[str(g)]) for g in q["gold"] if str(g) in turn_of}
                questions.append(
                    {"owner": owner, "query": q["q"], "gold": gold,
                     "now": last + timedelta(days=1), "group": "check"}
                )  # fmt: skip
    return questions
