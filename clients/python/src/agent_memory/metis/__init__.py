"""Metis's memory store over ``memory serve``: a drop-in for ``metis``'s ``MemoryStore``.

::

    from agent_memory.metis import MemoryStore  # instead of Metis's own

    memory = MemoryStore(workspace)  # $MEMORY_URL (default http://127.0.0.1:8700), $MEMORY_API_KEY
    memory.add_entry("MEMORY.md", "The build runs with `make check`.")
    prompt = memory.assemble_system_prompt(base)

The interface is the Metis memory store specification's (``MemoryFile``, ``WriteResult``, the
reads, the three writes, the static caps, ``assemble_system_prompt``, the three tools); what is
under it is the service: every write is one ``POST /v1/sync`` (with a fresh idempotency key,
so a resend after a lost reply lands once), every read one ``POST /v1/prefetch`` (no cache:
each operation re-reads, as the specification's invariant 5 asks).

Whose documents:

- The workspace's MEMORY.md is the MEMORY.md of personality
  :func:`workspace_personality` (``workspace_path``), unless ``personality=`` names another:
  the resolved path's last component with every character outside ``[A-Za-z0-9_-]`` replaced
  by ``-``, cut to 48 characters (``workspace`` if empty), then ``-`` and the first 8 hex
  digits of the SHA-256 of the resolved path's bytes (``/home/ada/My Project`` gives
  ``My-Project-`` and 8 hex digits). The markdown provider's ``layout = "metis"`` applies the
  same rule, so a store on a server whose provider is ``root = "<workspace>"``,
  ``layout = "metis"`` reads and writes ``<workspace>/.metis/MEMORY.md``, as Metis does.
- USER.md is the user's profile ``users/<user>/USER.md``, the same in every workspace: a
  person is one user wherever they work (the specification's open question 1). ``user=``
  defaults to :func:`login_user`, the login name with the same replacement, cut to 64.

Caps are Metis's (:meth:`MemoryStore.soft_cap`, :meth:`MemoryStore.hard_cap`), overridable per
store with ``caps=``. Each write sends them as its call's ``caps`` and the service enforces
them in the same atomic step as the write: a write over the hard cap is refused with the
document unchanged, even among concurrent writers (on top of the personality's configured
caps: the smaller of each applies).

What differs from Metis's own store, all from the service's contract: an added entry is a new
paragraph (a blank line before it, not a single newline); a consolidated document is trimmed
and ends with exactly one newline (blank clears it); ``replace`` counts overlapping
occurrences (``"aa"`` is ambiguous in ``"aaa"``); the hard cap refuses a write only when it
also grows the document, so a person's hand edit over the cap can still be consolidated
(:attr:`WriteResult.over_hard_cap` is then ``True``); and any number of processes may write
at once without losing a write.

:class:`MemoryHardCapExceeded` and :class:`MemoryReplaceError` are ``ValueError`` subclasses,
as Metis's are, and the client's :class:`~agent_memory.RefusedError` (with the service's
problem document); anything else the service or the connection answers is raised as the
client's :class:`~agent_memory.AgentMemoryError`. ``assemble_system_prompt`` composes as
Metis does (:func:`compose_system_prompt`: each document stripped, so the one final newline
the service keeps changes nothing). The tools: :data:`MEMORY_TOOLS` (the specification's
definitions), :class:`MemoryTools` / :class:`AsyncMemoryTools` to run them, and
:func:`register_memory_tools` for a dispatcher with ``register(tool)``.
"""

from ._files import (
    EventHandler,
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryReplaceError,
    Operation,
    WriteResult,
    compose_system_prompt,
    login_user,
    workspace_personality,
)
from ._store_async import AsyncMemoryStore
from ._store_sync import MemoryStore
from ._tools import (
    MEMORY_TOOLS,
    SOFT_CAP_HINT,
    AsyncMemoryTools,
    MemoryTool,
    MemoryToolDefinition,
    MemoryTools,
    ToolDispatcher,
    ToolExecutionError,
    register_memory_tools,
)

__all__ = [
    "MEMORY_TOOLS",
    "SOFT_CAP_HINT",
    "AsyncMemoryStore",
    "AsyncMemoryTools",
    "EventHandler",
    "MemoryFile",
    "MemoryHardCapExceeded",
    "MemoryReplaceError",
    "MemoryStore",
    "MemoryTool",
    "MemoryToolDefinition",
    "MemoryTools",
    "Operation",
    "ToolDispatcher",
    "ToolExecutionError",
    "WriteResult",
    "compose_system_prompt",
    "login_user",
    "register_memory_tools",
    "workspace_personality",
]
