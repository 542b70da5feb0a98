"""The ``/memories`` file tree of one run: paths <-> (scope, scope id, kind, key), staged edits.

Pure (no IO, no SDK import). The Anthropic memory tool handler feeds it what recall and the
store return, asks it to run the model's commands, and reads back the staged changes once the
verdict is final. Every change stays here (and is logged in the run's RecallSet) until then.

Layout (the tenant is the handler's, never part of a path)::

    /memories/platform/<kind>/<name>
    /memories/user/<user_id>/<kind>/<name>
    /memories/workflow/<workflow_id>/<kind>/<name>     (when the run has a workflow)
    /memories/session/<session_id>/<kind>/<name>       (when the run has a session)

``<name>`` is the memory key, percent-encoded where a key holds ``/`` or ``%``; a memory
without a key is ``id-<uuid>``.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from harness.memory.domain.caller import Caller
from harness.memory.domain.types import Kind, Memory, Scope
from harness.recallset import Mark, RecallSet

__all__ = [
    "LAYOUT",
    "FileError",
    "FileLocation",
    "MemoryFiles",
    "StagedChange",
    "scope_ids",
]

ROOT = "/memories"
MAX_PATH_CHARS = 500
_SAFE = " !$&'()*+,;=:@-._~"
_KEYLESS = "id-"
LAYOUT = (
    "Memory files live at /memories/<scope>/[<id>/]<kind>/<name>: scope platform (no id), "
    "user, workflow or session (with this run's id); kind one of "
    + ", ".join(k.value for k in Kind)
    + "."
)


class FileError(Exception):
    """A command the tool refuses; the message is the tool's error text for the model."""


def scope_ids(caller: Caller) -> dict[Scope, str | None]:
    """The scopes ``caller``'s run may read and write, with their ids."""
    ids: dict[Scope, str | None] = {Scope.PLATFORM: None, Scope.USER: caller.user_id}
    if caller.workflow_id:
        ids[Scope.WORKFLOW] = caller.workflow_id
    if caller.session_id:
        ids[Scope.SESSION] = caller.session_id
    return ids


@dataclass(frozen=True)
class FileLocation:
    """Where a memory file lives; ``key`` None for a keyless memory (``memory_id`` set)."""

    scope: Scope
    scope_id: str | None
    kind: Kind
    key: str | None
    memory_id: uuid.UUID | None = None

    @property
    def path(self) -> str:
        """The canonical path."""
        name = f"{_KEYLESS}{self.memory_id}" if self.key is None else quote(self.key, safe=_SAFE)
        return "/".join([*_dir_parts(self.scope, self.scope_id, self.kind), name])


def _dir_parts(scope: Scope, scope_id: str | None, kind: Kind | None = None) -> list[str]:
    parts = [ROOT, scope.value] + ([] if scope is Scope.PLATFORM else [scope_id or ""])
    return parts + ([kind.value] if kind is not None else [])


@dataclass(frozen=True)
class StagedChange:
    """One file's net change in this run: new content, or None for deleted."""

    location: FileLocation
    content: str | None
    base: Memory | None


@dataclass
class _File:
    location: FileLocation
    content: str
    base: Memory | None  # the stored memory this file shows (None: created in this run)


class MemoryFiles:
    """The run's view of its memories as files, with every change staged.

    Args:
        identity: the run's tenant and ids; paths of other ids are refused.
        recallset: where each change is logged for the run (mark keep for the live content).
        max_file_chars: the largest file a command may leave behind.
        check: validates content a command would leave (the store's guard and limits); raises
            :class:`FileError` with the reason.
    """

    def __init__(
        self,
        identity: Caller,
        recallset: RecallSet,
        *,
        max_file_chars: int,
        check: Callable[[FileLocation, str], None] | None = None,
    ) -> None:
        self.identity = identity
        self.recallset = recallset
        self.max_file_chars = max_file_chars
        self.check = check
        self._base: dict[str, _File] = {}
        self._staged: dict[str, _File | None] = {}
        self._log: dict[str, str] = {}  # path -> RecallSet item id of its live staged content
        self._looked_up: set[str] = set()
        self._closed = False

    # --- loading what the store holds ---------------------------------------------------------

    def load(self, memories: Iterable[Memory]) -> None:
        """Show these stored memories as files (items of other identities are ignored)."""
        ids = scope_ids(self.identity)
        for memory in memories:
            if memory.tenant != self.identity.tenant or memory.scope not in ids:
                continue
            if memory.scope is not Scope.PLATFORM and memory.scope_id != ids[memory.scope]:
                continue
            loc = FileLocation(
                memory.scope,
                memory.scope_id if memory.scope is not Scope.PLATFORM else None,
                memory.kind,
                memory.key,
                None if memory.key else memory.id,
            )
            self._base.setdefault(loc.path, _File(loc, memory.content, memory))
            self._looked_up.add(loc.path)

    def needs_lookup(self, path: str) -> FileLocation | None:
        """The keyed file location the store should be asked about before ``path`` is served,
        or None (already known, a directory, or not a valid path)."""
        try:
            loc = self._locate(path)
        except FileError:
            return None
        if not isinstance(loc, FileLocation) or loc.key is None:
            return None
        if loc.path in self._looked_up or loc.path in self._staged:
            return None
        return loc

    def looked_up(self, loc: FileLocation, memory: Memory | None) -> None:
        """Record the store's answer for one location (None: it holds nothing there)."""
        self._looked_up.add(loc.path)
        if memory is not None and memory.kind is loc.kind:
            self.load([memory])

    # --- paths ----------------------------------------------------------------------------------

    def _locate(self, path: object) -> FileLocation | tuple[str, ...]:
        """A file location, or the directory parts after /memories."""
        if self._closed:
            raise FileError("This run is over: its memory files take no more commands.")
        if not isinstance(path, str) or not path:
            raise FileError("A path is required, e.g. /memories/user/<id>/preference/<name>.")
        if len(path) > MAX_PATH_CHARS:
            raise FileError(f"Path is {len(path)} characters; the limit is {MAX_PATH_CHARS}.")
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise FileError(f"Path must start with /memories, got: {path}")
        if any(unicodedata.category(c) in {"Cc", "Cs", "Zl", "Zp"} for c in path) or "\\" in path:
            raise FileError(f"Path {path} holds control characters or backslashes.")
        parts = tuple(path[len(ROOT) :].rstrip("/").split("/")[1:]) if path != ROOT else ()
        if any(p in {"", ".", ".."} for p in parts):
            raise FileError(f"Path {path} would escape /memories directory")
        if not parts:
            return ()
        try:
            scope = Scope(parts[0])
        except ValueError:
            raise FileError(f"Path {path}: unknown folder {parts[0]!r}. {LAYOUT}") from None
        ids = scope_ids(self.identity)
        if scope not in ids:
            raise FileError(f"Path {path}: this run has no {scope.value}. {LAYOUT}")
        rest = parts[1:]
        scope_id: str | None = None
        if scope is not Scope.PLATFORM:
            if not rest:
                return parts
            if rest[0] != ids[scope]:
                raise FileError(
                    f"Path {path} belongs to another {scope.value}; this run may only use "
                    f"{'/'.join(_dir_parts(scope, ids[scope]))}."
                )
            scope_id, rest = rest[0], rest[1:]
        if not rest:
            return parts
        try:
            kind = Kind(rest[0])
        except ValueError:
            raise FileError(f"Path {path}: {rest[0]!r} is not a kind. {LAYOUT}") from None
        if len(rest) == 1:
            return parts
        if len(rest) > 2:
            raise FileError(f"Path {path} is too deep. {LAYOUT}")
        name = rest[1]
        if name.startswith(_KEYLESS):
            try:
                return FileLocation(scope, scope_id, kind, None, uuid.UUID(name[len(_KEYLESS) :]))
            except ValueError:
                pass
        key = unquote(name)
        if not key.strip() or key != key.strip() or len(key) > 200:
            raise FileError(f"Path {path}: {name!r} is not a usable file name.")
        return FileLocation(scope, scope_id, kind, key)

    def _file_location(self, path: object) -> FileLocation:
        loc = self._locate(path)
        if not isinstance(loc, FileLocation):
            raise FileError(
                f"The path {path} is a directory; files live one level below a kind. {LAYOUT}"
            )
        return loc

    # --- the current tree -----------------------------------------------------------------------

    def _files(self) -> dict[str, _File]:
        files = dict(self._base)
        for path, staged in self._staged.items():
            if staged is None:
                files.pop(path, None)
            else:
                files[path] = staged
        return files

    def _get(self, path: object) -> _File:
        loc = self._file_location(path)
        found = self._files().get(loc.path)
        if found is None:
            raise FileError(f"The path {path} does not exist. Please provide a valid path.")
        return found

    def _stage(self, loc: FileLocation, content: str | None, base: Memory | None) -> None:
        if content is not None:
            if len(content) > self.max_file_chars:
                raise FileError(
                    f"File {loc.path} would be {len(content)} characters; the limit is "
                    f"{self.max_file_chars}."
                )
            if self.check is not None:
                self.check(loc, content)
        old = self._log.pop(loc.path, None)
        if old is not None and old in self.recallset:
            self.recallset.mark(old, Mark.DISCARD)
        if content is None:
            self.recallset.add(f"staged: delete {loc.path}", mark=Mark.KEEP, source="memory-tool")
        else:
            added = self.recallset.add(
                f"staged: {loc.path}\n{content}",
                mark=Mark.KEEP,
                title=f"staged {loc.path}",
                source="memory-tool",
            )
            self._log[loc.path] = added.id
        self._staged[loc.path] = None if content is None else _File(loc, content, base)

    # --- commands (the memory tool's) -----------------------------------------------------------

    def view(self, path: object, view_range: object = None) -> str:
        """A directory listing (two levels) or a file with line numbers."""
        loc = self._locate(path)
        if isinstance(loc, FileLocation):
            return _numbered(str(path), self._get(path).content, view_range)
        prefix = "/".join([ROOT, *loc])
        # The layout is four levels deep and a run knows few files: list them all.
        entries: dict[str, int | None] = {}
        for fpath, f in sorted(self._files().items()):
            if not fpath.startswith(prefix + "/"):
                continue
            rel = fpath[len(prefix) + 1 :].split("/")
            for i in range(1, len(rel)):
                entries.setdefault("/".join(rel[:i]) + "/", None)
            entries[fpath[len(prefix) + 1 :]] = len(f.content.encode())
        if loc and not entries:
            raise FileError(f"The path {path} does not exist. Please provide a valid path.")
        lines = [
            f"{'' if size is None else f'{size}B'}\t{prefix}/{entry}"
            for entry, size in sorted(entries.items())
        ]
        if not entries:
            lines.append("(no memory files yet)")
        header = f"Here're the files and directories in {prefix}:"
        return "\n".join([header, *lines])

    def create(self, path: object, file_text: object) -> str:
        """Stage a new file."""
        loc = self._file_location(path)
        if loc.key is None:
            raise FileError(f"Path {path}: names starting with {_KEYLESS!r} are reserved.")
        if not isinstance(file_text, str):
            raise FileError("create needs file_text (a string).")
        if loc.path in self._files():
            raise FileError(f"File {path} already exists")
        self._stage(loc, file_text, None)
        return f"File created successfully at: {path}"

    def str_replace(self, path: object, old_str: object, new_str: object) -> str:
        """Stage an edit replacing the one occurrence of ``old_str``."""
        if not isinstance(old_str, str) or not isinstance(new_str, str) or not old_str:
            raise FileError("str_replace needs old_str (non-empty) and new_str (strings).")
        f = self._get(path)
        count = f.content.count(old_str)
        if count != 1:
            raise FileError(
                f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
                if count == 0
                else f"No replacement was performed. Multiple occurrences of old_str `{old_str}`. "
                "Please ensure it is unique"
            )
        self._stage(f.location, f.content.replace(old_str, new_str), f.base)
        return "The memory file has been edited."

    def insert(self, path: object, insert_line: object, insert_text: object) -> str:
        """Stage an insertion after line ``insert_line`` (0: at the top)."""
        if not isinstance(insert_text, str):
            raise FileError("insert needs insert_text (a string).")
        f = self._get(path)
        lines = f.content.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if (
            isinstance(insert_line, bool)
            or not isinstance(insert_line, int)
            or not 0 <= insert_line <= len(lines)
        ):
            raise FileError(
                f"Invalid `insert_line` parameter: {insert_line!r}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        self._stage(f.location, "\n".join(lines) + "\n", f.base)
        return f"The file {path} has been edited."

    def delete(self, path: object) -> str:
        """Stage the deletion of a file, or of every file under a directory."""
        loc = self._locate(path)
        if loc == ():
            raise FileError("Cannot delete the /memories directory itself")
        if isinstance(loc, FileLocation):
            f = self._get(path)
            self._stage(f.location, None, f.base)
            return f"Successfully deleted {path}"
        prefix = "/".join([ROOT, *loc]) + "/"
        doomed = [f for p, f in self._files().items() if p.startswith(prefix)]
        if not doomed:
            raise FileError(f"The path {path} does not exist")
        for f in doomed:
            self._stage(f.location, None, f.base)
        return f"Successfully deleted {path}"

    def rename(self, old_path: object, new_path: object) -> str:
        """Stage a move of one file (the old path is deleted, the new one created)."""
        f = self._get(old_path)
        target = self._file_location(new_path)
        if target.key is None:
            raise FileError(f"Path {new_path}: names starting with {_KEYLESS!r} are reserved.")
        if target.path in self._files():
            raise FileError(f"The destination {new_path} already exists")
        self._stage(target, f.content, None)
        self._stage(f.location, None, f.base)
        return f"Successfully renamed {old_path} to {new_path}"

    # --- after the verdict ----------------------------------------------------------------------

    def staged(self) -> list[StagedChange]:
        """Every path's net change, in path order (no-ops left out)."""
        out = []
        for path, f in sorted(self._staged.items()):
            base = self._base.get(path)
            if f is None:
                if base is not None:
                    out.append(StagedChange(base.location, None, base.base))
            elif base is None or base.content != f.content:
                out.append(StagedChange(f.location, f.content, base.base if base else None))
        return out

    def clear(self) -> None:
        """Forget the staged changes; the run is over, later commands are refused. Idempotent."""
        self._staged.clear()
        self._log.clear()
        self._closed = True


def _numbered(path: str, content: str, view_range: object) -> str:
    lines = content.split("\n")
    start, end = 1, len(lines)
    if view_range is not None:
        if (
            not isinstance(view_range, list | tuple)
            or len(view_range) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range)
        ):
            raise FileError(
                "view_range must be two line numbers [start, end] (end -1: to the end)."
            )
        start = max(1, view_range[0])
        end = len(lines) if view_range[1] == -1 else min(len(lines), view_range[1])
    shown = [f"{n:6d}\t{lines[n - 1]}" for n in range(start, end + 1)]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(shown)
