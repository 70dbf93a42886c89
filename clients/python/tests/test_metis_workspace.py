"""The Metis store and a Metis workspace's files are one: a server whose provider is the
markdown layout ``metis`` on the workspace keeps the store's documents in
``<workspace>/.metis/``, where Metis itself and a person read and write them. The store finds
them by the default rules alone (no ids given), so these tests also hold the client's rules to
the server's."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agent_memory import InvalidInputError
from agent_memory.metis import (
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryStore,
    compose_system_prompt,
    workspace_personality,
)
from metis_support import log_in_as, metis_workspace_server

BASE = "You are Metis, a coding agent."
# A name the personality rule must rewrite (spaces, punctuation, non-ASCII) and cut (over 48).
WORKSPACE_NAME = "Ada's Project: ünïcode & a name longer than forty-eight characters"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace, with a login name both sides must rewrite the same way."""
    log_in_as(monkeypatch, "Grace Hopper.")
    path = tmp_path / WORKSPACE_NAME
    path.mkdir()
    return path


def test_the_store_reads_and_writes_the_workspaces_files(workspace: Path) -> None:
    files = workspace / ".metis"
    with (
        metis_workspace_server(workspace) as server,
        MemoryStore(workspace, base_url=server.url) as store,
    ):
        assert store.user == "Grace-Hopper-"
        assert store.personality == workspace_personality(workspace)

        store.add_entry(MemoryFile.MEMORY, "Tests run with `make check`.")
        store.add_entry(MemoryFile.MEMORY, "Deploys go through CI, never by hand.")
        store.add_entry(MemoryFile.USER, "Prefers short answers.")
        memory_md = (files / "MEMORY.md").read_text(encoding="utf-8")
        assert memory_md == store.read(MemoryFile.MEMORY)
        assert (
            memory_md == "Tests run with `make check`.\n\nDeploys go through CI, never by hand.\n"
        )
        assert (files / "USER.md").read_text(encoding="utf-8") == store.read(MemoryFile.USER)

        # A person edits both files by hand (no final newline, as editors may leave them):
        # the next prompt has their text, and the next write builds on it.
        (files / "USER.md").write_text("Name: Grace.\nPrefers short answers.", encoding="utf-8")
        (files / "MEMORY.md").write_text("Tests: `make check`.", encoding="utf-8")
        prompt = store.assemble_system_prompt(BASE)
        assert prompt == (
            f"{BASE}\n\n## User context (USER.md)\nName: Grace.\nPrefers short answers.\n\n"
            "## Workspace memory (MEMORY.md)\nTests: `make check`."
        )
        assert prompt == compose_system_prompt(
            BASE,
            (files / "USER.md").read_text(encoding="utf-8"),
            (files / "MEMORY.md").read_text(encoding="utf-8"),
        )

        result = store.add_entry(MemoryFile.MEMORY, "Staging is `make stage`.")
        assert result.before_hash == sha256("Tests: `make check`.")
        # Joined to content without a final newline: the newline is added (a blank line).
        assert (files / "MEMORY.md").read_text(encoding="utf-8") == (
            "Tests: `make check`.\n\nStaging is `make stage`.\n"
        )


def test_a_hand_edit_over_the_hard_cap_can_only_shrink(workspace: Path) -> None:
    """The service refuses a write that leaves the document over its hard cap *and* larger
    than it was: an agent can consolidate its way back under a file a person grew."""
    memory_md = workspace / ".metis" / "MEMORY.md"
    with (
        metis_workspace_server(workspace) as server,
        MemoryStore(workspace, base_url=server.url) as store,
    ):
        store.add_entry(MemoryFile.MEMORY, "start")
        memory_md.write_text("x" * 4500 + "\nstale line\n", encoding="utf-8")
        with pytest.raises(MemoryHardCapExceeded):
            store.add_entry(MemoryFile.MEMORY, "more")

        shrunk = store.replace(MemoryFile.MEMORY, "\nstale line", "")
        assert (shrunk.before_size_bytes, shrunk.after_size_bytes) == (4512, 4501)
        assert shrunk.over_hard_cap is True and shrunk.over_soft_cap is True

        consolidated = store.consolidate(MemoryFile.MEMORY, "x" * 100)
        assert consolidated.over_hard_cap is False and consolidated.over_soft_cap is False
        assert memory_md.read_text(encoding="utf-8") == "x" * 100 + "\n"


def test_the_workspace_rules_agree_through_a_symlink(tmp_path: Path, workspace: Path) -> None:
    link = tmp_path / "link-to-workspace"
    link.symlink_to(workspace)
    # The server is given the link, the store the real path: both resolve it.
    with (
        metis_workspace_server(link) as server,
        MemoryStore(workspace, base_url=server.url) as store,
    ):
        store.add_entry(MemoryFile.USER, "Name: Grace.")
        assert (workspace / ".metis" / "USER.md").read_text(encoding="utf-8") == "Name: Grace.\n"


def test_ids_set_in_the_provider_table_are_the_workspaces(workspace: Path) -> None:
    with metis_workspace_server(workspace, personality="ada", user="grace") as server:
        with MemoryStore(workspace, base_url=server.url, personality="ada", user="grace") as store:
            store.add_entry(MemoryFile.MEMORY, "Kyoto in May.")
        assert (workspace / ".metis" / "MEMORY.md").read_text(encoding="utf-8") == (
            "Kyoto in May.\n"
        )
        # The default rules now name documents the workspace does not hold: refused, not
        # quietly read from or written to somewhere else.
        with MemoryStore(workspace, base_url=server.url) as elsewhere:
            with pytest.raises(InvalidInputError) as refused:
                elsewhere.read(MemoryFile.MEMORY)
            assert refused.value.code == "not-in-layout"
            with pytest.raises(InvalidInputError):
                elsewhere.add_entry(MemoryFile.MEMORY, "lost?")
        assert not (workspace / ".metis" / "USER.md").exists()
