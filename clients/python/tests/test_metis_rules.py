"""The Metis drop-in's pure parts, no server: the system prompt's composition, whose documents
a workspace's are (the rules the markdown provider's ``layout = "metis"`` shares; the
workspace tests check the two agree), the tools' definitions, and the static caps."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from agent_memory import RefusedError
from agent_memory.metis import (
    MEMORY_TOOLS,
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryStore,
    compose_system_prompt,
    login_user,
    workspace_personality,
)

USER_HEADING = "## User context (USER.md)"
MEMORY_HEADING = "## Workspace memory (MEMORY.md)"


@pytest.mark.parametrize(
    ("base", "user_md", "memory_md", "prompt"),
    [
        ("Base.", "", "", "Base."),
        ("Base.", " \n\t", "\n", "Base."),
        ("Base.\n\n", "", "", "Base."),  # Metis right-strips the base
        ("Base.", "Name: Grace.\n", "", f"Base.\n\n{USER_HEADING}\nName: Grace."),
        ("Base.", "", "Tests: make.\n", f"Base.\n\n{MEMORY_HEADING}\nTests: make."),
        (
            "Base.\n",
            "\n  Name: Grace.\n\n",
            "One.\n\nTwo.\n",
            f"Base.\n\n{USER_HEADING}\nName: Grace.\n\n{MEMORY_HEADING}\nOne.\n\nTwo.",
        ),
        ("", "Name: Grace.", "", f"{USER_HEADING}\nName: Grace."),
        ("", "", "", ""),
    ],
)
def test_the_system_prompt_is_composed_as_metis_composes_it(
    base: str, user_md: str, memory_md: str, prompt: str
) -> None:
    assert compose_system_prompt(base, user_md, memory_md) == prompt


@pytest.mark.parametrize(
    ("path", "personality"),
    [
        ("/srv/agents/My Project (2)", "My-Project--2--1f478d20"),
        ("/srv/ünï", "-n--e0f290ee"),
        ("/", "workspace-8a5edab2"),
        ("/srv/agents/My Project (2)/../My Project (2)/.", "My-Project--2--1f478d20"),
        ("/srv/" + "a" * 60, "a" * 48 + "-27ceb997"),
    ],
)
def test_a_workspaces_personality_is_its_name_and_a_digest_of_its_path(
    path: str, personality: str
) -> None:
    assert workspace_personality(path) == personality


def test_a_workspace_is_known_by_its_resolved_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (tmp_path / "link").symlink_to(workspace)
    monkeypatch.chdir(workspace)
    expected = workspace_personality(workspace)
    assert workspace_personality(tmp_path / "link") == expected
    assert workspace_personality(".") == expected
    assert expected.startswith("project-") and len(expected) == len("project-") + 8

    monkeypatch.setenv("HOME", str(tmp_path))
    store = MemoryStore("~/link", base_url="http://127.0.0.1:9", user="grace")
    assert store.workspace_path == str(workspace)
    assert store.personality == expected
    assert (store.user, MemoryStore("~", user="grace").personality) == (
        "grace",
        workspace_personality(tmp_path),
    )


@pytest.mark.parametrize(
    ("login", "user"),
    [("grace", "grace"), ("Grace Hopper.", "Grace-Hopper-"), ("ü" * 70, "-" * 64)],
)
def test_the_default_user_is_the_login_name_as_an_id(
    login: str, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGNAME", login)
    assert login_user() == user
    assert MemoryStore("/srv/x").user == user


def test_no_login_name_asks_for_user(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_login() -> str:
        raise OSError("No username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_login)
    with pytest.raises(ValueError, match="user="):
        login_user()
    with pytest.raises(ValueError, match="user="):
        MemoryStore("/srv/x")
    assert MemoryStore("/srv/x", user="grace").user == "grace"  # asked only when not given
    monkeypatch.setattr(getpass, "getuser", lambda: "")
    with pytest.raises(ValueError, match="user="):
        login_user()


# The input schemas of the Metis memory store specification, section 6, verbatim.
SPECIFIED_SCHEMAS = {
    "memory_add": """{
  "type": "object",
  "properties": {
    "file":  {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
    "entry": {"type": "string", "minLength": 1}
  },
  "required": ["file", "entry"],
  "additionalProperties": false
}""",
    "memory_replace": """{
  "type": "object",
  "properties": {
    "file": {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
    "old":  {"type": "string"},
    "new":  {"type": "string"}
  },
  "required": ["file", "old", "new"],
  "additionalProperties": false
}""",
    "memory_consolidate": """{
  "type": "object",
  "properties": {
    "file":    {"type": "string", "enum": ["MEMORY.md", "USER.md"]},
    "content": {"type": "string"}
  },
  "required": ["file", "content"],
  "additionalProperties": false
}""",
}


def test_the_tools_are_the_specifications() -> None:
    assert [tool.name for tool in MEMORY_TOOLS] == list(SPECIFIED_SCHEMAS)
    for tool in MEMORY_TOOLS:
        assert tool.input_schema == json.loads(SPECIFIED_SCHEMAS[tool.name]), tool.name
        assert (tool.side_effects, tool.requires_workspace) == ("write", True)
        assert "MEMORY.md" in tool.description and "USER.md" in tool.description


def test_the_static_caps_are_metis() -> None:
    assert [(MemoryStore.soft_cap(f), MemoryStore.hard_cap(f)) for f in MemoryFile] == [
        (2048, 4096),
        (1536, 3072),
    ]
    assert MemoryStore.soft_cap("USER.md") == 1536  # type: ignore[arg-type]
    store = MemoryStore("/srv/x", user="grace")
    assert (store.caps_of("MEMORY.md").soft, store.caps_of(MemoryFile.USER).hard) == (2048, 3072)


def test_the_hard_cap_error_is_metis_own_and_a_refusal() -> None:
    # Metis raises it as MemoryHardCapExceeded(file, attempted_size, hard_cap), a ValueError.
    error = MemoryHardCapExceeded(MemoryFile.MEMORY, 4200, 4096)
    assert isinstance(error, ValueError) and isinstance(error, RefusedError)
    assert (error.file, error.attempted_size, error.hard_cap) == (MemoryFile.MEMORY, 4200, 4096)
    assert str(error).startswith("MEMORY.md write refused: it would be 4200 bytes, over its")
    unknown = MemoryHardCapExceeded(MemoryFile.USER, None, 3072)
    assert "USER.md write refused: it would go over its hard cap of 3072 bytes" in str(unknown)
