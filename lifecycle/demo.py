"""Demo memory for a first look: every page has something realistic to show.

The data belongs to a fictional person, 李雷 (Li Lei), a backend engineer in Hangzhou who
uses an assistant while building "Memory Curator" and running a service called "orchard".

How demo rows stay recognisable (so `reset` never touches the person's own memory):
- Fact.source == "demo";
- Session.external_id starts with "demo-" (its turns cascade with it);
- Episode.source == "demo"; Attachment is linked to a demo session;
- PendingItem.candidate["demo"] is true (the model has no source column; the candidate's
  source is the extractor or agent it stands for; older demos: candidate["source"] == "demo"),
  and the facts its confirmed items wrote (PendingItem.resulting_fact);
- the agents' descriptions start with demo_use.AGENT_MARK (their recalls go with them);
- MemoryEvent.operation_id starts with "demo:" (also the idempotency key of each event);
- the Scratchpad is created only if the owner has none, and removed only while its content
  is still exactly the demo text (once a person edits it, it is theirs).

Times are relative to `now`, so the demo always looks recent: facts spread over ~60 days,
one finished session two days ago and one still open today. What using it left behind
(agents, recalls, the contradiction check, the cards) is made in lifecycle/demo_use.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from curator.models import (
    Actor,
    Attachment,
    ConversationTurn,
    Direction,
    Episode,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Outcome,
    Owner,
    PendingItem,
    PendingReason,
    PendingStatus,
    Scratchpad,
    Session,
    Source,
    expiry_for,
)
from curator.thresholds import source_key
from curator.tokencount import estimate_tokens
from curator.writepath import Work, confirm_pending, ignore_pending, snapshot
from lifecycle import demo_use
from retrieval.indexing import index_all, remove_item

DEMO_SOURCE = Source.DEMO
SESSION_PREFIX = "demo-"
OP_PREFIX = "demo:"

# --------------------------------------------------------------------------------------
# Sessions and turns. Each turn: (role, content, minutes after the session start, extras).
# The first session is finished (extracted, summarised into an episode); the second is the
# one the person is in right now, so its last turns are not extracted yet.
# --------------------------------------------------------------------------------------

LEAK_TOOL_CALLS = [
    {
        "id": "call_demo_1",
        "type": "function",
        "function": {
            "name": "run_shell",
            "arguments": {"cmd": "ps -eo pid,rss,cmd --sort=-rss | head -5", "host": "orchard-2"},
        },
    }
]
LEAK_TOOL_RESULTS = [
    {
        "tool_call_id": "call_demo_1",
        "name": "run_shell",
        "ok": True,
        "output": (
            "  PID   RSS CMD\n"
            " 4121 3874112 celery -A orchard worker --concurrency=8\n"
            " 4120 3650020 celery -A orchard worker --concurrency=8\n"
            "  988  412300 gunicorn orchard.wsgi"
        ),
    }
]

SESSIONS: list[dict[str, Any]] = [
    {
        "key": "s1",
        "days_ago": 2,
        "hour": 14,
        "title": "排查 orchard 的内存泄漏",
        "duration_min": 38,
        "llm_calls": 2,
        "turns": [
            ("user", "orchard 的 worker 内存又涨到 3G 多了，帮我看看是哪个进程。", 0, {}),
            (
                "assistant",
                "我先在 orchard-2 上按内存排序看一下进程。",
                2,
                {"tool_calls": LEAK_TOOL_CALLS, "tool_results": LEAK_TOOL_RESULTS},
            ),
            (
                "assistant",
                "是 Celery worker：两个进程各占约 3.7G。concurrency=8 且没有设置 "
                "max_tasks_per_child，长任务里的缓存一直不释放。",
                4,
                {},
            ),
            ("user", "先别重启，下午三点和王芳一起 review，我把会议纪要发你。", 9, {}),
            (
                "assistant",
                "好的。建议先加 `--max-tasks-per-child=200`，再观察一天。"
                "另外记得先备份 /var/lib/orchard/cache 再清理，不要直接删。",
                12,
                {},
            ),
            (
                "user",
                "Yes, backup first. Last time deleting it directly lost a day's data.",
                20,
                {},
            ),
            (
                "assistant",
                "已整理成会议纪要 meeting-notes.pdf：结论是限制 max_tasks_per_child，"
                "周二随版本发布，王芳负责观察监控。",
                31,
                {},
            ),
            ("user", "好，就这样。谢谢。", 38, {}),
        ],
    },
    {
        "key": "s2",
        "days_ago": 0,
        "minutes_ago": 50,
        "title": "Memory Curator: 向量检索选型",
        "duration_min": None,  # still open: no ended_at, no episode yet
        "llm_calls": 1,
        "turns": [
            (
                "user",
                "Memory Curator 的向量检索，之前我们说用 FAISS，你还记得吗？",
                0,
                {},
            ),
            (
                "assistant",
                "记得，40 天前定的是 FAISS。不过现在整个项目都在一个 SQLite 文件里，"
                "sqlite-vec 可以直接放在同一个库里，部署少一个依赖。",
                2,
                {},
            ),
            ("user", "那就改用 sqlite-vec，不再引入 FAISS。我发你一张架构草图。", 6, {}),
            (
                "assistant",
                "收到 架构草图.png：L0 是 SQLite 原始层，L1 是 Markdown 卡片，"
                "L2 是 FTS5 + sqlite-vec。我会把向量检索的决定更新到项目记忆里。",
                8,
                {},
            ),
            ("user", "Embedding 用本地模型就行，默认离线。", 15, {}),
            (
                "assistant",
                "OK: the default embedder stays local (multilingual-e5-small, 384-d); "
                "an OpenAI-compatible endpoint stays optional.",
                17,
                {},
            ),
            ("user", "还有个问题：jieba 分词的用户词典要不要放进 data 目录？", 25, {}),
            (
                "assistant",
                "建议放在 data/ 下并允许通过配置覆盖，这样换机器时跟着数据一起走。"
                "这个我先记在草稿板的待定问题里。",
                28,
                {},
            ),
        ],
        # Only the first five turns have been through extraction yet.
        "extracted_upto": 5,
    },
]

# --------------------------------------------------------------------------------------
# Facts. `prev` names the fact this one supersedes (the old one becomes status superseded).
# `at` ties a fact to the turn it was extracted from (its created_at follows that turn).
# `via` is the simulated origin, kept as a tag because every demo row has source="demo".
# --------------------------------------------------------------------------------------

# Data tables read better compact than one field per line, so the formatter leaves them be.
# fmt: off
FACTS: list[dict[str, Any]] = [
    # identity -------------------------------------------------------------------------
    dict(key="name", scope="user", type="identity", subject="李雷", predicate="姓名",
         content="用户叫李雷（Li Lei），希望被直接称呼为“李雷”", confidence=1.0,
         importance=1.0, priority="permanent", days_ago=59, verified=True, via="onboarding",
         actor="person", tags=["profile"], hits=6),
    dict(key="job", scope="user", type="identity", subject="李雷", predicate="职业",
         content="李雷是后端工程师，主要用 Python 写服务端和数据管道", confidence=0.95,
         importance=0.9, priority="permanent", days_ago=59, verified=True, via="onboarding",
         actor="person", tags=["profile", "work"], hits=3),
    # supersede chain 1: city 北京 -> 杭州
    dict(key="city_bj", scope="user", type="fact", subject="李雷", predicate="居住城市",
         content="李雷住在北京", confidence=0.9, importance=0.6, priority="permanent",
         days_ago=58, verified=True, via="onboarding", actor="person", tags=["profile"]),
    dict(key="city_hz", prev="city_bj", scope="user", type="fact", subject="李雷",
         predicate="居住城市", content="李雷已经搬到杭州，在杭州工作", confidence=0.95,
         importance=0.6, priority="permanent", days_ago=20, verified=True, via="llm",
         actor="agent", supersede_actor="person", tags=["profile"], hits=2),
    # preferences ----------------------------------------------------------------------
    dict(key="python", scope="user", type="preference", subject="李雷", predicate="编程语言",
         content="偏好 Python，新项目默认用 Python 3.12", confidence=0.92, importance=0.8,
         priority="permanent", days_ago=57, verified=True, via="onboarding", actor="person",
         tags=["coding"], hits=5),
    dict(key="pytest", scope="user", type="preference", subject="李雷",
         predicate="test framework",
         content="Prefers pytest over unittest, with plain assert statements and fixtures",
         confidence=0.88, importance=0.6, priority="long_term", days_ago=12, verified=False,
         via="rules", actor="job", tags=["coding", "testing"],
         hits=3),
    dict(key="style", scope="user", type="preference", subject="李雷", predicate="回答风格",
         content="偏好简洁的中文回答；代码和注释用英文", confidence=0.93, importance=0.85,
         priority="permanent", days_ago=56, verified=True, via="onboarding", actor="person",
         tags=["communication"], hits=4),
    # supersede chain 2 (three long): VS Code -> Neovim -> Helix
    dict(key="ed_vscode", scope="user", type="preference", subject="李雷",
         predicate="preferred editor", content="Uses VS Code as the main editor",
         confidence=0.85, importance=0.4, priority="long_term", days_ago=55, verified=False,
         via="rules", actor="job", tags=["tools"]),
    dict(key="ed_nvim", prev="ed_vscode", scope="user", type="preference", subject="李雷",
         predicate="preferred editor",
         content="Switched from VS Code to Neovim (LazyVim config)", confidence=0.9,
         importance=0.4, priority="long_term", days_ago=30, verified=False, via="llm",
         actor="agent", agent="code", supersede_actor="agent", tags=["tools"]),
    dict(key="ed_helix", prev="ed_nvim", scope="user", type="preference", subject="李雷",
         predicate="preferred editor",
         content="Now uses Helix; finds its modal editing simpler than Neovim", confidence=0.9,
         importance=0.45, priority="long_term", days_ago=6, verified=True, via="manual",
         actor="person", supersede_actor="person", tags=["tools"]),
    dict(key="terse_late", scope="insight", type="preference", subject="李雷",
         predicate="晚间回答长度",
         content="晚上 9 点以后提问时，李雷通常只要要点，不要长篇解释", confidence=0.66,
         importance=0.4, priority="long_term", days_ago=9, verified=False,
         via="consolidation", actor="job", tags=["communication", "pattern"], hits=4),
    # rules and constraints ------------------------------------------------------------
    dict(key="no_weekend", scope="user", type="rule", subject="提醒", predicate="周末",
         content="不要在周末发工作提醒", confidence=1.0, importance=0.95, priority="permanent",
         days_ago=54, verified=True, via="manual", actor="person", tags=["reminders"]),
    dict(key="force_push", scope="user", type="rule", subject="git", predicate="force push",
         content="Always ask before running git push --force on any shared branch",
         confidence=0.95, importance=0.9, priority="permanent", days_ago=33, verified=True,
         via="manual", actor="person", tags=["git", "safety"]),
    dict(key="no_meetings", scope="user", type="constraint", subject="李雷",
         predicate="会议时间", content="工作日 18:30 以后不安排会议（要去接孩子）",
         confidence=0.85, importance=0.7, priority="permanent", days_ago=27, verified=True,
         via="llm", actor="agent", tags=["calendar"]),
    dict(key="no_secrets", scope="system", type="constraint", subject="memory",
         predicate="secrets",
         content="Never store passwords, API keys or access tokens in memory", confidence=1.0,
         importance=1.0, priority="permanent", days_ago=60, verified=True, via="manual",
         actor="person", tags=["safety", "privacy"]),
    # lessons --------------------------------------------------------------------------
    dict(key="backup", scope="insight", type="error", subject="删除文件", predicate="教训",
         content="直接删除文件会导致数据丢失，先备份再删除", confidence=0.9, importance=0.9,
         priority="permanent", days_ago=44, verified=True, via="llm", actor="agent",
         tags=["lesson", "safety"], hits=3),
    dict(key="locked", scope="insight", type="error", subject="SQLite",
         predicate="database is locked",
         content="Running migrations while the Huey consumer is writing to the same SQLite "
         "file gave 'database is locked'; stop the consumer first",
         confidence=0.8, importance=0.7, priority="long_term", days_ago=15, verified=False,
         via="llm", actor="job", tags=["lesson", "sqlite"]),
    # skills ---------------------------------------------------------------------------
    dict(key="django", scope="user", type="skill", subject="李雷", predicate="Django",
         content="熟悉 Django 和 Django Ninja，能独立设计 REST API", confidence=0.85,
         importance=0.6, priority="permanent", days_ago=50, verified=False, via="llm",
         actor="job", tags=["coding"], hits=2),
    dict(key="k8s", scope="user", type="skill", subject="李雷", predicate="Kubernetes",
         content="Knows Docker and basic Kubernetes; has not used Helm yet", confidence=0.7,
         importance=0.4, priority="long_term", days_ago=18, verified=False, via="llm",
         actor="job", tags=["ops"]),
    # project facts --------------------------------------------------------------------
    dict(key="mc_what", scope="project", type="fact", subject="Memory Curator",
         predicate="是什么",
         content="Memory Curator 是本地优先的记忆管理面板：所有数据在一个 SQLite 文件里，"
         "由人决定助手记住什么",
         confidence=1.0, importance=0.9, priority="permanent", days_ago=45, verified=True,
         via="manual", actor="person", tags=["memory-curator"]),
    # supersede chain 3: FAISS -> sqlite-vec, decided in today's session
    dict(key="vec_faiss", scope="project", type="fact", subject="Memory Curator",
         predicate="向量检索", content="Memory Curator 的向量检索计划使用 FAISS",
         confidence=0.85, importance=0.7, priority="long_term", days_ago=40, verified=False,
         via="llm", actor="job", tags=["memory-curator", "retrieval"]),
    dict(key="vec_sqlite", prev="vec_faiss", scope="project", type="fact",
         subject="Memory Curator", predicate="向量检索",
         content="Memory Curator 改用 sqlite-vec 做向量检索，不再引入 FAISS",
         confidence=0.95, importance=0.75, priority="long_term", at=("s2", 2), verified=True,
         via="llm", actor="agent", supersede_actor="person",
         tags=["memory-curator", "retrieval"]),
    dict(key="embed_local", scope="project", type="constraint", subject="Memory Curator",
         predicate="embedder",
         content="Embeddings default to a local offline model; an OpenAI-compatible endpoint "
         "is optional",
         confidence=0.9, importance=0.6, priority="long_term", at=("s2", 4), verified=False,
         via="rules", actor="job", tags=["memory-curator", "retrieval"]),
    dict(key="orchard_what", scope="project", type="fact", subject="orchard",
         predicate="what",
         content="orchard is the internal order-sync service; Li Lei shares on-call with "
         "王芳 (Wang Fang)",
         confidence=0.9, importance=0.7, priority="permanent", days_ago=38, verified=True,
         via="onboarding", actor="person", tags=["orchard", "work"]),
    dict(key="orchard_deploy", scope="project", type="fact", subject="orchard",
         predicate="发布日", content="orchard 每周二发布一次", confidence=0.88, importance=0.6,
         priority="long_term", days_ago=21, verified=False, via="rules", actor="job",
         tags=["orchard", "release"], hits=2),
    dict(key="leak", scope="project", type="fact", subject="orchard", predicate="当前问题",
         content="本周在排查 orchard 的内存泄漏：Celery worker 没设 max_tasks_per_child",
         confidence=0.9, importance=0.7, priority="short_term", at=("s1", 0), verified=False,
         via="llm", actor="job", tags=["orchard", "incident"]),
    dict(key="review", scope="project", type="fact", subject="orchard", predicate="会议",
         content="今天下午 3 点和王芳一起 review orchard 的 PR #482", confidence=0.86,
         importance=0.5, priority="transient", hours_ago=3, verified=False, via="rules",
         actor="job", tags=["orchard", "calendar"]),
    # an expired transient note, so the "expired" status has an example
    dict(key="weekly", scope="user", type="fact", subject="李雷", predicate="周报",
         content="明早 9 点提醒李雷交周报", confidence=0.87, importance=0.3,
         priority="transient", days_ago=5, verified=False, via="rules", actor="job",
         tags=["reminders"], status="expired"),
    # Two pairs that cannot both be true: the contradiction check finds them (Review).
    dict(key="early", scope="user", type="preference", subject="李雷", predicate="作息",
         content="李雷是早起型的人，每天 6 点起床", confidence=0.9, importance=0.5,
         priority="permanent", days_ago=52, verified=True, via="onboarding", actor="person",
         tags=["profile", "routine"]),
    dict(key="night_owl", scope="user", type="fact", subject="李雷", predicate="熬夜",
         content="李雷是夜猫子，常熬夜写代码", confidence=0.82, importance=0.4,
         priority="long_term", hours_ago=20, verified=False, via="llm", actor="agent",
         tags=["routine"]),
    dict(key="light_theme", scope="user", type="preference", subject="李雷",
         predicate="editor theme", content="Prefers a light theme in the editor",
         confidence=0.8, importance=0.3, priority="long_term", days_ago=24, verified=False,
         via="rules", actor="job", tags=["tools"]),
    dict(key="dark_theme", scope="user", type="preference", subject="李雷",
         predicate="UI theme", content="Prefers a dark theme in all tools", confidence=0.86,
         importance=0.35, priority="long_term", days_ago=2, verified=False, via="llm",
         actor="agent", agent="code", tags=["tools"]),
]

# --------------------------------------------------------------------------------------
# Review queue. `conflicts_with` names a fact key; the deletion suggestion targets a fact.
# --------------------------------------------------------------------------------------

PENDING: list[dict[str, Any]] = [
    dict(reason="low_confidence", confidence=0.68, hours_ago=30, actor="job", source="llm",
         candidate=dict(scope="user", type="skill", subject="李雷", predicate="正在学习",
                        content="李雷最近在学 Rust，周末会写一点练习代码",
                        priority="long_term", tags=["coding"])),
    dict(reason="low_confidence", confidence=0.72, hours_ago=20, actor="agent", agent="code",
         candidate=dict(scope="user", type="preference", subject="李雷",
                        predicate="commit messages",
                        content="Wants commit messages written in English, in the imperative",
                        priority="long_term", tags=["git"])),
    # "下个月可能去上海出差" was read as a move: the person should catch this one.
    dict(reason="conflict", confidence=0.78, hours_ago=26, actor="job", source="rules",
         conflicts_with="city_hz",
         candidate=dict(scope="user", type="fact", subject="李雷", predicate="居住城市",
                        content="李雷搬到了上海", priority="permanent", tags=["profile"],
                        evidence="下个月可能要去上海出差一周")),
    dict(reason="conflict", confidence=0.8, hours_ago=4, actor="agent",
         conflicts_with="orchard_deploy",
         candidate=dict(scope="project", type="fact", subject="orchard", predicate="发布日",
                        content="orchard 改成每周四发布", priority="long_term",
                        tags=["orchard", "release"])),
    dict(reason="deletion", confidence=0.75, hours_ago=2, actor="agent", conflicts_with="leak",
         candidate=dict(operation="DELETE", scope="project", type="fact", subject="orchard",
                        predicate="当前问题",
                        content="本周在排查 orchard 的内存泄漏：Celery worker 没设 "
                        "max_tasks_per_child",
                        why="加了 max_tasks_per_child 之后内存稳定，这条短期记忆可以删除")),
]

# Review items the person already answered over the past weeks (through the write path's
# confirm and ignore): what Calibration compares with each source's confidence.
# `outcome` is confirm, edit (confirmed with a changed text) or ignore.
DECIDED: list[dict[str, Any]] = [
    dict(source="llm", confidence=0.66, days_ago=18, outcome="ignore",
         candidate=dict(scope="user", type="preference", subject="李雷", predicate="操作系统",
                        content="李雷打算把开发机换成 Arch Linux", priority="long_term",
                        tags=["tools"])),
    dict(source="llm", confidence=0.74, days_ago=16, outcome="confirm",
         candidate=dict(scope="project", type="fact", subject="orchard", predicate="告警频道",
                        content="orchard 的告警发到 #orchard-alerts 频道", priority="permanent",
                        tags=["orchard"])),
    dict(source="llm", confidence=0.78, days_ago=11, outcome="edit",
         candidate=dict(scope="user", type="preference", subject="李雷",
                        predicate="PR review time", content="Reviews pull requests in the morning",
                        priority="permanent", tags=["work"]),
         edits=dict(content="Reviews pull requests before 10 am, never after lunch")),
    dict(source="llm", confidence=0.84, days_ago=9, outcome="confirm",
         candidate=dict(scope="project", type="fact", subject="orchard", predicate="负责人",
                        content="王芳和李雷一起负责 orchard", priority="permanent",
                        tags=["orchard", "work"])),
    dict(source="llm", confidence=0.63, days_ago=4, outcome="ignore",
         candidate=dict(scope="user", type="preference", subject="李雷", predicate="饮食",
                        content="李雷不吃辣", priority="long_term", tags=["food"])),
    dict(source="rules", confidence=0.62, days_ago=21, outcome="ignore",
         candidate=dict(scope="user", type="skill", subject="李雷", predicate="Go",
                        content="Is learning Go", priority="long_term", tags=["coding"])),
    dict(source="rules", confidence=0.68, days_ago=17, outcome="ignore",
         candidate=dict(scope="user", type="preference", subject="李雷",
                        predicate="indentation", content="Prefers tabs over spaces",
                        priority="long_term", tags=["coding"])),
    dict(source="rules", confidence=0.71, days_ago=13, outcome="confirm",
         candidate=dict(scope="user", type="rule", subject="李雷", predicate="code review",
                        content="每周五下午留给 code review", priority="permanent",
                        tags=["work"])),
    dict(source="rules", confidence=0.77, days_ago=7, outcome="confirm",
         candidate=dict(scope="user", type="preference", subject="李雷", predicate="通知",
                        content="工作通知只发 Slack，不要发短信", priority="permanent",
                        tags=["communication"])),
    dict(source="consolidation", confidence=0.65, days_ago=8, outcome="confirm",
         candidate=dict(scope="insight", type="error", subject="orchard", predicate="发布前",
                        content="orchard 发布前一天先在 staging 跑一遍数据迁移",
                        priority="permanent", tags=["lesson", "orchard"])),
    dict(source="api", agent="chat", confidence=0.64, days_ago=15, outcome="ignore",
         candidate=dict(scope="user", type="preference", subject="李雷", predicate="宠物",
                        content="李雷想养一只猫", priority="long_term", tags=["life"])),
    dict(source="api", agent="chat", confidence=0.73, days_ago=10, outcome="confirm",
         candidate=dict(scope="user", type="fact", subject="李雷", predicate="孩子",
                        content="李雷的孩子在上幼儿园，工作日下午接送", priority="permanent",
                        tags=["family"])),
    dict(source="api", agent="chat", confidence=0.81, days_ago=3, outcome="confirm",
         candidate=dict(scope="user", type="preference", subject="李雷", predicate="会议纪要",
                        content="会议纪要用中文写，结论放在最前面", priority="permanent",
                        tags=["communication"])),
    dict(source="api", agent="code", confidence=0.69, days_ago=12, outcome="edit",
         candidate=dict(scope="project", type="preference", subject="Memory Curator",
                        predicate="linter", content="Uses ruff for linting",
                        priority="permanent", tags=["memory-curator", "coding"]),
         edits=dict(content="Uses ruff for linting and formatting (no black, no isort)")),
    dict(source="api", agent="code", confidence=0.79, days_ago=5, outcome="ignore",
         candidate=dict(scope="project", type="preference", subject="Memory Curator",
                        predicate="packaging", content="Uses Poetry for packaging",
                        priority="long_term", tags=["memory-curator"])),
]

DROPPED: dict[str, Any] = dict(
    hours_ago=47,
    candidate=dict(scope="user", type="preference", subject="李雷", predicate="饮品",
                   content="李雷可能喜欢喝咖啡", evidence="又熬夜了，先去冲杯咖啡"),
    confidence=0.4,
)

# The episode that summarises the finished session s1.
EPISODE: dict[str, Any] = dict(
    session="s1",
    summary="排查 orchard 内存泄漏：定位到 Celery worker 未设置 max_tasks_per_child，"
    "决定限制后随周二版本发布，清理缓存前先备份。",
    goal="找出 orchard worker 内存持续上涨的原因",
    outcome=Outcome.SUCCESS,
    importance=0.7,
    entities=["orchard", "Celery", "王芳", "orchard-2"],
    tags=["orchard", "incident"],
    linked_facts=["leak", "backup", "orchard_deploy", "orchard_what"],
    action_nodes=[
        # (tool, key params, result, success, turn index whose time it takes)
        ("run_shell", {"cmd": "ps -eo pid,rss,cmd --sort=-rss | head -5", "host": "orchard-2"},
         "两个 Celery worker 各占约 3.7G 内存", True, 1),
        ("read_file", {"path": "/etc/orchard/celery.conf"},
         "concurrency=8，未设置 max_tasks_per_child", True, 2),
        ("write_file", {"path": "meeting-notes.pdf"},
         "生成会议纪要并发送给李雷", True, 6),
    ],
)

ATTACHMENTS: list[dict[str, Any]] = [
    dict(session="s2", turn=3, original_name="架构草图.png", mime_type="image/png",
         size=284_113, direction=Direction.INBOUND,
         description="Memory Curator 三层架构草图：L0 SQLite 原始层、L1 Markdown 卡片、"
         "L2 FTS5 + sqlite-vec 检索层",
         extracted_text="L0 raw (SQLite) → L1 cards (ShiYi.md, User.md, Project.md) → "
         "L2 FTS5 + sqlite-vec",
         tags=["memory-curator", "architecture", "demo"],
         linked_facts=["mc_what", "vec_sqlite"]),
    dict(session="s1", turn=6, original_name="meeting-notes.pdf", mime_type="application/pdf",
         size=48_920, direction=Direction.OUTBOUND, episode=True,
         description="orchard 内存泄漏排查会议纪要（李雷、王芳）",
         extracted_text="Attendees: 李雷, 王芳. Root cause: Celery workers without "
         "max_tasks_per_child. Action: set --max-tasks-per-child=200, ship with Tuesday "
         "release, back up /var/lib/orchard/cache before cleaning. Owner: 王芳 watches "
         "the dashboards.",
         tags=["orchard", "meeting", "demo"], linked_facts=["leak", "backup"]),
]
# fmt: on

SCRATCHPAD_CONTENT = """\
## 本周 / This week

- **orchard**：内存泄漏已定位（Celery `max_tasks_per_child`），周二随版本发布，王芳盯监控。
- **Memory Curator**：向量检索改用 sqlite-vec，FAISS 方案作废。

## Notes

- 清理 `/var/lib/orchard/cache` 之前先备份。
- Embeddings stay local by default; remote endpoint optional.
"""

SCRATCHPAD: dict[str, Any] = dict(
    content=SCRATCHPAD_CONTENT,
    current_focus="Memory Curator：把向量检索切到 sqlite-vec，并补齐检索调试页",
    active_projects=["Memory Curator", "orchard"],
    open_questions=[
        "jieba 用户词典放在 data/ 目录还是仓库里？",
        "orchard 发布日是否真的改到周四？（待确认）",
    ],
    next_steps=[
        "给 Celery worker 加 --max-tasks-per-child=200",
        "周二发布后观察 orchard-2 内存一天",
        "Memory Curator: write the sqlite-vec migration and reindex",
    ],
)

# Who would have written a fact with a given simulated origin, when the spec does not say.
DEFAULT_ACTOR = {
    "onboarding": "person",
    "manual": "person",
    "llm": "agent",
    "rules": "job",
    "consolidation": "job",
}


@dataclass
class DemoResult:
    """What a load did, for the command's summary."""

    loaded: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    indexed: int | None = None


# --------------------------------------------------------------------------------------
# Recognising and removing demo rows
# --------------------------------------------------------------------------------------


def demo_sessions(owner: Owner):
    return Session.objects.filter(owner=owner, external_id__startswith=SESSION_PREFIX)


def demo_pending(owner: Owner):
    """Marked in the candidate: its source is the extractor or agent it pretends to be."""
    return PendingItem.objects.filter(owner=owner).filter(
        Q(candidate__source=DEMO_SOURCE.value) | Q(candidate__demo=True)
    )


def demo_facts(owner: Owner):
    """The demo's facts, and those its answered review items wrote."""
    confirmed = demo_pending(owner).exclude(resulting_fact=None).values("resulting_fact")
    return Fact.objects.filter(owner=owner).filter(Q(source=DEMO_SOURCE) | Q(pk__in=confirmed))


def demo_present(owner: Owner) -> bool:
    """Any trace of a previous load counts: a half-deleted demo must not load twice."""
    return (
        demo_sessions(owner).exists()
        or Fact.objects.filter(owner=owner, source=DEMO_SOURCE).exists()
        or MemoryEvent.objects.filter(owner=owner, operation_id__startswith=OP_PREFIX).exists()
        or demo_pending(owner).exists()
        or demo_use.demo_agents().exists()
    )


def remove_demo(owner: Owner) -> dict[str, int]:
    """Delete demo rows only; the person's own rows merely lose links to demo rows."""
    sessions = demo_sessions(owner)
    fact_ids = list(demo_facts(owner).values_list("pk", flat=True))
    facts = Fact.objects.filter(pk__in=fact_ids)
    pending = demo_pending(owner)
    episodes = Episode.objects.filter(owner=owner).filter(
        Q(source=DEMO_SOURCE.value) | Q(session__in=sessions)
    )
    attachments = Attachment.objects.filter(owner=owner, session__in=sessions)
    events = MemoryEvent.objects.filter(owner=owner).filter(
        Q(operation_id__startswith=OP_PREFIX) | Q(fact__in=facts) | Q(pending__in=pending)
    )
    turns = ConversationTurn.objects.filter(session__in=sessions)
    _unindex(
        {
            "fact": list(facts.values_list("pk", flat=True)),
            "episode": list(episodes.values_list("pk", flat=True)),
            "turn": list(turns.values_list("pk", flat=True)),
            "attachment": list(attachments.values_list("pk", flat=True)),
        }
    )
    removed = {
        "events": _delete(events),
        "pending": _delete(pending),
        "attachments": _delete(attachments),
        "episodes": _delete(episodes),
        "turns": _delete(turns),
        "sessions": _delete(sessions),
        "facts": _delete(Fact.objects.filter(pk__in=fact_ids)),
        "scratchpad": _delete(Scratchpad.objects.filter(owner=owner, content=SCRATCHPAD_CONTENT)),
        **demo_use.remove_agents(),
    }
    return removed


def _delete(queryset) -> int:
    """Rows of the queryset's own model (delete() also counts cascaded link rows)."""
    return queryset.delete()[1].get(queryset.model._meta.label, 0)


def _unindex(ids_by_kind: dict[str, list[int]]) -> None:
    """Drop deleted rows from the search index."""
    for kind, ids in ids_by_kind.items():
        for object_id in ids:
            remove_item(kind, object_id)


# --------------------------------------------------------------------------------------
# Building the demo
# --------------------------------------------------------------------------------------


def _event(
    owner: Owner,
    kind: str,
    key: str,
    at: datetime,
    actor: str,
    *,
    changes=(),
    agent_id: int | None = None,
    operation_id: str = "",
    **fields,
) -> MemoryEvent:
    """One backdated event through the write path's unit of work; `changes` are
    (kind, id, before, after) as undo reads them; `agent_id` the agent who did it.
    The operation id is the demo's own, unless the event stands for another one's."""
    work = Work(owner, actor, at=at, agent_id=agent_id)
    for change in changes:
        work.record(*change)
    payload = fields.pop("payload", {})
    operation_id = operation_id or f"{OP_PREFIX}{kind}:{key}"
    return work.event(kind, operation_id=operation_id, **fields, **payload)


def _create_sessions(owner: Owner, now: datetime, agents) -> dict[str, tuple[Session, list]]:
    """Both conversations are the chat assistant's."""
    built = {}
    for spec in SESSIONS:
        start = _session_start(spec, now)
        ended = None
        if spec["duration_min"] is not None:
            ended = start + timedelta(minutes=spec["duration_min"], seconds=30)
        session = Session.objects.create(
            owner=owner,
            external_id=f"{SESSION_PREFIX}{timezone.localtime(start):%Y-%m-%d}",
            title=spec["title"],
            started_at=start,
            ended_at=ended,
            llm_calls=spec["llm_calls"],
            agent=agents["chat"],
        )
        built[spec["key"]] = (session, _create_turns(session, spec, start))
    return built


def _session_start(spec: dict[str, Any], now: datetime) -> datetime:
    if "minutes_ago" in spec:
        return now - timedelta(minutes=spec["minutes_ago"])
    day = timezone.localtime(now) - timedelta(days=spec["days_ago"])
    return day.replace(hour=spec["hour"], minute=0, second=0, microsecond=0)


def _turn_text(content: str, extras: dict[str, Any]) -> str:
    # Tool calls and results go into the prompt too, so they count towards the estimate.
    return content + (json.dumps(extras, ensure_ascii=False) if extras else "")


def _create_turns(session: Session, spec: dict[str, Any], start: datetime) -> list:
    upto = spec.get("extracted_upto", len(spec["turns"]))
    turns = []
    for index, (role, content, minutes, extras) in enumerate(spec["turns"]):
        turns.append(
            ConversationTurn(
                session=session,
                turn_index=index,
                role=role,
                content=content,
                tool_calls=extras.get("tool_calls"),
                tool_results=extras.get("tool_results"),
                timestamp=start + timedelta(minutes=minutes, seconds=index * 7),
                token_estimate=estimate_tokens(_turn_text(content, extras)),
                extracted=index < upto,
                agent_id=session.agent_id,
            )
        )
    return ConversationTurn.objects.bulk_create(turns)


def _fact_time(spec: dict[str, Any], now: datetime, sessions) -> tuple[datetime, Any]:
    """When the fact was written and the turn it came from (if any)."""
    if "at" in spec:
        session_key, index = spec["at"]
        turn = sessions[session_key][1][index]
        return turn.timestamp + timedelta(seconds=40), turn
    # Spread facts over the working day so the timeline does not look machine-made.
    offset = timedelta(days=spec.get("days_ago", 0), hours=spec.get("hours_ago", 0))
    jitter = timedelta(minutes=(len(spec["key"]) * 37) % 300)
    return now - offset - jitter, None


def _agent_of(spec: dict[str, Any], turn, agents) -> int | None:
    """Whose proposal it was: the agent that wrote it, or the one whose turn it came from
    (as the write path's `proposer` says)."""
    if spec.get("actor") == Actor.AGENT:
        return agents[spec.get("agent", "chat")].pk
    return turn.agent_id if turn is not None else None


def _create_facts(owner: Owner, now: datetime, sessions, agents) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    for spec in FACTS:
        created, turn = _fact_time(spec, now, sessions)
        fact = Fact.objects.create(
            owner=owner,
            agent_id=_agent_of(spec, turn, agents),
            scope=spec["scope"],
            type=spec["type"],
            subject=spec["subject"],
            predicate=spec["predicate"],
            content=spec["content"],
            confidence=spec["confidence"],
            importance=spec["importance"],
            priority=spec["priority"],
            expires_at=expiry_for(spec["priority"], created),
            status=spec.get("status", FactStatus.ACTIVE),
            supersedes=facts.get(spec.get("prev", "")),
            verified=spec["verified"],
            source=DEMO_SOURCE,
            source_turn=turn,
            tags=[*spec["tags"], f"via:{spec['via']}"],
            # Recalled only by the demo's recalls (demo_use.recall), like any fact.
            hit_count=spec.get("hits", 1),
            created_at=created,
        )
        facts[spec["key"]] = fact
        if spec.get("prev"):
            _supersede(owner, facts[spec["prev"]], fact, spec)
    for spec in FACTS:
        _record_write(owner, facts[spec["key"]], spec)
    return facts


def _backdate_updates(facts: dict[str, Fact]) -> None:
    """auto_now stamps every row with 'now'; a demo spread over 60 days should look like one."""
    for fact in facts.values():
        successor = next((f for f in facts.values() if f.supersedes_id == fact.id), None)
        when = successor.created_at if successor else fact.created_at
        Fact.objects.filter(pk=fact.pk).update(updated_at=when)
        fact.updated_at = when


def _supersede(owner: Owner, old: Fact, new: Fact, spec: dict[str, Any]) -> None:
    before = snapshot(old)
    old.status = FactStatus.SUPERSEDED
    old.save(update_fields=["status", "updated_at"])
    _event(
        owner,
        EventType.SUPERSEDE,
        spec["key"],
        new.created_at + timedelta(seconds=1),  # right after the new fact's write
        spec.get("supersede_actor", "agent"),
        agent_id=new.agent_id if spec.get("supersede_actor", "agent") == Actor.AGENT else None,
        fact=new,
        changes=[("fact", old.pk, {"status": before["status"]}, {"status": old.status})],
        payload={"before": before, "after": snapshot(new)},
    )


def _record_write(owner: Owner, fact: Fact, spec: dict[str, Any]) -> None:
    after = snapshot(fact)
    after["status"] = FactStatus.ACTIVE  # what it was when written, before any supersede
    actor = spec.get("actor") or DEFAULT_ACTOR[spec["via"]]
    payload: dict[str, Any] = {"after": after, "origin": spec["via"]}
    if spec["via"] != "manual":  # what the write path records of an automatic write
        agent = fact.agent_id if actor == Actor.AGENT else None
        origin = source_key(Source.API, agent) if agent else spec["via"]
        payload.update(origin=origin, confidence=fact.confidence)
    _event(
        owner,
        EventType.WRITE,
        spec["key"],
        fact.created_at,
        actor,
        agent_id=fact.agent_id if actor == Actor.AGENT else None,
        # Extracted from a turn by a job: the extractor's operation id, which the session
        # page reads to tell what extraction made of the turn.
        operation_id=f"extract:{fact.source_turn_id}:{spec['via']}:0"
        if fact.source_turn_id and actor == Actor.JOB
        else "",
        fact=fact,
        changes=[("fact", fact.pk, None, {"status": FactStatus.ACTIVE})],
        payload=payload,
    )
    if fact.status == FactStatus.EXPIRED:
        _event(
            owner,
            EventType.EXPIRE,
            spec["key"],
            fact.expires_at,
            Actor.JOB,
            fact=fact,
            changes=[("fact", fact.pk, {"status": "active"}, {"status": "expired"})],
            payload={"before": {"status": "active"}, "after": {"status": "expired"}},
        )


def _queue(owner: Owner, spec: dict[str, Any], key: str, created: datetime, agents, target=None):
    """One review item as the write path queues it, with its `pending` event. The candidate
    names the source it pretends to come from (an extractor, or an agent through the API)
    and carries the demo mark."""
    agent = agents[spec.get("agent", "chat")].pk if spec.get("source") == Source.API else None
    candidate = {**spec["candidate"], "source": spec.get("source", Source.LLM), "demo": True}
    if agent is not None:
        candidate["token_id"] = agent
    if target is not None and spec.get("reason") == PendingReason.DELETION:
        candidate["fact_id"] = target.pk
    reason = spec.get("reason", PendingReason.LOW_CONFIDENCE)
    item = PendingItem.objects.create(
        owner=owner,
        candidate=candidate,
        confidence=spec["confidence"],
        reason=reason,
        conflicts_with=target,
        agent_id=agent,
        created_at=created,
    )
    payload: dict[str, Any] = {
        "candidate": candidate,
        "confidence": spec["confidence"],
        "reason": reason,
        "origin": source_key(candidate["source"], agent),
    }
    if target is not None:
        payload["conflicts_with"] = snapshot(target)
    _event(
        owner,
        EventType.PENDING,
        key,
        created,
        Actor.AGENT if agent else Actor.JOB,
        agent_id=agent,
        pending=item,
        fact=target,
        changes=[("pending", item.pk, None, {"status": PendingStatus.PENDING})],
        payload=payload,
    )
    return item


def _create_pending(owner: Owner, now: datetime, facts: dict[str, Fact], agents):
    items = []
    for number, spec in enumerate(PENDING, start=1):
        created = now - timedelta(hours=spec["hours_ago"])
        if spec["actor"] == Actor.AGENT:
            spec = {**spec, "source": Source.API}
        target = facts.get(spec.get("conflicts_with", ""))
        items.append(_queue(owner, spec, f"p{number}", created, agents, target))
    return items


def _answer_review(owner: Owner, now: datetime, agents) -> tuple[list[PendingItem], list[Fact]]:
    """The review items the person answered, each confirmed or ignored through the write
    path at the time it was answered (a few hours after it was queued)."""
    items, written = [], []
    for number, spec in enumerate(DECIDED, start=1):
        created = now - timedelta(days=spec["days_ago"], hours=5)
        answered = created + timedelta(hours=3, minutes=number * 4)
        item = _queue(owner, spec, f"d{number}", created, agents)
        if spec["outcome"] == "ignore":
            ignore_pending(item.pk, at=answered)
        else:
            result = confirm_pending(item.pk, edits=spec.get("edits"), at=answered)
            written.append(result.fact)
        PendingItem.objects.filter(pk=item.pk).update(updated_at=answered)
        items.append(item)
    return items, written


def _create_drop(owner: Owner, now: datetime) -> MemoryEvent:
    return _event(
        owner,
        EventType.DROP,
        "coffee",
        now - timedelta(hours=DROPPED["hours_ago"]),
        Actor.JOB,
        payload={
            "candidate": {**DROPPED["candidate"], "source": DEMO_SOURCE.value},
            "confidence": DROPPED["confidence"],
            "threshold": 0.6,
            "reason": "low_confidence",  # a code: the Activity page words it (curator.describe)
        },
    )


def _create_episode(owner: Owner, sessions, facts: dict[str, Fact]) -> Episode:
    session, turns = sessions[EPISODE["session"]]
    nodes = [
        {
            "tool_name": tool,
            "key_params": params,
            "result_summary": result,
            "success": ok,
            "timestamp": turns[index].timestamp.isoformat(),
        }
        for tool, params, result, ok, index in EPISODE["action_nodes"]
    ]
    episode = Episode.objects.create(
        owner=owner,
        session=session,
        summary=EPISODE["summary"],
        goal=EPISODE["goal"],
        outcome=EPISODE["outcome"],
        started_at=session.started_at,
        ended_at=session.ended_at,
        action_nodes=nodes,
        entities=EPISODE["entities"],
        tools_used=sorted({node["tool_name"] for node in nodes}),
        tags=EPISODE["tags"],
        importance=EPISODE["importance"],
        source=DEMO_SOURCE.value,
    )
    episode.linked_facts.set([facts[key] for key in EPISODE["linked_facts"]])
    ConversationTurn.objects.filter(session=session).update(episode=episode)
    Fact.objects.filter(source_turn__session=session).update(source_episode=episode)
    return episode


def _create_attachments(
    owner: Owner, sessions, facts: dict[str, Fact], episode: Episode
) -> list[Attachment]:
    made = []
    for spec in ATTACHMENTS:
        session, turns = sessions[spec["session"]]
        attachment = Attachment.objects.create(
            owner=owner,
            session=session,
            episode=episode if spec.get("episode") else None,
            original_name=spec["original_name"],
            mime_type=spec["mime_type"],
            size=spec["size"],
            direction=spec["direction"],
            description=spec["description"],
            extracted_text=spec["extracted_text"],
            tags=spec["tags"],
            created_at=turns[spec["turn"]].timestamp,
        )
        attachment.linked_facts.set([facts[key] for key in spec["linked_facts"]])
        made.append(attachment)
    return made


def _create_scratchpad(owner: Owner) -> bool:
    """Only when the owner has none: the person's own working notes are never replaced."""
    _pad, created = Scratchpad.objects.get_or_create(owner=owner, defaults=SCRATCHPAD)
    return created


def _build(owner: Owner, now: datetime) -> tuple[dict[str, int], dict]:
    agents = demo_use.create_agents(now)
    sessions = _create_sessions(owner, now, agents)
    facts = _create_facts(owner, now, sessions, agents)
    pending = _create_pending(owner, now, facts, agents)
    answered, confirmed = _answer_review(owner, now, agents)
    _backdate_updates({**facts, **{f"confirmed-{f.pk}": f for f in confirmed}})
    _create_drop(owner, now)
    episode = _create_episode(owner, sessions, facts)
    attachments = _create_attachments(owner, sessions, facts, episode)
    scratchpad = _create_scratchpad(owner)
    counts = {
        "agents": len(agents),
        "facts": len(facts) + len(confirmed),
        "superseded": sum(f.status == FactStatus.SUPERSEDED for f in facts.values()),
        "pending": len(pending),
        "answered": len(answered),
        "sessions": len(sessions),
        "turns": sum(len(turns) for _s, turns in sessions.values()),
        "episodes": 1,
        "attachments": len(attachments),
        "scratchpad": int(scratchpad),
        "contradictions": demo_use.find_contradictions(owner),
        "events": MemoryEvent.objects.filter(owner=owner)
        .filter(
            Q(operation_id__startswith=OP_PREFIX)
            | Q(pending__in=demo_pending(owner))
            | Q(fact__in=demo_facts(owner))
        )
        .distinct()
        .count(),
    }
    return counts, agents


def index_search() -> int | None:
    """Make the demo searchable now (keywords and vectors); the number of items indexed."""
    return index_all()


def load_demo(
    owner: Owner | None = None,
    *,
    reset: bool = False,
    now: datetime | None = None,
    index: bool = True,
) -> DemoResult:
    """Load the demo once. With reset, replace an earlier demo; the person's rows stay.

    Onboarding state (identity_confirmed, display name) is left alone on purpose: the demo
    must not let a new person skip telling the assistant who they really are.
    """
    owner = owner or Owner.default()
    now = now or timezone.now()
    result = DemoResult()
    with transaction.atomic():
        if demo_present(owner):
            if not reset:
                return result
            result.removed = remove_demo(owner)
        result.counts, agents = _build(owner, now)
        result.loaded = True
    # Indexing runs after commit: it embeds outside its own transaction and must see rows.
    # The recalls are searches, so they need it.
    if index:
        result.indexed = index_search()
        result.counts["recalls"] = demo_use.recall(owner, now, agents)
    cards = demo_use.refresh_cards(now)
    result.counts["card_lines"] = cards["user_lines"] + cards["memory_lines"]
    return result
