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
from typing import Any, Final, TypeAlias, cast

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
    ConflictError,
    InvalidInputError,
    PreconditionFailedError,
    RefusedError,
)
from .models import (
    Create,
    Delete,
    Document,
    Edit,
    IfMatch,
    MemoryUpdate,
    NotesPage,
    Prefetch,
    Rename,
    Replace,
    Store,
    SyncReport,
)

ROOT: Final = "/memories"
PAIR: Final[Mapping[str, Store]] = {"MEMORY.md": "memory", "USER.md": "user"}
"""The two files that are the pair, by their name under ``/memories``; every other file is a
note beside the personality's MEMORY.md."""
_COMMANDS: Final = ("view", "create", "str_replace", "insert", "delete", "rename")
# The SDK's reference implementation numbers lines in a field this wide, lists a directory
# this many levels deep, and views no file of more lines than this.
_LINE_NUMBER_WIDTH: Final = 6
_LEVELS: Final = 2
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
class _File:
    """A file under ``/memories``, by its name there: one of the pair, or a note."""

    name: str

    @property
    def store(self) -> Store:
        return PAIR.get(self.name, "memory")

    @property
    def note(self) -> str | None:
        """Its path as a note; ``None`` for the pair."""
        return None if self.name in PAIR else self.name

    @property
    def path(self) -> str:
        return f"{ROOT}/{self.name}"


@dataclass(frozen=True)
class _Read:
    """A step of a command: read both documents (one prefetch)."""


@dataclass(frozen=True)
class _List:
    """A step of a command: list the notes beside the personality's MEMORY.md."""


@dataclass(frozen=True)
class _ReadNote:
    """A step of a command: read one note (``None`` when it does not exist)."""

    note: str


@dataclass(frozen=True)
class _Write:
    """A step of a command: write updates in one call, if the files are still at
    ``if_match``. ``file`` is the one the model named, for what it is told."""

    file: _File
    updates: tuple[MemoryUpdate, ...]
    if_match: IfMatch
    stale: str | None = None
    """What the model is told when the guard fails, where that is not "changed since you
    viewed it"."""


_READ: Final = _Read()
_LIST: Final = _List()
_Step: TypeAlias = _Read | _List | _ReadNote | _Write
# A command as a generator: it yields the reads and writes it needs, is sent their results
# (a Prefetch, a NotesPage, a Document or None, a SyncReport), and returns the tool result.
# The blocking and the asyncio backends run the same generators; only how a step is carried
# out differs.
_Plan: TypeAlias = Generator[_Step, Any, str]


@dataclass
class _Seen:
    """What this backend knows of a file: the version it viewed or wrote, and its text
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

    def __init__(self, path: str) -> None:
        super().__init__(_already_done_text(path))
        self.text = _already_done_text(path)


def _already_done_text(path: str) -> str:
    return (
        f"This tool call was already carried out: its change to {path} landed before, "
        "and was not made twice. View the file to see it."
    )


def _unmatched(path: str, old: str, text: str | None, ambiguous: bool) -> ToolError:
    """The tool's text for an ``old_str`` that does not occur exactly once in ``text`` (the
    text the edit was based on, when known), with the lines of its occurrences."""
    if not ambiguous:
        return ToolError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        )
    lines = _occurrence_lines(text, old) if text is not None else []
    where = f"lines: {', '.join(map(str, lines))}" if len(lines) > 1 else path
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


class _Tree:
    """Every file under ``/memories`` and its size: the pair where it holds text, and the
    notes. A folder is a path some file is under: it exists while it holds one."""

    def __init__(self, prefetch: Prefetch, notes: NotesPage) -> None:
        self.files: dict[str, int] = {
            name: len(document.text.encode())
            for name, document in (("MEMORY.md", prefetch.memory), ("USER.md", prefetch.user))
            if document.text.strip()
        }
        # Each file's version, the pair's whether or not it holds text (a create is guarded by
        # the empty one's).
        self.versions = {"MEMORY.md": prefetch.memory.version, "USER.md": prefetch.user.version}
        self.versions.update((note.path, note.version) for note in notes.notes)
        self.files.update((note.path, note.bytes) for note in notes.notes)

    def under(self, folder: str) -> list[str]:
        """The files under ``folder`` (``""``: all), by name."""
        return sorted(name for name in self.files if not folder or name.startswith(folder + "/"))

    def is_folder(self, name: str) -> bool:
        return bool(self.under(name)) if name else True

    def exists(self, name: str) -> bool:
        return name in self.files or self.is_folder(name)

    def listing(self, folder: str, shown: str) -> str:
        """The folder's files and folders up to two levels deep, as the SDK's reference
        backend lists a directory (names sorted at each level, each folder before what it
        holds), a folder's size the sum of its files'."""
        base = f"{folder}/" if folder else ""
        children: dict[str, dict[str, int]] = {}
        for name in self.under(folder):
            parts = name[len(base) :].split("/")
            for depth in range(1, min(len(parts), _LEVELS) + 1):
                level = "/".join(parts[: depth - 1])
                child = parts[depth - 1] + ("/" if depth < len(parts) else "")
                sizes = children.setdefault(level, {})
                sizes[child] = sizes.get(child, 0) + self.files[name]
        lines = [f"{_format_size(sum(self.files[n] for n in self.under(folder)))}\t{shown}"]

        def collect(level: str) -> None:
            for child, size in sorted(
                children.get(level, {}).items(), key=lambda c: c[0].rstrip("/")
            ):
                relative = f"{level}/{child}" if level else child
                lines.append(f"{_format_size(size)}\t{shown}/{relative}")
                if child.endswith("/"):
                    collect(relative.rstrip("/"))

        collect("")
        return (
            f"Here're the files and directories up to {_LEVELS} levels deep in {shown}, "
            "excluding hidden items:\n" + "\n".join(lines)
        )


class _Commands:
    """The commands' logic, free of I/O: one instance per conversation."""

    def __init__(self, personality: str, user: str) -> None:
        self.personality = personality
        self.user = user
        self.seen: dict[str, _Seen] = {}
        # The tool_use blocks whose write landed, and the file each wrote, newest last:
        # running one again is answered without a request.
        self.finished: OrderedDict[str, str] = OrderedDict()
        # The layout folder of the notes beside the personality's MEMORY.md, once read.
        self.folder: str | None = None

    def finish(self, tool_use_id: str, path: str) -> None:
        self.finished[tool_use_id] = path
        while len(self.finished) > _FINISHED_KEPT:
            self.finished.popitem(last=False)

    # -- paths ---------------------------------------------------------------------------

    @staticmethod
    def name(path: str) -> str:
        """The name under ``/memories`` a path gives (``""`` for ``/memories`` itself),
        refused in the SDK reference backend's words when it is not under it."""
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise ToolError(f"Path must start with {ROOT}, got: {path}")
        normalized = posixpath.normpath(path)
        if normalized.startswith("//"):
            normalized = normalized[1:]
        if normalized != ROOT and not normalized.startswith(ROOT + "/"):
            raise ToolError(f"Path {path} would escape {ROOT} directory")
        return normalized[len(ROOT) + 1 :]

    # -- reading -------------------------------------------------------------------------

    def tree(self) -> Generator[_Step, Any, _Tree]:
        prefetch: Prefetch = yield _READ
        self.learn(prefetch)
        notes: NotesPage = yield _LIST
        return _Tree(prefetch, notes)

    def learn(self, prefetch: Prefetch) -> None:
        beside = prefetch.memory.path
        self.folder = f"{beside.rsplit('/', 1)[0]}/notes" if "/" in beside else "notes"

    def current(self, file: _File) -> Generator[_Step, Any, tuple[str, str] | None]:
        """The version and text of ``file`` now; ``None`` when it does not exist."""
        if file.note is None:
            prefetch: Prefetch = yield _READ
            self.learn(prefetch)
            document: Document = prefetch.memory if file.store == "memory" else prefetch.user
        else:
            if self.folder is None:
                self.learn((yield _READ))
            found: Document | None = yield _ReadNote(file.note)
            if found is None:
                return None
            document = found
        if not document.text.strip():
            return None
        return document.version, document.text

    def viewed_text(self, file: _File, path: str) -> Generator[_Step, Any, tuple[str, str]]:
        """The version and text the next write to ``file`` is based on: what was viewed, or
        (never viewed) the file now. Refused when it does not exist, or is a folder."""
        seen = self.seen.get(file.name)
        if seen is not None and seen.text is not None:
            return seen.version, seen.text
        current = yield from self.current(file)
        if current is None:
            tree = yield from self.tree()
            if tree.is_folder(file.name):
                raise ToolError(f"The path {path} is not a file.")
            self.seen.pop(file.name, None)
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        version, text = current
        if seen is not None and version != seen.version:
            # Written elsewhere since this backend last saw it: basing a change on the new
            # text would overwrite what the model never saw.
            raise self.changed(file.name, path)
        self.seen[file.name] = _Seen(version, text)
        return version, text

    def changed(self, name: str, path: str) -> ToolError:
        self.seen.pop(name, None)
        return ToolError(
            f"{path} changed since you last viewed it (another conversation or process wrote "
            "to it); nothing was written. View it again, then redo the change."
        )

    def write(
        self,
        file: _File,
        path: str,
        updates: tuple[MemoryUpdate, ...],
        if_match: IfMatch,
        stale: str | None = None,
    ) -> Generator[_Step, Any, None]:
        report: SyncReport = yield _Write(file, updates, if_match, stale)
        for written in report.documents:
            ref = written.document
            name = (
                ref.note
                if ref.kind == "note"
                else ("MEMORY.md" if written.store == "memory" else "USER.md")
            )
            if name is not None:
                self.seen[name] = _Seen(written.version_after, None)
        tool_use_id = _TOOL_USE_ID.get()
        if tool_use_id is not None:
            self.finish(tool_use_id, path)
            if report.replayed:
                # The server answered this tool_use's key with its first outcome.
                raise _AlreadyDone(path)

    def failure(self, error: AgentMemoryError, step: _Step) -> Exception:
        """What a failed read or write becomes: a ``ToolError`` (or the "already carried out"
        answer) when the model can act on it; otherwise the error itself, for the developer
        (unauthorized, forbidden, no connection, busy, unavailable, outcome unknown, corrupt,
        config, an unexpected answer...). Refusals are told apart by their problem ``code``,
        never by the wording of their ``detail``."""
        if not isinstance(step, _Write) or not isinstance(
            error, RefusedError | PreconditionFailedError | InvalidInputError | ConflictError
        ):
            return error
        path = step.file.path
        code = error.code
        if isinstance(error, PreconditionFailedError):
            return ToolError(step.stale) if step.stale else self.changed(step.file.name, path)
        if code == "key-reused" and _TOOL_USE_ID.get() is not None:
            # The key of this tool_use already wrote something else: this same call ran
            # before (in another process, say) and its write landed then.
            return _AlreadyDone(path)
        update = step.updates[0]
        if isinstance(update, Edit) and code in ("no-match", "ambiguous-match"):
            # The server matches strictly (overlapping occurrences count), so it can refuse an
            # edit the check on the viewed text let through; say so in the tool's words.
            seen = self.seen.get(step.file.name)
            based_on = seen.text if seen is not None else None
            return _unmatched(path, update.old, based_on, code == "ambiguous-match")
        if code == "note-exists":
            return ToolError(
                f"The destination {path} already exists"
                if isinstance(update, Rename)
                else f"File {path} already exists"
            )
        if code == "note-not-found":
            self.seen.pop(step.file.name, None)
            return ToolError(f"The path {path} does not exist")
        if isinstance(error, RefusedError | ConflictError):
            # Its detail is the refusal in words: for a hard cap, the cap and the size the
            # write would have reached; for a collision, the note already there.
            return ToolError(f"{error.detail} ({path})")
        # Invalid input here is the model's own path or text (the ids were good enough to
        # read), such as a name a memory file cannot have.
        return ToolError(f"{path} could not be written: {error.detail}")

    # -- commands ------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> _Plan:
        path: str = _field(command, "path", str)
        file = _File(self.name(path))
        if file.name:
            current = yield from self.current(file)
            if current is not None:
                version, text = current
                self.seen[file.name] = _Seen(version, text)
                return self.numbered(path, text, getattr(command, "view_range", None))
        tree = yield from self.tree()
        if not tree.is_folder(file.name):
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return tree.listing(file.name, path)

    def numbered(self, path: str, text: str, view_range: object) -> str:
        # As the SDK's reference backend: every LF starts a line, so a final newline shows
        # an empty last line.
        lines = text.split("\n")
        if len(lines) > _MAX_LINES:
            raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
        first, shown = self._view_range(view_range, lines)
        return f"Here's the content of {path} with line numbers:\n" + _numbered(shown, first)

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
        file = _File(self.name(path))
        if not file_text.strip():
            raise ToolError(
                f"File {path} was not created: its text is empty, and a memory file holds text "
                "(one left empty no longer exists). Create it with what it should hold."
            )
        exists = f"File {path} already exists"
        tree = yield from self.tree()
        if file.name in tree.files and _TOOL_USE_ID.get() is not None:
            # This call may be a retry whose first run created the file: only the server,
            # holding its key, can tell. The write is sent so that it can: a note's create, or
            # the pair's replace guarded by a version no file has, refused when not a retry.
            yield from self.write(
                file, path, (self.created(file, file_text),), _guard(file, "-"), exists
            )
        elif file.name in tree.files or tree.is_folder(file.name):
            raise ToolError(exists)
        elif file.note is None:
            guard = _guard(file, tree.versions[file.name])
            yield from self.write(file, path, (self.created(file, file_text),), guard)
        else:
            yield from self.write(file, path, (self.created(file, file_text),), IfMatch())
        return f"File created successfully at: {path}"

    @staticmethod
    def created(file: _File, text: str) -> MemoryUpdate:
        """The update that creates ``file``: a note's create, or the pair's replace."""
        if file.note is None:
            return Replace(file.store, text)
        return Create(file.store, file.note, text)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> _Plan:
        path: str = _field(command, "path", str)
        old: str = _field(command, "old_str", str)
        new: str = _field(command, "new_str", str)
        file = _File(self.name(path))
        if not file.name:
            raise ToolError(f"The path {path} is not a file.")
        if not old:
            raise ToolError("No replacement was performed: `old_str` must not be empty.")
        version, text = yield from self.viewed_text(file, path)
        # Counted as the SDK's reference backend counts (occurrences that do not overlap).
        count = text.count(old)
        if count != 1 and _TOOL_USE_ID.get() is None:
            raise _unmatched(path, old, text, count > 1)
        # With a tool_use id the edit is sent whatever the check says: this call may have
        # landed before (its old_str gone since), and only the server knows; it refuses a
        # miss as no-match / ambiguous-match, told in the same words.
        edit = Edit(file.store, old, new, note=file.note)
        yield from self.write(file, path, (edit,), _guard(file, version))
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
        file = _File(self.name(path))
        if not file.name:
            raise ToolError(f"The path {path} is not a file.")
        version, text = yield from self.viewed_text(file, path)
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
        update = Replace(file.store, new_text, note=file.note)
        yield from self.write(file, path, (update,), _guard(file, version))
        return f"The file {path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> _Plan:
        path: str = _field(command, "path", str)
        file = _File(self.name(path))
        if not file.name:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        current = yield from self.current(file)
        if current is not None:
            version, _ = current
            update: MemoryUpdate = (
                Replace(file.store, "") if file.note is None else Delete(file.store, file.name)
            )
            yield from self.write(file, path, (update,), _guard(file, version))
            return f"Successfully deleted {path}"
        tree = yield from self.tree()
        notes = tree.under(file.name)
        if not tree.is_folder(file.name) or not notes:
            raise ToolError(f"The path {path} does not exist")
        # A folder: every note in it, in one call, each still at the version listed.
        updates = tuple(Delete("memory", note) for note in notes)
        guard = IfMatch(notes={"memory": {note: tree.versions[note] for note in notes}})
        yield from self.write(file, path, updates, guard)
        return f"Successfully deleted {path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> _Plan:
        old_path: str = _field(command, "old_path", str)
        new_path: str = _field(command, "new_path", str)
        source, target = _File(self.name(old_path)), _File(self.name(new_path))
        if not source.name:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        tree = yield from self.tree()
        if tree.exists(target.name):
            raise ToolError(f"The destination {new_path} already exists")
        if source.name in tree.files:
            yield from self.move(tree, source, target, old_path)
        elif tree.is_folder(source.name):
            if target.name.startswith(source.name + "/"):
                raise ToolError(f"Cannot move {old_path} into itself ({new_path})")
            # A folder: each note moves in a call of its own (a rename is atomic per note).
            for note in tree.under(source.name):
                moved = _File(target.name + note[len(source.name) :])
                yield from self.move(tree, _File(note), moved, old_path)
        else:
            raise ToolError(f"The path {old_path} does not exist")
        return f"Successfully renamed {old_path} to {new_path}"

    def move(
        self, tree: _Tree, source: _File, target: _File, shown: str
    ) -> Generator[_Step, Any, None]:
        """Moves one file: a note to a note by a rename; to or from the pair by writing the
        target and emptying the source, in one call."""
        if source.note is not None and target.note is not None:
            update: MemoryUpdate = Rename("memory", source.name, target.name)
            guard = _guard(source, tree.versions[source.name])
            yield from self.write(source, shown, (update,), guard)
            return
        current = yield from self.current(source)
        if current is None:
            raise ToolError(f"The path {shown} does not exist")
        version, text = current
        arrive: MemoryUpdate = (
            Replace(target.store, text)
            if target.note is None
            else Create(target.store, target.name, text)
        )
        leave: MemoryUpdate = (
            Replace(source.store, "") if source.note is None else Delete(source.store, source.name)
        )
        yield from self.write(source, shown, (arrive, leave), _guard(source, version))

    def checked(self, command: object) -> BetaMemoryTool20250818Command:
        name = getattr(command, "command", None)
        if name not in _COMMANDS:
            raise ToolError(
                f"Unknown command {name!r}; the memory tool's commands are {', '.join(_COMMANDS)}."
            )
        return cast(BetaMemoryTool20250818Command, command)

    def key(self, write: int) -> str:
        """The ``Idempotency-Key`` of a command's ``write``-th write (from 0): derived from
        the ``tool_use`` id when known, so running the block again lands nothing twice."""
        tool_use_id = _TOOL_USE_ID.get()
        if tool_use_id is None:
            return str(uuid.uuid4())
        return idempotency_key_for_tool_use(tool_use_id if write == 0 else f"{tool_use_id}#{write}")

    def notes_folder(self) -> str:
        """The layout folder of the personality's notes; a read of the pair learns it."""
        if self.folder is None:
            raise RuntimeError("the notes' folder is read with the pair first")
        return self.folder


def _guard(file: _File, version: str) -> IfMatch:
    """The ``if_match`` of a write based on ``file`` at ``version``."""
    if file.note is not None:
        return IfMatch(notes={"memory": {file.note: version}})
    return IfMatch(memory=version) if file.store == "memory" else IfMatch(user=version)


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
