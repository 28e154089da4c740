"""Token estimation and the context budget trimmer (pure: no Django, no I/O).

Tokens are estimated locally (tiktoken downloads its encodings at run time): one token per
CJK character, one per started 5 letters of a Latin word or number, one per other symbol.
This errs high on purpose (GPT-style tokenizers give ~1.3 tokens per English word and
1-1.5 per Chinese character), so a context that fits the estimate fits the model.

Trimming follows seed 000 section 5: over budget, cut long-term evidence first (lowest
ranked first), then recent turns (oldest first), never the core cards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from curator.tokencount import estimate_tokens

ELLIPSIS = "…"


def truncate(text: str, max_tokens: int) -> tuple[str, bool]:
    """The longest prefix within max_tokens (with an ellipsis), and whether it was cut."""
    if estimate_tokens(text) <= max_tokens:
        return text, False
    if max_tokens <= 1:
        return ELLIPSIS, True
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on the prefix length
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= max_tokens - 1:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + ELLIPSIS, True


@dataclass
class Block:
    """One unit a section keeps or drops whole: a card, a turn, an evidence item."""

    key: str
    text: str
    tokens: int
    meta: dict = field(default_factory=dict)


@dataclass
class Section:
    name: str
    budget: int
    blocks: list[Block]
    # Cutting order: the block a section gives up first is at the END of `blocks`
    # (turns: newest first, so the oldest goes first; evidence: best first).
    protected: bool = False
    dropped: list[Block] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)


def fit_section(section: Section) -> Section:
    """Keep a section within its own budget by dropping from the end (protected: never)."""
    if section.protected:
        return section
    while section.blocks and section.tokens > section.budget:
        section.dropped.insert(0, section.blocks.pop())
    return section


def trim(sections: list[Section], max_tokens: int, reserve: int, order: list[str]) -> int:
    """Fit every section, then cut sections in `order` until the total plus the reserve fits.

    Returns the tokens still over the limit (only if the protected sections alone exceed it).
    """
    for section in sections:
        fit_section(section)
    by_name = {s.name: s for s in sections}
    available = max_tokens - reserve
    for name in order:
        section = by_name.get(name)
        while section and not section.protected and section.blocks and _total(sections) > available:
            section.dropped.insert(0, section.blocks.pop())
    return max(0, _total(sections) - available)


def _total(sections: list[Section]) -> int:
    return sum(s.tokens for s in sections)
