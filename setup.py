"""The wheel's one build step beyond pyproject.toml: bundle the web assets into the package.

The checkout keeps templates/, static/ and locale/ beside the packages (where the project has
always had them). An installed app has no checkout, so building copies them to
memsite/_bundled/ inside the wheel and compiles the translations (.po -> .mo, with polib, no
GNU gettext needed); settings.ASSETS_DIR points there when the app runs outside a checkout.
"""

from pathlib import Path

import polib
from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
ASSETS = ("templates", "static", "locale")
SKIPPED = {".mo", ".pyc"}  # .mo files are compiled fresh below; a stale one must not ship


class BuildWithAssets(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install runs from the checkout itself
            bundle(Path(self.build_lib) / "memsite" / "_bundled")


def bundle(target: Path) -> None:
    for name in ASSETS:
        for source in sorted((ROOT / name).rglob("*")):
            if (
                source.is_file()
                and source.suffix not in SKIPPED
                and "__pycache__" not in source.parts
            ):
                dest = target / source.relative_to(ROOT)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(source.read_bytes())
    for po in sorted((target / "locale").glob("*/LC_MESSAGES/*.po")):
        polib.pofile(str(po)).save_as_mofile(str(po.with_suffix(".mo")))


setup(cmdclass={"build_py": BuildWithAssets})
