"""The Chinese catalogue is complete: every message translated, nothing new left to extract,
nothing stale kept.

`makemessages` runs on a copy of the sources (so the real catalogue is never rewritten) and
must find no message the catalogue lacks. It needs GNU gettext's xgettext; `make test`
installs it with the browser packages.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.conf import settings

PO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
SOURCES = ("memsite", "curator", "retrieval", "lifecycle", "templates", "locale")
PLACEHOLDER = re.compile(r"%\((\w+)\)[sdfr]|%(?:\.\d+)?[sdf]|\{\{ *(\w+) *\}\}")


def _key(entry: polib.POEntry) -> tuple[str | None, str]:
    return entry.msgctxt, entry.msgid


def catalogue() -> list[polib.POEntry]:
    return [e for e in polib.pofile(str(PO)) if not e.obsolete]


def test_every_message_has_a_chinese_translation():
    missing = [
        e.msgid
        for e in catalogue()
        if not (e.msgstr or all(e.msgstr_plural.values()) and e.msgstr_plural)
    ]
    assert not missing, f"{len(missing)} messages without a translation: {missing[:10]}"


def test_no_translation_is_fuzzy():
    fuzzy = [e.msgid for e in catalogue() if "fuzzy" in e.flags]
    assert not fuzzy, f"fuzzy translations are not used by gettext: {fuzzy[:10]}"


def test_translations_keep_their_placeholders():
    """A translation that drops or renames %(name)s fails at run time, on that page only."""
    wrong = []
    for e in catalogue():
        wanted = sorted(PLACEHOLDER.findall(e.msgid))
        for text in [e.msgstr] if e.msgstr else list(e.msgstr_plural.values()):
            if sorted(PLACEHOLDER.findall(text)) != wanted:
                wrong.append(f"{e.msgid!r} -> {text!r}")
    assert not wrong, "\n".join(wrong[:10])


def test_makemessages_finds_nothing_new(tmp_path):
    if shutil.which("xgettext") is None or shutil.which("msgmerge") is None:
        pytest.fail("GNU gettext is missing: `make test` installs it (apt-get install gettext).")
    base = Path(settings.BASE_DIR)
    for name in SOURCES:
        ignore = shutil.ignore_patterns("__pycache__", "*.mo")
        shutil.copytree(base / name, tmp_path / name, ignore=ignore)
    shutil.copy(base / "manage.py", tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "--locale", "zh_Hans", "--verbosity", "0"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "MEMSITE_DATA_DIR": str(data)},
        check=True,
        capture_output=True,
    )
    found = polib.pofile(str(tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"))
    have = {_key(e) for e in catalogue()}
    new = [e.msgid for e in found if not e.obsolete and _key(e) not in have]
    assert not new, f"messages missing from {PO.name} (add them with a translation): {new}"
    used = {_key(e) for e in found if not e.obsolete}
    stale = [msgid for ctx, msgid in have - used]
    assert not stale, f"messages no source uses any more (remove them): {stale}"
