"""API: search and context (issue 4)."""

from ninja import Router

router = Router()
