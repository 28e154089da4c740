"""The playground: chat with the assistant through the chat proxy and see, beside each
answer, what memory was injected (each item linked, with its score breakdown) and which turns
were recorded. Also the list of recent chats through /llm/v1 from any client, and the chat
proxy's section of the Settings page.

With JavaScript the answer streams into the page (POST playground/chat/, the proxy's own
server-sent events); without, the form posts and the page comes back with the whole answer.
With no upstream configured the page still shows what would be injected for a message.
"""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.contrib import messages
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from curator.models import ConversationTurn
from memsite.core.tokens import create_token
from memsite.models import ApiToken, ContextPlacement, ProxyExchange, ProxyUpstream
from memsite.proxy import engine
from memsite.proxy import messages as msgs
from memsite.proxy import upstream as upstreams
from memsite.proxy.engine import ProxyError
from memsite.proxy.respond import chat, openai_error
from memsite.web.render import render_page

PLAYGROUND_AGENT = "Playground"
MAX_HISTORY = 200
RECENT = 15
LINKS = {"fact": "fact", "episode": "episode", "turn": "turn", "attachment": "attachment"}


# -- the page ------------------------------------------------------------------------------------


def _agents():
    return ApiToken.objects.filter(revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
    )


def _agent(value: str) -> ApiToken | None:
    """The chosen agent; "new" (or nothing, with no agent yet) makes the Playground agent."""
    if value.isdigit():
        return _agents().filter(pk=int(value)).first()
    existing = _agents().filter(name=PLAYGROUND_AGENT).first()
    if existing is not None:
        return existing
    token, _raw = create_token(PLAYGROUND_AGENT)  # the secret is never needed: pages act as it
    return token


def _history(raw: str) -> list[dict]:
    """The conversation so far, as the page keeps it (a hidden field): only user and
    assistant messages with text survive, whatever was posted."""
    try:
        found = json.loads(raw or "[]")
    except ValueError:
        return []
    if not isinstance(found, list):
        return []
    kept = [
        {"role": m["role"], "content": m["content"]}
        for m in found
        if isinstance(m, dict)
        and m.get("role") in ("user", "assistant")
        and isinstance(m.get("content"), str)
    ]
    return kept[-MAX_HISTORY:]


def _default_model(upstream: upstreams.Upstream) -> str:
    return next(iter(upstream.model_map), "") or settings.LLM_MODEL or "gpt-4o-mini"


def playground(request: HttpRequest) -> HttpResponse:
    """GET: the page; POST (without JavaScript): one message, answered whole."""
    agents = list(_agents())
    chosen = request.POST.get("agent") or request.GET.get("agent") or ""
    agent = _agents().filter(pk=int(chosen)).first() if chosen.isdigit() else None
    upstream = upstreams.for_agent(agent)
    context = {
        "agents": agents,
        "chosen": agent.pk if agent else "",
        "upstream": upstream,
        "model": request.POST.get("model") or _default_model(upstream),
        "conversation_id": request.POST.get("conversation") or uuid.uuid4().hex,
        "history": _history(request.POST.get("history", "")),
        "recent": _recent(),
    }
    if request.method == "POST":
        context.update(_answer_whole(request, context))
    context["history_json"] = json.dumps(context["history"], ensure_ascii=False)
    return render_page(request, "memsite/playground.html", context)


def _answer_whole(request: HttpRequest, context: dict) -> dict:
    message = request.POST.get("message", "").strip()
    if not message:
        return {"error": _("Write a message first.")}
    agent = _agent(request.POST.get("agent", ""))
    if agent is None:
        return {"error": _("Choose one of the listed agents.")}
    history = [*context["history"], {"role": "user", "content": message}]
    if not upstreams.for_agent(agent).configured:
        return {"preview": preview(agent, history, context["conversation_id"]), "pending": message}
    body = {"model": context["model"], "messages": history, "stream": False}
    response = chat(agent, json.dumps(body).encode(), context["conversation_id"])
    exchange = ProxyExchange.objects.filter(uid=response.get("X-Memory-Recall-Id", "")).first()
    data = json.loads(response.content or b"{}")
    if response.status_code != 200:
        return {"error": data.get("error", {}).get("message", ""), "pending": message}
    reply = (data.get("choices") or [{}])[0].get("message", {}).get("content") or ""
    history.append({"role": "assistant", "content": reply})
    return {"history": history, "exchange": exchange_view(exchange), "chosen": agent.pk}


def preview(agent: ApiToken, history: list[dict], conversation: str) -> dict:
    """What would be injected for this message (nothing is recorded, no recall is logged)."""
    turns = msgs.conversation(history)
    key = msgs.session_key(agent.pk, turns, conversation)
    options = upstreams.options()
    result = engine.build_context(
        agent, msgs.query_of(history), key, options.context_tokens, record=False
    )
    return exchange_view_data(engine.context_dict(result), [])


@require_POST
def chat_stream(request: HttpRequest) -> HttpResponse:
    """The page's JavaScript posts the OpenAI-shaped body here and reads the proxy's stream."""
    agent = _agent(request.GET.get("agent", ""))
    if agent is None:
        return _error(404, _("Choose one of the listed agents."))
    if not upstreams.for_agent(agent).configured:
        history = _history(json.dumps(_messages(request.body)))
        data = preview(agent, history, request.headers.get("X-Memory-Session", ""))
        return render(
            request, "memsite/partials/playground_exchange.html", {"exchange": data, "dry": True}
        )
    response = chat(agent, request.body, request.headers.get("X-Memory-Session", ""))
    response["X-Memory-Agent"] = str(agent.pk)
    return response


def _messages(raw: bytes) -> list:
    try:
        found = json.loads(raw)
    except ValueError:
        return []
    return found.get("messages", []) if isinstance(found, dict) else []


def _error(status: int, message: str) -> HttpResponse:
    return openai_error(ProxyError(status, message))


def exchange(request: HttpRequest, uid: str) -> HttpResponse:
    """What one chat through the proxy injected and recorded (a partial for the page)."""
    found = ProxyExchange.objects.filter(uid=uid).select_related("agent").first()
    if found is None:
        raise Http404
    context = {"exchange": exchange_view(found)}
    if request.GET.get("partial") == "1":
        return render(request, "memsite/partials/playground_exchange.html", context)
    return render(request, "memsite/playground_exchange_page.html", context)


# -- what an exchange shows ----------------------------------------------------------------------


def exchange_view(found: ProxyExchange | None) -> dict | None:
    if found is None:
        return None
    data = exchange_view_data(found.context or {}, found.recorded_turns or [])
    data["row"] = found
    return data


def exchange_view_data(context: dict, turn_ids: list[int]) -> dict:
    items = []
    for section in context.get("sections", []):
        for item in section.get("items", []):
            items.append(_item(section["name"], item))
    turns = ConversationTurn.objects.filter(pk__in=turn_ids).select_related("session")
    return {
        "text": context.get("text", ""),
        "tokens": context.get("tokens", 0),
        "items": items,
        "query": context.get("query", ""),
        "recall": context.get("recall", {}),
        "turns": list(turns.order_by("session_id", "turn_index")),
    }


def _item(section: str, item: dict) -> dict:
    kind, pk = item.get("kind"), item.get("id")
    url = reverse("cards") if kind == "card" else ""
    if kind in LINKS and isinstance(pk, int):
        url = reverse(LINKS[kind], args=[pk])
    breakdown = [
        {"name": name, **values}
        for name, values in (item.get("breakdown") or {}).items()
        if isinstance(values, dict)
    ]
    return {**item, "section": section, "url": url, "parts": breakdown}


def _recent() -> list[ProxyExchange]:
    return list(ProxyExchange.objects.select_related("agent")[:RECENT])


# -- the Settings section ------------------------------------------------------------------------


def settings_context() -> dict:
    """For the Settings page's chat proxy section."""
    default = upstreams.default_row()
    rows = ProxyUpstream.objects.filter(agent__isnull=False).select_related("agent")
    return {
        "proxy_default": default,
        "proxy_default_key": upstreams.masked(default.api_key) if default else "",
        "proxy_model_map": upstreams.format_model_map(default.model_map if default else {}),
        "proxy_effective": upstreams.for_agent(None),
        "proxy_agent_rows": [(row, upstreams.masked(row.api_key)) for row in rows],
        "proxy_agents": _agents(),
        "proxy_placements": ContextPlacement.choices,
        "proxy_tokens": default.context_tokens if default else upstreams.Options().context_tokens,
        "proxy_placement": default.placement if default else ContextPlacement.BEFORE,
    }


@require_POST
def save_settings(request: HttpRequest) -> HttpResponse:
    """Save the default upstream or one agent's (the key is kept when the field is empty)."""
    agent = None
    if (chosen := request.POST.get("agent", "")).isdigit():
        agent = _agents().filter(pk=int(chosen)).first()
    if agent is None and request.POST.get("remove"):
        return redirect(reverse("settings") + "#chat-proxy")
    if agent is not None and request.POST.get("remove"):
        upstreams.remove(agent)
        messages.success(request, _("That agent now uses the default upstream."))
        return redirect(reverse("settings") + "#chat-proxy")
    try:
        tokens = int(request.POST.get("context_tokens") or 0) or None
        upstreams.save(
            agent,
            base_url=request.POST.get("base_url", ""),
            api_key=request.POST.get("api_key", ""),
            model_map=request.POST.get("model_map", ""),
            placement=request.POST.get("placement") if agent is None else None,
            context_tokens=tokens if agent is None else None,
            clear_key=request.POST.get("clear_key") == "1",
        )
    except ValueError as exc:
        message = getattr(exc, "message", "") or _("The context budget must be a whole number.")
        messages.error(request, message)
        return redirect(reverse("settings") + "#chat-proxy")
    messages.success(request, _("Saved: the chat proxy forwards to this upstream."))
    return redirect(reverse("settings") + "#chat-proxy")
