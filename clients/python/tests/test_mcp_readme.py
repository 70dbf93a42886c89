"""The repository README's Python snippets for connecting MCP clients to ``/mcp`` run as written:
each block marked ``<!-- mcp-snippet: NAME -->`` (the official MCP SDK, the OpenAI Agents SDK,
LangGraph through langchain-mcp-adapters) is taken from README.md, run in a process of its own
as ``main(url)`` against a real keyed ``memory serve`` with ``MEMORY_API_KEY`` set, and what it
prints and writes is checked. No model is called. Each also passes ``mypy --strict`` without
using anything its package marks deprecated."""

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

from agent_memory import Add, MemoryClient, personality_memory, user_profile
from conftest import McpKeyedServer
from mcp_support import TOOLS
from memory_server import unique

README = Path(__file__).resolve().parents[3] / "README.md"

RUNNER = """
import asyncio, runpy, sys
snippet = runpy.run_path(sys.argv[1], run_name="snippet")
asyncio.run(snippet["main"](sys.argv[2]))
"""
"""Runs a snippet's ``main(url)``."""


def snippet(name: str) -> str:
    """The source of the python block right after ``<!-- mcp-snippet: name -->``."""
    lines = README.read_text().split("\n")
    marker = f"<!-- mcp-snippet: {name} -->"
    [at] = [i for i, line in enumerate(lines) if line.strip() == marker]
    assert lines[at + 1] == "```python", f"no python block after {marker}: {lines[at + 1]!r}"
    end = lines.index("```", at + 2)
    return "\n".join(lines[at + 2 : end]) + "\n"


@dataclass(frozen=True)
class Run:
    """What one snippet printed and left."""

    stdout: str
    user: str
    memory: MemoryClient


def _python_sdk(run: Run) -> None:
    listed, added = run.stdout.splitlines()
    assert listed == repr(TOOLS)
    assert added.startswith("Added to USER.md."), added
    assert run.memory.documents.get(user_profile(run.user)).text == (
        "Name: Ada.\n\nPrefers short answers.\n"
    )


def _openai_agents(run: Run) -> None:
    assert run.stdout == repr(TOOLS) + "\n"


def _langgraph(run: Run) -> None:
    view = run.stdout
    assert view.startswith(
        "## About You\n\nName: Ada.\n\n## Memory\n\nThe build runs with `make check`."
    ), view
    assert "MEMORY.md: " in view and "USER.md: " in view, view


SNIPPETS: list[tuple[str, Callable[[Run], None]]] = [
    ("python-sdk", _python_sdk),
    ("openai-agents", _openai_agents),
    ("langgraph", _langgraph),
]


@pytest.mark.parametrize(("name", "check"), SNIPPETS, ids=[name for name, _ in SNIPPETS])
def test_the_snippet_runs_and_does_what_it_says(
    mcp_keyed_server: McpKeyedServer, tmp_path: Path, name: str, check: Callable[[Run], None]
) -> None:
    server, keys = mcp_keyed_server.server, mcp_keyed_server.keys
    personality, user = unique("coder"), unique("ada")
    script = tmp_path / f"{name}.py"
    script.write_text(snippet(name))
    env = {
        **os.environ,
        "MEMORY_API_KEY": keys.writer,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    # No model is called; nothing could reach one anyway.
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(variable, None)
    with MemoryClient(server.url, api_key=keys.admin) as memory:
        memory.sync(
            personality,
            user,
            [Add("user", "Name: Ada."), Add("memory", "The build runs with `make check`.")],
        )
        before = memory.documents.get(personality_memory(personality)).text
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, str(script), f"{server.url}/mcp/{personality}/{user}"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (
            f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        check(Run(stdout=done.stdout, user=user, memory=memory))
        assert memory.documents.get(personality_memory(personality)).text == before


def test_each_snippet_is_in_the_readme_once_and_talks_to_mcp() -> None:
    markers = re.findall(r"<!-- mcp-snippet: ([\w-]+) -->", README.read_text())
    assert {name for name, _ in SNIPPETS} <= set(markers), markers
    for name, _ in SNIPPETS:
        source = snippet(name)
        assert "async def main(url: str) -> None:" in source, name
        assert "os.environ['MEMORY_API_KEY']" in source or 'os.environ["MEMORY_API_KEY"]' in source


def test_the_snippets_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for name, _ in SNIPPETS:
        file = tmp_path / f"{name.replace('-', '_')}.py"
        file.write_text(snippet(name))
        files.append(str(file))
    stdout, stderr, status = mypy.api.run(
        ["--strict", "--python-version", "3.11", "--enable-error-code", "deprecated", *files]
    )
    assert status == 0, stdout + stderr
