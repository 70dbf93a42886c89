"""The README's code runs as written: every fenced block is either run or marked with why not
(an info string like ``sh no-run: <reason>``). Each ``python`` block runs in a process of its
own against a fresh ``memory serve`` (a fresh root on loopback; the README's
``http://127.0.0.1:8700`` becomes the server's URL), with the Anthropic SDK pointed at a fake
Messages API on loopback (``ANTHROPIC_BASE_URL``); then the test checks what the block did to
the server. Every ``python`` block also passes ``mypy --strict``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mypy.api
import pytest

from agent_memory import MemoryClient, NotFoundError, personality_memory, user_profile
from agent_memory.metis import workspace_personality
from fake_messages_api import FakeMessagesApi, fake_messages_api
from memory_server import memory_serve

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE_URL = "http://127.0.0.1:8700"
CONFIG = 'default_provider = "files"\n\n[providers.files]\nkind = "markdown"\nroot = "root"\n'

# What the fake model does in the memory tool examples, and so what must land on the server.
TOOL_INPUT = {"command": "create", "path": "/memories/USER.md", "file_text": "Off to Kyoto in May."}
FINAL_TEXT = "Noted: Kyoto in May."


@dataclass(frozen=True)
class Block:
    """A fenced block of the README."""

    line: int
    """The line of its opening fence (1-based)."""
    lang: str
    """The info string's first word (``python``, ``sh``, ...)."""
    flags: str
    """The rest of the info string."""
    source: str

    def no_run_reason(self) -> str | None:
        """Why it is not run (``no-run: <reason>`` in its info string), or None."""
        marked = re.search(r"(?:^|\s)no-run(?::\s*(.*))?$", self.flags)
        return None if marked is None else (marked.group(1) or "").strip()


def fenced_blocks(markdown: str) -> list[Block]:
    """Every fenced block of a markdown text, in order."""
    blocks = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(\S*)\s*(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and not re.match(r"^```\s*$", lines[i]):
            i += 1
        assert i < len(lines), f"the fence opened on line {start + 1} is never closed"
        source = "\n".join(lines[start + 1 : i]) + "\n"
        blocks.append(Block(start + 1, opening.group(1), opening.group(2), source))
        i += 1
    return blocks


BLOCKS = fenced_blocks(README.read_text())
RUN = [block for block in BLOCKS if block.no_run_reason() is None]


@dataclass(frozen=True)
class Outcome:
    """What a run left behind, for a block's check."""

    stdout: str
    memory: MemoryClient
    api: FakeMessagesApi
    workdir: Path
    """Where the block ran."""


def _text(memory: MemoryClient, path: str) -> str:
    return memory.documents.get(path).text


def _latest(memory: MemoryClient, path: str) -> tuple[str | None, str, str | None]:
    """The newest revision's idempotency key, surface and session."""
    [revision] = memory.history.list(path, limit=1).revisions
    return revision.idempotency_key, revision.surface, revision.session


def _turn_cycle(run: Outcome) -> None:
    assert run.stdout.startswith("None\n")  # nothing to put in the prompt yet
    assert _text(run.memory, user_profile("grace")) == "Name: Grace.\n"
    # The remove guarded by the stale versions was refused, not applied.
    memory = _text(run.memory, personality_memory("ada"))
    assert memory == "Planning a trip to Kyoto in May.\n"
    assert "changed since:" in run.stdout


def _everything_else(run: Outcome) -> None:
    # Purged: the document and its history are gone, a tombstone in their place.
    assert _text(run.memory, user_profile("grace")) == ""
    [tombstone] = run.memory.history.list(user_profile("grace")).revisions
    assert tombstone.tombstone
    assert _text(run.memory, personality_memory("ada")) == "Written again.\n"
    with pytest.raises(NotFoundError):
        run.memory.identities.resolve("telegram", "12345")  # linked, then unlinked
    assert "['telegram:12345']" in run.stdout
    assert run.stdout.endswith("True\n")


def _asyncio(run: Outcome) -> None:
    assert _text(run.memory, user_profile("grace")) == "Likes tea.\n"
    assert run.stdout == "grace\n"


def _errors(run: Outcome) -> None:
    assert run.stdout.startswith("nothing to edit: ")
    assert _text(run.memory, personality_memory("ada")) == ""


def _tool_runner(run: Outcome) -> None:
    assert _text(run.memory, user_profile("grace")) == TOOL_INPUT["file_text"] + "\n"
    key, surface, session = _latest(run.memory, user_profile("grace"))
    assert (surface, session) == ("tool", "conversation-42")
    assert key is not None  # the runner gives no tool_use id: a fresh key
    _one_tool_round(run)


def _own_loop(run: Outcome) -> None:
    assert _text(run.memory, user_profile("grace")) == TOOL_INPUT["file_text"] + "\n"
    key, surface, session = _latest(run.memory, user_profile("grace"))
    assert (key, surface, session) == (
        f"memory-tool:{run.api.tool_use_ids[0]}",
        "tool",
        "conversation-42",
    )
    _one_tool_round(run)


def _one_tool_round(run: Outcome) -> None:
    """The model asked once, the tool's result went back (not an error), the turn ended."""
    assert len(run.api.requests) == 2
    [result] = run.api.tool_results()
    assert result["tool_use_id"] == run.api.tool_use_ids[0]
    assert not result.get("is_error"), result
    assert FINAL_TEXT in run.stdout


def _metis(run: Outcome) -> None:
    workspace_memory = personality_memory(workspace_personality(run.workdir))
    assert _text(run.memory, workspace_memory) == "Tests run with `make test`.\n"
    assert _text(run.memory, user_profile("grace")) == "Prefers short answers.\n"
    assert run.stdout == (
        "23 False\n"
        "You are a coding agent.\n\n"
        "## User context (USER.md)\nPrefers short answers.\n\n"
        "## Workspace memory (MEMORY.md)\nTests run with `make check`.\n"
        "Replaced in MEMORY.md (29 → 28 bytes).\n"
    )


# One per block that runs, in README order, each found by a text only that block holds.
EXPECTATIONS: list[tuple[str, Callable[[Outcome], None]]] = [
    ("# Before the turn: what the agent puts at the top of its prompt", _turn_cycle),
    ("# Documents by layout path", _everything_else),
    ("async with AsyncMemoryClient(", _asyncio),
    ("except RefusedError as error:", _errors),
    (".tool_runner(", _tool_runner),
    ("tool.run(block)", _own_loop),
    ("MemoryTools(memory)", _metis),
]


def test_every_block_runs_or_says_why_not() -> None:
    unmarked = [
        f"line {block.line}: ```{block.lang} {block.flags}"
        for block in BLOCKS
        if (reason := block.no_run_reason()) == "" or (reason is None and block.lang != "python")
    ]
    assert unmarked == [], 'a block the tests cannot run needs "no-run: <why>" in its info string'
    assert len(RUN) >= 7


def test_each_block_to_run_has_its_check_in_order() -> None:
    markers = [marker for marker, _ in EXPECTATIONS]
    assert len(RUN) == len(markers), [block.line for block in RUN]
    for block, marker in zip(RUN, markers, strict=True):
        assert marker in block.source, f"the block on line {block.line} is not {marker!r}'s"


def _no_check(run: Outcome) -> None:
    pytest.fail("no check for this block in EXPECTATIONS")


@pytest.mark.parametrize(
    ("block", "check"),
    [
        (block, EXPECTATIONS[index][1] if index < len(EXPECTATIONS) else _no_check)
        for index, block in enumerate(RUN)
    ],
    ids=[f"line-{block.line}" for block in RUN],
)
def test_the_block_runs_and_does_what_it_says(
    block: Block, check: Callable[[Outcome], None], tmp_path: Path
) -> None:
    script = tmp_path / f"readme_line_{block.line}.py"
    with (
        memory_serve(CONFIG) as server,
        fake_messages_api(TOOL_INPUT, FINAL_TEXT) as api,
        MemoryClient(server.url) as memory,
    ):
        assert EXAMPLE_URL in block.source, "the block talks to no server the test can swap in"
        script.write_text(block.source.replace(EXAMPLE_URL, server.url))
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-the-readme-test",
        }
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        # The SDK's warning for a retired model (hidden by default) ends the run: a README
        # naming one is not as written.
        retired = "error:The model:DeprecationWarning"
        run = subprocess.run(
            [sys.executable, "-W", retired, str(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, (
            f"the block on line {block.line} exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
        )
        check(Outcome(stdout=run.stdout, memory=memory, api=api, workdir=tmp_path))


def test_the_python_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for block in RUN:
        file = tmp_path / f"readme_line_{block.line}.py"
        file.write_text(block.source)
        files.append(str(file))
    stdout, stderr, status = mypy.api.run(["--strict", "--python-version", "3.11", *files])
    assert status == 0, stdout + stderr
