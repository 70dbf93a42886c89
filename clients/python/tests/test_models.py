"""Reading the server's document ids: the pair's and notes', with their layout paths."""

from __future__ import annotations

import pytest

from agent_memory import DocumentRef, NoteScope


def test_the_pairs_ids_read_with_their_layout_paths() -> None:
    assert DocumentRef.from_json({"kind": "global-memory"}).path == "MEMORY.md"
    ada = DocumentRef.from_json({"kind": "personality-memory", "personality": "ada"})
    assert ada == DocumentRef("personality-memory", personality="ada")
    assert ada.path == "personalities/ada/MEMORY.md"
    grace = DocumentRef.from_json({"kind": "user-profile", "user": "grace"})
    assert grace.path == "users/grace/USER.md"


@pytest.mark.parametrize(
    ("scope", "path"),
    [
        ({"kind": "global-memory"}, "notes/projects/kyoto.md"),
        (
            {"kind": "personality-memory", "personality": "ada"},
            "personalities/ada/notes/projects/kyoto.md",
        ),
        ({"kind": "user-profile", "user": "grace"}, "users/grace/notes/projects/kyoto.md"),
    ],
)
def test_a_note_reads_with_its_scope_and_layout_path(scope: dict[str, str], path: str) -> None:
    note = DocumentRef.from_json({"kind": "note", "scope": scope, "path": "projects/kyoto.md"})
    assert note.kind == "note"
    assert note.note == "projects/kyoto.md"
    assert note.scope == NoteScope.from_json(scope)
    assert note.path == path


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "note", "path": "x.md"},
        {"kind": "note", "scope": {"kind": "global-memory"}},
        {"kind": "note", "scope": {"kind": "user-profile"}, "path": "x.md"},
        {"kind": "note", "scope": {"kind": "note"}, "path": "x.md"},
        {"kind": "user-profile"},
    ],
)
def test_an_incomplete_id_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        DocumentRef.from_json(data)
