"""The two-run demo: a rejection teaches a lesson that the next run starts with."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from rich.console import Console
from rich.markup import escape

from harness.memory import MemoryStore
from harness.memory.domain.types import Scope
from harness.run.engine import Engine, RunInput, Verdict
from harness.run.extract import RuleExtractor

__all__ = ["run_demo"]

TENANT, USER, WORKFLOW = "demo", "alice", "weekly-incident-report"
FEEDBACK = (
    "Start with a three-line TL;DR and list every incident id (like INC-2041) "
    "in a table with its status."
)


def scripted_model(messages: list[dict[str, Any]]) -> str:
    """Writes prose unless the context (memory or feedback) asks for the TL;DR and table."""
    told = any("TL;DR" in str(m.get("content", "")) for m in messages)
    week = "48" if any("week 48" in str(m.get("content", "")) for m in messages) else "47"
    if not told:
        return f"Week {week} was busy: the payment API failed twice and the VPN was flaky."
    return (
        f"TL;DR: week {week}, 2 incidents, all resolved.\nPayments were hit hardest.\n"
        "No customer data was exposed.\n| id | status |\n| INC-2041 | resolved |"
    )


def scripted_judge(task: str, output: str) -> Verdict:
    """Accepts only answers with the TL;DR and an incident table."""
    if output.startswith("TL;DR") and "| INC-" in output:
        return Verdict(accepted=True)
    return Verdict(accepted=False, feedback=FEEDBACK)


def _reset(store: MemoryStore) -> None:
    for scope, scope_id in ((Scope.WORKFLOW, WORKFLOW), (Scope.USER, USER), (Scope.PLATFORM, None)):
        store.delete_scope(TENANT, scope, scope_id)


def run_demo(store: MemoryStore, console: Console) -> None:
    """Run the story against ``store`` (tenant ``demo``, reset first) and narrate it."""
    _reset(store)
    engine = Engine(
        model=scripted_model,
        judge=scripted_judge,
        store=store,
        extractor=RuleExtractor(),
        max_attempts=3,
    )
    mode = "hybrid" if store.embedder else "lexical-only"
    store_url = unquote(store.status().url)  # the embedded socket folder, without %2F
    console.print(f"harness-memory demo — store: {escape(store_url)} ({mode})", soft_wrap=True)

    first = RunInput(
        tenant=TENANT,
        user_id=USER,
        workflow_id=WORKFLOW,
        session_id="s-1",
        input="Summarise the incident log for week 47. From now on, answer in "
        "British English. Company-wide policy: never include customer "
        "e-mail addresses in reports.",
    )
    console.rule("[bold]Run 1[/bold] — week 47")
    one = engine.run(first)
    console.print(f"memory at first call: {len(one.recall.items) if one.recall else 0} items")
    for n, verdict in enumerate(one.verdicts, 1):
        shown = (
            "[green]accepted[/green]"
            if verdict.accepted
            else f"[red]rejected[/red]: {escape(verdict.feedback or '')}"
        )
        console.print(f"attempt {n}: {shown}")
    console.print("written after the final verdict:")
    for m in one.memories_written:
        # Whole contents: a lesson cut mid-word reads as a bug.
        console.print(
            escape(f"  • {m.scope.value} {m.kind.value} [{m.status.value}] {m.content}"),
            soft_wrap=True,
        )

    second = RunInput(
        tenant=TENANT,
        user_id=USER,
        workflow_id=WORKFLOW,
        session_id="s-2",
        input="Summarise the incident log for week 48.",
    )
    console.rule("[bold]Run 2[/bold] — week 48, same workflow")
    two = engine.run(second)
    console.print("first system message of the first call:")
    # Plain lines, never a box: a box crops or breaks long memories mid-word.
    for line in (two.recall.text if two.recall and two.recall.text else "(empty)").splitlines():
        console.print(f"  │ {escape(line)}", soft_wrap=True, highlight=False)
    summary = (
        "[green]accepted at once[/green]"
        if two.accepted and two.attempts == 1
        else (f"{two.attempts} attempts")
    )
    console.print(f"run 2: {summary}")
    console.print(escape(f"output: {(two.output or '').splitlines()[0]} …"))

    console.rule("[bold]Admin[/bold]")
    for m in store.pending(TENANT):
        console.print(escape(f"waiting for approval: {m.id}  {m.content}"))
        console.print(
            f"  approve with: harness-memory admin approve {m.id} --by <name> --tenant {TENANT}",
            soft_wrap=True,
        )
    lesson = next((m for m in one.memories_written if m.kind.value == "lesson"), None)
    ok = (
        two.accepted
        and two.attempts == 1
        and lesson is not None
        and lesson.content in (two.recall.text if two.recall else "")
    )
    console.print("[bold green]demo OK[/bold green]" if ok else "[bold red]demo FAILED[/bold red]")
    if not ok:
        raise SystemExit(1)
