"""The hand-written models and requests against the committed OpenAPI document
(docs/openapi.json): a member the server adds, removes, renames, retypes or makes optional, a
response read as another schema, an operation or schema the client does not know, fails here
until the client follows.

Each check is a function of the document returning what drifted, so the last tests can show
that every kind of drift is caught, on copies of the document changed in one place.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from agent_memory import _core, models
from agent_memory.errors import Problem

OPENAPI = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"
DOCUMENT: dict[str, Any] = json.loads(OPENAPI.read_text())

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
    "NoteCaps": models.NoteCaps,
    "NoteId": models.NoteId,
    "NoteItem": models.NoteItem,
    "NoteScope": models.NoteScope,
    "NotesPage": models.NotesPage,
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
    "ScopeTotals": models.ScopeTotals,
    "SearchView": models.SearchResult,
    "SyncReport": models.SyncReport,
    "UserView": models.User,
    "UsersPage": models.UsersPage,
}
"""Each object schema the client reads (or sends as a dataclass: ``Budgets``), and its
dataclass. The field metadata the reader follows (``member``, ``absent``, ``client_only``; see
``models._Wire``) says how the two line up."""

SCHEMA_OF = {cls: name for name, cls in PARSED.items()}

UPDATES: dict[str, type[Any]] = {
    "add": models.Add,
    "replace": models.Replace,
    "remove": models.Remove,
    "edit": models.Edit,
    "create": models.Create,
    "delete": models.Delete,
    "rename": models.Rename,
}
"""``MemoryUpdate``'s variants by ``action``: read and built (``to_json``) as dataclasses."""

BUILT_INLINE = {
    "LinkRequest",
    "PrefetchRequest",
    "RenameRequest",
    "ReplaceRequest",
    "RevertRequest",
    "SearchRequest",
    "SyncRequest",
    "UpdatesRequest",
}
"""Request bodies the client builds as dicts in ``_core``, checked as built."""

Drift = list[str]
"""What does not match, one line each; empty when nothing drifted."""


# ---------------------------------------------------------------------------------------------
# Reading the document


def _schemas(document: Mapping[str, Any]) -> dict[str, Any]:
    schemas: dict[str, Any] = document["components"]["schemas"]
    return schemas


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _is_object(schema: Mapping[str, Any]) -> bool:
    return bool({"properties", "allOf", "oneOf"} & set(schema)) or schema.get("type") == "object"


def members(document: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema's members: each one's schemas (several where ``oneOf`` variants each
    have it) and whether it is required (by every variant), through ``$ref`` and ``allOf``."""
    if "$ref" in schema:
        return members(document, _schemas(document)[_name(schema["$ref"])])
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(members(document, part))
        return merged
    if "oneOf" in schema:
        variants = [members(document, variant) for variant in schema["oneOf"]]
        names = {name for variant in variants for name in variant}
        return {
            name: {
                "schemas": [s for v in variants if name in v for s in v[name]["schemas"]],
                "required": all(name in v and v[name]["required"] for v in variants),
            }
            for name in names
        }
    required = set(schema.get("required", []))
    return {
        name: {"schemas": [member], "required": name in required}
        for name, member in schema.get("properties", {}).items()
    }


def describe(document: Mapping[str, Any], schema: Mapping[str, Any]) -> tuple[Any, bool]:
    """A member schema as a type (``"string"``, ``("enum", values)``, ``("array", item)``,
    ``("object", schema name)``) and whether it may be null."""
    if "$ref" in schema:
        name = _name(schema["$ref"])
        target = _schemas(document)[name]
        return (("object", name), False) if _is_object(target) else describe(document, target)
    if "oneOf" in schema:
        parts = [part for part in schema["oneOf"] if part.get("type") != "null"]
        nullable = len(parts) < len(schema["oneOf"])
        if len(parts) != 1:
            return ("unsupported", json.dumps(schema, sort_keys=True)), nullable
        kind, also_null = describe(document, parts[0])
        return kind, nullable or also_null
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types]
    nullable = "null" in listed
    [kind] = [t for t in listed if t != "null"] or [None]
    if "enum" in schema:
        return ("enum", frozenset(schema["enum"]) - {None}), nullable
    if kind == "array":
        return ("array", describe(document, schema["items"])[0]), nullable
    return kind, nullable


def python_type(hint: Any) -> Any:
    """A field's type (``None`` left out) in :func:`describe`'s terms."""
    simple = {str: "string", int: "integer", bool: "boolean"}
    if hint in simple:
        return simple[hint]
    if typing.get_origin(hint) is Literal:
        return ("enum", frozenset(typing.get_args(hint)))
    if typing.get_origin(hint) is tuple:
        return ("array", python_type(typing.get_args(hint)[0]))
    if hint == models.MemoryUpdate:
        return ("object", "MemoryUpdate")
    if typing.get_origin(hint) is dict:
        return "object"
    if hint in SCHEMA_OF:
        return ("object", SCHEMA_OF[hint])
    return ("unsupported", repr(hint))


def _fits_type(field: Any, member: Any) -> bool:
    # A str reads any string, an enum's too: the client then takes values added later.
    if field == "string" and isinstance(member, tuple) and member[0] == "enum":
        return all(isinstance(value, str) for value in member[1])
    return bool(field == member)


# ---------------------------------------------------------------------------------------------
# The checks


def shape_drift(document: Mapping[str, Any], schema: Mapping[str, Any], cls: type[Any]) -> Drift:
    """A dataclass against an object schema: the same members, each of its type, and required
    exactly when the schema requires it and it cannot be null."""
    drift: Drift = []
    wanted = members(document, schema)
    fields = {member.name: member for member in models._members(cls)}
    for name in sorted(set(wanted) - set(fields)):
        drift.append(f"{cls.__name__}: no field for member {name!r}")
    for name in sorted(set(fields) - set(wanted)):
        drift.append(f"{cls.__name__}: field for member {name!r}, which the schema lacks")
    for name in sorted(set(wanted) & set(fields)):
        field, member = fields[name], wanted[name]
        described = [describe(document, s) for s in member["schemas"]]
        nullable = any(null for _, null in described)
        kinds = {kind for kind, _ in described}
        if all(isinstance(kind, tuple) and kind[0] == "enum" for kind in kinds):
            # A oneOf's tag: each variant has one value of it.
            kinds = {("enum", frozenset().union(*(kind[1] for kind in kinds)))}
        if len(kinds) != 1 or not _fits_type(python_type(field.hint), next(iter(kinds))):
            drift.append(
                f"{cls.__name__}.{field.attribute}: {python_type(field.hint)} against "
                f"member {name!r}: {' or '.join(map(str, kinds))}"
            )
        if field.required != (member["required"] and not nullable):
            drift.append(
                f"{cls.__name__}.{field.attribute}: required={field.required}, but member "
                f"{name!r} is required={member['required']}, nullable={nullable}"
            )
    return drift


def model_drift(document: Mapping[str, Any], schema: str) -> Drift:
    """The dataclass that reads ``schema`` against it."""
    if schema not in _schemas(document):
        return [f"{PARSED[schema].__name__}: schema {schema!r} is gone"]
    return shape_drift(document, _schemas(document)[schema], PARSED[schema])


def update_drift(document: Mapping[str, Any]) -> Drift:
    """Each update dataclass against its ``MemoryUpdate`` variant, and built as it says."""
    variants = {
        variant["properties"]["action"]["enum"][0]: variant
        for variant in _schemas(document)["MemoryUpdate"]["oneOf"]
    }
    drift = [f"MemoryUpdate: variant {a!r} unknown" for a in sorted(set(variants) - set(UPDATES))]
    drift += [f"MemoryUpdate: variant {a!r} gone" for a in sorted(set(UPDATES) - set(variants))]
    for action in sorted(set(variants) & set(UPDATES)):
        variant = copy.deepcopy(variants[action])
        del variant["properties"]["action"]
        variant["required"] = [name for name in variant["required"] if name != "action"]
        drift += shape_drift(document, variant, UPDATES[action])
        [built] = [u.to_json() for u in SAMPLES["updates"] if isinstance(u, UPDATES[action])]
        drift += [f"{action}.to_json(){m}" for m in misfits(document, variants[action], built)]
    return drift


def misfits(
    document: Mapping[str, Any], schema: Mapping[str, Any], value: Any, at: str = ""
) -> Drift:
    """Where a JSON value the client sends does not fit a schema: its type, enum, required
    members, members it does not know (``additionalProperties: false``), and array items."""
    if "$ref" in schema:
        return misfits(document, _schemas(document)[_name(schema["$ref"])], value, at)
    if "oneOf" in schema:
        fitting = [v for v in schema["oneOf"] if not misfits(document, v, value, at)]
        return [] if len(fitting) == 1 else [f"{at or '.'}: fits {len(fitting)} of a oneOf"]
    if "allOf" in schema:
        return [m for part in schema["allOf"] for m in misfits(document, part, value, at)]
    json_type = {
        type(None): "null",
        bool: "boolean",
        int: "integer",
        str: "string",
        list: "array",
        dict: "object",
    }[type(value)]
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types] if types else []
    if listed and json_type not in listed and not (json_type == "integer" and "number" in listed):
        return [f"{at or '.'}: {json_type}, not {'/'.join(listed)}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at or '.'}: {value!r} is not one of {schema['enum']}"]
    found: Drift = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        found += [f"{at}.{n}: missing" for n in schema.get("required", []) if n not in value]
        if schema.get("additionalProperties") is False:
            found += [f"{at}.{n}: not a member" for n in value if n not in properties]
        for name, item in value.items():
            if name in properties:
                found += misfits(document, properties[name], item, f"{at}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += misfits(document, schema["items"], item, f"{at}[{index}]")
    return found


# The client's operations: every public function of _core that returns a Call, made with
# arguments named as its parameters are.

DOCUMENT_PATHS = (
    models.GLOBAL_MEMORY,
    models.personality_memory("ada"),
    models.user_profile("grace"),
)
NOTE_PATHS = (
    f"{models.GLOBAL_NOTES}/trips/kyoto.md",
    models.personality_note("ada", "trips/kyoto.md"),
    models.user_note("grace", "diet.md"),
)
NOTE_FOLDERS = (models.GLOBAL_NOTES, models.personality_notes("ada"), models.user_notes("grace"))
HISTORY = {"list_revisions", "get_revision", "diff", "revert", "redact"}
"""The operations on any document's history, the pair's and notes'."""


def _paths(name: str) -> tuple[str, ...]:
    """The layout paths the operation ``name`` takes: the pair's, notes', or notes folders."""
    if name == "list_notes":
        return NOTE_FOLDERS
    if name.endswith("_note"):
        return NOTE_PATHS
    return DOCUMENT_PATHS + NOTE_PATHS if name in HISTORY else DOCUMENT_PATHS


SAMPLES: dict[str, Any] = {
    "personality": "ada",
    "user": "grace",
    "query": "coffee",
    "max_chars": 400,
    "limit": 5,
    "before": 9,
    "after": "ada",
    "number": 3,
    "from_revision": 1,
    "to_revision": 2,
    "platform": "telegram",
    "platform_user": "12345",
    "session": "conversation-1",
    "surface": "tool",
    "idempotency_key": "key-1",
    "caps": models.Budgets(memory=models.Caps(soft=100, hard=200), user=models.Caps(None, 300)),
    "updates": [
        models.Add("memory", "x"),
        models.Replace("user", "y"),
        models.Remove("memory", "z"),
        models.Edit("user", "old", "new"),
        models.Create("memory", "trips/kyoto.md", "Temples."),
        models.Delete("user", "diet.md"),
        models.Rename("memory", "trips/kyoto.md", "trips/osaka.md"),
    ],
    "text": "The whole text.",
    "prefix": "trips/",
    "to": "trips/osaka.md",
}
"""An argument for each parameter name (``text`` a ``str``; ``bool`` ones are given
``True``)."""


def _argument(name: str, hint: Any, path: str, full: bool) -> Any:
    if hint is bool:
        return full
    if full is False and models._admits_none(hint):
        return None
    if name == "path":
        return path
    if name == "if_match":
        return models.IfMatch(memory="v1", user="v2") if "IfMatch" in str(hint) else "v1"
    return SAMPLES[name]


def operations() -> Iterator[tuple[str, type[Any], bool, _core.Call[Any]]]:
    """Every operation of the client, each document one on each kind of document: its
    function's name, what it reads, whether every option was given, and the call it makes."""
    for name, function in inspect.getmembers(_core, inspect.isfunction):
        hints = typing.get_type_hints(function)
        if name.startswith("_") or typing.get_origin(hints.get("return")) is not _core.Call:
            continue
        [reads] = typing.get_args(hints["return"])
        parameters = [p for p in inspect.signature(function).parameters if p in hints]
        paths = _paths(name) if "path" in parameters else DOCUMENT_PATHS[:1]
        for path in paths:
            for full in (True, False):
                arguments = [_argument(p, hints[p], path, full) for p in parameters]
                yield name, reads, full, function(*arguments)


def _operation(document: Mapping[str, Any], call: _core.Call[Any]) -> tuple[str, Any] | None:
    """The path template and operation of ``document`` that ``call`` is, if any."""
    for template, operations in document["paths"].items():
        pattern = re.escape(template).replace(r"\{", "{").replace(r"\}", "}")
        # A note's path ends its routes and holds `/`.
        pattern = pattern.replace("{note}", ".+")
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", pattern), call.path):
            operation = operations.get(call.method.lower())
            if operation is not None:
                return template, operation
    return None


def response_drift(document: Mapping[str, Any]) -> Drift:
    """Each call against its operation: it exists, each status the client reads as a result
    answers the schema the client reads it as, and its body fits the request's schema."""
    drift: Drift = []
    for name, reads, full, call in operations():
        found = _operation(document, call)
        if found is None:
            drift.append(f"_core.{name}: {call.method} {call.path} is no operation")
            continue
        template, operation = found
        for status in sorted(call.result_statuses):
            content = operation["responses"].get(str(status), {}).get("content", {})
            schema = content.get("application/json", {}).get("schema", {})
            answered = _name(schema.get("$ref", "none"))
            if answered != SCHEMA_OF.get(reads):
                drift.append(
                    f"_core.{name}: {call.method} {template} {status} answers {answered}, "
                    f"read as {reads.__name__}"
                )
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if (body is None) != (call.body is None):
            drift.append(f"_core.{name}: {call.method} {template} body sent: {call.body}")
        elif body is not None:
            where = f"_core.{name}({'every option' if full else 'no option'}) body"
            drift += [f"{where}{m}" for m in misfits(document, body["schema"], call.body)]
            properties = members(document, body["schema"])
            if full and set(call.body) != set(properties):
                drift.append(f"{where}: sends {sorted(call.body)}, takes {sorted(properties)}")
    return drift


def coverage_drift(document: Mapping[str, Any]) -> Drift:
    """Every object schema is one the client reads or builds, and every operation one it
    makes."""
    schemas = _schemas(document)
    objects = {name for name, schema in schemas.items() if _is_object(schema)}
    known = set(PARSED) | BUILT_INLINE | {"MemoryUpdate"}
    drift = [
        f"schema {name!r}: the client neither reads nor builds it"
        for name in sorted(objects - known)
    ]
    request_bodies = {
        _name(content["schema"]["$ref"])
        for path in document["paths"].values()
        for operation in path.values()
        for content in operation.get("requestBody", {}).get("content", {}).values()
    }
    drift += [
        f"request {name!r}: not built by the client"
        for name in sorted(request_bodies - BUILT_INLINE)
    ]
    drift += [f"request {name!r}: sent nowhere" for name in sorted(BUILT_INLINE - request_bodies)]
    made = set()
    for _, _, _, call in operations():
        found = _operation(document, call)
        if found is not None:
            made.add((call.method.lower(), found[0]))
    for template, operations_of in document["paths"].items():
        for method in operations_of:
            if (method, template) not in made:
                drift.append(f"{method.upper()} {template}: the client never makes it")
    return drift


def all_drift(document: Mapping[str, Any]) -> Drift:
    """Every check at once, each line once."""
    drift = [line for schema in sorted(PARSED) for line in model_drift(document, schema)]
    drift += update_drift(document) + response_drift(document) + coverage_drift(document)
    return list(dict.fromkeys(drift))


# ---------------------------------------------------------------------------------------------
# The committed document


@pytest.mark.parametrize("schema", sorted(PARSED))
def test_a_dataclass_has_its_schemas_members(schema: str) -> None:
    assert model_drift(DOCUMENT, schema) == []


def test_every_update_is_read_and_built_as_its_schema_says() -> None:
    assert update_drift(DOCUMENT) == []
    built = [update.to_json() for update in SAMPLES["updates"]]
    assert [models.update_from_json(update) for update in built] == SAMPLES["updates"]


def test_every_call_reads_and_sends_what_its_operation_says() -> None:
    assert response_drift(DOCUMENT) == []


def test_every_object_schema_is_read_or_built_and_every_operation_made() -> None:
    assert coverage_drift(DOCUMENT) == []


# ---------------------------------------------------------------------------------------------
# Drift is caught: each change, made to a copy of the document, is reported


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = _schemas(document)[name]
    return schema


def _add_member(document: dict[str, Any]) -> None:
    _schema(document, "DocumentView")["properties"]["etag"] = {"type": "string"}


def _remove_member(document: dict[str, Any]) -> None:
    del _schema(document, "PurgedView")["properties"]["tombstone"]


def _rename_member(document: dict[str, Any]) -> None:
    report = _schema(document, "DocumentReport")
    report["properties"]["lines_dropped"] = report["properties"].pop("lines_removed")
    report["required"] = [
        "lines_dropped" if n == "lines_removed" else n for n in report["required"]
    ]


def _retype_member(document: dict[str, Any]) -> None:
    _schema(document, "RevisionsPage")["properties"]["next_before"]["type"] = ["string", "null"]


def _make_optional(document: dict[str, Any]) -> None:
    _schema(document, "PersonalityView")["required"].remove("recall")


def _add_enum_value(document: dict[str, Any]) -> None:
    _schema(document, "HealthStatus")["enum"].append("starting")


def _retype_array_items(document: dict[str, Any]) -> None:
    _schema(document, "SearchView")["properties"]["ranked"]["items"] = {"type": "integer"}


def _rename_update_member(document: dict[str, Any]) -> None:
    [edit] = [v for v in _schema(document, "MemoryUpdate")["oneOf"] if "old" in v["properties"]]
    edit["properties"]["replacement"] = edit["properties"].pop("new")
    edit["required"] = ["replacement" if n == "new" else n for n in edit["required"]]


def _rename_request_member(document: dict[str, Any]) -> None:
    search = _schema(document, "SearchRequest")
    search["properties"]["max"] = search["properties"].pop("limit")


def _retype_request_member(document: dict[str, Any]) -> None:
    _schema(document, "PrefetchRequest")["properties"]["max_chars"]["type"] = ["string", "null"]


def _require_request_member(document: dict[str, Any]) -> None:
    _schema(document, "SyncRequest")["required"].append("session")


def _answer_another_schema(document: dict[str, Any]) -> None:
    answer = document["paths"]["/v1/users"]["get"]["responses"]["200"]["content"]
    answer["application/json"]["schema"]["$ref"] = "#/components/schemas/IdentitiesPage"


def _add_operation(document: dict[str, Any]) -> None:
    document["paths"]["/v1/export"] = copy.deepcopy(document["paths"]["/v1/health"])


def _add_schema(document: dict[str, Any]) -> None:
    _schemas(document)["ExportView"] = {"type": "object", "properties": {}}


MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a member added": (_add_member, "Document: no field for member 'etag'"),
    "a member removed": (_remove_member, "Purged: field for member 'tombstone', which"),
    "a member renamed": (_rename_member, "DocumentReport: no field for member 'lines_dropped'"),
    "a member retyped": (_retype_member, "RevisionsPage.next_before: integer against"),
    "a required member made optional": (_make_optional, "Personality.recall: required=True"),
    "an enum value added": (_add_enum_value, "Health.status: ('enum'"),
    "array items retyped": (_retype_array_items, "SearchResult.ranked: ('array', 'string')"),
    "an update's member renamed": (_rename_update_member, "Edit: no field for member"),
    "a request member renamed": (_rename_request_member, "_core.search(every option) body"),
    "a request member retyped": (_retype_request_member, "body.max_chars: integer, not"),
    "a request member made required": (_require_request_member, "body.session: missing"),
    "a response answered with another schema": (_answer_another_schema, "read as UsersPage"),
    "an operation added": (_add_operation, "GET /v1/export: the client never makes it"),
    "a schema added": (_add_schema, "schema 'ExportView': the client neither reads"),
}
"""Changes to the document, and what the checks say of each."""


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_drift_in_the_document_is_caught(mutation: str) -> None:
    document = copy.deepcopy(DOCUMENT)
    change, reported = MUTATIONS[mutation]
    change(document)
    drift = all_drift(document)
    assert any(reported in line for line in drift), drift
