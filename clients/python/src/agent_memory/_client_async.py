"""The client of the ``/v1`` API of ``memory serve``: :class:`AsyncMemoryClient` and its parts.

``_client_async.py`` is written by hand; scripts/unasync.py generates ``_client_sync.py`` (the
blocking :class:`MemoryClient`) from it. Every request is built, resent and read in ``_core``:
what is here is the surface, how a request is sent, and how the client waits before sending it
again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx

from . import _core
from ._core import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Call
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
    Personality,
    Prefetch,
    Purged,
    Revision,
    RevisionDiff,
    RevisionItem,
    RevisionsPage,
    SearchResult,
    SyncReport,
    User,
    UsersPage,
    WriteSurface,
)

__all__ = [
    "AsyncDirectory",
    "AsyncDocuments",
    "AsyncHistory",
    "AsyncIdentities",
    "AsyncMemoryClient",
    "AsyncNotes",
]

T = TypeVar("T")
_Item = TypeVar("_Item")
_Item_co = TypeVar("_Item_co", covariant=True)
UpdateLike = MemoryUpdate | Mapping[str, Any]


class AsyncMemoryClient:
    """An asyncio client of ``memory serve``.

    ::

        async with AsyncMemoryClient("http://127.0.0.1:8700", api_key=key) as memory:
            seen = await memory.prefetch("ada", "grace")
            await memory.sync("ada", "grace", [Add("user", "Name: Grace.")], if_match=seen.if_match)

    Every write carries an ``Idempotency-Key`` (``idempotency_key=``, else a fresh UUID per
    call) and is sent again with the same key when its reply is lost (connection reset,
    timeout, 502/503/504, honouring ``Retry-After``), up to ``max_retries`` more times, so it
    lands once. Reads are resent the same way. A client is safe to share between tasks.

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8700`` (the API is under ``/v1``).
        api_key: An API key, sent as ``Authorization: Bearer``; none for a loopback server
            without keys.
        timeout: Seconds per request phase (connect, read, write, pool), an
            ``httpx.Timeout``, or ``None`` to wait forever.
        max_retries: How many times a request is sent again after a lost reply or a busy or
            unavailable server.
        http_client: An ``httpx.AsyncClient`` to send with (proxies, TLS settings); the client
            does not close one it was given.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._settings = _core.make_settings(base_url, api_key, max_retries)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=_core.make_timeout(timeout))
        self.documents = AsyncDocuments(self)
        """Documents by layout path: get, replace, update, purge."""
        self.notes = AsyncNotes(self)
        """Notes by layout path: list, get, create, write, update, delete, rename."""
        self.history = AsyncHistory(self)
        """Revisions of a document or a note: list, get, diff, revert, redact."""
        self.identities = AsyncIdentities(self)
        """Platform accounts linked to users."""
        self.directory = AsyncDirectory(self)
        """The personalities and users the server knows."""

    async def aclose(self) -> None:
        """Closes the connections (not those of an ``http_client`` passed in)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        settings = self._settings
        attempt = 0
        while True:
            outcome: _core.Outcome
            try:
                outcome = await self._http.request(
                    call.method,
                    settings.url(call.path),
                    params=call.params,
                    headers=settings.headers(call),
                    content=settings.content(call),
                )
            except httpx.TransportError as error:
                outcome = error
            delay = _core.resend_delay(call, attempt, settings.max_retries, outcome)
            if delay is None:
                return _core.finish(call, outcome)
            await asyncio.sleep(delay)
            attempt += 1

    async def prefetch(
        self,
        personality: str,
        user: str,
        *,
        query: str | None = None,
        max_chars: int | None = None,
    ) -> Prefetch:
        """What the agent sees before its turn: the rendered context and both documents whole,
        with their versions (pass :attr:`Prefetch.if_match` to the :meth:`sync` after it).

        ``query`` is the user's message, for a personality that recalls; ``max_chars`` caps the
        rendered context (the tail is kept)."""
        return await self._send(_core.prefetch(personality, user, query, max_chars))

    async def sync(
        self,
        personality: str,
        user: str,
        updates: Sequence[UpdateLike],
        *,
        if_match: IfMatch | None = None,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
        caps: Budgets | Mapping[str, Any] | None = None,
    ) -> SyncReport:
        """Applies the updates the model emitted after a turn, all or nothing.

        ``if_match`` (e.g. ``prefetch.if_match``) refuses the call with
        :class:`~agent_memory.PreconditionFailedError` when a document moved on since.
        ``caps`` (:class:`~agent_memory.Budgets`, or its JSON) caps the documents for this
        call on top of the personality's caps (each limit the smaller of the two): a bounded
        agent sends its own, and the server enforces them in the same atomic step as the
        write, so a write over a hard cap is refused even among concurrent writers."""
        return await self._send(
            _core.sync(
                personality, user, updates, if_match, session, surface, idempotency_key, caps
            )
        )

    async def search(
        self, personality: str, query: str, *, limit: int | None = None
    ) -> SearchResult:
        """The entries of a recall personality's MEMORY.md most relevant to ``query``."""
        return await self._send(_core.search(personality, query, limit))

    async def health(self) -> Health:
        """Liveness, with each provider's readiness."""
        return await self._send(_core.health())

    async def ready(self) -> Health:
        """Readiness: the same document as :meth:`health`, ``status == "degraded"`` when a
        provider does not answer (the server's 503 is returned, not raised)."""
        return await self._send(_core.ready())


class AsyncDocuments:
    """Documents by layout path (``MEMORY.md``, ``personalities/<id>/MEMORY.md``,
    ``users/<id>/USER.md``; see :func:`~agent_memory.personality_memory` and
    :func:`~agent_memory.user_profile`)."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def get(self, path: str) -> Document:
        """The document's text and version."""
        return await self._client._send(_core.get_document(path))

    async def replace(
        self,
        path: str,
        text: str,
        *,
        if_match: str,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Replaces the whole text, if the document is still at ``if_match`` (a version read
        before, e.g. ``doc.version``; ``"*"`` overwrites whatever is there)."""
        return await self._client._send(
            _core.replace_document(path, text, if_match, session, surface, idempotency_key)
        )

    async def update(
        self,
        path: str,
        updates: Sequence[UpdateLike],
        *,
        if_match: str | None = None,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Applies a batch of updates to this one document (each naming its store), all or
        nothing, guarded by ``if_match`` when given."""
        return await self._client._send(
            _core.update_document(path, updates, if_match, session, surface, idempotency_key)
        )

    async def purge(self, path: str, *, idempotency_key: str | None = None) -> Purged:
        """Erases the document with its history, receipts and index rows (admin scope)."""
        return await self._client._send(_core.purge_document(path, idempotency_key))


class AsyncNotes:
    """Notes by layout path (``personalities/<id>/notes/<path>``, ``users/<id>/notes/<path>``,
    ``notes/<path>``; see :func:`~agent_memory.personality_note` and
    :func:`~agent_memory.user_note`): markdown documents beside the pair, with the same
    versions, receipts and history. Their history is :attr:`AsyncMemoryClient.history`'s."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def list(self, folder: str, *, prefix: str | None = None) -> NotesPage:
        """The notes of a scope's folder (``personalities/<id>/notes``, see
        :func:`~agent_memory.personality_notes`), by path; only those whose path starts with
        ``prefix`` when given."""
        return await self._client._send(_core.list_notes(folder, prefix))

    async def get(self, path: str) -> Document:
        """The note's text and version; :class:`~agent_memory.NotFoundError` when it does not
        exist."""
        return await self._client._send(_core.get_note(path))

    async def create(
        self,
        path: str,
        text: str,
        *,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Creates the note; :class:`~agent_memory.ConflictError` (``note-exists``) when it
        exists."""
        return await self._client._send(
            _core.create_note(path, text, session, surface, idempotency_key)
        )

    async def write(
        self,
        path: str,
        text: str,
        *,
        if_match: str,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Replaces the note's whole text, if it is still at ``if_match`` (``"*"`` writes
        whatever is there, creating the note if need be); blank text deletes it."""
        return await self._client._send(
            _core.write_note(path, text, if_match, session, surface, idempotency_key)
        )

    async def update(
        self,
        path: str,
        updates: Sequence[UpdateLike],
        *,
        if_match: str | None = None,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Applies a batch of updates to this one note (each naming its scope's store), all
        or nothing, guarded by ``if_match`` when given."""
        return await self._client._send(
            _core.update_note(path, updates, if_match, session, surface, idempotency_key)
        )

    async def delete(
        self, path: str, *, if_match: str | None = None, idempotency_key: str | None = None
    ) -> DocumentReport:
        """Deletes the note: a revision, so :meth:`AsyncHistory.revert` restores it."""
        return await self._client._send(_core.delete_note(path, if_match, idempotency_key))

    async def rename(
        self,
        path: str,
        to: str,
        *,
        if_match: str | None = None,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Moves the note to ``to`` (a path within the same scope, which must not exist),
        atomically; the report is the new path's."""
        return await self._client._send(
            _core.rename_note(path, to, if_match, session, surface, idempotency_key)
        )


class AsyncHistory:
    """A document's or a note's revisions: every write is one."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def list(
        self,
        path: str,
        *,
        limit: int | None = None,
        before: int | None = None,
        text: bool = False,
        diff: bool = False,
    ) -> RevisionsPage:
        """One page of revisions, newest first; pass ``page.next_before`` as ``before`` for
        the next. ``text`` adds each revision's whole text, ``diff`` its change."""
        return await self._client._send(_core.list_revisions(path, limit, before, text, diff))

    async def iterate(
        self, path: str, *, limit: int | None = None, text: bool = False, diff: bool = False
    ) -> AsyncIterator[RevisionItem]:
        """Every kept revision, newest first, fetching pages (of ``limit``, the
        API's page size; the server's default when ``None``) as it goes."""
        before: int | None = None
        while True:
            page = await self.list(path, limit=limit, before=before, text=text, diff=diff)
            for revision in page.revisions:
                yield revision
            if page.next_before is None:
                return
            before = page.next_before

    async def get(self, path: str, number: int) -> Revision:
        """One revision, with its whole text."""
        return await self._client._send(_core.get_revision(path, number))

    async def diff(
        self, path: str, from_revision: int | None = None, to_revision: int | None = None
    ) -> RevisionDiff:
        """A unified diff: by default the newest revision against the one before; with
        ``from_revision`` only, that revision against now."""
        return await self._client._send(_core.diff(path, from_revision, to_revision))

    async def revert(
        self,
        path: str,
        number: int,
        *,
        if_match: str | None = None,
        session: str | None = None,
        surface: WriteSurface | None = None,
        idempotency_key: str | None = None,
    ) -> DocumentReport:
        """Gives the document revision ``number``'s text back (itself a new revision),
        guarded by ``if_match`` when given."""
        return await self._client._send(
            _core.revert(path, number, if_match, session, surface, idempotency_key)
        )

    async def redact(
        self, path: str, number: int, *, idempotency_key: str | None = None
    ) -> Revision:
        """Erases revision ``number``'s text and updates for good (its number, time, sizes and
        hashes stay) and returns it as the history now shows it: ``text`` ``None``,
        ``redacted_at`` set. The document is untouched, so the revision whose text it holds
        now is refused (:class:`~agent_memory.errors.RefusedError`, ``code``
        ``revision-in-use``); one redacted already is returned as it is."""
        return await self._client._send(_core.redact(path, number, idempotency_key))


class AsyncIdentities:
    """Platform accounts (``telegram 12345``) linked to users."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def link(
        self,
        platform: str,
        platform_user: str,
        user: str,
        *,
        relink: bool = False,
        idempotency_key: str | None = None,
    ) -> LinkChange:
        """Links the account to ``user``; one linked to another user is a
        :class:`~agent_memory.ConflictError` unless ``relink``."""
        return await self._client._send(
            _core.link_identity(platform, platform_user, user, relink, idempotency_key)
        )

    async def resolve(self, platform: str, platform_user: str) -> Identity:
        """The user an account is; :class:`~agent_memory.NotFoundError` when not linked."""
        return await self._client._send(_core.resolve_identity(platform, platform_user))

    async def unlink(
        self, platform: str, platform_user: str, *, idempotency_key: str | None = None
    ) -> LinkChange:
        """Removes the account's link (``previous`` says whom it named)."""
        return await self._client._send(
            _core.unlink_identity(platform, platform_user, idempotency_key)
        )

    async def list(self, *, limit: int | None = None, after: str | None = None) -> IdentitiesPage:
        """One page of links; pass ``page.next_after`` as ``after`` for the next."""
        return await self._client._send(_core.list_identities(limit, after))

    async def iterate(self, *, limit: int | None = None) -> AsyncIterator[Identity]:
        """Every link, fetching pages (of ``limit``, the
        API's page size; the server's default when ``None``) as it goes."""
        async for identity in _every(lambda after: self.list(limit=limit, after=after)):
            yield identity


class AsyncDirectory:
    """The personalities and users the server knows."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def personalities(
        self, *, limit: int | None = None, after: str | None = None
    ) -> PersonalitiesPage:
        """One page of personalities; pass ``page.next_after`` as ``after`` for the next."""
        return await self._client._send(_core.list_personalities(limit, after))

    async def iterate_personalities(
        self, *, limit: int | None = None
    ) -> AsyncIterator[Personality]:
        """Every personality, fetching pages (of ``limit``, the
        API's page size; the server's default when ``None``) as it goes."""
        async for personality in _every(lambda after: self.personalities(limit=limit, after=after)):
            yield personality

    async def users(self, *, limit: int | None = None, after: str | None = None) -> UsersPage:
        """One page of users; pass ``page.next_after`` as ``after`` for the next."""
        return await self._client._send(_core.list_users(limit, after))

    async def iterate_users(self, *, limit: int | None = None) -> AsyncIterator[User]:
        """Every user, fetching pages (of ``limit``, the
        API's page size; the server's default when ``None``) as it goes."""
        async for user in _every(lambda after: self.users(limit=limit, after=after)):
            yield user


class _Listing(Protocol[_Item_co]):
    """A page of a listing walked by ``after``: its items, and where the next page starts."""

    @property
    def items(self) -> tuple[_Item_co, ...]: ...

    @property
    def next_after(self) -> str | None: ...


async def _every(page: Callable[[str | None], Awaitable[_Listing[_Item]]]) -> AsyncIterator[_Item]:
    """Every item of a listing, fetching its pages (``page(after)``) as it goes."""
    after: str | None = None
    while True:
        listing = await page(after)
        for item in listing.items:
            yield item
        if listing.next_after is None:
            return
        after = listing.next_after
