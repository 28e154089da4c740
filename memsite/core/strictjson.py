"""JSON as RFC 8259 defines it, for everything read from outside (API bodies, imported files).

Python's json module also reads NaN, Infinity and -Infinity, and lets an escaped half of a
surrogate pair ("\\ud800") stand alone. Neither can be stored: SQLite's JSON_VALID check refuses
the first, UTF-8 text the second. Refusing them where the text is read gives the sender the
reason at once instead of a failure deep inside a write.
"""

import json
import re
from typing import Any

# Only an escape can produce a lone surrogate, so most bodies skip the walk below.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def loads(text: str | bytes) -> Any:
    """json.loads, raising json.JSONDecodeError for what is not strict JSON."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")  # UnicodeDecodeError, as json.loads raises for bytes
    value = json.loads(text, parse_constant=_refuse_constant(text))
    if _SURROGATE_ESCAPE.search(text):
        _check_strings(value, text)
    return value


def _refuse_constant(text: str):
    def refuse(name: str):
        message = f"{name} is not a JSON number"
        raise json.JSONDecodeError(message, text, max(text.find(name), 0))

    return refuse


def _check_strings(value: Any, text: str) -> None:
    """Every key and string must be encodable as UTF-8 (no unpaired surrogate)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not _encodable(item):
            position = _SURROGATE_ESCAPE.search(text).start()
            raise json.JSONDecodeError("unpaired surrogate in a string", text, position)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
