"""Recall on every /context: `python bench/context.py [--real] [--sets locomo,zh,en] [--sweep]`.

`--real` measures the product as a new user's agent runs it (bench/realpipe.py): every turn
through POST /api/v1/turns, sessions ended, the product's own extraction and episodes, and
nothing loaded from gold fields; LoCoMo conv-26 and conv-30 (evaluation only) beside the
conversations the gates were tuned on (conv-49, conv-50), MADial zh / en with their
dialogues split by id parity (tune / held-out). It prints, per set, the gold-in-context share
of the default and of `always`, chit-chat evidence tokens, and the extraction yield. That is
the figure the README reports. Without `--real` the run below is a ceiling: it substitutes
LoCoMo's gold observations for the extractor.

Does the context an agent gets for a message hold what the person needs remembered? For
every question of LoCoMo and MADial-Bench (../shared/data, read in place), asked as the first
message of a new conversation with the default budgets, it calls `retrieval.context.assemble`
(the function POST /context runs, in process) and counts the questions whose context holds
at least one gold item, for three behaviours:

- trigger-only: what /context did before issue 19: evidence only when the message holds a
  trigger word or a time expression (之前 / 还记得 / remember / a date ...), else none;
- always: `evidence: always`, the widened search for every message, no gate;
- default: `evidence: auto` now: facts and episodes that reach the gate (the fused score on
  absolute values, CONTEXT_RECALL_GATE), widened as before when a trigger appears.

It also prints the evidence tokens each behaviour spends (mean over the questions, and over a
set of greetings and chit-chat that need no memory: bench/data/chitchat.json) and the
latency of assemble() (p50 / p95). `--sweep` repeats the default for several gates: the
figures the gate (CONTEXT_RECALL_GATE) was chosen from.

Data: LoCoMo (CC BY-NC 4.0): each conversation is one owner with its turns (as in
bench/recall.py), its `observation` facts as fact memories (each tied to the turn it cites:
a stand-in for what extraction writes) and its `session_summary` texts as episodes; gold =
the evidence turns and the facts citing them. MADial-Bench zh / en (MIT): memories are
episodes; the message is the dialogue before the test turn; gold = the relevant memories.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import realpipe  # noqa: E402
from recall import DATA, index_everything, load_locomo, load_madial, observations  # noqa: E402
from retrieval_kit import DiskCachedEmbedder, percentile, setup_django, table  # noqa: E402

CHITCHAT = BENCH / "data" / "chitchat.json"
BEHAVIOURS = ("trigger-only", "always", "default")
SWEEP = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
# --real --sweep: gates per kind (the others keep the settings'), chosen on the tune sets only
KIND_SWEEP = (
    [{"turn": t, "episode": e} for t in (0.6, 0.65, 0.68) for e in (0.5, 0.6, 0.7)]
    + [{"turn": 0.65, "episode": 0.7, "fact": 0.55}]
    + [{"fact": f} for f in (0.5, 0.52, 0.55, 0.58, 0.6)]
)  # the facts' gate, the others as set


# --------------------------------------------------------------------------------------
# Loading: LoCoMo's observations and session summaries beside its turns
# --------------------------------------------------------------------------------------


def add_locomo_memories(questions: list[dict], limit: int | None) -> None:
    """Observations become facts citing their turn; session summaries become episodes."""
    from curator.models import Episode, Fact, Owner, Session

    convs = json.loads((DATA / "locomo" / "locomo10.json").read_text())[:limit]
    cited: dict[tuple[int, int], set[int]] = defaultdict(set)  # (owner, turn) -> facts
    for conv in convs:
        owner = Owner.objects.get(key=f"locomo-{conv['sample_id']}")
        c = conv["conversation"]
        turn_of = {}
        for session in Session.objects.filter(owner=owner):
            n = int(session.external_id.rsplit("-", 1)[1])
            dias = [t["dia_id"] for t in c[f"session_{n}"]]
            for index, pk in session.turns.values_list("turn_index", "pk"):
                turn_of[dias[index]] = pk
            summary = conv["session_summary"].get(f"session_{n}_summary")
            if summary:
                Episode.objects.create(
                    owner=owner,
                    session=session,
                    summary=summary,
                    started_at=session.started_at,
                    ended_at=session.started_at + timedelta(hours=1),
                    source="bench",
                )
        for speaker, text, when, turns in observations(conv, turn_of):
            fact = Fact.objects.create(
                owner=owner,
                subject=speaker,
                content=text,
                source="llm",
                source_turn_id=turns[0] if turns else None,
                created_at=when,
                priority="permanent",
            )
            for turn in turns:
                cited[(owner.pk, turn)].add(fact.pk)
    for q in questions:
        q["gold"] |= {("fact", f) for _k, t in q["gold"] for f in cited.get((q["owner"], t), ())}


def chitchat() -> list[str]:
    data = json.loads(CHITCHAT.read_text(encoding="utf-8"))
    return data["en"] + data["zh"]


# --------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------


def ask(query: str, owner: int, now: datetime, behaviour: str, gate: float | None):
    from retrieval import triggers
    from retrieval.context import assemble

    mode = {"always": "always", "default": "auto"}.get(behaviour)
    if mode is None:  # trigger-only: what "auto" meant before issue 19
        wanted = triggers.detect(query, now).triggered
        mode = "always" if wanted else "never"
    started = time.perf_counter()
    result = assemble(query, owner=owner, now=now, evidence_mode=mode, gate=gate, record=False)
    took = (time.perf_counter() - started) * 1000
    evidence = next(s for s in result.sections if s.name == "evidence")
    return {(i["kind"], i["id"]) for i in evidence.items}, evidence.tokens, took


def measure(questions, chat: list[str], behaviour: str, gate: float | None = None) -> dict:
    hits, tokens, times = 0, [], []
    for q in questions:
        found, used, took = ask(q["query"], q["owner"], q["now"], behaviour, gate)
        hits += bool(found & q["gold"])
        tokens.append(used)
        times.append(took)
    owners = sorted({q["owner"] for q in questions})
    now = max(q["now"] for q in questions)
    chat_tokens = [
        ask(message, owner, now, behaviour, gate)[1] for owner in owners[:3] for message in chat
    ]
    return {
        "n": len(questions),
        "hit": hits / len(questions),
        "tokens": sum(tokens) / len(tokens),
        "chat_tokens": sum(chat_tokens) / len(chat_tokens),
        "chat_with_evidence": sum(1 for t in chat_tokens if t) / len(chat_tokens),
        "p50": percentile(times, 50),
        "p95": percentile(times, 95),
    }


def run_set(args) -> dict:
    setup_django(f"context-{args.single}", {"API_RATE_LIMIT": "1000000"})
    from retrieval.embedders import get_embedder, use_embedder

    embedder = DiskCachedEmbedder(get_embedder())
    use_embedder(embedder)
    if args.real:
        return run_real(args, embedder)
    if args.single == "locomo":
        questions = load_locomo(args.limit_conversations)
        add_locomo_memories(questions, args.limit_conversations)
    else:
        questions = load_madial(args.single)
    index_everything()
    chat = chitchat()
    embedder.warm_queries([q["query"] for q in questions] + chat)
    ask(chat[0], questions[0]["owner"], questions[0]["now"], "default", None)  # warm up
    out = {}
    for behaviour in BEHAVIOURS:
        started = time.monotonic()
        out[behaviour] = measure(questions, chat, behaviour)
        print(f"  {args.single}/{behaviour}: {time.monotonic() - started:.0f}s", file=sys.stderr)
    if args.sweep:
        for gate in SWEEP:
            out[f"gate {gate:.2f}"] = measure(questions, chat, "default", gate)
    return out


REAL_SETS = {
    "locomo": lambda agent: realpipe.record_locomo(agent, realpipe.LOCOMO_EVAL),
    "locomo-tune": lambda agent: realpipe.record_locomo(agent, realpipe.LOCOMO_TUNE),
    "zh": lambda agent: realpipe.record_madial(agent, "zh"),
    "en": lambda agent: realpipe.record_madial(agent, "en"),
}


def run_real(args, embedder) -> dict:
    """Record the set through the API, then ask; MADial's results per half (tune, held-out)."""
    started = time.monotonic()
    questions, yields = REAL_SETS[args.single](realpipe.Agent())
    print(f"  recorded in {time.monotonic() - started:.0f}s", file=sys.stderr)
    chat = chitchat()
    embedder.warm_queries([q["query"] for q in questions] + chat)
    ask(chat[0], questions[0]["owner"], questions[0]["now"], "default", None)  # warm up
    groups = sorted({q["group"] for q in questions}) if args.single in ("zh", "en") else []
    out = {"yields": yields, "results": {}}
    for behaviour in ("always", "default"):
        out["results"][behaviour] = measure(questions, chat, behaviour)
        for group in groups:
            part = [q for q in questions if q["group"] == group]
            out["results"][f"{behaviour} ({group})"] = measure(part, chat, behaviour)
    if args.sweep:  # one kind's gate at a time (the others keep theirs)
        for gates in KIND_SWEEP:
            for group in groups or [None]:
                part = [q for q in questions if group is None or q["group"] == group]
                label = " ".join(f"{k} {v:.2f}" for k, v in gates.items())
                label += f" ({group})" if group else ""
                out["results"][label] = measure(part, chat, "default", gates)
    return out


def print_real(name: str, out: dict) -> list:
    from django.conf import settings

    results, y = out["results"], out["yields"]
    rows = []
    for behaviour, m in results.items():
        group = behaviour[behaviour.index("(") :] if "(" in behaviour else ""
        base = results["always" + (" " + group if group else "")]
        rows.append(
            [behaviour, int(m["n"]), m["hit"], m["hit"] / base["hit"] if base["hit"] else 0.0,
             round(m["tokens"]), round(m["chat_tokens"]), m["chat_with_evidence"],
             round(m["p50"], 1), round(m["p95"], 1)]
        )  # fmt: skip
    print(f"### {name}, real pipeline (gates {settings.CONTEXT_RECALL_GATES})\n")
    headers = ["behaviour", "n", "gold in context", "× always", "evidence tokens",
               "chit-chat tokens", "chit-chat with evidence", "p50 ms", "p95 ms"]  # fmt: skip
    print(table(headers, rows))
    cited = y["cited_gave"] / y["cited"] if y.get("cited") else 0.0
    uncited = y["uncited_gave"] / y["uncited"] if y.get("uncited") else 0.0
    if name.startswith("locomo"):
        print(
            f"\nextraction yield: {y.get('cited_gave', 0)}/{y.get('cited', 0)} = {cited:.3f} of "
            f"observation-cited user turns gave a memory; {y.get('uncited_gave', 0)}/"
            f"{y.get('uncited', 0)} = {uncited:.3f} of uncited ones; {y.get('facts', 0)} facts\n"
        )
    else:  # MADial: every memory told is worth remembering
        print(
            f"\nextraction yield: {y.get('cited_gave', 0)}/{y.get('cited', 0)} = {cited:.3f} of "
            f"the memories told gave a memory; {y.get('facts', 0)} facts\n"
        )
    always, default = results["always"], results["default"]
    return [
        name, always["hit"], default["hit"],
        default["hit"] / always["hit"] if always["hit"] else 0.0,
        round(always["chat_tokens"]), round(default["chat_tokens"]),
        default["chat_tokens"] / always["chat_tokens"] if always["chat_tokens"] else 0.0,
        cited, uncited,
    ]  # fmt: skip


def print_set(name: str, results: dict) -> list:
    from django.conf import settings  # the Django settings of the parent process

    rows = []
    always = results["always"]["hit"]
    for behaviour, m in results.items():
        rows.append(
            [
                behaviour,
                int(m["n"]),
                m["hit"],
                m["hit"] / always if always else 0.0,
                round(m["tokens"]),
                round(m["chat_tokens"]),
                m["chat_with_evidence"],
                round(m["p50"], 1),
                round(m["p95"], 1),
            ]
        )
    print(f"### {name} (gate {settings.CONTEXT_RECALL_GATE})\n")
    headers = ["behaviour", "n", "gold in context", "× always", "evidence tokens",
               "chit-chat tokens", "chit-chat with evidence", "p50 ms", "p95 ms"]  # fmt: skip
    print(table(headers, rows))
    print()
    default = results["default"]
    return [
        name,
        results["trigger-only"]["hit"],
        always,
        default["hit"],
        default["hit"] / always if always else 0.0,
        round(results["always"]["chat_tokens"]),
        round(default["chat_tokens"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sets", default="locomo,zh,en", help="comma list of locomo, zh, en")
    parser.add_argument("--limit-conversations", type=int, default=None, help="LoCoMo subset")
    parser.add_argument("--sweep", action="store_true", help="the default at several gates")
    parser.add_argument("--real", action="store_true", help="the real pipeline (realpipe.py)")
    parser.add_argument("--single", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        print("RESULT " + json.dumps(run_set(args)))
        return
    setup_django("context-summary")
    if args.real:
        return main_real(args)
    print(f"\nGold items in the /context evidence ({' '.join(sys.argv[1:]) or 'defaults'})\n")
    summary = []
    for name in args.sets.split(","):
        print(f"{name}: loading, indexing, asking", file=sys.stderr)
        cmd = [sys.executable, __file__, "--single", name, *sys.argv[1:]]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
        summary.append(print_set(name, json.loads(line[7:])))
    print("### the default against `always` (goal: >= 0.9 × always, fewer chit-chat tokens)\n")
    headers = ["set", "trigger-only", "always", "default", "× always",
               "chit-chat tokens always", "chit-chat tokens default"]  # fmt: skip
    print(table(headers, summary))


def main_real(args) -> None:
    sets = args.sets if args.sets != "locomo,zh,en" else "locomo,locomo-tune,zh,en"
    print(f"\nReal pipeline: gold items in the /context evidence ({' '.join(sys.argv[1:])})\n")
    summary = []
    for name in sets.split(","):
        print(f"{name}: recording through the API, asking", file=sys.stderr)
        cmd = [sys.executable, __file__, "--single", name, *sys.argv[1:]]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
        summary.append(print_real(name, json.loads(line[7:])))
    print("### real pipeline: the default against `always` (goals: >= 0.9 × always; chit-chat "
          "tokens <= 0.35 × always's)\n")  # fmt: skip
    headers = ["set", "always", "default", "× always", "chit-chat tokens always",
               "chit-chat tokens default", "× always", "yield cited", "yield uncited"]  # fmt: skip
    print(table(headers, summary))
    print("\n(locomo = conv-26 + conv-30, evaluation only; locomo-tune = conv-49 + conv-50)")


if __name__ == "__main__":
    main()
