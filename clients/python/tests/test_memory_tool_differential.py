"""Claude's memory tool, ours against the Anthropic SDK's reference filesystem backend
(``BetaLocalFilesystemMemoryTool``): the same command sequences (scripted and randomised, see
``memory_tool_sequences``) through both, and after every command the same result (or the
same refusal, word for word) and the same files, ours read from the markdown files a person
opens. The differences the README lists are normalised here, each in one place and said why,
and each is shown to hold by a test of its own below."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

from agent_memory import MemoryClient
from agent_memory.claude_memory_tool import AgentMemoryTool
from memory_server import Server, unique
from memory_tool_sequences import FIXTURE, Command, fixture_text, sequences

Outcome = tuple[str, str]


def outcome(tool: BetaLocalFilesystemMemoryTool | AgentMemoryTool, command: Command) -> Outcome:
    try:
        return "ok", str(tool.call(command))
    except ToolError as error:
        return "error", str(error.content if isinstance(error.content, str) else error)


def prune_empty_folders(root: Path) -> None:
    """Difference: a folder exists while it holds a file (a note's folder is its path), where
    the reference backend keeps a directory emptied by a delete or a rename."""
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def normalised(result: Outcome) -> Outcome:
    """Difference: a folder's size is the sum of its files' sizes, where the reference backend
    lists the file system's size of a directory entry (4.0K on most file systems)."""
    kind, text = result
    if kind != "ok" or not text.startswith("Here're the files and directories"):
        return result
    header, root, *items = text.split("\n")

    def folder(line: str) -> str:
        return "<folder>" + line[line.index("\t") :]

    shown = [folder(item) if item.endswith("/") else item for item in items]
    return kind, "\n".join([header, folder(root), *shown])


def reference_files(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def our_files(markdown: Path, personality: str, user: str) -> dict[str, str]:
    """The files a person opens: the pair where it holds text, and the notes (hidden files,
    journals and locks, are not files of the memory)."""
    files = {}
    for name, path in (
        ("MEMORY.md", markdown / "personalities" / personality / "MEMORY.md"),
        ("USER.md", markdown / "users" / user / "USER.md"),
    ):
        if path.exists() and path.read_text().strip():
            files[name] = path.read_text()
    notes = markdown / "personalities" / personality / "notes"
    if notes.exists():
        for path in sorted(notes.rglob("*")):
            relative = path.relative_to(notes)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                files[str(relative)] = path.read_text()
    return dict(sorted(files.items()))


@pytest.fixture
def both(
    server: Server, tmp_path: Path
) -> Iterator[tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str]]:
    personality, user = unique("ada"), unique("grace")
    with MemoryClient(server.url) as client:
        reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))
        yield (
            reference,
            AgentMemoryTool(client, personality, user),
            tmp_path / "memories",
            personality,
            user,
        )
        shutil.rmtree(tmp_path / "memories", ignore_errors=True)


@pytest.mark.parametrize("number", range(len(sequences())))
def test_a_sequence_answers_and_leaves_what_the_reference_does(
    number: int,
    both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str],
    server: Server,
) -> None:
    reference, ours, reference_root, personality, user = both
    markdown = server.root / "root"
    for step, command in enumerate(sequences()[number]):
        expected = normalised(outcome(reference, command))
        prune_empty_folders(reference_root)
        got = normalised(outcome(ours, command))
        where = f"sequence {number}, command {step}: {command}"
        assert got == expected, where
        assert our_files(markdown, personality, user) == reference_files(reference_root), where


def test_the_sequences_are_at_least_two_hundred_commands_with_every_command() -> None:
    commands = [command for sequence in sequences() for command in sequence]
    assert len(commands) >= 200
    assert {command["command"] for command in commands} == {
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    }


def test_the_typescript_test_runs_the_same_sequences() -> None:
    assert FIXTURE.read_text() == fixture_text(), (
        "the TypeScript fixture is stale: run python clients/python/tests/memory_tool_sequences.py"
    )


# ---------------------------------------------------------------------------------------------
# The differences the README lists, each as it holds


def test_a_file_is_never_empty(
    both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str],
) -> None:
    reference, ours, _, _, _ = both
    command = {"command": "create", "path": "/memories/empty.md", "file_text": ""}
    assert outcome(reference, command) == ("ok", "File created successfully at: /memories/empty.md")
    kind, text = outcome(ours, command)
    assert kind == "error" and "its text is empty" in text


@pytest.mark.parametrize(
    "name",
    [".hidden.md", "a:b.md", "CON.md", "a\\b.md", "/".join("d" * 9) + ".md", "zero\u200bwidth.md"],
)
def test_a_path_the_notes_rule_refuses_is_refused(
    name: str, both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str]
) -> None:
    reference, ours, _, _, _ = both
    command = {"command": "create", "path": f"/memories/{name}", "file_text": "x\n"}
    assert outcome(reference, command)[0] == "ok"
    kind, text = outcome(ours, command)
    assert kind == "error" and "could not be written" in text, text


def test_names_differing_only_by_case_are_one_name(
    both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str],
) -> None:
    reference, ours, _, _, _ = both
    for tool in (reference, ours):
        assert (
            outcome(tool, {"command": "create", "path": "/memories/Kyoto.md", "file_text": "x\n"})[
                0
            ]
            == "ok"
        )
    command = {"command": "create", "path": "/memories/kyoto.md", "file_text": "y\n"}
    assert outcome(reference, command)[0] == "ok"
    kind, text = outcome(ours, command)
    assert kind == "error" and "Kyoto.md" in text, text


def test_a_path_that_only_starts_like_memories_is_outside(
    both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str],
) -> None:
    reference, ours, _, _, _ = both
    command = {"command": "create", "path": "/memoriesX/a.md", "file_text": "x\n"}
    assert outcome(reference, command)[0] == "ok"
    assert outcome(ours, command) == (
        "error",
        "Path must start with /memories, got: /memoriesX/a.md",
    )


def test_text_is_kept_trimmed_with_one_final_newline(
    both: tuple[BetaLocalFilesystemMemoryTool, AgentMemoryTool, Path, str, str], server: Server
) -> None:
    reference, ours, reference_root, personality, user = both
    command = {"command": "create", "path": "/memories/a.md", "file_text": "  spaced\n\n\n"}
    for tool in (reference, ours):
        assert outcome(tool, command)[0] == "ok"
    assert reference_files(reference_root)["a.md"] == "  spaced\n\n\n"
    assert our_files(server.root / "root", personality, user)["a.md"] == "spaced\n"
