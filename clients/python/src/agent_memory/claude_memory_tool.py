"""A backend for Claude's memory tool (``memory_20250818``) on agent-memory.

:class:`AgentMemoryTool` (blocking, on a :class:`~agent_memory.MemoryClient`) and
:class:`AsyncAgentMemoryTool` (on an :class:`~agent_memory.AsyncMemoryClient`) subclass the
Anthropic SDK's ``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool``; hand one to the
SDK's tool runner like any tool. Needs the Anthropic SDK, the package's ``anthropic`` extra
(``pip install './clients/python[anthropic]'`` from a checkout, or
``pip install 'anthropic>=2.13,<3'``).

One backend serves one conversation: a personality and a user. Under ``/memories`` the model
sees exactly two files:

- ``/memories/MEMORY.md``: the personality's notes, for every conversation with it;
- ``/memories/USER.md``: what is known about the user, shared by every personality.

Every command maps onto the memory's updates, written with ``sync`` for the conversation and
guarded by the version this backend last viewed of that document, so a write never overwrites
what another conversation or process wrote since (the model is told to view again):

- ``view``: ``/memories`` lists the two files with their sizes; a file shows its text with line
  numbers, split and numbered (``view_range`` too) exactly as the SDK's reference backend does.
- ``create``: replaces the whole file with ``file_text`` (the tool's "create or overwrite").
- ``str_replace``: an ``edit`` update, after checking ``old_str`` occurs exactly once (run
  with a ``tool_use`` id, the edit is sent anyway and the server's answer decides).
- ``insert``: the new text computed from the viewed one, written with ``replace``.
- ``delete``: clears the file (a ``replace`` with nothing), a revision that can be reverted;
  the files themselves always exist, and nothing is purged.
- ``rename``: refused; the two files have fixed names.

Any other path is refused with a message telling the model where to write instead. What the
model can fix (a bad path or range, an ``old_str`` missing or not unique, a hard cap, a file
changed since it viewed it, invalid text) is raised as the SDK's ``ToolError``, which its runner
returns as an ``is_error`` tool result. What it cannot (unauthorized, forbidden, no connection,
busy, unavailable, outcome unknown, corrupt, config, an unexpected answer) is raised as the
client's :class:`~agent_memory.AgentMemoryError`, for the developer.

**Exactly once.** A write's ``Idempotency-Key`` is ``memory-tool:<tool_use id>`` when the
backend knows the ``tool_use`` block: call :meth:`AgentMemoryTool.run` with the block (it
returns the ``tool_result`` to send back), so a tool call executed twice lands once, and the
second run is told (not as an error) that it was already carried out. The SDK's
tool runner calls ``call(input)`` without the id; then each write gets a fresh key (still sent
again with the same key after a lost reply, so it lands once per execution).
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

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaFunctionToolResultType,
        ToolError,
    )
except ModuleNotFoundError as missing:  # pragma: no cover - exercised in a subprocess
    if missing.name is None or missing.name.split(".")[0] != "anthropic":
        raise
    # Not `pip install 'agent-memory[anthropic]'`: this package is not on PyPI, and that
    # name there would be someone else's.
    raise ImportError(
        "agent_memory.claude_memory_tool needs the Anthropic SDK, which is not installed: "
        "pip install 'anthropic>=2.13,<3' (the range of this package's `anthropic` extra; "
        "from a checkout of agent-memory: pip install './clients/python[anthropic]')",
        name=missing.name,
    ) from missing
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolResultBlockParam,
)

from .client import AsyncMemoryClient, MemoryClient
from .errors import (
    AgentMemoryError,
    InvalidInputError,
    PreconditionFailedError,
    RefusedError,
)
from .models import Edit, IfMatch, MemoryUpdate, PairDocument, Prefetch, Replace, Store, SyncReport

__all__ = ["AgentMemoryTool", "AsyncAgentMemoryTool", "idempotency_key_for_tool_use"]

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


class AgentMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool on agent-memory, for one conversation (a personality and a user).

    ::

        tool = AgentMemoryTool(MemoryClient(url), personality="ada", user="grace")
        runner = anthropic.Anthropic().beta.messages.tool_runner(
            model=..., max_tokens=..., messages=..., tools=[tool]
        )

    Keep one per conversation: it remembers the version of each document it viewed, and
    guards its writes with it.

    Args:
        client: The client of the memory service.
        personality: The personality speaking (its MEMORY.md is ``/memories/MEMORY.md``).
        user: The user spoken to (their USER.md is ``/memories/USER.md``).
        session: The conversation's id, recorded in the revisions the tool writes.
        cache_control: Passed to the tool's definition, as the SDK's own tools take it.
    """

    def __init__(
        self,
        client: MemoryClient,
        personality: str,
        user: str,
        *,
        session: str | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._client = client
        self._session = session
        self._commands = _Commands(personality, user)

    def run(self, tool_use: object) -> BetaToolResultBlockParam:
        """Runs a ``tool_use`` block (``BetaToolUseBlock`` or its dict) and returns the
        ``tool_result`` to send back, the model's errors flagged ``is_error``; the developer's
        (see the module) are raised.

        Its write's ``Idempotency-Key`` comes from the block's id, so running the same block
        again lands nothing twice and answers (not as an error) that the call was already
        carried out: from this backend's record, or from the server (which answers a resent
        write with its first outcome, and refuses the key reused for another request, as when
        a restarted agent runs the block again)."""
        tool_use_id, tool_input = _tool_use_parts(tool_use)
        finished = self._commands.finished.get(tool_use_id)
        if finished is not None:
            return _result(tool_use_id, _already_done_text(finished), False)
        token = _TOOL_USE_ID.set(tool_use_id)
        try:
            content = self.call(tool_input)
            text = content if isinstance(content, str) else str(content)
            return _result(tool_use_id, text, False)
        except ToolError as error:
            return _result(tool_use_id, _error_text(error), True)
        finally:
            _TOOL_USE_ID.reset(token)

    def call(self, input: object) -> BetaFunctionToolResultType:
        """Runs one command given as the tool's JSON input (what the SDK's runner calls)."""
        if not isinstance(input, Mapping):
            raise ToolError("The memory tool's input must be an object with a `command`.")
        return super().call(input)

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        """Runs one command (the SDK's command model)."""
        return super().execute(self._commands.checked(command))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """``/memories``: the two files and their sizes; a file: its numbered lines."""
        return self._drive(self._commands.view(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Replaces the whole file with ``file_text``."""
        return self._drive(self._commands.create(command))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replaces the one occurrence of ``old_str`` with ``new_str``."""
        return self._drive(self._commands.str_replace(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Inserts ``insert_text`` after line ``insert_line`` (0: at the top)."""
        return self._drive(self._commands.insert(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Clears the file (revertible from its history); the file itself stays."""
        return self._drive(self._commands.delete(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Refused: the two files have fixed names."""
        return self._drive(self._commands.rename(command))

    def clear_all_memory(self) -> str:
        """Refused: clearing is per file (``delete``), and erasing history is an admin's
        purge."""
        raise ToolError(
            "Clearing all memory is not offered: delete each file to clear it (its history "
            "keeps the text); erasing history is an administrator's purge."
        )

    def _drive(self, plan: _Plan) -> str:
        commands = self._commands
        try:
            step = next(plan)
            while True:
                try:
                    if isinstance(step, _Write):
                        answer: object = self._client.sync(
                            commands.personality,
                            commands.user,
                            [step.update],
                            if_match=_if_match(step),
                            session=self._session,
                            surface="tool",
                            idempotency_key=commands.key(),
                        )
                    else:
                        answer = self._client.prefetch(commands.personality, commands.user)
                except AgentMemoryError as error:
                    mapped = commands.failure(error, step)
                    if mapped is error:
                        raise
                    raise mapped from error
                step = plan.send(answer)
        except StopIteration as done:
            result: str = done.value
            return result
        except _AlreadyDone as already:
            return already.text
        finally:
            plan.close()


class AsyncAgentMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`AgentMemoryTool` for asyncio, on an :class:`~agent_memory.AsyncMemoryClient`,
    for the SDK's async tool runner."""

    def __init__(
        self,
        client: AsyncMemoryClient,
        personality: str,
        user: str,
        *,
        session: str | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._client = client
        self._session = session
        self._commands = _Commands(personality, user)

    async def run(self, tool_use: object) -> BetaToolResultBlockParam:
        """See :meth:`AgentMemoryTool.run`."""
        tool_use_id, tool_input = _tool_use_parts(tool_use)
        finished = self._commands.finished.get(tool_use_id)
        if finished is not None:
            return _result(tool_use_id, _already_done_text(finished), False)
        token = _TOOL_USE_ID.set(tool_use_id)
        try:
            content = await self.call(tool_input)
            text = content if isinstance(content, str) else str(content)
            return _result(tool_use_id, text, False)
        except ToolError as error:
            return _result(tool_use_id, _error_text(error), True)
        finally:
            _TOOL_USE_ID.reset(token)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        """See :meth:`AgentMemoryTool.call`."""
        if not isinstance(input, Mapping):
            raise ToolError("The memory tool's input must be an object with a `command`.")
        return await super().call(input)

    async def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        """See :meth:`AgentMemoryTool.execute`."""
        return await super().execute(self._commands.checked(command))

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """See :meth:`AgentMemoryTool.view`."""
        return await self._drive(self._commands.view(command))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """See :meth:`AgentMemoryTool.create`."""
        return await self._drive(self._commands.create(command))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """See :meth:`AgentMemoryTool.str_replace`."""
        return await self._drive(self._commands.str_replace(command))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """See :meth:`AgentMemoryTool.insert`."""
        return await self._drive(self._commands.insert(command))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """See :meth:`AgentMemoryTool.delete`."""
        return await self._drive(self._commands.delete(command))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """See :meth:`AgentMemoryTool.rename`."""
        return await self._drive(self._commands.rename(command))

    async def clear_all_memory(self) -> str:
        """See :meth:`AgentMemoryTool.clear_all_memory`."""
        raise ToolError(
            "Clearing all memory is not offered: delete each file to clear it (its history "
            "keeps the text); erasing history is an administrator's purge."
        )

    async def _drive(self, plan: _Plan) -> str:
        commands = self._commands
        try:
            step = next(plan)
            while True:
                try:
                    if isinstance(step, _Write):
                        answer: object = await self._client.sync(
                            commands.personality,
                            commands.user,
                            [step.update],
                            if_match=_if_match(step),
                            session=self._session,
                            surface="tool",
                            idempotency_key=commands.key(),
                        )
                    else:
                        answer = await self._client.prefetch(commands.personality, commands.user)
                except AgentMemoryError as error:
                    mapped = commands.failure(error, step)
                    if mapped is error:
                        raise
                    raise mapped from error
                step = plan.send(answer)
        except StopIteration as done:
            result: str = done.value
            return result
        except _AlreadyDone as already:
            return already.text
        finally:
            plan.close()


def _if_match(step: _Write) -> IfMatch:
    return IfMatch(memory=step.if_match) if step.store == "memory" else IfMatch(user=step.if_match)
