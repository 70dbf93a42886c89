"""The README's examples run as written, in order, against a fresh ``memory serve`` (the
memory tool's against the SDK's runner over a scripted model, not Anthropic's API)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import mypy.api
import pytest

from agent_memory import personality_memory, user_profile
from memory_server import memory_serve
from scripted_model import ScriptedModel, assistant_message

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE_URL = "http://127.0.0.1:8700"


def _examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    # The last block is a fragment of the reader's own loop (its `tool`, `block`, `messages`).
    return [block for block in blocks if "tool.run(block)" not in block]


def test_the_readme_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    examples = _examples()
    assert len(examples) == 5
    model = ScriptedModel(
        [
            assistant_message(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_readme",
                        "name": "memory",
                        "input": {
                            "command": "create",
                            "path": "/memories/USER.md",
                            "file_text": "Off to Kyoto in May.",
                        },
                    }
                ],
                "tool_use",
            ),
            assistant_message([{"type": "text", "text": "Noted."}], "end_turn"),
        ]
    )

    real_anthropic = anthropic.Anthropic

    def scripted_anthropic(**kwargs: Any) -> anthropic.Anthropic:
        return real_anthropic(
            api_key="test-key", http_client=httpx2.Client(transport=httpx2.MockTransport(model))
        )

    monkeypatch.setattr(anthropic, "Anthropic", scripted_anthropic)
    config = 'default_provider = "files"\n\n[providers.files]\nkind = "markdown"\nroot = "root"\n'
    with memory_serve(config) as server:
        for example in examples:
            exec(compile(example.replace(EXAMPLE_URL, server.url), str(README), "exec"), {})
        root = server.root / "root"
        assert (root / user_profile("grace")).read_text() == "Off to Kyoto in May.\n"
        assert "Written again." in (root / personality_memory("ada")).read_text()
    assert len(model.requests) == 2


def test_the_readme_examples_pass_mypy_strict(tmp_path: Path) -> None:
    # The last block is a fragment (names from the reader's loop), so every block but it.
    files = []
    for number, example in enumerate(_examples(), start=1):
        file = tmp_path / f"readme_example_{number}.py"
        file.write_text(example)
        files.append(str(file))
    stdout, stderr, status = mypy.api.run(["--strict", "--python-version", "3.11", *files])
    assert status == 0, stdout + stderr
