"""Typed requests and results of the ``/v1`` API (docs/openapi.json), as frozen dataclasses.

Results are read from the server's JSON with ``from_json``; a body that does not match raises
:class:`~agent_memory.errors.UnexpectedResponseError` at the call, never a half-filled object.
Updates are built in code (:class:`Add`, :class:`Replace`, :class:`Remove`, :class:`Edit`) or
given as their JSON objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "GLOBAL_MEMORY",
    "Add",
    "Budgets",
    "Caps",
    "Document",
    "DocumentRef",
    "DocumentReport",
    "Edit",
    "Health",
    "IdentitiesPage",
    "Identity",
    "IfMatch",
    "LinkChange",
    "MemoryUpdate",
    "PairDocument",
    "PersonalitiesPage",
    "Personality",
    "Prefetch",
    "ProviderHealth",
    "Purged",
    "Remove",
    "Replace",
    "Revision",
    "RevisionDiff",
    "RevisionItem",
    "RevisionsPage",
    "SearchResult",
    "Store",
    "SyncReport",
    "User",
    "UsersPage",
    "WriteSurface",
    "personality_memory",
    "update_from_json",
    "user_profile",
]

Store: TypeAlias = Literal["memory", "user"]
"""Which document of a conversation: ``memory`` (MEMORY.md) or ``user`` (USER.md)."""

WriteSurface: TypeAlias = Literal["api", "tool", "web", "cli"]
"""Where a write comes from, as its revision records it."""

GLOBAL_MEMORY = "MEMORY.md"
"""The layout path of the global MEMORY.md (global-scope personalities)."""


def personality_memory(personality: str) -> str:
    """The layout path of a personality's MEMORY.md: ``personalities/<id>/MEMORY.md``."""
    return f"personalities/{personality}/MEMORY.md"


def user_profile(user: str) -> str:
    """The layout path of a user's USER.md: ``users/<id>/USER.md``."""
    return f"users/{user}/USER.md"


class _Fields:
    """Typed access to one JSON object; a missing or mistyped member raises ``ValueError``."""

    def __init__(self, data: object, what: str) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"{what}: expected a JSON object, got {type(data).__name__}")
        self._data: Mapping[str, Any] = data
        self._what = what

    def _get(self, name: str, types: type | tuple[type, ...], optional: bool) -> Any:
        value = self._data.get(name)
        if value is None:
            if optional:
                return None
            raise ValueError(f"{self._what}: member {name!r} is missing")
        # bool is an int in Python; a JSON true where a number belongs is still a mismatch.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
            raise ValueError(f"{self._what}: member {name!r} has the wrong type")
        return value

    def text(self, name: str) -> str:
        value: str = self._get(name, str, False)
        return value

    def opt_text(self, name: str) -> str | None:
        value: str | None = self._get(name, str, True)
        return value

    def number(self, name: str) -> int:
        value: int = self._get(name, int, False)
        return value

    def opt_number(self, name: str) -> int | None:
        value: int | None = self._get(name, int, True)
        return value

    def flag(self, name: str, default: bool | None = None) -> bool:
        value: bool | None = self._get(name, bool, default is not None)
        return bool(default) if value is None else value

    def member(self, name: str) -> object:
        return self._get(name, Mapping, False)

    def opt_member(self, name: str) -> object | None:
        value: object | None = self._get(name, Mapping, True)
        return value

    def array(self, name: str, optional: bool = False) -> list[Any]:
        value: list[Any] | None = self._get(name, list, optional)
        return [] if value is None else value

    def texts(self, name: str, optional: bool = False) -> tuple[str, ...]:
        items = self.array(name, optional)
        if not all(isinstance(item, str) for item in items):
            raise ValueError(f"{self._what}: member {name!r} is not a list of strings")
        return tuple(items)


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _store(value: str, what: str) -> Store:
    if value == "memory":
        return "memory"
    if value == "user":
        return "user"
    raise ValueError(f"{what}: unknown store {value!r}")


# ---------------------------------------------------------------------------------------------
# Updates


@dataclass(frozen=True)
class Add:
    """Append ``content`` as a new paragraph of the ``store`` document."""

    store: Store
    content: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "add", "store": self.store, "content": self.content}


@dataclass(frozen=True)
class Replace:
    """Replace the whole ``store`` document with ``content`` (blank clears it)."""

    store: Store
    content: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "replace", "store": self.store, "content": self.content}


@dataclass(frozen=True)
class Remove:
    """Drop every line of the ``store`` document that contains ``substring_match``."""

    store: Store
    substring_match: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "remove", "store": self.store, "substringMatch": self.substring_match}


@dataclass(frozen=True)
class Edit:
    """Replace the single occurrence of ``old`` with ``new`` in the ``store`` document."""

    store: Store
    old: str
    new: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "edit", "store": self.store, "old": self.old, "new": self.new}


MemoryUpdate: TypeAlias = Add | Replace | Remove | Edit
"""One change to one document."""


def update_from_json(data: object) -> MemoryUpdate:
    """Reads an update from its JSON form (``{"action": "add", "store": ..., ...}``)."""
    fields = _Fields(data, "update")
    action = fields.text("action")
    store = _store(fields.text("store"), "update")
    if action == "add":
        return Add(store, fields.text("content"))
    if action == "replace":
        return Replace(store, fields.text("content"))
    if action == "remove":
        return Remove(store, fields.text("substringMatch"))
    if action == "edit":
        return Edit(store, fields.text("old"), fields.text("new"))
    raise ValueError(f"update: unknown action {action!r}")


# ---------------------------------------------------------------------------------------------
# Documents and the turn cycle


@dataclass(frozen=True)
class IfMatch:
    """The versions a ``sync`` requires its documents to still be at (from a prefetch)."""

    memory: str | None = None
    user: str | None = None

    def to_json(self) -> dict[str, str]:
        """The JSON form, leaving out documents that are not guarded."""
        guards = {"memory": self.memory, "user": self.user}
        return {store: version for store, version in guards.items() if version is not None}


@dataclass(frozen=True)
class Caps:
    """A document's byte caps: over ``soft`` a write lands and says so, over ``hard`` it is
    refused."""

    soft: int | None
    hard: int | None

    @classmethod
    def from_json(cls, data: object) -> Caps:
        fields = _Fields(data, "caps")
        return cls(soft=fields.opt_number("soft"), hard=fields.opt_number("hard"))

    def to_json(self) -> dict[str, int]:
        """The JSON form, leaving out the limits that are not set."""
        limits = {"soft": self.soft, "hard": self.hard}
        return {name: limit for name, limit in limits.items() if limit is not None}


@dataclass(frozen=True)
class Budgets:
    """Caps for both documents of a ``sync`` (its ``caps``): on top of the personality's
    configured caps, each limit the smaller of the two, so a call can tighten them, never
    loosen them. A store or limit left ``None`` keeps the personality's."""

    memory: Caps | None = None
    """Caps on MEMORY.md."""
    user: Caps | None = None
    """Caps on USER.md."""

    @classmethod
    def from_json(cls, data: object) -> Budgets:
        fields = _Fields(data, "caps")
        memory, user = fields.opt_member("memory"), fields.opt_member("user")
        return cls(
            memory=None if memory is None else Caps.from_json(memory),
            user=None if user is None else Caps.from_json(user),
        )

    def to_json(self) -> dict[str, dict[str, int]]:
        """The JSON form, leaving out the stores that are not capped."""
        caps = {"memory": self.memory, "user": self.user}
        return {store: limits.to_json() for store, limits in caps.items() if limits is not None}


@dataclass(frozen=True)
class Document:
    """One document: its text and the version that guards a write to it."""

    path: str
    """Its layout path: ``MEMORY.md``, ``personalities/<id>/MEMORY.md``, ``users/<id>/USER.md``."""
    store: Store
    text: str
    """Its text; empty when never written."""
    version: str
    """Its version (the ``ETag``): what ``if_match`` takes."""
    location: str
    """Where the provider keeps it: a path or a key."""
    modified: int | None
    """When last written, in milliseconds since the Unix epoch; ``None`` when never."""

    @classmethod
    def from_json(cls, data: object) -> Document:
        fields = _Fields(data, "document")
        return cls(**_document_fields(fields))


def _document_fields(fields: _Fields) -> dict[str, Any]:
    return {
        "path": fields.text("path"),
        "store": _store(fields.text("store"), "document"),
        "text": fields.text("text"),
        "version": fields.text("version"),
        "location": fields.text("location"),
        "modified": fields.opt_number("modified"),
    }


@dataclass(frozen=True)
class PairDocument(Document):
    """A document of a conversation, with the caps the personality writes it under."""

    caps: Caps

    @classmethod
    def from_json(cls, data: object) -> PairDocument:
        fields = _Fields(data, "document")
        return cls(**_document_fields(fields), caps=Caps.from_json(fields.member("caps")))


@dataclass(frozen=True)
class Personality:
    """A personality and where its memory lives."""

    id: str
    provider: str
    kind: str
    """Its provider's kind: ``markdown``, ``postgres``, ``redis`` or ``vector``."""
    scope: Literal["per-personality", "global"]
    recall: bool
    """Whether a prefetch with a query picks entries, and search works."""

    @classmethod
    def from_json(cls, data: object) -> Personality:
        fields = _Fields(data, "personality")
        scope = fields.text("scope")
        if scope not in ("per-personality", "global"):
            raise ValueError(f"personality: unknown scope {scope!r}")
        return cls(
            id=fields.text("id"),
            provider=fields.text("provider"),
            kind=fields.text("kind"),
            scope="global" if scope == "global" else "per-personality",
            recall=fields.flag("recall"),
        )


@dataclass(frozen=True)
class Prefetch:
    """What the agent sees before its turn, and the documents behind it."""

    personality: Personality
    memory: PairDocument
    """The MEMORY.md behind ``## Memory``, whole."""
    user: PairDocument
    """The USER.md behind ``## About You``, whole."""
    context: str | None
    """The text for the top of the prompt, or ``None`` when both documents are blank."""
    warnings: tuple[str, ...]

    @property
    def if_match(self) -> IfMatch:
        """Both documents' versions, to guard the ``sync`` after the turn."""
        return IfMatch(memory=self.memory.version, user=self.user.version)

    @classmethod
    def from_json(cls, data: object) -> Prefetch:
        fields = _Fields(data, "prefetch")
        return cls(
            personality=Personality.from_json(fields.member("personality")),
            memory=PairDocument.from_json(fields.member("memory")),
            user=PairDocument.from_json(fields.member("user")),
            context=fields.opt_text("context"),
            warnings=fields.texts("warnings"),
        )


@dataclass(frozen=True)
class DocumentRef:
    """Which document a report is about."""

    kind: Literal["global-memory", "personality-memory", "user-profile"]
    personality: str | None = None
    user: str | None = None

    @property
    def path(self) -> str:
        """Its layout path."""
        if self.kind == "personality-memory" and self.personality is not None:
            return personality_memory(self.personality)
        if self.kind == "user-profile" and self.user is not None:
            return user_profile(self.user)
        return GLOBAL_MEMORY

    @classmethod
    def from_json(cls, data: object) -> DocumentRef:
        fields = _Fields(data, "document id")
        kind = fields.text("kind")
        if kind == "global-memory":
            return cls("global-memory")
        if kind == "personality-memory":
            return cls("personality-memory", personality=fields.text("personality"))
        if kind == "user-profile":
            return cls("user-profile", user=fields.text("user"))
        raise ValueError(f"document id: unknown kind {kind!r}")


@dataclass(frozen=True)
class DocumentReport:
    """What one write did to one document."""

    store: Store
    document: DocumentRef
    location: str
    written: bool
    """Whether new content was written (``False`` when the text came out unchanged)."""
    version_before: str
    version_after: str
    """The version now: the next write's ``if_match``."""
    sha256_before: str
    sha256_after: str
    bytes_before: int
    bytes_after: int
    lines_removed: int
    over_soft_cap: bool
    """Over the soft cap after the write: time to consolidate."""
    replayed: bool
    """The report of an earlier call with the same idempotency key, returned again."""

    @classmethod
    def from_json(cls, data: object) -> DocumentReport:
        fields = _Fields(data, "document report")
        return cls(
            store=_store(fields.text("store"), "document report"),
            document=DocumentRef.from_json(fields.member("document")),
            location=fields.text("location"),
            written=fields.flag("written"),
            version_before=fields.text("version_before"),
            version_after=fields.text("version_after"),
            sha256_before=fields.text("sha256_before"),
            sha256_after=fields.text("sha256_after"),
            bytes_before=fields.number("bytes_before"),
            bytes_after=fields.number("bytes_after"),
            lines_removed=fields.number("lines_removed"),
            over_soft_cap=fields.flag("over_soft_cap"),
            replayed=fields.flag("replayed", default=False),
        )


@dataclass(frozen=True)
class SyncReport:
    """What a ``sync`` did: one report per document touched, memory first."""

    documents: tuple[DocumentReport, ...]
    retries: int
    """Compare-and-swap attempts lost to other writers before it landed."""
    warnings: tuple[str, ...]
    replayed: bool = False
    """The server answered with the report of an earlier call with the same idempotency key
    (``Idempotent-Replayed: true``): this call wrote nothing again."""

    def get(self, store: Store) -> DocumentReport | None:
        """The report of the ``store`` document, when the call touched it."""
        return next((report for report in self.documents if report.store == store), None)

    @classmethod
    def from_json(cls, data: object) -> SyncReport:
        fields = _Fields(data, "sync report")
        return cls(
            documents=tuple(DocumentReport.from_json(item) for item in fields.array("documents")),
            retries=fields.opt_number("retries") or 0,
            warnings=fields.texts("warnings", optional=True),
        )


@dataclass(frozen=True)
class Purged:
    """What a purge erased."""

    path: str
    location: str
    bytes: int
    revisions: int
    """How many revisions were erased with it."""
    tombstone: int | None
    """The number of the tombstone revision left in its history."""

    @classmethod
    def from_json(cls, data: object) -> Purged:
        fields = _Fields(data, "purge")
        return cls(
            path=fields.text("path"),
            location=fields.text("location"),
            bytes=fields.number("bytes"),
            revisions=fields.number("revisions"),
            tombstone=fields.opt_number("tombstone"),
        )


@dataclass(frozen=True)
class SearchResult:
    """The entries a search found."""

    path: str
    ranked: tuple[str, ...]
    """The best entries' current text, best first."""
    unranked: tuple[str, ...]
    """Entries the index has not covered yet, in document order."""
    behind: str | None
    """Why the ranking does not cover the whole document, when it does not."""

    @classmethod
    def from_json(cls, data: object) -> SearchResult:
        fields = _Fields(data, "search")
        return cls(
            path=fields.text("path"),
            ranked=fields.texts("ranked"),
            unranked=fields.texts("unranked"),
            behind=fields.opt_text("behind"),
        )


# ---------------------------------------------------------------------------------------------
# History


@dataclass(frozen=True)
class Revision:
    """One revision of a document."""

    number: int
    path: str
    version: str
    """The version it left the document at: what ``if_match`` takes."""
    version_before: str
    time: int | None
    """When it was recorded, in milliseconds since the Unix epoch; ``None`` for a time before
    1970 or past the year 9999 (a clock set far off), which ``time_utc`` shows as unknown."""
    time_utc: str
    surface: str
    """Where it came from: ``tool``, ``cli``, ``web``, ``api`` or ``external``."""
    personality: str | None
    user: str | None
    idempotency_key: str | None
    session: str | None
    bytes_before: int
    bytes_after: int
    sha256_before: str
    sha256_after: str
    updates: tuple[MemoryUpdate, ...]
    tombstone: bool
    """A purge's tombstone: no content, nothing to revert to."""
    text: str | None
    """The whole text after it, when asked for (``text=True``)."""

    @classmethod
    def from_json(cls, data: object) -> Revision:
        return cls(**_revision_fields(_Fields(data, "revision")))


def _revision_fields(fields: _Fields) -> dict[str, Any]:
    return {
        "number": fields.number("number"),
        "path": fields.text("path"),
        "version": fields.text("version"),
        "version_before": fields.text("version_before"),
        "time": fields.opt_number("time"),
        "time_utc": fields.text("time_utc"),
        "surface": fields.text("surface"),
        "personality": fields.opt_text("personality"),
        "user": fields.opt_text("user"),
        "idempotency_key": fields.opt_text("idempotency_key"),
        "session": fields.opt_text("session"),
        "bytes_before": fields.number("bytes_before"),
        "bytes_after": fields.number("bytes_after"),
        "sha256_before": fields.text("sha256_before"),
        "sha256_after": fields.text("sha256_after"),
        "updates": tuple(update_from_json(item) for item in fields.array("updates")),
        "tombstone": fields.flag("tombstone"),
        "text": fields.opt_text("text"),
    }


@dataclass(frozen=True)
class RevisionItem(Revision):
    """A listed revision, with its change when asked for (``diff=True``)."""

    oldest_kept: bool
    """The oldest revision kept, older ones pruned: nothing to compare it with."""
    diff: str | None

    @classmethod
    def from_json(cls, data: object) -> RevisionItem:
        fields = _Fields(data, "revision")
        return cls(
            **_revision_fields(fields),
            oldest_kept=fields.flag("oldest_kept"),
            diff=fields.opt_text("diff"),
        )


@dataclass(frozen=True)
class RevisionsPage:
    """One page of a document's revisions, newest first."""

    path: str
    revisions: tuple[RevisionItem, ...]
    next_before: int | None
    """Pass as ``before`` for the next page; ``None`` on the last."""

    @classmethod
    def from_json(cls, data: object) -> RevisionsPage:
        fields = _Fields(data, "revisions page")
        return cls(
            path=fields.text("path"),
            revisions=tuple(RevisionItem.from_json(item) for item in fields.array("revisions")),
            next_before=fields.opt_number("next_before"),
        )


@dataclass(frozen=True)
class RevisionDiff:
    """A unified diff between two states of a document."""

    from_revision: int
    """The revision compared from (0: the empty document before the first)."""
    to_revision: int | None
    """The revision compared to; ``None`` for the document as it is now."""
    diff: str
    """The ``diff -u`` text, empty when the texts are equal."""

    @classmethod
    def from_json(cls, data: object) -> RevisionDiff:
        fields = _Fields(data, "diff")
        return cls(
            from_revision=fields.number("from"),
            to_revision=fields.opt_number("to"),
            diff=fields.text("diff"),
        )


# ---------------------------------------------------------------------------------------------
# Identities and the directory


@dataclass(frozen=True)
class Identity:
    """A link: a platform account and the user it is."""

    identity: str
    """``platform:platform_user``."""
    platform: str
    platform_user: str
    user: str

    @classmethod
    def from_json(cls, data: object) -> Identity:
        fields = _Fields(data, "identity")
        return cls(
            identity=fields.text("identity"),
            platform=fields.text("platform"),
            platform_user=fields.text("platform_user"),
            user=fields.text("user"),
        )


@dataclass(frozen=True)
class LinkChange:
    """What a link or unlink changed."""

    identity: str
    platform: str
    platform_user: str
    previous: str | None
    """The user it was linked to before; ``None`` when it was not linked."""
    user: str | None
    """The user it is linked to now; ``None`` after an unlink."""

    @classmethod
    def from_json(cls, data: object) -> LinkChange:
        fields = _Fields(data, "link change")
        return cls(
            identity=fields.text("identity"),
            platform=fields.text("platform"),
            platform_user=fields.text("platform_user"),
            previous=fields.opt_text("previous"),
            user=fields.opt_text("user"),
        )


@dataclass(frozen=True)
class IdentitiesPage:
    """One page of identity links, sorted by platform, then platform user id."""

    items: tuple[Identity, ...]
    next_after: str | None
    """Pass as ``after`` for the next page; ``None`` on the last."""

    @classmethod
    def from_json(cls, data: object) -> IdentitiesPage:
        fields = _Fields(data, "identities page")
        return cls(
            items=tuple(Identity.from_json(item) for item in fields.array("items")),
            next_after=fields.opt_text("next_after"),
        )


@dataclass(frozen=True)
class PersonalitiesPage:
    """One page of personalities, sorted by id."""

    items: tuple[Personality, ...]
    default: str | None
    """The personality picked first by ``memory mcp`` and the Memory page."""
    next_after: str | None

    @classmethod
    def from_json(cls, data: object) -> PersonalitiesPage:
        fields = _Fields(data, "personalities page")
        return cls(
            items=tuple(Personality.from_json(item) for item in fields.array("items")),
            default=fields.opt_text("default"),
            next_after=fields.opt_text("next_after"),
        )


@dataclass(frozen=True)
class User:
    """A user."""

    id: str

    @classmethod
    def from_json(cls, data: object) -> User:
        return cls(id=_Fields(data, "user").text("id"))


@dataclass(frozen=True)
class UsersPage:
    """One page of users, sorted by id."""

    items: tuple[User, ...]
    default: str | None
    next_after: str | None

    @classmethod
    def from_json(cls, data: object) -> UsersPage:
        fields = _Fields(data, "users page")
        return cls(
            items=tuple(User.from_json(item) for item in fields.array("items")),
            default=fields.opt_text("default"),
            next_after=fields.opt_text("next_after"),
        )


# ---------------------------------------------------------------------------------------------
# Operations


@dataclass(frozen=True)
class ProviderHealth:
    """One provider's readiness."""

    name: str
    kind: str
    ready: bool
    error: str | None
    """Why not, to a key with the ``metrics`` scope (or on a server without keys)."""

    @classmethod
    def from_json(cls, data: object) -> ProviderHealth:
        fields = _Fields(data, "provider health")
        return cls(
            name=fields.text("name"),
            kind=fields.text("kind"),
            ready=fields.flag("ready"),
            error=fields.opt_text("error"),
        )


@dataclass(frozen=True)
class Health:
    """Whether the service is up, and each provider with it."""

    status: Literal["ok", "degraded"]
    providers: tuple[ProviderHealth, ...]

    @property
    def ok(self) -> bool:
        """Whether every provider answers."""
        return self.status == "ok"

    @classmethod
    def from_json(cls, data: object) -> Health:
        fields = _Fields(data, "health")
        status = fields.text("status")
        if status not in ("ok", "degraded"):
            raise ValueError(f"health: unknown status {status!r}")
        return cls(
            status="ok" if status == "ok" else "degraded",
            providers=tuple(ProviderHealth.from_json(item) for item in fields.array("providers")),
        )


def updates_to_json(updates: Sequence[MemoryUpdate | Mapping[str, Any]]) -> list[Any]:
    """The JSON form of a list of updates given as objects or as their JSON."""
    return [update if isinstance(update, Mapping) else update.to_json() for update in updates]
