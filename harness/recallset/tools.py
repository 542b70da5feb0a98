"""The RecallSet as model tools: JSON-schema definitions and a forgiving dispatcher."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.recallset.core import Mark, RecallSet

__all__ = ["TOOL_DEFINITIONS", "RecallSetTools", "ToolAnswer"]

_MARKS = [m.value for m in Mark]

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "recallset_add",
        "description": "Save a note for later in this run (not across runs). Returns its id. "
        "Adding the same text again returns the existing note.",
        "input_schema": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1, "description": "the note"},
                "mark": {
                    "type": "string",
                    "enum": _MARKS,
                    "default": "check",
                    "description": "keep = needed later, check = to verify, discard = not useful",
                },
                "priority": {"type": "integer", "default": 0},
                "title": {"type": "string", "description": "short title (optional)"},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    },
    {
        "name": "recallset_mark",
        "description": "Change the mark of a note: keep, check or discard.",
        "input_schema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "mark": {"type": "string", "enum": _MARKS}},
            "required": ["id", "mark"],
            "additionalProperties": False,
        },
    },
    {
        "name": "recallset_read",
        "description": "Read the full text of one note by id.",
        "input_schema": {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "recallset_overview",
        "description": "List the notes of this run: ids, marks and titles, without bodies.",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
    },
]

_SCHEMAS = {d["name"]: d["input_schema"] for d in TOOL_DEFINITIONS}
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,)}


def _check_args(name: str, args: Mapping[str, Any]) -> str | None:
    schema = _SCHEMAS[name]
    props: dict[str, Any] = schema["properties"]
    for req in schema.get("required", []):
        if req not in args:
            return f"missing argument {req!r}"
    for key, value in args.items():
        if key not in props:
            return f"unknown argument {key!r} (expected {sorted(props)})"
        expected = props[key]["type"]
        if isinstance(value, bool) or not isinstance(value, _TYPES[expected]):
            return f"argument {key!r} must be {expected}, got {type(value).__name__}"
        if "enum" in props[key] and value not in props[key]["enum"]:
            return f"argument {key!r} must be one of {props[key]['enum']}, got {value!r}"
    return None


@dataclass(frozen=True)
class ToolAnswer:
    """A tool's text answer and whether it reports a failure."""

    text: str
    is_error: bool = False


class RecallSetTools:
    """Executes model tool calls against one RecallSet. Never raises for a bad call."""

    definitions = TOOL_DEFINITIONS

    def __init__(self, recallset: RecallSet):
        self.recallset = recallset

    def dispatch(self, call: Mapping[str, Any]) -> str:
        """Run ``{"name": ..., "arguments": {...} | "json"}``; return the tool's text answer.

        Bad calls (unknown tool or id, wrong or missing arguments) answer ``error: ...`` so
        the run goes on.
        """
        return self.answer(call).text

    def answer(self, call: Mapping[str, Any]) -> ToolAnswer:
        """Like :meth:`dispatch`, but also says whether the answer reports a failure."""
        if not isinstance(call, Mapping):
            return _failed("a tool call must be an object with 'name' and 'arguments'")
        name = call.get("name")
        if name not in _SCHEMAS:
            return _failed(f"unknown tool {name!r}; available: {sorted(_SCHEMAS)}")
        args: Any = call.get("arguments", call.get("input", {})) or {}
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError as exc:
                return _failed(f"arguments are not valid JSON ({exc.msg})")
        if not isinstance(args, Mapping):
            return _failed("arguments must be an object")
        problem = _check_args(str(name), args)
        if problem:
            return _failed(f"{name}: {problem}")
        try:
            return ToolAnswer(self._run(str(name), args))
        except HarnessError as exc:
            return _failed(f"{name}: {exc}")

    def _run(self, name: str, args: Mapping[str, Any]) -> str:
        rs = self.recallset
        if name == "recallset_add":
            res = rs.add(
                args["content"],
                mark=args.get("mark", "check"),
                priority=args.get("priority", 0),
                title=args.get("title"),
            )
            if res.duplicate and res.item.mark is Mark.DISCARD:
                status = (
                    "discarded earlier in this run; mark it again to use it"
                    if res.id in rs
                    else "discarded earlier in this run and since evicted; not added again"
                )
                return json.dumps({"id": res.id, "status": status})
            out: dict[str, Any] = {
                "id": res.id,
                "mark": res.item.mark.value,
                "status": "duplicate" if res.duplicate else "added",
            }
            if res.evicted:
                out["evicted"] = [it.id for it in res.evicted]
            return json.dumps(out)
        if name == "recallset_mark":
            item = rs.mark(args["id"], args["mark"])
            return json.dumps({"id": item.id, "mark": item.mark.value})
        if name == "recallset_read":
            return rs.read(args["id"])
        return json.dumps(rs.overview())


def _failed(message: str) -> ToolAnswer:
    return ToolAnswer(f"error: {message}", is_error=True)
