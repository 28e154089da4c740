"""The demo as a used install: its agents, what they recalled, the checks that already ran.

lifecycle/demo.py writes the memory itself (facts, sessions, the review queue); this module
adds what using it for two months leaves behind, each through the function that does it for
real: agents are API tokens (memsite.core.tokens), recalls are real searches recorded as
recalls (retrieval.search), contradictions are what the contradiction check finds
(lifecycle.contradictions) and the cards are what the live refresh writes (lifecycle.refresh).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from curator.models import Attachment, ConversationTurn, Episode, Fact, Owner
from lifecycle import contradictions, refresh
from memsite.core.agents import readable_scopes, set_scopes
from memsite.core.tokens import create_token
from memsite.models import ApiToken
from retrieval import search
from retrieval.models import RecallLog

RECALL_LIMIT = 5

# Data tables read better compact than one field per line, so the formatter leaves them be.
# fmt: off
# The agents (API tokens) whose conversations, proposals and recalls the demo shows. Their
# descriptions start with AGENT_MARK, which is how a reset finds them; their tokens were never
# shown to anyone, so a person who wants to connect one issues a new token.
AGENT_MARK = "演示 · Demo: "
AGENTS: list[dict[str, Any]] = [
    dict(key="chat", name="ShiYi 聊天助手", days_ago=59, scope="read-write",
         description="每天聊天用的助手：记录对话、提出记忆、每轮读取上下文。"
         "The everyday chat assistant: records turns, proposes memories, reads the context."),
    dict(key="code", name="coding agent", days_ago=35, scope="read-write",
         write_scopes=["user", "project", "insight"],
         description="Works in the Memory Curator and orchard repositories: searches for "
         "conventions and lessons, proposes project facts. 写代码的助手。"),
    dict(key="digest", name="日报 daily digest", days_ago=14, scope="read",
         read_scopes=["project"],
         description="每天早上读项目记忆、写进日报；只读，只看项目。"
         "Reads project memory for the morning digest; read-only, project scope only."),
]

# Searches the agents made (through the real search; each recall bumps the facts it returned,
# so a fact's "recalled N times" is what the recall log shows). The chat assistant asks for
# its context each turn, the others search. (agent, query, days ago, hour of the day)
RECALLS: list[tuple[str, str, int, int]] = [
    ("chat", "怎么称呼我", 13, 9), ("chat", "回答风格 简洁", 12, 21),
    ("chat", "周末可以发工作提醒吗", 11, 10), ("chat", "我住在哪个城市", 10, 8),
    ("chat", "帮我约周四晚上七点的会", 9, 16), ("chat", "新项目用什么语言", 8, 11),
    ("chat", "删除文件之前要注意什么", 7, 15), ("chat", "李雷是做什么工作的", 6, 9),
    ("chat", "orchard 内存又涨了", 2, 14), ("chat", "orchard 什么时候发布", 2, 14),
    ("chat", "备份 缓存 删除", 2, 14), ("chat", "会议纪要怎么写", 1, 17),
    ("chat", "Memory Curator 向量检索 FAISS", 0, 1), ("chat", "怎么称呼我", 0, 2),
    ("code", "pytest fixtures unittest", 12, 15), ("code", "git push --force", 9, 18),
    ("code", "database is locked migration", 8, 10), ("code", "Python version new project", 6, 14),
    ("code", "Django Ninja REST API", 5, 16), ("code", "preferred editor", 4, 11),
    ("code", "ruff lint format", 3, 10), ("code", "theme dark light", 1, 20),
    ("digest", "orchard 本周问题", 6, 7), ("digest", "orchard release day", 5, 7),
    ("digest", "Memory Curator 进展", 2, 7), ("digest", "orchard 告警", 1, 7),
    ("digest", "orchard 负责人 on-call", 0, 7),
]

# fmt: on


def demo_agents():
    return ApiToken.objects.filter(description__startswith=AGENT_MARK)


def create_agents(now: datetime) -> dict[str, ApiToken]:
    """The demo's agents, created as any agent is; the secrets are dropped unseen."""
    made = {}
    for spec in AGENTS:
        agent, _secret = create_token(spec["name"], spec["scope"])
        set_scopes(agent, read=spec.get("read_scopes", ()), write=spec.get("write_scopes", ()))
        agent.description = AGENT_MARK + spec["description"]
        agent.created_at = now - timedelta(days=spec["days_ago"], hours=2)
        agent.save(update_fields=["description", "created_at"])
        made[spec["key"]] = agent
    return made


def remove_agents() -> dict[str, int]:
    """The demo agents and the recalls they made (their other rows go with the demo)."""
    agents = demo_agents()
    recalls = RecallLog.objects.filter(agent__in=agents).delete()[1]
    return {
        "recalls": recalls.get(RecallLog._meta.label, 0),
        "agents": agents.delete()[1].get(ApiToken._meta.label, 0),
    }


def _recall_time(now: datetime, days_ago: int, hour: int, n: int) -> datetime:
    day = timezone.localtime(now) - timedelta(days=days_ago)
    at = day.replace(hour=hour, minute=(n * 7) % 60, second=0, microsecond=0)
    return min(at, now - timedelta(minutes=3 * (len(RECALLS) - n)))  # never in the future


def _existed(kind: str, obj, at: datetime) -> bool:
    """Was the item there at `at`? A recall of something written later would be a lie."""
    if isinstance(obj, Fact | Attachment):
        return obj.created_at <= at
    if isinstance(obj, ConversationTurn):
        return obj.timestamp <= at
    if isinstance(obj, Episode):
        return (obj.ended_at or obj.started_at) <= at
    return False


def recall(owner: Owner, now: datetime, agents: dict[str, ApiToken]) -> int:
    """Run the agents' searches as they would have run then, and record what each received
    (the access counts of facts and episodes follow from these recalls, as they do for real).
    Needs the search index; the number of recalls recorded."""
    planned = sorted(
        (_recall_time(now, days, hour, n), key, query)
        for n, (key, query, days, hour) in enumerate(RECALLS)
    )
    recorded = 0
    last_used: dict[str, datetime] = {}
    # No transaction around them: recalls may be written by the search's background writer.
    for at, key, query in planned:
        agent = agents[key]
        request = search.SearchRequest(
            query,
            owner=owner,
            limit=RECALL_LIMIT,
            now=at,
            record=False,
            caller="api",
            agent_id=agent.pk,
            fact_scopes=readable_scopes(agent),
        )
        result = search.search(request)
        found = search.load_items((item.kind, item.id) for item in result.items)
        kept = {k for k, obj in found.items() if _existed(k[0], obj, at)}
        # The chat assistant asks for its context each turn; the others search.
        params = {"via": "context"} if key == "chat" else None
        search.record_recall(result, kept, "api", agent_id=agent.pk, params=params)
        recorded += bool(kept)
        last_used[key] = at
    for key, at in last_used.items():
        ApiToken.objects.filter(pk=agents[key].pk).update(last_used_at=at)
    search.flush_recalls()
    return recorded


def find_contradictions(owner: Owner) -> int:
    """The contradiction check over every active fact, as the nightly run does it (the rules
    only: the demo never calls a model); how many it found."""
    return contradictions.scan(owner_id=owner.pk, use_llm=False).total


def refresh_cards(now: datetime) -> dict[str, Any]:
    """What the live refresh writes into User.md and MEMORY.md once the facts are in."""
    counts: dict[str, Any] = {}
    refresh.refresh_cards(now, counts, note="live_refresh")
    return counts
