"""The hand-written models against the committed OpenAPI document (docs/openapi.json): a member
the server adds, renames or makes optional fails here until the client follows."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from agent_memory import models
from agent_memory.errors import Problem

OPENAPI = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"

PARSED: dict[str, type[Any]] = {
    "Budgets": models.Budgets,
    "Caps": models.Caps,
    "DocumentId": models.DocumentRef,
    "DocumentReport": models.DocumentReport,
    "DocumentView": models.Document,
    "Health": models.Health,
    "IdentitiesPage": models.IdentitiesPage,
    "IdentityView": models.Identity,
    "IfMatch": models.IfMatch,
    "LinkChange": models.LinkChange,
    "PairDocument": models.PairDocument,
    "PersonalitiesPage": models.PersonalitiesPage,
    "PersonalityView": models.Personality,
    "PrefetchView": models.Prefetch,
    "Problem": Problem,
    "ProviderHealth": models.ProviderHealth,
    "PurgedView": models.Purged,
    "RevisionDiff": models.RevisionDiff,
    "RevisionEntry": models.Revision,
    "RevisionItem": models.RevisionItem,
    "RevisionsPage": models.RevisionsPage,
    "SearchView": models.SearchResult,
    "SyncReport": models.SyncReport,
    "UserView": models.User,
    "UsersPage": models.UsersPage,
}
"""Each object schema the client reads (or sends as a dataclass: ``Budgets``), and its
dataclass."""

BUILT_INLINE = {
    "LinkRequest",
    "PrefetchRequest",
    "ReplaceRequest",
    "RevertRequest",
    "SearchRequest",
    "SyncRequest",
    "UpdatesRequest",
}
"""Request bodies the client builds as dicts in its calls, with no dataclass to compare."""

RENAMED = {"from_revision": "from", "to_revision": "to"}
"""Dataclass fields named apart from their member (``from`` is a Python keyword)."""

CLIENT_ONLY = {(Problem, "raw"), (models.SyncReport, "replayed")}
"""Dataclass fields that are no member: the whole JSON object, kept as received; whether the
answer came with ``Idempotent-Replayed: true`` (a header)."""

DEFAULTED = {
    (models.DocumentReport, "replayed"),
    (models.SyncReport, "retries"),
    (models.SyncReport, "warnings"),
}
"""Optional members read with a default (``False``, 0, nothing) rather than ``None``."""


DOCUMENT: dict[str, Any] = json.loads(OPENAPI.read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]


def members(name: str) -> tuple[set[str], set[str]]:
    """A schema's property names and the required ones, through ``allOf`` (all parts) and
    ``oneOf`` (any variant has it; required when every variant requires it)."""
    schema = SCHEMAS[name]
    if "allOf" in schema:
        parts = [_resolve(part) for part in schema["allOf"]]
        return set().union(*(p[0] for p in parts)), set().union(*(p[1] for p in parts))
    if "oneOf" in schema:
        variants = [_resolve(variant) for variant in schema["oneOf"]]
        every = set.intersection(*(v[1] for v in variants))
        return set().union(*(v[0] for v in variants)), every
    return set(schema.get("properties", {})), set(schema.get("required", []))


def _resolve(schema: dict[str, Any]) -> tuple[set[str], set[str]]:
    if "$ref" in schema:
        return members(schema["$ref"].rsplit("/", 1)[-1])
    return set(schema.get("properties", {})), set(schema.get("required", []))


def dataclass_members(cls: type[Any]) -> tuple[set[str], set[str]]:
    """The member names a dataclass reads, and the ones it cannot do without (not ``None``
    and not read with a default)."""
    hints = typing.get_type_hints(cls)
    names, required = set(), set()
    for field in dataclasses.fields(cls):
        if (cls, field.name) in CLIENT_ONLY:
            continue
        name = RENAMED.get(field.name, field.name)
        names.add(name)
        if not _admits_none(hints[field.name]) and (cls, field.name) not in DEFAULTED:
            required.add(name)
    return names, required


def _admits_none(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )


@pytest.mark.parametrize("schema", sorted(PARSED))
def test_a_dataclass_has_its_schemas_members(schema: str) -> None:
    properties, required = members(schema)
    fields, needed = dataclass_members(PARSED[schema])
    assert fields == properties, f"{PARSED[schema].__name__} against {schema}"
    assert needed == required, f"required members of {schema}"


def test_every_update_is_built_as_its_schema_says() -> None:
    examples: list[models.MemoryUpdate] = [
        models.Add("memory", "x"),
        models.Replace("memory", "x"),
        models.Remove("memory", "x"),
        models.Edit("memory", "x", "y"),
    ]
    variants = {v["properties"]["action"]["enum"][0]: v for v in SCHEMAS["MemoryUpdate"]["oneOf"]}
    built = {update.to_json()["action"]: update.to_json() for update in examples}
    assert set(built) == set(variants)
    for action, variant in variants.items():
        assert set(built[action]) == set(variant["properties"]) == set(variant["required"])
        assert models.update_from_json(built[action]) in examples


def test_every_object_schema_is_read_or_built() -> None:
    objects = {
        name
        for name, schema in SCHEMAS.items()
        if {"properties", "allOf", "oneOf"} & set(schema) or schema.get("type") == "object"
    }
    # MemoryUpdate is both: checked above.
    assert objects == set(PARSED) | BUILT_INLINE | {"MemoryUpdate"}

    request_bodies = {
        content["schema"]["$ref"].rsplit("/", 1)[-1]
        for path in DOCUMENT["paths"].values()
        for operation in path.values()
        for content in operation.get("requestBody", {}).get("content", {}).values()
    }
    assert request_bodies == BUILT_INLINE
