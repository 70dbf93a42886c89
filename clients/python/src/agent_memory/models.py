"""Typed requests and results of the ``/v1`` API (docs/openapi.json), as frozen dataclasses.

Results are read from the server's JSON with ``from_json``; a body that does not match raises
:class:`~agent_memory.errors.UnexpectedResponseError` at the call, never a half-filled object.
Updates are built in code (:class:`Add`, :class:`Replace`, :class:`Remove`, :class:`Edit`) or
given as their JSON objects.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self, TypeAlias, TypeVar

__all__ = [
    "GLOBAL_MEMORY",
    "GLOBAL_NOTES",
    "Add",
    "Budgets",
    "Caps",
    "Create",
    "Delete",
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
    "NoteCaps",
    "NoteId",
    "NoteItem",
    "NoteScope",
    "NotesPage",
    "PairDocument",
    "PersonalitiesPage",
    "Personality",
    "Prefetch",
    "ProviderHealth",
    "Purged",
    "Remove",
    "Rename",
    "Replace",
    "Revision",
    "RevisionDiff",
    "RevisionItem",
    "RevisionsPage",
    "ScopeTotals",
    "SearchResult",
    "Store",
    "SyncReport",
    "User",
    "UsersPage",
    "WriteSurface",
    "personality_memory",
    "personality_note",
    "personality_notes",
    "update_from_json",
    "user_note",
    "user_notes",
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


GLOBAL_NOTES = "notes"
"""The layout folder of the notes beside the global MEMORY.md."""


def personality_notes(personality: str) -> str:
    """The layout folder of the notes beside a personality's MEMORY.md:
    ``personalities/<id>/notes``."""
    return f"personalities/{personality}/notes"


def user_notes(user: str) -> str:
    """The layout folder of the notes beside a user's USER.md: ``users/<id>/notes``."""
    return f"users/{user}/notes"


def personality_note(personality: str, path: str) -> str:
    """The layout path of a note beside a personality's MEMORY.md:
    ``personalities/<id>/notes/<path>``."""
    return f"{personality_notes(personality)}/{path}"


def user_note(user: str, path: str) -> str:
    """The layout path of a note beside a user's USER.md: ``users/<id>/notes/<path>``."""
    return f"{user_notes(user)}/{path}"


class _Wire:
    """A shape of the API, read from its JSON by one reader led by the dataclass's fields and
    their types: ``str``, ``int``, ``bool``, a ``Literal`` of strings, another ``_Wire``,
    :data:`MemoryUpdate`, ``tuple[X, ...]`` for an array, and ``X | None`` for a member that
    may be absent or null. A field's metadata says the rest: ``member``, the JSON name where it
    is not the field's (``from`` is a Python keyword); ``absent``, the value of an optional
    member absent or null, where that is not ``None``; ``client_only``, a field the client
    sets itself, not read. tests/test_openapi_drift.py holds the same fields to
    docs/openapi.json."""

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Reads one from the server's JSON; a body that does not match raises ``ValueError``
        naming the member, never a half-filled object."""
        return _read(cls, data)


_WireT = TypeVar("_WireT", bound=_Wire)
_Reader: TypeAlias = Callable[[object, str], Any]
"""Reads one JSON value (``where`` names it in errors)."""


@dataclass(frozen=True)
class _Member:
    """One field of a dataclass as its JSON has it."""

    attribute: str
    name: str
    """The JSON member's name."""
    hint: Any
    """The field's type, ``None`` left out: what a present value must be."""
    required: bool
    """Whether a value must be there: not absent, not null."""
    absent: Any
    """The field's value when the member is absent or null, when not required."""
    read: _Reader

    def value(self, data: Mapping[str, Any], what: str) -> Any:
        value = data.get(self.name)
        if value is not None:
            return self.read(value, f"{what}: member {self.name!r}")
        if self.required:
            raise ValueError(f"{what}: member {self.name!r} is missing")
        return self.absent


def _read(cls: type[_WireT], data: object) -> _WireT:
    what = cls.__name__
    if not isinstance(data, Mapping):
        raise ValueError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return cls(**{member.attribute: member.value(data, what) for member in _members(cls)})


def _members(cls: type) -> tuple[_Member, ...]:
    """The members a dataclass reads, from its fields (the client-only ones left out)."""
    members = _MEMBERS.get(cls)
    if members is None:
        hints = typing.get_type_hints(cls)
        members = _MEMBERS[cls] = tuple(
            _member(spec, hints[spec.name])
            for spec in dataclasses.fields(cls)
            if not spec.metadata.get("client_only")
        )
    return members


_MEMBERS: dict[type, tuple[_Member, ...]] = {}
"""Each dataclass's members, worked out at its first read."""


def _member(spec: dataclasses.Field[Any], hint: Any) -> _Member:
    required = not _admits_none(hint) and "absent" not in spec.metadata
    present = _without_none(hint)
    return _Member(
        attribute=spec.name,
        name=spec.metadata.get("member", spec.name),
        hint=present,
        required=required,
        absent=spec.metadata.get("absent"),
        read=_reader(present),
    )


def _admits_none(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )


def _without_none(hint: Any) -> Any:
    if not _admits_none(hint):
        return hint
    return functools.reduce(operator.or_, [a for a in typing.get_args(hint) if a is not type(None)])


def _reader(hint: Any) -> _Reader:
    """How a value of type ``hint`` is read."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (str, int, bool):

        def scalar(value: object, where: str) -> object:
            # bool is an int in Python; a JSON true where a number belongs is still a mismatch.
            if not isinstance(value, hint) or (isinstance(value, bool) and hint is not bool):
                raise ValueError(f"{where} has the wrong type")
            return value

        return scalar
    if origin is Literal:

        def one_of(value: object, where: str) -> object:
            if not isinstance(value, str) or value not in args:
                raise ValueError(f"{where} is {value!r}, not one of {', '.join(map(repr, args))}")
            return value

        return one_of
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _reader(args[0])

        def array(value: object, where: str) -> tuple[object, ...]:
            if not isinstance(value, list):
                raise ValueError(f"{where} has the wrong type")
            return tuple(item(element, where) for element in value)

        return array
    if origin is dict and len(args) == 2 and args[0] is str:
        entry = _reader(args[1])

        def mapping(value: object, where: str) -> dict[str, object]:
            if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
                raise ValueError(f"{where} has the wrong type")
            return {key: entry(element, f"{where}[{key!r}]") for key, element in value.items()}

        return mapping
    if hint == MemoryUpdate:
        return lambda value, where: update_from_json(value)
    if isinstance(hint, type) and issubclass(hint, _Wire):
        return lambda value, where: hint.from_json(value)
    raise TypeError(f"no reader for a field of type {hint!r}")


# ---------------------------------------------------------------------------------------------
# Updates


def _in_note(update: dict[str, str], note: str | None) -> dict[str, str]:
    """An update's JSON form with its ``note`` member where it names one."""
    if note is not None:
        update["note"] = note
    return update


@dataclass(frozen=True)
class Add(_Wire):
    """Append ``content`` as a new paragraph of the ``store`` document (or of its scope's
    ``note``, which must exist)."""

    store: Store
    content: str
    note: str | None = None
    """The note of the store's scope to change instead of its document."""

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return _in_note({"action": "add", "store": self.store, "content": self.content}, self.note)


@dataclass(frozen=True)
class Replace(_Wire):
    """Replace the whole ``store`` document (or its scope's ``note``, created when missing)
    with ``content`` (blank clears it)."""

    store: Store
    content: str
    note: str | None = None
    """The note of the store's scope to write instead of its document."""

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        update = {"action": "replace", "store": self.store, "content": self.content}
        return _in_note(update, self.note)


@dataclass(frozen=True)
class Remove(_Wire):
    """Drop every line of the ``store`` document (or of its scope's ``note``) that contains
    ``substring_match``."""

    store: Store
    substring_match: str = field(metadata={"member": "substringMatch"})
    note: str | None = None
    """The note of the store's scope to change instead of its document."""

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        update = {"action": "remove", "store": self.store, "substringMatch": self.substring_match}
        return _in_note(update, self.note)


@dataclass(frozen=True)
class Edit(_Wire):
    """Replace the single occurrence of ``old`` with ``new`` in the ``store`` document (or in
    its scope's ``note``)."""

    store: Store
    old: str
    new: str
    note: str | None = None
    """The note of the store's scope to change instead of its document."""

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        update = {"action": "edit", "store": self.store, "old": self.old, "new": self.new}
        return _in_note(update, self.note)


@dataclass(frozen=True)
class Create(_Wire):
    """Create the note ``note`` of the ``store``'s scope with ``content``: refused
    (``note-exists``) when it exists."""

    store: Store
    note: str
    content: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "create", "store": self.store, "note": self.note, "content": self.content}


@dataclass(frozen=True)
class Delete(_Wire):
    """Delete the note ``note`` of the ``store``'s scope: its history keeps it."""

    store: Store
    note: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "delete", "store": self.store, "note": self.note}


@dataclass(frozen=True)
class Rename(_Wire):
    """Move the note ``note`` of the ``store``'s scope to ``to``, atomically: a call of its
    own."""

    store: Store
    note: str
    to: str

    def to_json(self) -> dict[str, str]:
        """The update's JSON form."""
        return {"action": "rename", "store": self.store, "note": self.note, "to": self.to}


MemoryUpdate: TypeAlias = Add | Replace | Remove | Edit | Create | Delete | Rename
"""One change to one document or note."""


def update_from_json(data: object) -> MemoryUpdate:
    """Reads an update from its JSON form (``{"action": "add", "store": ..., ...}``)."""
    action = data.get("action") if isinstance(data, Mapping) else None
    update = _UPDATES.get(action) if isinstance(action, str) else None
    if update is None:
        raise ValueError(f"update: unknown action {action!r}")
    return update.from_json(data)


_UPDATES: Mapping[str, type[MemoryUpdate]] = {
    "add": Add,
    "replace": Replace,
    "remove": Remove,
    "edit": Edit,
    "create": Create,
    "delete": Delete,
    "rename": Rename,
}
"""Each update's class by its ``action``."""


# ---------------------------------------------------------------------------------------------
# Documents and the turn cycle


@dataclass(frozen=True)
class IfMatch:
    """The versions a ``sync`` requires its documents and notes to still be at (from a
    prefetch, a read or a listing)."""

    memory: str | None = None
    user: str | None = None
    notes: dict[str, dict[str, str]] | None = None
    """Required versions of notes, by their scope's store then their path."""

    def to_json(self) -> dict[str, Any]:
        """The JSON form, leaving out documents that are not guarded."""
        guards: dict[str, Any] = {"memory": self.memory, "user": self.user, "notes": self.notes}
        return {name: guard for name, guard in guards.items() if guard}


@dataclass(frozen=True)
class Caps(_Wire):
    """A document's byte caps: over ``soft`` a write lands and says so, over ``hard`` it is
    refused."""

    soft: int | None
    hard: int | None

    def to_json(self) -> dict[str, int]:
        """The JSON form, leaving out the limits that are not set."""
        limits = {"soft": self.soft, "hard": self.hard}
        return {name: limit for name, limit in limits.items() if limit is not None}


@dataclass(frozen=True)
class NoteCaps(_Wire):
    """The limits on one scope's notes; each is a hard limit, and one left ``None`` keeps the
    personality's."""

    max_note_bytes: int | None = None
    """The largest note, in UTF-8 bytes."""
    max_notes: int | None = None
    """The most notes a scope holds."""
    max_bytes: int | None = None
    """The most bytes a scope's notes hold together."""

    def to_json(self) -> dict[str, int]:
        """The JSON form, leaving out the limits that are not set."""
        limits = {
            "max_note_bytes": self.max_note_bytes,
            "max_notes": self.max_notes,
            "max_bytes": self.max_bytes,
        }
        return {name: limit for name, limit in limits.items() if limit is not None}


@dataclass(frozen=True)
class ScopeTotals(_Wire):
    """What a scope's notes come to after a write."""

    notes: int
    """How many notes."""
    bytes: int
    """Their bytes together."""


@dataclass(frozen=True)
class Budgets(_Wire):
    """Caps for both documents of a ``sync`` (its ``caps``): on top of the personality's
    configured caps, each limit the smaller of the two, so a call can tighten them, never
    loosen them. A store or limit left ``None`` keeps the personality's."""

    memory: Caps | None = None
    """Caps on MEMORY.md."""
    user: Caps | None = None
    """Caps on USER.md."""
    notes: NoteCaps | None = None
    """Caps on the notes of each scope."""

    def to_json(self) -> dict[str, dict[str, int]]:
        """The JSON form, leaving out the stores that are not capped."""
        caps: dict[str, Caps | NoteCaps | None] = {
            "memory": self.memory,
            "user": self.user,
            "notes": self.notes,
        }
        return {name: limits.to_json() for name, limits in caps.items() if limits is not None}


@dataclass(frozen=True)
class Document(_Wire):
    """One document: its text and the version that guards a write to it."""

    path: str
    """Its layout path: ``MEMORY.md``, ``personalities/<id>/MEMORY.md``, ``users/<id>/USER.md``,
    or a note's (``personalities/<id>/notes/<path>``)."""
    store: Store
    text: str
    """Its text; empty when never written."""
    version: str
    """Its version (the ``ETag``): what ``if_match`` takes."""
    location: str
    """Where the provider keeps it: a path or a key."""
    modified: int | None
    """When last written, in milliseconds since the Unix epoch; ``None`` when never."""


@dataclass(frozen=True)
class PairDocument(Document):
    """A document of a conversation, with the caps the personality writes it under."""

    caps: Caps


@dataclass(frozen=True)
class Personality(_Wire):
    """A personality and where its memory lives."""

    id: str
    provider: str
    kind: str
    """Its provider's kind: ``markdown``, ``postgres``, ``redis`` or ``vector``."""
    scope: Literal["per-personality", "global"]
    recall: bool
    """Whether a prefetch with a query picks entries, and search works."""


@dataclass(frozen=True)
class Prefetch(_Wire):
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


_PAIR_KIND = Literal["global-memory", "personality-memory", "user-profile"]
_OWNER_MEMBER = {"personality-memory": "personality", "user-profile": "user"}


_PairT = TypeVar("_PairT", "NoteScope", "DocumentRef")


def _read_pair(cls: type[_PairT], data: object) -> _PairT:
    """A ``oneOf`` by ``kind`` of the pair: each kind with its own member (none for the
    global MEMORY.md), the only one read."""
    ref = _read(cls, data)
    name = _OWNER_MEMBER.get(ref.kind)
    if name is None:
        return cls(ref.kind)
    value = getattr(ref, name)
    if value is None:
        raise ValueError(f"{cls.__name__}: member {name!r} is missing")
    return cls(ref.kind, **{name: value})


def _pair_path(kind: str, personality: str | None, user: str | None) -> str:
    if kind == "personality-memory" and personality is not None:
        return personality_memory(personality)
    if kind == "user-profile" and user is not None:
        return user_profile(user)
    return GLOBAL_MEMORY


@dataclass(frozen=True)
class NoteScope(_Wire):
    """Whose notes: the scope a note belongs to, named as the document it sits beside."""

    kind: _PAIR_KIND
    personality: str | None = None
    user: str | None = None

    @property
    def folder(self) -> str:
        """The folder of its notes in the layout: beside the document it names."""
        beside = _pair_path(self.kind, self.personality, self.user)
        return beside.rsplit("/", 1)[0] + "/notes" if "/" in beside else "notes"

    @classmethod
    def from_json(cls, data: object) -> NoteScope:
        """Reads it from the server's JSON (see :func:`_read_pair`)."""
        return _read_pair(cls, data)


@dataclass(frozen=True)
class NoteId(_Wire):
    """Which note: its scope and its path within it."""

    scope: NoteScope
    path: str


@dataclass(frozen=True)
class DocumentRef(_Wire):
    """Which document a report is about: one of the pair, or a note (``kind`` ``note``, with
    its ``scope`` and its path within it, ``note``)."""

    kind: Literal["global-memory", "personality-memory", "user-profile", "note"]
    personality: str | None = None
    user: str | None = None
    scope: NoteScope | None = None
    note: str | None = field(default=None, metadata={"member": "path"})

    @property
    def path(self) -> str:
        """Its layout path."""
        if self.kind == "note" and self.scope is not None and self.note is not None:
            return f"{self.scope.folder}/{self.note}"
        return _pair_path(self.kind, self.personality, self.user)

    @classmethod
    def from_json(cls, data: object) -> DocumentRef:
        """Reads it from the server's JSON: a ``oneOf`` by ``kind``, each kind with its own
        members (none for the global MEMORY.md), the only ones it reads."""
        ref = _read(cls, data)
        if ref.kind != "note":
            return _read_pair(cls, data)
        if ref.scope is None or ref.note is None:
            raise ValueError("DocumentRef: a note needs members 'scope' and 'path'")
        return cls("note", scope=ref.scope, note=ref.note)


@dataclass(frozen=True)
class DocumentReport(_Wire):
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
    replayed: bool = field(metadata={"absent": False})
    """The report of an earlier call with the same idempotency key, returned again."""
    scope: ScopeTotals | None = None
    """For a note: its scope's notes after the call."""


@dataclass(frozen=True)
class SyncReport(_Wire):
    """What a ``sync`` did: one report per document touched, memory first."""

    documents: tuple[DocumentReport, ...]
    retries: int = field(metadata={"absent": 0})
    """Compare-and-swap attempts lost to other writers before it landed."""
    warnings: tuple[str, ...] = field(metadata={"absent": ()})
    replayed: bool = field(default=False, metadata={"client_only": True})
    """The server answered with the report of an earlier call with the same idempotency key
    (``Idempotent-Replayed: true``): this call wrote nothing again."""

    def get(self, store: Store) -> DocumentReport | None:
        """The report of the ``store`` document, when the call touched it."""
        return next((report for report in self.documents if report.store == store), None)


@dataclass(frozen=True)
class NoteItem(_Wire):
    """One note as a listing shows it: enough to choose which to open."""

    path: str
    """Its path within its scope (``projects/kyoto.md``)."""
    bytes: int
    version: str
    """Its version: reading it gives this one or a newer one."""
    modified: int | None
    """When last written, in milliseconds since the Unix epoch; ``None`` when unknown."""
    description: str
    """Its first heading or first line, shortened."""


@dataclass(frozen=True)
class NotesPage(_Wire):
    """A scope's notes, by path."""

    folder: str
    """The scope's folder in the layout: a note's layout path is this, ``/``, its path."""
    notes: tuple[NoteItem, ...]


@dataclass(frozen=True)
class Purged(_Wire):
    """What a purge erased."""

    path: str
    location: str
    bytes: int
    revisions: int
    """How many revisions were erased with it."""
    tombstone: int | None
    """The number of the tombstone revision left in its history."""


@dataclass(frozen=True)
class SearchResult(_Wire):
    """The entries a search found."""

    path: str
    ranked: tuple[str, ...]
    """The best entries' current text, best first: MEMORY.md's and its notes', ranked
    together."""
    ranked_from: tuple[str, ...]
    """For each entry of ``ranked``, in the same order, the path of the document it is in:
    ``path`` for MEMORY.md's own, the note's for a note's."""
    unranked: tuple[str, ...]
    """Entries the index has not covered yet, in document order (MEMORY.md's first)."""
    unranked_from: tuple[str, ...]
    """For each entry of ``unranked``, in the same order, the path of the document it is in."""
    behind: str | None
    """Why the ranking does not cover the whole document, when it does not."""


# ---------------------------------------------------------------------------------------------
# History


@dataclass(frozen=True)
class Revision(_Wire):
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
    redacted_at: int | None
    """When its text and updates were erased (a redaction), in milliseconds since the Unix
    epoch; ``None`` for a revision not redacted. A redacted one has no text and nothing to
    revert to."""
    text: str | None
    """The whole text after it, when asked for (``text=True``); ``None`` for a tombstone or a
    redacted revision."""


@dataclass(frozen=True)
class RevisionItem(Revision):
    """A listed revision, with its change when asked for (``diff=True``)."""

    oldest_kept: bool
    """The oldest revision kept, older ones pruned: nothing to compare it with."""
    diff: str | None


@dataclass(frozen=True)
class RevisionsPage(_Wire):
    """One page of a document's revisions, newest first."""

    path: str
    revisions: tuple[RevisionItem, ...]
    next_before: int | None
    """Pass as ``before`` for the next page; ``None`` on the last."""


@dataclass(frozen=True)
class RevisionDiff(_Wire):
    """A unified diff between two states of a document."""

    from_revision: int = field(metadata={"member": "from"})
    """The revision compared from (0: the empty document before the first)."""
    to_revision: int | None = field(metadata={"member": "to"})
    """The revision compared to; ``None`` for the document as it is now."""
    diff: str
    """The ``diff -u`` text, empty when the texts are equal."""


# ---------------------------------------------------------------------------------------------
# Identities and the directory


@dataclass(frozen=True)
class Identity(_Wire):
    """A link: a platform account and the user it is."""

    identity: str
    """``platform:platform_user``."""
    platform: str
    platform_user: str
    user: str


@dataclass(frozen=True)
class LinkChange(_Wire):
    """What a link or unlink changed."""

    identity: str
    platform: str
    platform_user: str
    previous: str | None
    """The user it was linked to before; ``None`` when it was not linked."""
    user: str | None
    """The user it is linked to now; ``None`` after an unlink."""


@dataclass(frozen=True)
class IdentitiesPage(_Wire):
    """One page of identity links, sorted by platform, then platform user id."""

    items: tuple[Identity, ...]
    next_after: str | None
    """Pass as ``after`` for the next page; ``None`` on the last."""


@dataclass(frozen=True)
class PersonalitiesPage(_Wire):
    """One page of personalities, sorted by id."""

    items: tuple[Personality, ...]
    default: str | None
    """The personality picked first by ``memory mcp`` and the Memory page."""
    next_after: str | None


@dataclass(frozen=True)
class User(_Wire):
    """A user."""

    id: str


@dataclass(frozen=True)
class UsersPage(_Wire):
    """One page of users, sorted by id."""

    items: tuple[User, ...]
    default: str | None
    next_after: str | None


# ---------------------------------------------------------------------------------------------
# Operations


@dataclass(frozen=True)
class ProviderHealth(_Wire):
    """One provider's readiness."""

    name: str
    kind: str
    ready: bool
    error: str | None
    """Why not, to a key with the ``metrics`` scope (or on a server without keys)."""


@dataclass(frozen=True)
class Health(_Wire):
    """Whether the service is up, and each provider with it."""

    status: Literal["ok", "degraded"]
    providers: tuple[ProviderHealth, ...]

    @property
    def ok(self) -> bool:
        """Whether every provider answers."""
        return self.status == "ok"


def updates_to_json(updates: Sequence[MemoryUpdate | Mapping[str, Any]]) -> list[Any]:
    """The JSON form of a list of updates given as objects or as their JSON."""
    return [update if isinstance(update, Mapping) else update.to_json() for update in updates]
