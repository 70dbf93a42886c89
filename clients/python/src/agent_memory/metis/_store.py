"""What the Metis stores share (:class:`_StoreBase`): all but the sending. The stores are
``_store_async.py``'s :class:`AsyncMemoryStore`, written by hand, and ``_store_sync.py``'s
:class:`MemoryStore`, generated from it by scripts/unasync.py."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn

from .._core import DEFAULT_BASE_URL
from ..errors import RefusedError, UnexpectedResponseError
from ..models import (
    Add,
    Budgets,
    Caps,
    Edit,
    MemoryUpdate,
    PairDocument,
    Prefetch,
    Replace,
    SyncReport,
)
from ._files import (
    METIS_CAPS,
    STORE_OF,
    WHITESPACE,
    EventHandler,
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryReplaceError,
    Operation,
    WriteResult,
    checked_id,
    checked_text,
    login_user,
    memory_file,
    workspace_personality,
)

_logger = logging.getLogger("agent_memory.metis")


@dataclass(frozen=True)
class _Write:
    """One write, checked and ready to send."""

    file: MemoryFile
    operation: Operation
    update: MemoryUpdate
    old_text: str = ""
    """For a replace: the text to find, for its error."""


class _StoreBase:
    """What both stores share: whose documents, the caps, checking arguments, reading the
    service's answers into results and events. Only sending differs."""

    @staticmethod
    def soft_cap(file: MemoryFile) -> int:
        """Metis's soft cap: 2048 bytes for MEMORY.md, 1536 for USER.md."""
        return METIS_CAPS[memory_file(file)][0]

    @staticmethod
    def hard_cap(file: MemoryFile) -> int:
        """Metis's hard cap: 4096 bytes for MEMORY.md, 3072 for USER.md."""
        return METIS_CAPS[memory_file(file)][1]

    def __init__(
        self,
        workspace_path: str | os.PathLike[str],
        *,
        personality: str | None,
        user: str | None,
        caps: Mapping[MemoryFile, Caps] | None,
        on_event: EventHandler | None,
    ) -> None:
        workspace = Path(workspace_path).expanduser()
        self._workspace_path = str(workspace.resolve())
        self._personality = checked_id(
            workspace_personality(workspace) if personality is None else personality,
            "personality",
        )
        self._user = checked_id(login_user() if user is None else user, "user")
        overrides = {memory_file(file): limits for file, limits in (caps or {}).items()}
        # Through type(self): a subclass overriding the static caps changes its stores' caps.
        self._caps = {
            file: overrides[file]
            if file in overrides
            else Caps(type(self).soft_cap(file), type(self).hard_cap(file))
            for file in MemoryFile
        }
        self._on_event = on_event

    @property
    def workspace_path(self) -> str:
        """The workspace, resolved (``~`` expanded)."""
        return self._workspace_path

    @property
    def personality(self) -> str:
        """The personality whose MEMORY.md is the workspace's."""
        return self._personality

    @property
    def user(self) -> str:
        """The user whose USER.md this store reads and writes."""
        return self._user

    def caps_of(self, file: MemoryFile | str) -> Caps:
        """The caps this store sends for ``file`` (``caps=``, else the static ones)."""
        return self._caps[memory_file(file)]

    # Checking a write before it is sent -----------------------------------------------------

    def _add(self, file: MemoryFile | str, entry: str) -> _Write:
        target = memory_file(file)
        if checked_text(entry, "entry").strip(WHITESPACE) == "":
            raise ValueError("entry is blank: there is nothing to add")
        return _Write(target, "add", Add(STORE_OF[target], entry))

    def _replace(self, file: MemoryFile | str, old_text: str, new_text: str) -> _Write:
        target = memory_file(file)
        if checked_text(old_text, "old_text") == "":
            raise ValueError("old_text is empty: pass the text to replace")
        update = Edit(STORE_OF[target], old_text, checked_text(new_text, "new_text"))
        return _Write(target, "replace", update, old_text)

    def _consolidate(self, file: MemoryFile | str, new_content: str) -> _Write:
        target = memory_file(file)
        update = Replace(STORE_OF[target], checked_text(new_content, "new_content"))
        return _Write(target, "consolidate", update)

    def _budgets(self, write: _Write) -> Budgets:
        caps = self._caps[write.file]
        return Budgets(memory=caps) if write.file is MemoryFile.MEMORY else Budgets(user=caps)

    # Reading the service's answers -----------------------------------------------------------

    @staticmethod
    def _document(seen: Prefetch, file: MemoryFile) -> PairDocument:
        return seen.memory if file is MemoryFile.MEMORY else seen.user

    def _refused(self, write: _Write, error: RefusedError) -> NoReturn:
        """Raises the Metis error the service's refusal of ``write`` is: a hard cap, a replace
        whose text is not there once; any other refusal as it came."""
        problem, status, key = error.problem, error.status, error.idempotency_key
        if error.code == "hard-cap-exceeded":
            attempted = problem.bytes if problem else None
            sent_cap = self._caps[write.file].hard
            cap = problem.hard_cap if problem and problem.hard_cap is not None else sent_cap
            raise MemoryHardCapExceeded(
                write.file,
                attempted,
                cap,
                problem=problem,
                status=status,
                idempotency_key=key,
            ) from error
        if write.operation == "replace" and error.code in ("no-match", "ambiguous-match"):
            reason: Literal["no-match", "ambiguous-match"] = (
                "no-match" if error.code == "no-match" else "ambiguous-match"
            )
            raise MemoryReplaceError(
                write.file,
                write.old_text,
                reason,
                problem=problem,
                status=status,
                idempotency_key=key,
            ) from error
        raise error

    def _landed(self, write: _Write, report: SyncReport) -> WriteResult:
        """The result of a write that landed, after telling ``on_event``."""
        document = report.get(STORE_OF[write.file])
        if document is None:
            raise UnexpectedResponseError(
                f"POST /v1/sync: the report has no {STORE_OF[write.file]} document"
            )
        hard = self._caps[write.file].hard
        result = WriteResult(
            file=write.file,
            before_hash=document.sha256_before,
            after_hash=document.sha256_after,
            before_size_bytes=document.bytes_before,
            after_size_bytes=document.bytes_after,
            over_soft_cap=document.over_soft_cap,
            over_hard_cap=hard is not None and document.bytes_after > hard,
        )
        self._emit(
            "memory.updated",
            {
                "file": result.file.value,
                "operation": write.operation,
                "before_hash": result.before_hash,
                "after_hash": result.after_hash,
                "before_size_bytes": result.before_size_bytes,
                "after_size_bytes": result.after_size_bytes,
            },
        )
        if result.over_soft_cap:
            self._emit(
                "memory.eviction",
                {
                    "file": result.file.value,
                    "trigger": "size_cap_exceeded",
                    "entries_evicted": 0,
                    "size_before_bytes": result.before_size_bytes,
                    "size_after_bytes": result.after_size_bytes,
                },
            )
        return result

    def _emit(self, name: str, payload: Mapping[str, object]) -> None:
        # The write has landed: a failing subscriber is logged, never the write's error.
        if self._on_event is None:
            return
        try:
            self._on_event(name, payload)
        except Exception:
            _logger.exception("on_event(%r) raised; the write it reports landed", name)


def _client_settings(
    client: object, base_url: str | None, api_key: str | None
) -> tuple[str, str | None]:
    """The server and key for a store that makes its own client."""
    if client is not None and (base_url is not None or api_key is not None):
        raise ValueError("pass either client= or base_url=/api_key=, not both")
    url = base_url or os.environ.get("MEMORY_URL") or DEFAULT_BASE_URL
    return url, api_key or os.environ.get("MEMORY_API_KEY") or None
