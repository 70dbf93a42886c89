"""Everything both clients share: each operation's request (path, query, headers, body), the
retry policy, and reading a response into a result or an error. The clients only send.
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import random
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from .errors import (
    ERRORS_BY_KIND,
    AgentMemoryError,
    ConflictError,
    ConnectionFailedError,
    ForbiddenError,
    InvalidInputError,
    MethodNotAllowedError,
    NotFoundError,
    OutcomeUnknownError,
    PreconditionFailedError,
    Problem,
    UnauthorizedError,
    UnavailableError,
    UnexpectedResponseError,
)
from .models import (
    Budgets,
    Document,
    DocumentReport,
    Health,
    IdentitiesPage,
    Identity,
    IfMatch,
    LinkChange,
    MemoryUpdate,
    NotesPage,
    PersonalitiesPage,
    Prefetch,
    Purged,
    Revision,
    RevisionDiff,
    RevisionsPage,
    SearchResult,
    SyncReport,
    UsersPage,
    WriteSurface,
    _Wire,
    updates_to_json,
)

__version__ = "0.1.0"

T = TypeVar("T")
_WireT = TypeVar("_WireT", bound=_Wire)

DEFAULT_BASE_URL = "http://127.0.0.1:8700"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 4

# Statuses after which the same request may be sent again: a proxy's bad gateway, busy or
# unavailable (nothing was written), outcome unknown (safe to resend because every write
# carries its Idempotency-Key).
_RESEND_STATUSES = frozenset({502, 503, 504})
# Failures where the request may not have reached the server, or its reply was lost; anything
# else (a bad URL, an unsupported scheme) fails the same way every time.
_RESENDABLE_ERRORS: tuple[type[httpx.TransportError], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
_FIRST_BACKOFF = 0.1
_MAX_BACKOFF = 5.0
_MAX_RETRY_AFTER = 60.0

IDEMPOTENCY_KEY = "Idempotency-Key"
IDEMPOTENT_REPLAYED = "Idempotent-Replayed"

_DOCUMENT_PATH = re.compile(
    r"\A(?:MEMORY\.md|personalities/[A-Za-z0-9_-]{1,64}/MEMORY\.md|users/[A-Za-z0-9_-]{1,64}/USER\.md)\Z"
)
_NOTES_FOLDER = re.compile(
    r"\A(?P<scope>(?:personalities/[A-Za-z0-9_-]{1,64}/|users/[A-Za-z0-9_-]{1,64}/)?)notes"
)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One operation: the request to send (as many times as it takes) and how to read the
    answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    """Set for a write: the key every send of it carries."""
    result_statuses: frozenset[int] = frozenset({200})
    """Statuses whose body is the result (readiness answers 503 with a health document)."""


@dataclass(frozen=True)
class Settings:
    """What a client was built with."""

    base_url: str
    api_key: str | None
    max_retries: int

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, call: Call[Any]) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": f"agent-memory-python/{__version__}"}
        if self.api_key is not None:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if call.idempotency_key is not None:
            headers[IDEMPOTENCY_KEY] = call.idempotency_key
        if call.body is not None:
            headers["Content-Type"] = "application/json"
        headers.update(call.headers)
        return headers

    def content(self, call: Call[Any]) -> bytes | None:
        if call.body is None:
            return None
        return json.dumps(call.body, ensure_ascii=False).encode()


def make_settings(base_url: str, api_key: str | None, max_retries: int) -> Settings:
    """Checks a client's arguments."""
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
    if api_key is not None and (not api_key or any(c in api_key for c in "\r\n")):
        raise ValueError("api_key must be a non-empty single-line string")
    return Settings(base_url=base_url.rstrip("/"), api_key=api_key, max_retries=max_retries)


def make_timeout(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    """A request timeout: seconds for every phase, an ``httpx.Timeout``, or ``None`` for none."""
    return timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)


# ---------------------------------------------------------------------------------------------
# Sending again


Outcome = httpx.Response | httpx.TransportError


def resend_delay(call: Call[Any], attempt: int, max_retries: int, outcome: Outcome) -> float | None:
    """Seconds to wait before sending ``call`` again after ``outcome`` of its ``attempt``-th
    send (0 for the first), or ``None`` when ``outcome`` is final."""
    if attempt >= max_retries:
        return None
    if isinstance(outcome, httpx.TransportError):
        return _backoff(attempt) if isinstance(outcome, _RESENDABLE_ERRORS) else None
    status = outcome.status_code
    if status not in _RESEND_STATUSES or status in call.result_statuses:
        return None
    return max(_backoff(attempt), _retry_after(outcome) or 0.0)


def _backoff(attempt: int) -> float:
    # Full jitter keeps many clients that lost the same server from coming back in step.
    ceiling: float = min(_MAX_BACKOFF, _FIRST_BACKOFF * 2.0**attempt)
    return random.uniform(0.5, 1.0) * ceiling


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), _MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when.timestamp() - time.time(), 0.0), _MAX_RETRY_AFTER)


def finish(call: Call[T], outcome: Outcome) -> T:
    """The result of ``call`` from its final outcome, or the error it maps to."""
    if isinstance(outcome, httpx.TransportError):
        what = "write" if call.idempotency_key is not None else "request"
        hint = (
            f"; it may or may not have landed: repeat it with Idempotency-Key "
            f"{call.idempotency_key!r} to land it at most once"
            if call.idempotency_key is not None
            else ""
        )
        raise ConnectionFailedError(
            f"{call.method} {call.path}: no response to the {what} "
            f"({type(outcome).__name__}: {outcome}){hint}",
            idempotency_key=call.idempotency_key,
        ) from outcome
    if outcome.status_code in call.result_statuses:
        try:
            return call.parse(outcome)
        except (ValueError, TypeError) as error:
            raise UnexpectedResponseError(
                f"{call.method} {call.path}: the response does not match the API: {error}",
                status=outcome.status_code,
                idempotency_key=call.idempotency_key,
            ) from error
    raise error_for(call, outcome)


_ERRORS_BY_STATUS: Mapping[int, type[AgentMemoryError]] = {
    400: InvalidInputError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    412: PreconditionFailedError,
    413: InvalidInputError,
    415: InvalidInputError,
    428: InvalidInputError,
    503: UnavailableError,
    504: OutcomeUnknownError,
}


def error_for(call: Call[Any], response: httpx.Response) -> AgentMemoryError:
    """The error an unsuccessful response maps to: the class of its problem's ``kind``."""
    problem = _problem(response)
    if problem is None:
        # Not our server's answer (a proxy's page, say): classify by status where HTTP is clear.
        cls = _ERRORS_BY_STATUS.get(response.status_code, UnexpectedResponseError)
        if cls is UnavailableError and response.headers.get("Retry-After") is None:
            cls = UnexpectedResponseError
        snippet = response.text[:200].strip()
        return cls(
            f"{call.method} {call.path}: HTTP {response.status_code}"
            + (f": {snippet}" if snippet else ""),
            status=response.status_code,
            idempotency_key=call.idempotency_key,
        )
    if problem.kind == "precondition-failed" and problem.current_version is None:
        etag = response.headers.get("ETag")
        if etag is not None:
            problem = dataclasses.replace(problem, current_version=_unquote_etag(etag))
    cls = ERRORS_BY_KIND.get(problem.kind) or _ERRORS_BY_STATUS.get(
        response.status_code, AgentMemoryError
    )
    message = f"{problem.title}: {problem.detail}" if problem.title else problem.detail
    return cls(
        message, problem=problem, status=response.status_code, idempotency_key=call.idempotency_key
    )


def _problem(response: httpx.Response) -> Problem | None:
    media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if media_type not in ("application/problem+json", "application/json"):
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        return None
    try:
        return Problem.from_json(data)
    except (TypeError, ValueError):
        return None


def _unquote_etag(etag: str) -> str:
    etag = etag.strip()
    if etag.startswith("W/"):
        etag = etag[2:]
    if len(etag) >= 2 and etag[0] == etag[-1] == '"':
        return etag[1:-1]
    return etag


def entity_tag(version: str) -> str:
    """``If-Match`` for a version: quoted, unless it is ``*`` or already an entity tag."""
    if version == "*" or version.startswith(('"', "W/")):
        return version
    return f'"{version}"'


# ---------------------------------------------------------------------------------------------
# Reading results


def _json(response: httpx.Response) -> object:
    data: object = response.json()
    return data


def _reads(cls: type[_WireT]) -> Callable[[httpx.Response], _WireT]:
    """Reads an answer's JSON as ``cls``."""
    return lambda response: cls.from_json(_json(response))


def _replayed(response: httpx.Response) -> bool:
    value: str = response.headers.get(IDEMPOTENT_REPLAYED, "")
    return value.strip().lower() == "true"


def _document_report(response: httpx.Response) -> DocumentReport:
    report = DocumentReport.from_json(_json(response))
    if _replayed(response) and not report.replayed:
        report = dataclasses.replace(report, replayed=True)
    return report


def _sync_report(response: httpx.Response) -> SyncReport:
    report = SyncReport.from_json(_json(response))
    if _replayed(response):
        documents = tuple(dataclasses.replace(doc, replayed=True) for doc in report.documents)
        report = dataclasses.replace(report, documents=documents, replayed=True)
    return report


# ---------------------------------------------------------------------------------------------
# Requests


def _segment(value: str) -> str:
    """One path segment, percent-encoded whole: ``/`` and dot segments must not move the
    request to another route (URL normalisation would resolve ``..``)."""
    return quote(value, safe="").replace(".", "%2E")


def document_route(path: str) -> str:
    """The API route of a document named by its layout path."""
    if not isinstance(path, str) or not _DOCUMENT_PATH.match(path):
        raise ValueError(
            f"not a document path: {path!r}; a document is 'MEMORY.md', "
            "'personalities/<id>/MEMORY.md' or 'users/<id>/USER.md' (ids: 1 to 64 of "
            "A-Z a-z 0-9 _ -); agent_memory.personality_memory() and user_profile() build them"
        )
    return f"/v1/documents/{path}"


def _notes_folder(path: str, *, note: bool) -> tuple[str, str]:
    """The scope part of a notes folder's or a note's layout path (``""``,
    ``personalities/<id>/`` or ``users/<id>/``) and, for a note, its path within the scope,
    each segment percent-encoded (the server checks the note's path rule)."""
    found = _NOTES_FOLDER.match(path) if isinstance(path, str) else None
    rest = path[found.end() :] if found else ""
    if found is None or (rest[1:] == "" if note else rest != "") or (note and rest[0] != "/"):
        what = "a note's" if note else "a notes folder's"
        example = "personalities/<id>/notes/<path>" if note else "personalities/<id>/notes"
        raise ValueError(
            f"not {what} layout path: {path!r}; for example {example!r} (or under "
            "'users/<id>/' or at the top); agent_memory.personality_note() and user_note() "
            "build them"
        )
    return found["scope"], "/".join(_segment(part) for part in rest[1:].split("/"))


def _note_route(path: str, operation: str | None = None) -> str:
    """A note's route, or the route of ``operation`` on it: a note's path ends its routes, so
    the operation comes before it (``.../rename/notes/<path>``)."""
    scope, note = _notes_folder(path, note=True)
    return f"/v1/documents/{scope}{'' if operation is None else operation + '/'}notes/{note}"


def history_route(path: str, operation: str) -> str:
    """The route of ``operation`` (``revisions``, ``diff``, ...) on the history of a document
    or a note named by its layout path."""
    if isinstance(path, str) and _DOCUMENT_PATH.match(path):
        return f"{document_route(path)}/{operation}"
    return _note_route(path, operation)


def write_key(idempotency_key: str | None) -> str:
    """The key for one logical write: the caller's, else a fresh UUID."""
    return str(uuid.uuid4()) if idempotency_key is None else idempotency_key


def _write_fields(session: str | None, surface: WriteSurface | None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if session is not None:
        fields["session"] = session
    if surface is not None:
        fields["surface"] = surface
    return fields


def _params(**values: str | int | bool | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        out[name.rstrip("_")] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def prefetch(
    personality: str, user: str, query: str | None, max_chars: int | None
) -> Call[Prefetch]:
    body: dict[str, Any] = {"personality": personality, "user": user}
    if query is not None:
        body["query"] = query
    if max_chars is not None:
        body["max_chars"] = max_chars
    return Call("POST", "/v1/prefetch", _reads(Prefetch), body=body)


def sync(
    personality: str,
    user: str,
    updates: Sequence[MemoryUpdate | Mapping[str, Any]],
    if_match: IfMatch | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
    caps: Budgets | Mapping[str, Any] | None,
) -> Call[SyncReport]:
    body: dict[str, Any] = {
        "personality": personality,
        "user": user,
        "updates": updates_to_json(updates),
        **_write_fields(session, surface),
    }
    if if_match is not None:
        body["if_match"] = if_match.to_json()
    if caps is not None:
        body["caps"] = caps.to_json() if isinstance(caps, Budgets) else dict(caps)
    return Call(
        "POST", "/v1/sync", _sync_report, body=body, idempotency_key=write_key(idempotency_key)
    )


def get_document(path: str) -> Call[Document]:
    return Call("GET", document_route(path), _reads(Document))


def replace_document(
    path: str,
    text: str,
    if_match: str,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    guard = {"If-Match": entity_tag(if_match)}
    return _text_write(document_route(path), text, guard, session, surface, idempotency_key)


def _text_write(
    route: str,
    text: str,
    precondition: Mapping[str, str],
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    """A ``PUT`` of a whole text, under ``precondition`` (``If-Match`` or ``If-None-Match``)."""
    return Call(
        "PUT",
        route,
        _document_report,
        body={"text": text, **_write_fields(session, surface)},
        headers=precondition,
        idempotency_key=write_key(idempotency_key),
    )


def _updates_write(
    route: str,
    updates: Sequence[MemoryUpdate | Mapping[str, Any]],
    if_match: str | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    """A ``POST`` of a batch of updates, guarded by ``if_match`` when given."""
    return Call(
        "POST",
        route,
        _document_report,
        body={"updates": updates_to_json(updates), **_write_fields(session, surface)},
        headers={} if if_match is None else {"If-Match": entity_tag(if_match)},
        idempotency_key=write_key(idempotency_key),
    )


def update_document(
    path: str,
    updates: Sequence[MemoryUpdate | Mapping[str, Any]],
    if_match: str | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    route = document_route(path) + "/updates"
    return _updates_write(route, updates, if_match, session, surface, idempotency_key)


def purge_document(path: str, idempotency_key: str | None) -> Call[Purged]:
    return Call(
        "DELETE",
        document_route(path),
        _reads(Purged),
        idempotency_key=write_key(idempotency_key),
    )


def list_notes(path: str, prefix: str | None) -> Call[NotesPage]:
    scope, _ = _notes_folder(path, note=False)
    return Call(
        "GET", f"/v1/documents/{scope}notes", _reads(NotesPage), params=_params(prefix=prefix)
    )


def get_note(path: str) -> Call[Document]:
    return Call("GET", _note_route(path), _reads(Document))


def create_note(
    path: str,
    text: str,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    creates = {"If-None-Match": "*"}
    return _text_write(_note_route(path), text, creates, session, surface, idempotency_key)


def write_note(
    path: str,
    text: str,
    if_match: str,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    guard = {"If-Match": entity_tag(if_match)}
    return _text_write(_note_route(path), text, guard, session, surface, idempotency_key)


def update_note(
    path: str,
    updates: Sequence[MemoryUpdate | Mapping[str, Any]],
    if_match: str | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    return _updates_write(_note_route(path), updates, if_match, session, surface, idempotency_key)


def delete_note(
    path: str, if_match: str | None, idempotency_key: str | None
) -> Call[DocumentReport]:
    return Call(
        "DELETE",
        _note_route(path),
        _document_report,
        headers={} if if_match is None else {"If-Match": entity_tag(if_match)},
        idempotency_key=write_key(idempotency_key),
    )


def rename_note(
    path: str,
    to: str,
    if_match: str | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    return Call(
        "POST",
        _note_route(path, "rename"),
        _document_report,
        body={"to": to, **_write_fields(session, surface)},
        headers={} if if_match is None else {"If-Match": entity_tag(if_match)},
        idempotency_key=write_key(idempotency_key),
    )


def search(personality: str, query: str, limit: int | None) -> Call[SearchResult]:
    body: dict[str, Any] = {"personality": personality, "query": query}
    if limit is not None:
        body["limit"] = limit
    return Call("POST", "/v1/search", _reads(SearchResult), body=body)


def list_revisions(
    path: str, limit: int | None, before: int | None, text: bool, diff: bool
) -> Call[RevisionsPage]:
    return Call(
        "GET",
        history_route(path, "revisions"),
        _reads(RevisionsPage),
        params=_params(
            limit=limit, before=before, text=True if text else None, diff=True if diff else None
        ),
    )


def get_revision(path: str, number: int) -> Call[Revision]:
    return Call(
        "GET",
        history_route(path, f"revisions/{int(number)}"),
        _reads(Revision),
    )


def diff(path: str, from_revision: int | None, to_revision: int | None) -> Call[RevisionDiff]:
    return Call(
        "GET",
        history_route(path, "diff"),
        _reads(RevisionDiff),
        params=_params(from_=from_revision, to=to_revision),
    )


def revert(
    path: str,
    number: int,
    if_match: str | None,
    session: str | None,
    surface: WriteSurface | None,
    idempotency_key: str | None,
) -> Call[DocumentReport]:
    return Call(
        "POST",
        history_route(path, "revert"),
        _document_report,
        body={"number": number, **_write_fields(session, surface)},
        headers={} if if_match is None else {"If-Match": entity_tag(if_match)},
        idempotency_key=write_key(idempotency_key),
    )


def redact(path: str, number: int, idempotency_key: str | None) -> Call[Revision]:
    return Call(
        "POST",
        history_route(path, f"revisions/{int(number)}/redact"),
        _reads(Revision),
        idempotency_key=write_key(idempotency_key),
    )


def _identity_route(platform: str, platform_user: str) -> str:
    return f"/v1/identities/{_segment(platform)}/{_segment(platform_user)}"


def link_identity(
    platform: str, platform_user: str, user: str, relink: bool, idempotency_key: str | None
) -> Call[LinkChange]:
    body: dict[str, Any] = {"user": user}
    if relink:
        body["relink"] = True
    return Call(
        "PUT",
        _identity_route(platform, platform_user),
        _reads(LinkChange),
        body=body,
        idempotency_key=write_key(idempotency_key),
    )


def resolve_identity(platform: str, platform_user: str) -> Call[Identity]:
    return Call("GET", _identity_route(platform, platform_user), _reads(Identity))


def unlink_identity(
    platform: str, platform_user: str, idempotency_key: str | None
) -> Call[LinkChange]:
    return Call(
        "DELETE",
        _identity_route(platform, platform_user),
        _reads(LinkChange),
        idempotency_key=write_key(idempotency_key),
    )


def list_identities(limit: int | None, after: str | None) -> Call[IdentitiesPage]:
    return _listing("/v1/identities", IdentitiesPage, limit, after)


def list_personalities(limit: int | None, after: str | None) -> Call[PersonalitiesPage]:
    return _listing("/v1/personalities", PersonalitiesPage, limit, after)


def list_users(limit: int | None, after: str | None) -> Call[UsersPage]:
    return _listing("/v1/users", UsersPage, limit, after)


def _listing(route: str, page: type[_WireT], limit: int | None, after: str | None) -> Call[_WireT]:
    """One page of a listing walked by ``after``."""
    return Call("GET", route, _reads(page), params=_params(limit=limit, after=after))


def health() -> Call[Health]:
    return Call("GET", "/v1/health", _reads(Health))


def ready() -> Call[Health]:
    call: Call[Health]

    def parse(response: httpx.Response) -> Health:
        data = _json(response)
        # A 503 is the answer (a provider is down) when it is a health document; a problem
        # document instead (the server itself is busy) is an error like any other.
        if response.status_code != 200 and isinstance(data, dict) and "kind" in data:
            raise error_for(call, response)
        return Health.from_json(data)

    call = Call("GET", "/v1/health/ready", parse, result_statuses=frozenset({200, 503}))
    return call
