# Generated from _store_async.py by scripts/unasync.py: edit that file, not this one.
"""Metis's store over an :class:`~agent_memory.MemoryClient`: :class:`MemoryStore`.

``_store_async.py`` is written by hand; scripts/unasync.py generates ``_store_sync.py`` (the
blocking :class:`MemoryStore`) from it. Checking a write and reading the service's answers is
``_store``'s (:class:`_StoreBase`): what is here is the sending.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType

from ..client import MemoryClient
from ..errors import RefusedError
from ..models import Caps, Prefetch
from ._files import (
    EventHandler,
    MemoryFile,
    WriteResult,
    compose_system_prompt,
    memory_file,
)
from ._store import _client_settings, _StoreBase, _Write

__all__ = ["MemoryStore"]


class MemoryStore(_StoreBase):
    """Metis's ``MemoryStore`` for one workspace, over ``memory serve`` (blocking).

    Args:
        workspace_path: The workspace; its MEMORY.md is personality
            :func:`workspace_personality`'s.
        client: A client to send with (not closed by the store); else the store makes one
            from ``base_url`` (default ``$MEMORY_URL``, else ``http://127.0.0.1:8700``) and
            ``api_key`` (default ``$MEMORY_API_KEY``) and closes it in :meth:`close`.
        personality: Whose MEMORY.md instead of the workspace's rule.
        user: Whose USER.md (default :func:`login_user`).
        caps: Caps per file instead of :meth:`soft_cap` / :meth:`hard_cap` (a ``Caps`` with
            ``None`` sends no limit of that kind: only the personality's configured ones apply).
        on_event: Told ``memory.updated`` after every write that landed, and
            ``memory.eviction`` after one that left the file over its soft cap. An exception
            it raises is logged, never raised: the write has landed.

    Raises:
        MemoryHardCapExceeded: From a write that would go over the hard cap.
        MemoryReplaceError: From :meth:`replace` when ``old_text`` is not there exactly once.
        ValueError: A ``file`` other than MEMORY.md and USER.md, a blank entry, an empty
            ``old_text``, an invalid ``personality`` or ``user``.
        TypeError: A text argument that is not a ``str``.
        agent_memory.AgentMemoryError: What the service or the connection answered otherwise.
    """

    def __init__(
        self,
        workspace_path: str | os.PathLike[str],
        *,
        client: MemoryClient | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        personality: str | None = None,
        user: str | None = None,
        caps: Mapping[MemoryFile, Caps] | None = None,
        on_event: EventHandler | None = None,
    ) -> None:
        url, key = _client_settings(client, base_url, api_key)
        super().__init__(
            workspace_path, personality=personality, user=user, caps=caps, on_event=on_event
        )
        self._owns_client = client is None
        self._client = client if client is not None else MemoryClient(url, api_key=key)

    def close(self) -> None:
        """Closes the client the store made (not one passed in)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _seen(self) -> Prefetch:
        return self._client.prefetch(self._personality, self._user)

    def read(self, file: MemoryFile | str) -> str:
        """The file's text; ``""`` when it was never written or is empty."""
        target = memory_file(file)
        return self._document(self._seen(), target).text

    def exists(self, file: MemoryFile | str) -> bool:
        """Whether the file has been written (it may have been cleared since)."""
        target = memory_file(file)
        return self._document(self._seen(), target).modified is not None

    def size_bytes(self, file: MemoryFile | str) -> int:
        """The file's size in UTF-8 bytes."""
        text = self.read(file)
        return len(text.encode())

    def add_entry(self, file: MemoryFile | str, entry: str) -> WriteResult:
        """Adds ``entry`` (trimmed) as a new paragraph: after a blank line, ending with one
        newline. A blank entry is a ``ValueError``, nothing sent."""
        return self._write(self._add(file, entry))

    def replace(self, file: MemoryFile | str, old_text: str, new_text: str) -> WriteResult:
        """Replaces the one occurrence of ``old_text`` (literal) with ``new_text``; zero or
        several occurrences: :class:`MemoryReplaceError`."""
        return self._write(self._replace(file, old_text, new_text))

    def consolidate(self, file: MemoryFile | str, new_content: str) -> WriteResult:
        """Replaces the whole file with ``new_content``, trimmed and ending with one newline;
        blank clears it."""
        return self._write(self._consolidate(file, new_content))

    def assemble_system_prompt(self, base: str) -> str:
        """``base`` with the USER.md and MEMORY.md sections (:func:`compose_system_prompt`),
        read fresh."""
        seen = self._seen()
        return compose_system_prompt(base, seen.user.text, seen.memory.text)

    def _write(self, write: _Write) -> WriteResult:
        try:
            report = self._client.sync(
                self._personality, self._user, [write.update], caps=self._budgets(write)
            )
        except RefusedError as error:
            self._refused(write, error)
        return self._landed(write, report)
