"""The errors a call can raise: one class per problem ``kind`` of the API, and one for a server
that could not be reached.

Every class derives from :class:`AgentMemoryError`, so ``except AgentMemoryError`` catches all
of them. An error the server answered carries its RFC 9457 problem document
(:attr:`AgentMemoryError.problem`); a write's error also carries the ``Idempotency-Key`` it was
sent with, so the caller can repeat the very same write later without it landing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AgentMemoryError",
    "BusyError",
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "CorruptError",
    "ForbiddenError",
    "InvalidInputError",
    "MethodNotAllowedError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PartiallyAppliedError",
    "PreconditionFailedError",
    "Problem",
    "RefusedError",
    "UnauthorizedError",
    "UnavailableError",
    "UnexpectedResponseError",
]


@dataclass(frozen=True)
class Problem:
    """An RFC 9457 problem document as the server sent it."""

    type: str
    """``urn:agent-memory:problem:<kind>``."""
    title: str
    """A short summary of the kind."""
    status: int
    """The HTTP status."""
    detail: str
    """What went wrong and what to do, naming the document, update or field."""
    kind: str
    """The kind: ``invalid-input``, ``precondition-failed``, ``conflict``, ``refused``, ..."""
    retryable: bool
    """Whether sending the same request again later can succeed."""
    code: str | None = None
    """Which error this is within its kind, stable for code to match on (see
    :attr:`AgentMemoryError.code`); ``None`` for problems only HTTP has."""
    document: str | None = None
    """For ``precondition-failed`` and ``hard-cap-exceeded``: the document's layout path."""
    current_version: str | None = None
    """For ``precondition-failed``: the document's version now."""
    bytes: int | None = None
    """For ``hard-cap-exceeded``: the UTF-8 bytes the document would have had."""
    hard_cap: int | None = None
    """For ``hard-cap-exceeded``: the hard cap it would have gone over, in bytes."""
    raw: Mapping[str, Any] = field(
        default_factory=dict, compare=False, repr=False, metadata={"client_only": True}
    )
    """The whole JSON object, extension members included."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Problem:
        """Reads a problem document; absent members get neutral values rather than failing,
        since an error must be reportable even when a proxy mangled it."""
        return cls(
            type=str(data.get("type", "about:blank")),
            title=str(data.get("title", "")),
            status=int(data.get("status", 0)),
            detail=str(data.get("detail", "")),
            kind=str(data.get("kind", "")),
            retryable=bool(data.get("retryable", False)),
            code=_optional_str(data.get("code")),
            document=_optional_str(data.get("document")),
            current_version=_optional_str(data.get("current_version")),
            bytes=_optional_int(data.get("bytes")),
            hard_cap=_optional_int(data.get("hard_cap")),
            raw=dict(data),
        )


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def _optional_int(value: object) -> int | None:
    # A mangled member is dropped rather than failing the error that carries it.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class AgentMemoryError(Exception):
    """The base of every error this package raises for a call."""

    problem: Problem | None
    """The problem document the server answered with; ``None`` when it answered none."""
    status: int | None
    """The HTTP status; ``None`` when no response came."""
    idempotency_key: str | None
    """The ``Idempotency-Key`` a write was sent with (``None`` for reads): repeat the write
    with this key to make sure it lands exactly once."""

    def __init__(
        self,
        message: str,
        *,
        problem: Problem | None = None,
        status: int | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.problem = problem
        self.status = status if status is not None else (problem.status if problem else None)
        self.idempotency_key = idempotency_key

    @property
    def kind(self) -> str | None:
        """The problem's ``kind``, when the server sent one."""
        return self.problem.kind if self.problem else None

    @property
    def code(self) -> str | None:
        """Which error this is within its kind, stable to match on rather than ``detail``:
        ``no-match``, ``ambiguous-match``, ``hard-cap-exceeded`` or ``key-reused`` (refused);
        ``stale-version`` (precondition failed); ``identity-taken`` (conflict); ``invalid-id``,
        ``invalid-update``, ``revision-not-found``, ``misrouted``, ``not-in-layout`` (invalid
        input); ``contention`` (busy); ``unavailable``, ``outcome-unknown``, ``corrupt``,
        ``partially-applied``, ``config``. ``None`` when the server sent none: problems only
        HTTP has (unauthorized, forbidden, a route not found, ...), or no problem document.
        A newer server may send codes not listed here."""
        return self.problem.code if self.problem else None

    @property
    def detail(self) -> str:
        """The problem's ``detail`` (what went wrong and what to do), else the message."""
        return self.problem.detail if self.problem else str(self)


class InvalidInputError(AgentMemoryError):
    """``invalid-input`` (400, 413, 415, 422 or 428): the request is malformed; fix it."""


class PreconditionFailedError(AgentMemoryError):
    """``precondition-failed`` (412): the document moved on since the version in ``If-Match``
    (or ``if_match``); nothing was written. Read it again and redo the change."""

    @property
    def current_version(self) -> str | None:
        """The document's version now (its ``ETag``): what a new ``If-Match`` takes."""
        return self.problem.current_version if self.problem else None

    @property
    def document(self) -> str | None:
        """The layout path of the document that moved on."""
        return self.problem.document if self.problem else None


class ConflictError(AgentMemoryError):
    """``conflict`` (409): what is stored disagrees, e.g. an identity linked to another user."""


class RefusedError(AgentMemoryError):
    """``refused`` (422): refused as memory stands; nothing was written. :attr:`code` says
    why: ``no-match`` or ``ambiguous-match`` (the text to edit not found, or found more than
    once), ``hard-cap-exceeded``, ``key-reused`` (an ``Idempotency-Key`` sent with another
    request)."""


class BusyError(AgentMemoryError):
    """``busy`` (503): the server is at its limit; it was retried and stayed busy."""


class UnavailableError(AgentMemoryError):
    """``unavailable`` (503): a storage provider does not answer; it was retried and stayed
    down."""


class OutcomeUnknownError(AgentMemoryError):
    """``outcome-unknown`` (504): the write may or may not have landed. It was resent with its
    ``Idempotency-Key``; repeat it with :attr:`idempotency_key` to settle it."""


class PartiallyAppliedError(AgentMemoryError):
    """``partially-applied``: part of the call landed."""


class CorruptError(AgentMemoryError):
    """``corrupt``: stored data could not be read."""


class ConfigError(AgentMemoryError):
    """``config``: the server is misconfigured."""


class UnauthorizedError(AgentMemoryError):
    """``unauthorized`` (401): no valid API key was sent where one is needed."""


class ForbiddenError(AgentMemoryError):
    """``forbidden`` (403): the key lacks the scope, or may not touch that user or
    personality."""


class NotFoundError(AgentMemoryError):
    """``not-found`` (404): no such route, identity link or kept revision."""


class MethodNotAllowedError(AgentMemoryError):
    """``method-not-allowed`` (405)."""


class UnexpectedResponseError(AgentMemoryError):
    """The server answered something this client cannot read (not a problem document, or a
    body that does not match the API): a proxy in between, or a server of another version."""


class ConnectionFailedError(AgentMemoryError):
    """No response came: the server could not be reached, or every attempt lost its reply
    (connection refused or reset, timeout). For a write the outcome is unknown: repeat it with
    :attr:`idempotency_key`, which lands it at most once."""


ERRORS_BY_KIND: Mapping[str, type[AgentMemoryError]] = {
    "invalid-input": InvalidInputError,
    "precondition-failed": PreconditionFailedError,
    "conflict": ConflictError,
    "refused": RefusedError,
    "busy": BusyError,
    "unavailable": UnavailableError,
    "outcome-unknown": OutcomeUnknownError,
    "partially-applied": PartiallyAppliedError,
    "corrupt": CorruptError,
    "config": ConfigError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not-found": NotFoundError,
    "method-not-allowed": MethodNotAllowedError,
}
"""The class raised for each problem ``kind``."""
