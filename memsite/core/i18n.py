"""Compile locale/*/LC_MESSAGES/*.po into .mo files with polib.

Why not `manage.py compilemessages`: it shells out to GNU msgfmt, which a fresh machine may
not have. The .mo files are build output (gitignored), so `make` runs this before serving or
testing: `python -m memsite.core.i18n`. It deliberately does not import Django settings, so it works
before the data directory or database exist.
"""

import os
import sys
from pathlib import Path

import polib


def _is_stale(po_path: Path, mo_path: Path) -> bool:
    """Recompile only when the .po changed since the .mo was written (keeps `make run` quick)."""
    return not mo_path.exists() or po_path.stat().st_mtime > mo_path.stat().st_mtime


def _compile_one(po_path: Path, mo_path: Path) -> None:
    """Write a temporary file, then rename, so a running server never reads a partial .mo."""
    tmp_path = mo_path.with_name(mo_path.name + ".tmp")
    polib.pofile(str(po_path)).save_as_mofile(str(tmp_path))
    os.replace(tmp_path, mo_path)


def compile_messages(base_dir) -> list[Path]:
    """Compile every stale .po under base_dir/locale; return the .mo files that were written."""
    written = []
    for po_path in sorted(Path(base_dir).glob("locale/*/LC_MESSAGES/*.po")):
        mo_path = po_path.with_suffix(".mo")
        if _is_stale(po_path, mo_path):
            _compile_one(po_path, mo_path)
            written.append(mo_path)
    return written


def main() -> int:
    base_dir = Path(__file__).resolve().parents[2]  # memsite/core/i18n.py -> the project root
    try:
        written = compile_messages(base_dir)
    except (OSError, ValueError) as exc:
        # polib raises OSError/ValueError for unreadable or malformed files: one readable line.
        print(f"Could not compile translations: {exc}", file=sys.stderr)
        return 1
    for mo_path in written:
        print(f"Compiled {mo_path.relative_to(base_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
