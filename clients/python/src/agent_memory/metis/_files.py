"""The pure parts of the Metis store: the files, whose documents they are, the results and
errors of a write, and the system prompt's composition. No I/O."""

from __future__ import annotations

import getpass
import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal, TypeAlias

from ..errors import Problem, RefusedError
from ..models import Store

_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_ID = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
_WORKSPACE_NAME_CHARS = 48
_WORKSPACE_DIGEST_CHARS = 8
_USER_CHARS = 64

WHITESPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""What the service's ``trim`` takes off: Unicode White_Space, Rust's ``char::is_whitespace``.
Python's ``str.isspace`` differs (it also takes U+001C..U+001F), so checks made before sending
use this set."""


class MemoryFile(StrEnum):
    """Closed enum matching the event bus's ``memory.updated.file``."""

    MEMORY = "MEMORY.md"
    USER = "USER.md"


STORE_OF: Mapping[MemoryFile, Store] = {MemoryFile.MEMORY: "memory", MemoryFile.USER: "user"}
"""The service's store of each file."""

METIS_CAPS: Mapping[MemoryFile, tuple[int, int]] = {
    MemoryFile.MEMORY: (2048, 4096),
    MemoryFile.USER: (1536, 3072),
}
"""Metis's soft and hard caps, in UTF-8 bytes (its specification's section 5)."""


def memory_file(file: object) -> MemoryFile:
    """``file`` as a :class:`MemoryFile`.

    Raises:
        ValueError: It is neither ``"MEMORY.md"`` nor ``"USER.md"``.
    """
    if isinstance(file, str):
        try:
            return MemoryFile(file)
        except ValueError:
            pass
    raise ValueError(f"file must be 'MEMORY.md' or 'USER.md' (a MemoryFile), got {file!r}")


def checked_text(value: object, name: str) -> str:
    """``value``, which must be a ``str`` (``TypeError`` naming ``name`` otherwise)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def checked_id(value: object, name: str) -> str:
    """``value``, which must be a personality or user id (``ValueError`` naming ``name=``)."""
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(f"{name}= must be 1 to 64 of A-Z a-z 0-9 _ -, got {value!r}")
    return value


Operation: TypeAlias = Literal["add", "replace", "consolidate"]
"""A write, as ``memory.updated`` names it."""

EventHandler: TypeAlias = Callable[[str, Mapping[str, object]], None]
"""Called with an event's name (``memory.updated``, ``memory.eviction``) and its payload."""


def workspace_personality(path: str | os.PathLike[str]) -> str:
    """The personality whose MEMORY.md is the workspace's: the resolved path's last component
    made an id (characters outside ``[A-Za-z0-9_-]`` become ``-``, at most 48, ``workspace``
    when nothing is left), ``-``, and the first 8 hex digits of the SHA-256 of the resolved
    path's bytes, so two workspaces of the same name stay apart: ``/home/ada/My Project`` is
    ``My-Project-`` and 8 hex digits. The markdown provider's ``layout = "metis"`` takes the
    same rule for its default personality."""
    resolved = Path(path).resolve()
    name = _NOT_ID_CHAR.sub("-", resolved.name)[:_WORKSPACE_NAME_CHARS] or "workspace"
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:_WORKSPACE_DIGEST_CHARS]
    return f"{name}-{digest}"


def login_user() -> str:
    """The user a store is for by default: the login name (:func:`getpass.getuser`) made an
    id, characters outside ``[A-Za-z0-9_-]`` replaced by ``-``, at most 64.

    Raises:
        ValueError: There is no login name; pass ``user=``.
    """
    try:
        name = getpass.getuser()
    except OSError as error:
        raise ValueError(f"no login name to take the user from ({error}); pass user=") from error
    user = _NOT_ID_CHAR.sub("-", name)[:_USER_CHARS]
    if not user:
        raise ValueError("the login name is empty; pass user=")
    return user


def compose_system_prompt(base: str, user_md: str, memory_md: str) -> str:
    """The system prompt Metis composes from ``base`` and the two files' texts::

        {base}

        ## User context (USER.md)
        {USER.md}

        ## Workspace memory (MEMORY.md)
        {MEMORY.md}

    as Metis's own store does it: each document stripped of the whitespace around it (so the
    one final newline the service keeps adds nothing), ``base`` of its trailing whitespace,
    and a blank document's section left out; with both blank, ``base`` alone (right-stripped).
    The same bytes give the same prompt as Metis reading them from ``.metis/``."""
    sections = [
        base.rstrip(),
        _section("User context (USER.md)", user_md.strip()),
        _section("Workspace memory (MEMORY.md)", memory_md.strip()),
    ]
    return "\n\n".join(section for section in sections if section)


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body}" if body else ""


@dataclass(frozen=True)
class WriteResult:
    """What a write did, from the service's report; carries the ``memory.updated`` fields."""

    file: MemoryFile
    before_hash: str
    """SHA-256 (hex) of the UTF-8 text before the write."""
    after_hash: str
    """SHA-256 (hex) of the UTF-8 text after it (the same when nothing changed)."""
    before_size_bytes: int
    after_size_bytes: int
    over_soft_cap: bool
    """The write landed and left the document over its soft cap: time to consolidate."""
    over_hard_cap: bool
    """The document is over the hard cap after the write. ``False`` for every write to a
    document that was under it: one that would go over is refused. ``True`` only after a
    write that shrank a document someone else had pushed over the cap (a hand edit, another
    writer with looser caps) and left it still over: the service refuses only writes that
    leave a document over its cap *and* larger than it was."""


class MemoryHardCapExceeded(RefusedError, ValueError):
    """A write would leave the file over its hard cap (and larger than it was); nothing was
    written. Consolidate the file first.

    A ``ValueError``, as Metis's own is (so ``except ValueError`` keeps catching it), and the
    client's :class:`~agent_memory.RefusedError` (``code == "hard-cap-exceeded"``) with the
    service's problem document when the service refused it.
    """

    def __init__(
        self,
        file: MemoryFile,
        attempted_size: int | None,
        hard_cap: int | None,
        *,
        problem: Problem | None = None,
        status: int | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        would_be = "go" if attempted_size is None else f"be {attempted_size} bytes,"
        over = "its hard cap" if hard_cap is None else f"its hard cap of {hard_cap} bytes"
        super().__init__(
            f"{file.value} write refused: it would {would_be} over {over}; consolidate it "
            "(memory_consolidate) before adding more. Nothing was written.",
            problem=problem,
            status=status,
            idempotency_key=idempotency_key,
        )
        self.file = file
        self.attempted_size = attempted_size
        """The size it would have had, in UTF-8 bytes, when the service said."""
        self.hard_cap = hard_cap
        """The hard cap that refused it (the smaller of the store's and the personality's)."""


class MemoryReplaceError(RefusedError, ValueError):
    """``replace``'s ``old_text`` is not in the file exactly once (``reason`` says whether it
    is missing or found more than once, overlapping occurrences counted); nothing was written.

    A ``ValueError``, as Metis's own store raises, and the client's
    :class:`~agent_memory.RefusedError` (``code`` ``no-match`` or ``ambiguous-match``).
    """

    def __init__(
        self,
        file: MemoryFile,
        old_text: str,
        reason: Literal["no-match", "ambiguous-match"],
        *,
        problem: Problem | None = None,
        status: int | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        quoted = repr(old_text if len(old_text) <= 60 else old_text[:57] + "...")
        where = (
            "does not appear in it"
            if reason == "no-match"
            else "appears in it more than once (overlapping occurrences count)"
        )
        super().__init__(
            f"{file.value}: the text to replace, {quoted}, {where}; pass text that appears "
            "exactly once. Nothing was written.",
            problem=problem,
            status=status,
            idempotency_key=idempotency_key,
        )
        self.file = file
        self.old_text = old_text
        self.reason = reason
