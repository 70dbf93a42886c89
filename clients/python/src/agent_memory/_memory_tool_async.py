"""Claude's memory tool on an :class:`~agent_memory.AsyncMemoryClient`:
:class:`AsyncAgentMemoryTool`, re-exported by :mod:`agent_memory.claude_memory_tool`.

``_memory_tool_async.py`` is written by hand; scripts/unasync.py generates
``_memory_tool_sync.py`` (the blocking :class:`AgentMemoryTool`) from it. The commands' logic
is ``_memory_tool``'s: what is here is how a plan's reads and writes are carried out.
"""

from __future__ import annotations

from collections.abc import Mapping

from anthropic.lib.tools import (
    BetaAsyncAbstractMemoryTool,
    BetaFunctionToolResultType,
    ToolError,
)
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

from ._memory_tool import (
    _TOOL_USE_ID,
    _already_done_text,
    _AlreadyDone,
    _Commands,
    _error_text,
    _List,
    _Plan,
    _ReadNote,
    _result,
    _tool_use_parts,
    _Write,
)
from .client import AsyncMemoryClient
from .errors import AgentMemoryError, InvalidInputError, NotFoundError
from .models import Document

__all__ = ["AsyncAgentMemoryTool"]


class AsyncAgentMemoryTool(BetaAsyncAbstractMemoryTool):
    """Claude's memory tool on agent-memory, for one conversation (a personality and a user).

    ::

        tool = AsyncAgentMemoryTool(AsyncMemoryClient(url), personality="ada", user="grace")
        runner = anthropic.AsyncAnthropic().beta.messages.tool_runner(
            model=..., max_tokens=..., messages=..., tools=[tool]
        )

    Keep one per conversation: it remembers the version of each file it viewed, and guards
    its writes with it.

    Args:
        client: The client of the memory service.
        personality: The personality speaking (its MEMORY.md is ``/memories/MEMORY.md``, and
            every other file under ``/memories`` is one of its notes).
        user: The user spoken to (their USER.md is ``/memories/USER.md``).
        session: The conversation's id, recorded in the revisions the tool writes.
        cache_control: Passed to the tool's definition, as the SDK's own tools take it.
    """

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
            content = await self.call(tool_input)
            text = content if isinstance(content, str) else str(content)
            return _result(tool_use_id, text, False)
        except ToolError as error:
            return _result(tool_use_id, _error_text(error), True)
        finally:
            _TOOL_USE_ID.reset(token)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        """Runs one command given as the tool's JSON input (what the SDK's runner calls)."""
        if not isinstance(input, Mapping):
            raise ToolError("The memory tool's input must be an object with a `command`.")
        return await super().call(input)

    async def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        """Runs one command (the SDK's command model)."""
        return await super().execute(self._commands.checked(command))

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A folder (``/memories`` too): its files and folders two levels deep, with their
        sizes; a file: its numbered lines."""
        return await self._drive(self._commands.view(command))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Creates a file (a note, or one of the pair while it is empty); refused when it
        exists."""
        return await self._drive(self._commands.create(command))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replaces the one occurrence of ``old_str`` with ``new_str``."""
        return await self._drive(self._commands.str_replace(command))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Inserts ``insert_text`` after line ``insert_line`` (0: at the top)."""
        return await self._drive(self._commands.insert(command))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Deletes a file or a folder's files: revisions, which can be reverted."""
        return await self._drive(self._commands.delete(command))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Moves a file or a folder's files; refused onto one that exists."""
        return await self._drive(self._commands.rename(command))

    async def clear_all_memory(self) -> str:
        """Refused: clearing is per file (``delete``), and erasing history is an admin's
        purge."""
        raise ToolError(
            "Clearing all memory is not offered: delete each file to clear it (its history "
            "keeps the text); erasing history is an administrator's purge."
        )

    async def _drive(self, plan: _Plan) -> str:
        commands = self._commands
        writes = 0
        try:
            step = next(plan)
            while True:
                try:
                    answer: object
                    if isinstance(step, _Write):
                        answer = await self._client.sync(
                            commands.personality,
                            commands.user,
                            list(step.updates),
                            if_match=step.if_match,
                            session=self._session,
                            surface="tool",
                            idempotency_key=commands.key(writes),
                        )
                        writes += 1
                    elif isinstance(step, _ReadNote):
                        answer = await self._read_note(step.note)
                    elif isinstance(step, _List):
                        answer = await self._client.notes.list(commands.notes_folder())
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

    async def _read_note(self, note: str) -> Document | None:
        """The note, or ``None`` when there is none at that path (or none can be: a path the
        notes' rule refuses)."""
        try:
            return await self._client.notes.get(f"{self._commands.notes_folder()}/{note}")
        except (NotFoundError, InvalidInputError):
            return None
