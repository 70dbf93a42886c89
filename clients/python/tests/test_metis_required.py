"""The twelve tests the Metis memory store specification requires (its section 10.1), each on
markdown, PostgreSQL and Redis, with the blocking and the asyncio store (the ``metis_store``
fixture); test 2, about the workspace's ``.metis/`` folder, on a server whose provider is the
Metis layout on the workspace."""

from __future__ import annotations

import hashlib
from itertools import pairwise
from pathlib import Path

import pytest

from agent_memory import RefusedError
from agent_memory.metis import (
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryReplaceError,
    MemoryStore,
    ToolExecutionError,
)
from blocking import make_store, memory_tools
from metis_support import log_in_as, metis_workspace_server

BASE = "You are Metis, a coding agent."
SOFT_CAP_HINT = "over soft cap; consider memory_consolidate"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_01_empty_file_reads_return_empty_string(metis_store: MemoryStore) -> None:
    """Empty file reads return "", not raise."""
    for file in [*MemoryFile, "MEMORY.md", "USER.md"]:
        assert metis_store.read(file) == ""
        assert metis_store.size_bytes(file) == 0
        assert metis_store.exists(file) is False


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_02_metis_folder_is_created_lazily_on_first_write(
    flavour: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """.metis/ is created lazily on first write."""
    log_in_as(monkeypatch, "metis-lazy")
    workspace = tmp_path / "project"
    workspace.mkdir()
    with metis_workspace_server(workspace) as server:
        store = make_store(flavour, workspace, base_url=server.url)
        try:
            # Reads of every kind create nothing.
            assert store.read(MemoryFile.MEMORY) == store.read(MemoryFile.USER) == ""
            assert not store.exists(MemoryFile.MEMORY)
            assert store.assemble_system_prompt(BASE) == BASE
            assert not (workspace / ".metis").exists()

            store.add_entry(MemoryFile.MEMORY, "Tests run with `make check`.")
            assert (workspace / ".metis").is_dir()
            memory_md = workspace / ".metis" / "MEMORY.md"
            assert memory_md.read_text(encoding="utf-8") == "Tests run with `make check`.\n"
        finally:
            store.close()


def test_03_add_entry_appends_with_newline_discipline(metis_store: MemoryStore) -> None:
    """add_entry appends with newline discipline — joining to non-newline-terminated content
    adds the newline."""
    # The service's add: the entry trimmed, a blank line before it, one newline after.
    metis_store.add_entry(MemoryFile.MEMORY, "  first  ")
    assert metis_store.read(MemoryFile.MEMORY) == "first\n"
    metis_store.add_entry(MemoryFile.MEMORY, "\nsecond\n\n")
    assert metis_store.read(MemoryFile.MEMORY) == "first\n\nsecond\n"
    # Content that does not end in a newline (an edit can leave it so) gets one before the
    # entry, and trailing whitespace gives way to exactly one blank line.
    metis_store.replace(MemoryFile.MEMORY, "second\n", "second  ")
    assert metis_store.read(MemoryFile.MEMORY) == "first\n\nsecond  "
    metis_store.add_entry(MemoryFile.MEMORY, "third")
    assert metis_store.read(MemoryFile.MEMORY) == "first\n\nsecond\n\nthird\n"
    # USER.md the same, apart from MEMORY.md.
    metis_store.add_entry("USER.md", "Name: Grace.")
    assert metis_store.read(MemoryFile.USER) == "Name: Grace.\n"
    assert metis_store.read(MemoryFile.MEMORY) == "first\n\nsecond\n\nthird\n"


def test_04_replace_requires_a_unique_old_text(metis_store: MemoryStore) -> None:
    """replace requires unique old — zero or many matches raise."""
    metis_store.consolidate(MemoryFile.USER, "alpha beta alpha\naaa")
    for old, reason in [
        ("alpha", "ambiguous-match"),
        ("aa", "ambiguous-match"),  # twice in "aaa": overlapping occurrences count
        ("gamma", "no-match"),
    ]:
        with pytest.raises(MemoryReplaceError) as refused:
            metis_store.replace(MemoryFile.USER, old, "delta")
        assert refused.value.reason == reason
        assert refused.value.code == reason  # the service's code, from its problem document
        assert isinstance(refused.value, ValueError)  # as Metis's own store raises
        assert "USER.md" in str(refused.value)
        assert metis_store.read(MemoryFile.USER) == "alpha beta alpha\naaa\n"

    result = metis_store.replace(MemoryFile.USER, "beta", "delta")
    assert metis_store.read(MemoryFile.USER) == "alpha delta alpha\naaa\n"
    assert result.after_size_bytes == result.before_size_bytes + 1


def test_05_soft_cap_overflow_is_allowed(metis_store: MemoryStore) -> None:
    """Soft-cap overflow allowed — WriteResult.over_soft_cap = True; write succeeds."""
    under = metis_store.add_entry(MemoryFile.MEMORY, "x" * 2047)  # 2048 bytes: on the cap
    assert (under.after_size_bytes, under.over_soft_cap) == (2048, False)

    over = metis_store.add_entry(MemoryFile.MEMORY, "y")
    assert over.over_soft_cap is True
    assert over.over_hard_cap is False
    assert over.after_size_bytes == 2048 + 3 == metis_store.size_bytes(MemoryFile.MEMORY)
    assert metis_store.read(MemoryFile.MEMORY).endswith("x\n\ny\n")

    # USER.md's soft cap is its own: 1536 bytes.
    user = metis_store.add_entry(MemoryFile.USER, "é" * 800)  # 1601 bytes
    assert (user.after_size_bytes, user.over_soft_cap) == (1601, True)


def test_06_hard_cap_overflow_is_rejected(metis_store: MemoryStore) -> None:
    """Hard-cap overflow rejected — MemoryHardCapExceeded raised; file unchanged."""
    metis_store.add_entry(MemoryFile.MEMORY, "x" * 3000)
    before = metis_store.read(MemoryFile.MEMORY)

    with pytest.raises(MemoryHardCapExceeded) as capped:
        metis_store.add_entry(MemoryFile.MEMORY, "y" * 1200)
    assert capped.value.file is MemoryFile.MEMORY
    assert (capped.value.attempted_size, capped.value.hard_cap) == (3000 + 2 + 1200 + 1, 4096)
    assert isinstance(capped.value, RefusedError) and capped.value.code == "hard-cap-exceeded"
    assert isinstance(capped.value, ValueError)
    assert metis_store.read(MemoryFile.MEMORY) == before

    # Every write is capped: a consolidation over the cap too, and USER.md at 3072 bytes.
    with pytest.raises(MemoryHardCapExceeded):
        metis_store.consolidate(MemoryFile.MEMORY, "z" * 4097)
    assert metis_store.read(MemoryFile.MEMORY) == before
    metis_store.consolidate(MemoryFile.USER, "u" * 3070 + "v")  # 3072 bytes with its newline
    with pytest.raises(MemoryHardCapExceeded) as user_capped:
        metis_store.replace(MemoryFile.USER, "v", "vw")
    assert (user_capped.value.attempted_size, user_capped.value.hard_cap) == (3073, 3072)
    assert metis_store.size_bytes(MemoryFile.USER) == 3072


def test_07_hashes_round_trip(metis_store: MemoryStore) -> None:
    """Hashes round-trip — before_hash on write N+1 equals after_hash on write N."""
    results = [
        metis_store.add_entry(MemoryFile.MEMORY, "Kyoto in May."),
        metis_store.add_entry(MemoryFile.MEMORY, "日本語 🎉"),
        metis_store.replace(MemoryFile.MEMORY, "May", "June"),
        metis_store.consolidate(MemoryFile.MEMORY, "Kyoto in June.\n"),
        metis_store.consolidate(MemoryFile.MEMORY, "Kyoto in June."),  # unchanged: same hash
    ]
    assert results[0].before_hash == sha256("")
    for previous, following in pairwise(results):
        assert following.before_hash == previous.after_hash
    assert results[-1].after_hash == results[-1].before_hash
    assert results[-1].after_hash == sha256(metis_store.read(MemoryFile.MEMORY))
    assert results[1].after_size_bytes == len("Kyoto in May.\n\n日本語 🎉\n".encode())


def test_08_consolidate_to_empty_string_works(metis_store: MemoryStore) -> None:
    """memory_consolidate to empty string works (rewriting to clear)."""
    metis_store.add_entry(MemoryFile.MEMORY, "Outdated fact.")
    cleared = metis_store.consolidate(MemoryFile.MEMORY, "")
    assert metis_store.read(MemoryFile.MEMORY) == ""
    assert (cleared.after_hash, cleared.after_size_bytes) == (sha256(""), 0)

    # And through the tool.
    metis_store.add_entry(MemoryFile.USER, "Outdated fact.")
    text = memory_tools(metis_store).call("memory_consolidate", {"file": "USER.md", "content": ""})
    assert text == "Consolidated USER.md (15 → 0 bytes)."
    assert metis_store.read(MemoryFile.USER) == ""


def test_09_assemble_system_prompt_omits_empty_sections(metis_store: MemoryStore) -> None:
    """assemble_system_prompt omits empty sections."""
    assert metis_store.assemble_system_prompt(BASE) == BASE

    metis_store.add_entry(MemoryFile.USER, "Name: Grace.")
    assert metis_store.assemble_system_prompt(BASE) == (
        f"{BASE}\n\n## User context (USER.md)\nName: Grace."
    )

    metis_store.consolidate(MemoryFile.USER, " \n ")
    metis_store.add_entry(MemoryFile.MEMORY, "Tests: `make check`.")
    assert metis_store.assemble_system_prompt(BASE) == (
        f"{BASE}\n\n## Workspace memory (MEMORY.md)\nTests: `make check`."
    )


def test_10_assemble_system_prompt_includes_both_sections(metis_store: MemoryStore) -> None:
    """assemble_system_prompt includes both sections when both files are populated."""
    metis_store.add_entry(MemoryFile.MEMORY, "Tests: `make check`.")
    metis_store.add_entry(MemoryFile.MEMORY, "CI on every push.")
    metis_store.add_entry(MemoryFile.USER, "Name: Grace.")
    assert metis_store.assemble_system_prompt(BASE) == (
        f"{BASE}\n\n"
        "## User context (USER.md)\nName: Grace.\n\n"
        "## Workspace memory (MEMORY.md)\nTests: `make check`.\n\nCI on every push."
    )


def test_11_tools_surface_the_soft_cap_hint(metis_store: MemoryStore) -> None:
    """Tools surface soft-cap hint in their text output."""
    tools = memory_tools(metis_store)
    under = tools.call("memory_add", {"file": "MEMORY.md", "entry": "x" * 2000})
    assert under == "Added to MEMORY.md (0 → 2001 bytes)."

    over = tools.call("memory_add", {"file": "MEMORY.md", "entry": "y" * 98})
    assert over == f"Added to MEMORY.md (2001 → 2101 bytes) — {SOFT_CAP_HINT}."

    replaced = tools.call("memory_replace", {"file": "MEMORY.md", "old": "x\n\ny", "new": "x\n\nz"})
    assert replaced == f"Replaced in MEMORY.md (2101 → 2101 bytes) — {SOFT_CAP_HINT}."
    consolidated = tools.call("memory_consolidate", {"file": "MEMORY.md", "content": "w" * 2048})
    assert consolidated == f"Consolidated MEMORY.md (2101 → 2049 bytes) — {SOFT_CAP_HINT}."


def test_12_tools_translate_hard_cap_to_user_visible_tool_error(metis_store: MemoryStore) -> None:
    """Tools translate MemoryHardCapExceeded to ToolExecutionError with is_user_visible: true."""
    tools = memory_tools(metis_store)
    tools.call("memory_add", {"file": "USER.md", "entry": "x" * 3000})
    with pytest.raises(ToolExecutionError) as failed:
        tools.call("memory_add", {"file": "USER.md", "entry": "y" * 100})
    assert failed.value.is_user_visible is True
    assert isinstance(failed.value.__cause__, MemoryHardCapExceeded)
    assert "USER.md" in str(failed.value) and "3072" in str(failed.value)
    assert "memory_consolidate" in str(failed.value)
    assert metis_store.size_bytes(MemoryFile.USER) == 3001
