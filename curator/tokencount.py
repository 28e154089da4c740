"""The one token estimate (offline: tiktoken downloads its encodings at run time).

Cards are fitted, turns are sized and /context is budgeted with this same count, so a card
compiled to fit N tokens takes N tokens in the context too. One token per CJK character,
one per five letters of a word, one per other symbol; it errs high for English prose.
"""

import math
import re

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_OTHER = re.compile(
    r"[^\sA-Za-z0-9_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]"
)


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    words = sum(math.ceil(len(w) / 5) for w in _WORD.findall(text))
    return cjk + words + len(_OTHER.findall(text))
