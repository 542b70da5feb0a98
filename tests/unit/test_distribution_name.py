"""The distribution's name (``harness-memory-pg``; ``harness-memory`` on PyPI is another
project) is the one pyproject declares, ``--version`` prints and every install line uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness._version import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[2]
#: Where users read install lines: the docs, the examples, the integrations' import errors.
SOURCES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "docs" / "harness-memory.service",
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((ROOT / "harness" / "integrations").glob("*.py")),
]
#: ``pip install`` of a named distribution (not a path such as ``.`` or ``./x.whl``).
PIP_INSTALL_NAME = re.compile(r"pip install (?:-\S+ )*['\"]?([A-Za-z][\w.-]*)(\[[^\]]*\])?")


def test_pyproject_declares_the_name_and_extras_refer_to_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "harness-memory-pg"
    self_refs = [
        dep
        for deps in project["optional-dependencies"].values()
        for dep in deps
        if dep.startswith("harness")
    ]
    assert self_refs and all(dep.startswith(f"{DISTRIBUTION}[") for dep in self_refs)


def test_every_install_line_names_this_distribution() -> None:
    found: list[tuple[str, str]] = []
    for path in SOURCES:
        for match in PIP_INSTALL_NAME.finditer(path.read_text()):
            name = match.group(1)
            if name.startswith("harness"):
                found.append((path.relative_to(ROOT).as_posix(), name))
    assert found, "no install lines found: the pattern is wrong"
    wrong = [(where, name) for where, name in found if name != DISTRIBUTION]
    assert wrong == [], wrong


def test_the_readme_says_how_to_install_from_source_and_warns_about_the_namesakes() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[" in readme  # a checkout
    assert "harness_memory_pg-" in readme and ".whl" in readme  # a wheel
    assert f"{DISTRIBUTION}[pydantic-ai] @ git+" in readme  # a git URL
    assert "unrelated" in readme and "`harness`" in readme and "`harness-memory`" in readme
