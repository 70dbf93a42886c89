"""Metis's three memory tools (memory_add, memory_replace, memory_consolidate): their
definitions, with the specification's input schemas, and running them on a store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from ._files import MemoryFile, Operation, WriteResult
from ._store_async import AsyncMemoryStore
from ._store_sync import MemoryStore

_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)

SOFT_CAP_HINT = " — over soft cap; consider memory_consolidate"
"""What a tool's result carries when the write left the file over its soft cap."""


class ToolExecutionError(Exception):
    """A tool call that did not do what it was asked. ``is_user_visible``: its message is
    meant for the model (and the person), which can act on it: a hard cap to consolidate
    under, a text to replace that is not there once, arguments that do not fit the schema."""

    def __init__(self, message: str, *, is_user_visible: bool = False) -> None:
        super().__init__(message)
        self.is_user_visible = is_user_visible


@dataclass(frozen=True)
class MemoryToolDefinition:
    """A tool as Metis defines one: its name, description and input schema (JSON Schema), a
    write that needs a workspace."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    side_effects: Literal["write"] = "write"
    requires_workspace: bool = True


MEMORY_TOOLS: tuple[MemoryToolDefinition, ...] = (
    MemoryToolDefinition(
        name="memory_add",
        description=(
            "Add one entry to MEMORY.md (facts about this workspace worth remembering across "
            "sessions) or USER.md (facts about the user, the same in every workspace). Both "
            "files are small and byte-budgeted (about 2 KB and 1.5 KB): add what will matter "
            "in later sessions, not what this conversation already holds."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "file": {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
                "entry": {"type": "string", "minLength": 1},
            },
            "required": ["file", "entry"],
            "additionalProperties": False,
        },
    ),
    MemoryToolDefinition(
        name="memory_replace",
        description=(
            "Replace text in MEMORY.md or USER.md: `old` must appear in the file exactly once, "
            "literally; it becomes `new` (an empty `new` deletes it). For small corrections "
            "without rewriting the file."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "file": {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["file", "old", "new"],
            "additionalProperties": False,
        },
    ),
    MemoryToolDefinition(
        name="memory_consolidate",
        description=(
            "Rewrite MEMORY.md or USER.md whole with `content` (empty clears the file). Use it "
            "when a file is over its soft cap: keep what matters, shorter. The hard cap still "
            "applies."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "file": {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
                "content": {"type": "string"},
            },
            "required": ["file", "content"],
            "additionalProperties": False,
        },
    ),
)
"""The three tools, as Metis registers them (section 6 of its memory store specification)."""

_DEFINITIONS = {definition.name: definition for definition in MEMORY_TOOLS}
_OPERATIONS: Mapping[str, Operation] = {
    "memory_add": "add",
    "memory_replace": "replace",
    "memory_consolidate": "consolidate",
}
_DONE: Mapping[Operation, str] = {
    "add": "Added to",
    "replace": "Replaced in",
    "consolidate": "Consolidated",
}


class _Writes(Protocol[_R_co]):
    """A store's three writes, returning results (:class:`MemoryStore`) or awaitables of them
    (:class:`AsyncMemoryStore`)."""

    def add_entry(self, file: MemoryFile, entry: str) -> _R_co: ...

    def replace(self, file: MemoryFile, old_text: str, new_text: str) -> _R_co: ...

    def consolidate(self, file: MemoryFile, new_content: str) -> _R_co: ...


@dataclass(frozen=True)
class _ToolCall:
    """A tool call whose arguments fit its schema: the write it asks for."""

    operation: Operation
    file: MemoryFile
    arguments: Mapping[str, str]

    def on(self, store: _Writes[_R]) -> _R:
        if self.operation == "add":
            return store.add_entry(self.file, self.arguments["entry"])
        if self.operation == "replace":
            return store.replace(self.file, self.arguments["old"], self.arguments["new"])
        return store.consolidate(self.file, self.arguments["content"])


def _tool_call(name: str, arguments: object) -> _ToolCall:
    definition = _DEFINITIONS.get(name)
    if definition is None:
        raise ToolExecutionError(
            f"no memory tool {name!r}; there are {', '.join(_DEFINITIONS)}", is_user_visible=True
        )
    checked = _checked_arguments(definition, arguments)
    return _ToolCall(_OPERATIONS[name], MemoryFile(checked["file"]), checked)


def _checked_arguments(definition: MemoryToolDefinition, arguments: object) -> dict[str, str]:
    """``arguments`` checked against the tool's input schema (the keywords these schemas use:
    ``properties`` with ``type``, ``enum`` and ``minLength``, ``required``,
    ``additionalProperties``)."""
    tool, schema = definition.name, definition.input_schema
    properties: Mapping[str, Mapping[str, Any]] = schema["properties"]
    if not isinstance(arguments, Mapping):
        raise _unfit(f"{tool}: the arguments must be an object, got {type(arguments).__name__}")
    if schema.get("additionalProperties") is False:
        for key in arguments:
            if key not in properties:
                raise _unfit(f"{tool}: no argument {key!r}; it takes {', '.join(properties)}")
    for key in schema["required"]:
        if key not in arguments:
            raise _unfit(f"{tool}: argument {key!r} is missing")
    checked: dict[str, str] = {}
    for key, value in arguments.items():
        rules = properties[key]
        # Every argument of these tools is a string: a schema asking for another type is one
        # this check does not cover, and fails every call rather than letting one through.
        if rules["type"] != "string" or not isinstance(value, str):
            raise _unfit(
                f"{tool}: argument {key!r} must be a {rules['type']}, got {type(value).__name__}"
            )
        if "enum" in rules and value not in rules["enum"]:
            allowed = " or ".join(repr(choice) for choice in rules["enum"])
            raise _unfit(f"{tool}: argument {key!r} must be {allowed}, got {value!r}")
        if len(value) < rules.get("minLength", 0):
            raise _unfit(
                f"{tool}: argument {key!r} must be at least {rules['minLength']} character(s)"
            )
        checked[key] = value
    return checked


def _unfit(message: str) -> ToolExecutionError:
    return ToolExecutionError(message, is_user_visible=True)


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    # Every ValueError of a store is the model's to fix: MemoryHardCapExceeded and
    # MemoryReplaceError are ValueErrors, as is a blank entry. The service's other errors
    # (unreachable, unauthorized, ...) are the deployment's, raised as they are.
    try:
        yield
    except ValueError as error:
        raise ToolExecutionError(str(error), is_user_visible=True) from error


def _result_text(operation: Operation, result: WriteResult) -> str:
    hint = SOFT_CAP_HINT if result.over_soft_cap else ""
    return (
        f"{_DONE[operation]} {result.file.value} "
        f"({result.before_size_bytes} → {result.after_size_bytes} bytes){hint}."
    )


class MemoryTool(Generic[_R_co]):
    """One memory tool bound to a store, as registered with a dispatcher: its
    :attr:`definition` and :meth:`call` (a ``str`` result from a :class:`MemoryStore`'s tools,
    an awaitable of one from an :class:`AsyncMemoryStore`'s)."""

    def __init__(
        self,
        definition: MemoryToolDefinition,
        call: Callable[[str, Mapping[str, object]], _R_co],
    ) -> None:
        self.definition = definition
        self._call = call

    @property
    def name(self) -> str:
        """The tool's name: ``memory_add``, ``memory_replace`` or ``memory_consolidate``."""
        return self.definition.name

    def call(self, arguments: Mapping[str, object]) -> _R_co:
        """Runs the tool with the model's arguments; see :meth:`MemoryTools.call`."""
        return self._call(self.definition.name, arguments)


class MemoryTools:
    """Runs the memory tools on a :class:`MemoryStore`."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def call(self, name: str, arguments: Mapping[str, object]) -> str:
        """Runs tool ``name`` with the model's ``arguments`` and returns the result's text,
        naming the file and its sizes (``Added to MEMORY.md (1834 → 2101 bytes).``), with
        the hint to consolidate when the file is over its soft cap.

        Raises:
            ToolExecutionError: ``is_user_visible``: arguments that do not fit the tool's
                schema, a blank entry, a text to replace that is not there once, a hard cap.
            agent_memory.AgentMemoryError: The service's other errors (unreachable, ...).
        """
        call = _tool_call(name, arguments)
        with _as_tool_errors():
            result = call.on(self._store)
        return _result_text(call.operation, result)

    def tools(self) -> tuple[MemoryTool[str], ...]:
        """The three tools, bound to the store."""
        return tuple(MemoryTool(definition, self.call) for definition in MEMORY_TOOLS)


class AsyncMemoryTools:
    """Runs the memory tools on an :class:`AsyncMemoryStore`."""

    def __init__(self, store: AsyncMemoryStore) -> None:
        self._store = store

    async def call(self, name: str, arguments: Mapping[str, object]) -> str:
        """See :meth:`MemoryTools.call`."""
        call = _tool_call(name, arguments)
        with _as_tool_errors():
            result = await call.on(self._store)
        return _result_text(call.operation, result)

    def tools(self) -> tuple[MemoryTool[Awaitable[str]], ...]:
        """The three tools, bound to the store."""
        return tuple(MemoryTool(definition, self.call) for definition in MEMORY_TOOLS)


class ToolDispatcher(Protocol):
    """What :func:`register_memory_tools` needs of a dispatcher: ``register(tool)``, as
    Metis's takes its tools. Duck-typed: any object with such a method will do."""

    def register(self, tool: MemoryTool[Any], /) -> object: ...


def register_memory_tools(
    dispatcher: ToolDispatcher, store: MemoryStore | AsyncMemoryStore
) -> None:
    """Registers the three tools bound to ``store`` (Metis's
    ``metis.memory.tools.register_memory_tools(dispatcher)``, with the store given here): one
    ``dispatcher.register(tool)`` each, with a :class:`MemoryTool` whose ``definition`` has
    the name, description, input schema, ``side_effects`` and ``requires_workspace``, and
    whose ``call(arguments)`` runs it (awaited for an :class:`AsyncMemoryStore`)."""
    tools: tuple[MemoryTool[Any], ...] = (
        MemoryTools(store).tools()
        if isinstance(store, MemoryStore)
        else AsyncMemoryTools(store).tools()
    )
    for tool in tools:
        dispatcher.register(tool)
