"""The optional OpenAI-compatible chat endpoint, in JSON mode, with one corrective retry.

Models sometimes answer with broken JSON or the wrong shape. The reply is checked by a
validator; if it fails, the model sees its own answer and the error once more and gets a
second chance. A second failure (or a network error) raises, and the caller decides: the
extraction job queues the turn for a later retry, the session end falls back to rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from lifecycle.models import Incident, Service
from memsite.core.llm import client, configured  # noqa: F401  (the callers' names)

T = TypeVar("T")
KEEP_INCIDENTS = 200


class LLMError(Exception):
    """The endpoint could not be reached or answered with an error."""


class LLMOutputError(LLMError):
    """The model's reply stayed unusable after the corrective retry."""


class Invalid(ValueError):
    """Raised by validators: the message is shown to the model on the retry."""


def record_incident(service: str, message: str, context: str = "") -> None:
    """Keep the error for the Jobs page; old ones are pruned so the table stays small."""
    Incident.objects.create(service=service, message=message[:2000], context=context[:200])
    stale = Incident.objects.order_by("-created_at", "-id").values_list("pk", flat=True)[
        KEEP_INCIDENTS:
    ]
    Incident.objects.filter(pk__in=list(stale)).delete()


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def parse_object(text: str) -> dict:
    """The reply as a JSON object; a Markdown code fence around it is tolerated."""
    if m := _FENCE.match(text or ""):
        text = m[1]
    try:
        data = json.loads(text or "")
    except json.JSONDecodeError as exc:
        raise Invalid(f"the reply is not valid JSON ({exc.msg} at position {exc.pos})") from exc
    if not isinstance(data, dict):
        raise Invalid("the reply must be one JSON object, not a list or a value")
    return data


def _ask(messages: list[dict]) -> str:
    try:
        reply = client().chat.completions.create(
            model=settings.LLM_MODEL,
            messages=messages,
            response_format={"type": "json_object"},
            temperature=0,
        )
        return reply.choices[0].message.content or ""
    except Exception as exc:  # openai raises many types; all mean "no usable answer now"
        raise LLMError(f"{type(exc).__name__}: {exc}") from exc


def chat_json(system: str, user: str, validate: Callable[[dict], T], *, context: str = "") -> T:
    """Ask for a JSON object and return `validate(obj)`; one retry showing the error."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    error = ""
    try:
        for _attempt in range(2):
            reply = _ask(messages)
            try:
                return validate(parse_object(reply))
            except Invalid as exc:
                error = str(exc)
            messages += [
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": f"Your reply was not usable: {error}. "
                    "Answer again with only the JSON object described above.",
                },
            ]
        raise LLMOutputError(f"malformed reply twice: {error}")
    except LLMError as exc:
        record_incident(Service.LLM, str(exc), context)
        raise


def weighted_length(text: str) -> int:
    """Characters, with CJK counting double: 15 Chinese characters say about what 30 Latin do."""
    return sum(2 if "\u4e00" <= ch <= "\u9fff" else 1 for ch in (text or "").strip())
