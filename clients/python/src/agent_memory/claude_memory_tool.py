"""A backend for Claude's memory tool (``memory_20250818``) on agent-memory.

:class:`AgentMemoryTool` (blocking, on a :class:`~agent_memory.MemoryClient`) and
:class:`AsyncAgentMemoryTool` (on an :class:`~agent_memory.AsyncMemoryClient`) subclass the
Anthropic SDK's ``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool``; hand one to the
SDK's tool runner like any tool. Needs the Anthropic SDK, the package's ``anthropic`` extra
(``pip install './clients/python[anthropic]'`` from a checkout, or
``pip install 'anthropic>=2.13,<3'``).

One backend serves one conversation: a personality and a user. ``/memories`` holds:

- ``/memories/MEMORY.md``: the personality's memory, for every conversation with it;
- ``/memories/USER.md``: what is known about the user, shared by every personality;
- any other path (``/memories/trips/kyoto.md``): a note beside the personality's MEMORY.md,
  with the same versions, history and receipts, and listed in its prompt.

Every command maps onto the memory's updates, written with ``sync`` for the conversation and
guarded by the version this backend last viewed of that file, so a write never overwrites
what another conversation or process wrote since (the model is told to view again). Results
and refusals are the SDK's reference filesystem backend's, word for word, except where the
README lists a difference:

- ``view``: a folder lists its files and folders two levels deep with their sizes (a
  folder's size is the sum of its files'); a file shows its text with line numbers, split and
  numbered (``view_range`` too) as the reference backend does.
- ``create``: a note's ``create``; one of the pair is written while it is empty. Refused
  when the file exists.
- ``str_replace``: an ``edit`` update, after checking ``old_str`` occurs exactly once (run
  with a ``tool_use`` id, the edit is sent anyway and the server's answer decides).
- ``insert``: the new text computed from the viewed one, written with ``replace``.
- ``delete``: a note's ``delete`` (a folder: each note in it, in one call); one of the pair
  is emptied. Each is a revision that ``memory revert`` undoes; nothing is purged.
- ``rename``: a note's ``rename`` (a folder: each note, one call each); to or from the pair,
  the text is written to the target and the source emptied, in one call.

A file exists while it holds text, and a folder while it holds a file. What the
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
