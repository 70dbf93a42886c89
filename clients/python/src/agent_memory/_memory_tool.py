"""What Claude's memory tool backends share (:mod:`agent_memory.claude_memory_tool`): the
commands' logic, free of I/O, as plans that yield the reads and writes they need; the tool
classes only carry the steps out (``_memory_tool_async.py``, and ``_memory_tool_sync.py``
generated from it).
"""

from __future__ import annotations

import contextvars
import hashlib
import posixpath
import uuid
from collections import OrderedDict
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, cast

from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolResultBlockParam,
)

from .errors import (
    AgentMemoryError,
    InvalidInputError,
    PreconditionFailedError,
    RefusedError,
)
from .models import Edit, IfMatch, MemoryUpdate, PairDocument, Prefetch, Replace, Store, SyncReport

ROOT: Final = "/memories"
FILES: Final[Mapping[Store, str]] = {"memory": "/memories/MEMORY.md", "user": "/memories/USER.md"}
_COMMANDS: Final = ("view", "create", "str_replace", "insert", "delete", "rename")
# The SDK's reference implementation numbers lines in a field this wide, and views no file
# of more lines than this.
_LINE_NUMBER_WIDTH: Final = 6
_MAX_LINES: Final = 999_999
_KEY_PREFIX: Final = "memory-tool:"
_FINISHED_KEPT: Final = 256

# The id of the tool_use being run by `run`, for the write's idempotency key; a context
# variable so concurrent calls (threads, tasks) each see their own.
_TOOL_USE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agent_memory_tool_use_id", default=None
)


def idempotency_key_for_tool_use(tool_use_id: str) -> str:
    """The ``Idempotency-Key`` of the write a ``tool_use`` makes: ``memory-tool:<id>``, or a
    hash of the id when it does not fit a key (1 to 128 visible ASCII characters)."""
    key = _KEY_PREFIX + tool_use_id
    if len(key) <= 128 and all("!" <= char <= "~" for char in key):
        return key
    return _KEY_PREFIX + hashlib.sha256(tool_use_id.encode()).hexdigest()


@dataclass(frozen=True)
class _Read:
    """A step of a command: read both documents (one prefetch)."""


@dataclass(frozen=True)
class _Write:
    """A step of a command: write one update to one document, if still at ``if_match``."""

    store: Store
    update: MemoryUpdate
    if_match: str


_READ: Final = _Read()
_Step: TypeAlias = _Read | _Write
# A command as a generator: it yields the reads and writes it needs, is sent their results
# (a Prefetch or a SyncReport), and returns the tool result. The blocking and the asyncio
# backends run the same generators; only how a step is carried out differs.
_Plan: TypeAlias = Generator[_Step, Any, str]


@dataclass
class _Seen:
    """What this backend knows of a document: the version it viewed or wrote, and its text
    (``None`` after a write, read again when next needed)."""

    version: str
    text: str | None


def _split_lines(text: str) -> list[str]:
    """Lines on LF only, without the empty tail a final newline leaves: the lines ``insert``
    counts, as the SDK's reference backend splits them (``view`` splits without dropping it)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _occurrence_lines(text: str, old: str) -> list[int]:
    """The line each occurrence of ``old`` starts on, overlapping ones included (as the SDK's
    reference backend lists them)."""
    lines, position = [], text.find(old)
    while position != -1:
        lines.append(text.count("\n", 0, position) + 1)
        position = text.find(old, position + 1)
    return lines


class _AlreadyDone(Exception):
    """A tool call whose write landed before (the same ``tool_use`` run again): the model is
    told so, as a normal result, not an error."""

    def __init__(self, store: Store) -> None:
        super().__init__(_already_done_text(store))
        self.text = _already_done_text(store)


def _already_done_text(store: Store) -> str:
    return (
        f"This tool call was already carried out: its change to {FILES[store]} landed before, "
        "and was not made twice. View the file to see it."
    )


def _unmatched(store: Store, old: str, text: str | None, ambiguous: bool) -> ToolError:
    """The tool's text for an ``old_str`` that does not occur exactly once in ``text`` (the
    text the edit was based on, when known), with the lines of its occurrences."""
    if not ambiguous:
        return ToolError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in "
            f"{FILES[store]}."
        )
    lines = _occurrence_lines(text, old) if text is not None else []
    where = f"lines: {', '.join(map(str, lines))}" if len(lines) > 1 else FILES[store]
    return ToolError(
        f"No replacement was performed. Multiple occurrences of old_str `{old}` in {where}. "
        "Please ensure it is unique"
    )


def _format_size(size: int) -> str:
    """A size as the SDK's reference implementation lists it (``0B``, ``512B``, ``1.5K``)."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**index)
    return (
        f"{int(scaled)}{units[index]}" if scaled == int(scaled) else f"{scaled:.1f}{units[index]}"
    )


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(number).rjust(_LINE_NUMBER_WIDTH)}\t{line}"
        for number, line in enumerate(lines, start=first)
    )


def _field(command: object, name: str, kind: type[str] | type[int]) -> Any:
    """A command's field, checked: the SDK builds commands without validating the model's
    input, so a field may be missing or of another type."""
    value = getattr(command, name, None)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = "a string" if kind is str else "an integer"
        raise ToolError(f"The `{name}` parameter is required and must be {expected}.")
    return value


class _Commands:
    """The commands' logic, free of I/O: one instance per conversation."""

    def __init__(self, personality: str, user: str) -> None:
        self.personality = personality
        self.user = user
        self.seen: dict[Store, _Seen] = {}
        # The tool_use blocks whose write landed, and the document each wrote, newest last:
        # running one again is answered without a request.
        self.finished: OrderedDict[str, Store] = OrderedDict()

    def finish(self, tool_use_id: str, store: Store) -> None:
        self.finished[tool_use_id] = store
        while len(self.finished) > _FINISHED_KEPT:
            self.finished.popitem(last=False)

    # -- paths ---------------------------------------------------------------------------

    def _where_to_write(self) -> str:
        return (
            f"Only {FILES['memory']} (notes for every conversation with {self.personality}) and "
            f"{FILES['user']} (what you know about {self.user}) exist; put this in one of them."
        )

    def target(self, path: str) -> Store | Literal["root"]:
        """The document a path names, ``"root"`` for ``/memories``; any other path is refused
        (in the SDK reference backend's words where it has them) with where to write instead."""
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise ToolError(f"Path must start with {ROOT}, got: {path}. {self._where_to_write()}")
        normalized = posixpath.normpath(path)
        if normalized != ROOT and not normalized.startswith(ROOT + "/"):
            raise ToolError(f"Path {path} would escape {ROOT} directory. {self._where_to_write()}")
        if normalized == ROOT:
            return "root"
        for store, file in FILES.items():
            if normalized == file:
                return store
        raise ToolError(f"The path {path} does not exist. {self._where_to_write()}")

    def file_target(self, path: str, action: str) -> Store:
        target = self.target(path)
        if target == "root":
            raise ToolError(
                f"Cannot {action} the {ROOT} directory itself. {self._where_to_write()}"
            )
        return target

    # -- reading -------------------------------------------------------------------------

    @staticmethod
    def document(prefetch: Prefetch, store: Store) -> PairDocument:
        return prefetch.memory if store == "memory" else prefetch.user

    def viewed_text(self, store: Store) -> Generator[_Step, Any, tuple[str, str]]:
        """The version and text the next write to ``store`` is based on: what was viewed, or
        (never viewed) the document now."""
        seen = self.seen.get(store)
        if seen is not None and seen.text is not None:
            return seen.version, seen.text
        prefetch: Prefetch = yield _READ
        document = self.document(prefetch, store)
        if seen is not None and document.version != seen.version:
            # Written elsewhere since this backend last saw it: basing a change on the new
            # text would overwrite what the model never saw.
            raise self.changed(store)
        self.seen[store] = _Seen(document.version, document.text)
        return document.version, document.text

    def changed(self, store: Store) -> ToolError:
        self.seen.pop(store, None)
        return ToolError(
            f"{FILES[store]} changed since you last viewed it (another conversation or process "
            "wrote to it); nothing was written. View it again, then redo the change."
        )

    def write(
        self, store: Store, update: MemoryUpdate, if_match: str
    ) -> Generator[_Step, Any, None]:
        report: SyncReport = yield _Write(store, update, if_match)
        document = report.get(store)
        if document is None:
            self.seen.pop(store, None)
        else:
            self.seen[store] = _Seen(document.version_after, None)
        tool_use_id = _TOOL_USE_ID.get()
        if tool_use_id is not None:
            self.finish(tool_use_id, store)
            if report.replayed:
                # The server answered this tool_use's key with its first outcome.
                raise _AlreadyDone(store)

    def failure(self, error: AgentMemoryError, step: _Step) -> Exception:
        """What a failed read or write becomes: a ``ToolError`` (or the "already carried out"
        answer) when the model can act on it; otherwise the error itself, for the developer
        (unauthorized, forbidden, no connection, busy, unavailable, outcome unknown, corrupt,
        config, an unexpected answer...). Refusals are told apart by their problem ``code``,
        never by the wording of their ``detail``."""
        if not isinstance(step, _Write) or not isinstance(
            error, RefusedError | PreconditionFailedError | InvalidInputError
        ):
            return error
        file = FILES[step.store]
        code = error.code
        if isinstance(error, PreconditionFailedError):
            return self.changed(step.store)
        if code == "key-reused" and _TOOL_USE_ID.get() is not None:
            # The key of this tool_use already wrote something else: this same call ran
            # before (in another process, say) and its write landed then.
            return _AlreadyDone(step.store)
        if isinstance(step.update, Edit) and code in ("no-match", "ambiguous-match"):
            # The server matches strictly (overlapping occurrences count), so it can refuse an
            # edit the check on the viewed text let through; say so in the tool's words.
            seen = self.seen.get(step.store)
            based_on = seen.text if seen is not None and seen.version == step.if_match else None
            return _unmatched(step.store, step.update.old, based_on, code == "ambiguous-match")
        if isinstance(error, RefusedError):
            # Its detail is the refusal in words: for a hard cap, the cap and the size the
            # write would have reached.
            return ToolError(f"{error.detail} ({file})")
        # Invalid input here is the model's own text (the ids were good enough to read).
        return ToolError(f"{file} could not be written: {error.detail}")

    # -- commands ------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> _Plan:
        path: str = _field(command, "path", str)
        target = self.target(path)
        prefetch: Prefetch = yield _READ
        if target == "root":
            sizes = {s: len(self.document(prefetch, s).text.encode()) for s in FILES}
            listing = [f"{_format_size(sum(sizes.values()))}\t{ROOT}"] + [
                f"{_format_size(sizes[store])}\t{file}" for store, file in FILES.items()
            ]
            return (
                f"Here're the files and directories up to 2 levels deep in {ROOT}, "
                "excluding hidden items:\n" + "\n".join(listing)
            )
        document = self.document(prefetch, target)
        self.seen[target] = _Seen(document.version, document.text)
        # As the SDK's reference backend: every LF starts a line, so a final newline shows
        # an empty last line and an empty file one empty line.
        lines = document.text.split("\n")
        if len(lines) > _MAX_LINES:
            raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
        first, shown = self._view_range(getattr(command, "view_range", None), lines)
        return f"Here's the content of {FILES[target]} with line numbers:\n" + _numbered(
            shown, first
        )

    @staticmethod
    def _view_range(view_range: object, lines: list[str]) -> tuple[int, list[str]]:
        """The first line's number and the lines a ``view_range`` shows, as the SDK's reference
        backend picks them: only a pair counts, its first element raised to 1, its second -1
        for the end; a range past the end shows what it covers, maybe nothing."""
        if view_range is None:
            return 1, lines
        if not isinstance(view_range, list | tuple) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in view_range
        ):
            raise ToolError(
                f"Invalid `view_range` parameter: {view_range!r}. It should be a list of two "
                "integers: the first and last line to show (-1 for the end)."
            )
        if len(view_range) != 2:
            return 1, lines
        start = max(1, int(view_range[0])) - 1
        end = len(lines) if view_range[1] == -1 else int(view_range[1])
        return start + 1, lines[start:end]

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> _Plan:
        path: str = _field(command, "path", str)
        file_text: str = _field(command, "file_text", str)
        store = self.file_target(path, "create")
        version, text = yield from self.viewed_text(store)
        yield from self.write(store, Replace(store, file_text), version)
        if text.strip():
            return (
                f"File {FILES[store]} overwritten with the new text (it already existed; its "
                "previous text is kept in the memory's history)."
            )
        return f"File created successfully at: {FILES[store]}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> _Plan:
        path: str = _field(command, "path", str)
        old: str = _field(command, "old_str", str)
        new: str = _field(command, "new_str", str)
        store = self.file_target(path, "edit")
        if not old:
            raise ToolError("No replacement was performed: `old_str` must not be empty.")
        version, text = yield from self.viewed_text(store)
        # Counted as the SDK's reference backend counts (occurrences that do not overlap).
        count = text.count(old)
        if count != 1 and _TOOL_USE_ID.get() is None:
            raise _unmatched(store, old, text, count > 1)
        # With a tool_use id the edit is sent whatever the check says: this call may have
        # landed before (its old_str gone since), and only the server knows; it refuses a
        # miss as no-match / ambiguous-match, told in the same words.
        yield from self.write(store, Edit(store, old, new), version)
        changed_line = text.count("\n", 0, max(0, text.find(old)))
        new_lines = text.replace(old, new).split("\n")
        first = max(0, changed_line - 2)
        last = min(len(new_lines), changed_line + 3)
        return (
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n" + _numbered(new_lines[first:last], first + 1)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> _Plan:
        path: str = _field(command, "path", str)
        insert_line: int = _field(command, "insert_line", int)
        insert_text: str = _field(command, "insert_text", str)
        store = self.file_target(path, "insert into")
        version, text = yield from self.viewed_text(store)
        lines = _split_lines(text)
        if not 0 <= insert_line <= len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_text = "\n".join(lines)
        if not new_text.endswith("\n"):
            new_text += "\n"
        yield from self.write(store, Replace(store, new_text), version)
        return f"The file {FILES[store]} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> _Plan:
        path: str = _field(command, "path", str)
        store = self.file_target(path, "delete")
        version, _ = yield from self.viewed_text(store)
        yield from self.write(store, Replace(store, ""), version)
        return (
            f"Cleared {FILES[store]}: it is empty now. The file itself stays (it cannot be "
            "removed), and its previous text is kept in the memory's history, from which it can "
            "be restored."
        )

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> _Plan:
        old_path: str = _field(command, "old_path", str)
        _field(command, "new_path", str)
        self.target(old_path)
        raise ToolError(
            f"Cannot rename {old_path}: {FILES['memory']} and {FILES['user']} have fixed names "
            "and nothing else can be created. Write what you meant to move into one of them "
            "instead (view it, then create, str_replace or insert)."
        )
        yield _READ  # unreachable: makes this function a generator like the others

    def checked(self, command: object) -> BetaMemoryTool20250818Command:
        name = getattr(command, "command", None)
        if name not in _COMMANDS:
            raise ToolError(
                f"Unknown command {name!r}; the memory tool's commands are {', '.join(_COMMANDS)}."
            )
        return cast(BetaMemoryTool20250818Command, command)

    def key(self) -> str:
        tool_use_id = _TOOL_USE_ID.get()
        return (
            str(uuid.uuid4()) if tool_use_id is None else idempotency_key_for_tool_use(tool_use_id)
        )


def _tool_use_parts(tool_use: object) -> tuple[str, object]:
    """The id and input of a ``tool_use`` block: the SDK's ``BetaToolUseBlock`` or its dict."""
    if isinstance(tool_use, Mapping):
        tool_use_id, tool_input = tool_use.get("id"), tool_use.get("input")
    else:
        tool_use_id, tool_input = getattr(tool_use, "id", None), getattr(tool_use, "input", None)
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise ValueError("a tool_use block needs its `id`")
    return tool_use_id, tool_input


def _result(tool_use_id: str, content: str, is_error: bool) -> BetaToolResultBlockParam:
    result: BetaToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
    }
    if is_error:
        result["is_error"] = True
    return result


def _error_text(error: ToolError) -> str:
    return error.content if isinstance(error.content, str) else str(error)


def _if_match(step: _Write) -> IfMatch:
    return IfMatch(memory=step.if_match) if step.store == "memory" else IfMatch(user=step.if_match)
