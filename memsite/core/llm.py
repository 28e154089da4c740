"""The one LLM configuration: the optional OpenAI-compatible endpoint every feature uses.

Extraction, session summaries and card compiling all ask `configured()` and build their
client with `client()`, so the same settings switch every LLM feature on or off together
(plain OpenAI with a key and no base URL included).
"""

from django.conf import settings


def configured() -> bool:
    """A model name plus an endpoint or a key: without both there is nothing to call."""
    return bool(settings.LLM_MODEL and (settings.LLM_BASE_URL or settings.LLM_API_KEY))


def client(timeout: float | None = None):
    from openai import OpenAI  # late: 0.3 s to import, and most installs never call it

    return OpenAI(
        base_url=settings.LLM_BASE_URL or None,
        api_key=settings.LLM_API_KEY or "none",
        timeout=timeout or settings.LLM_TIMEOUT,
        max_retries=1,
    )
