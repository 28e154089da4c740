"""The chat proxy: an OpenAI-compatible endpoint (/llm/v1/) that adds the person's memory to
every chat and records the conversation (docs/proxy.md).

Below the web layer and the API (which authenticate and answer HTTP) and above the domain:
the playground page (memsite.web.playground) and the endpoint (memsite.api.llm) both call
memsite.proxy.engine.
"""
