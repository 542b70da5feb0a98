"""Every script in ``examples/`` runs offline against the test PostgreSQL and tells the two-run
story: run 1 is rejected with concrete feedback, run 2's first model request carries the lesson.

The contract each example keeps: exit 0, print ``LESSON: <feedback>`` for run 1's rejection and
``RUN2_FIRST_REQUEST: <json string>`` with the system prompt / instructions of run 2's first
model request.

Here the tests that need no database, model or other process; the others are in
tests/system/test_examples_system.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def test_there_is_an_example_per_integration() -> None:
    names = {p.name for p in EXAMPLES}
    assert {
        "pydantic_ai_two_runs.py",
        "openai_agents_two_runs.py",
        "langgraph_two_runs.py",
        "anthropic_memory_two_runs.py",
    } <= names


INTEGRATIONS_DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def _python_block_after(heading: str) -> str:
    text = INTEGRATIONS_DOC.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    block = text.index("```python\n", start) + len("```python\n")
    return text[block : text.index("```", block)]


@pytest.mark.parametrize("heading", ["### pydantic-ai", "### OpenAI Agents SDK"])
def test_readme_snippet_compiles_and_its_imports_exist(heading: str) -> None:
    import ast
    import importlib

    source = _python_block_after(heading)
    tree = compile(
        source, heading, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
    )
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imports
    for node in imports:
        assert node.module is not None
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
