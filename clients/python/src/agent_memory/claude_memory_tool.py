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

try:
    import anthropic.lib.tools  # noqa: F401  (the check: the backends below need the SDK)
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

from ._memory_tool import idempotency_key_for_tool_use
from ._memory_tool_async import AsyncAgentMemoryTool
from ._memory_tool_sync import AgentMemoryTool

__all__ = ["AgentMemoryTool", "AsyncAgentMemoryTool", "idempotency_key_for_tool_use"]

# Shown as this module's (in reprs and generated docs), where they were before the split.
for _public in (AgentMemoryTool, AsyncAgentMemoryTool, idempotency_key_for_tool_use):
    _public.__module__ = __name__
