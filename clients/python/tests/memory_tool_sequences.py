"""The command sequences the differential test of Claude's memory tool runs through the SDK's
reference filesystem backend and ours: scripted ones, and randomised ones drawn from a seeded
generator. The TypeScript test runs the same sequences, from the JSON this module writes
(``python tests/memory_tool_sequences.py`` rewrites it; a test checks it is current).

Texts are markdown as the memory keeps it (lines without white space at their ends, one final
newline), and paths come from pools where no file's path is a folder's, so that every
difference between the two backends is one the README lists (the test of those differences
is apart)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

Command = dict[str, Any]

FIXTURE = (
    Path(__file__).resolve().parents[2] / "typescript" / "test" / "fixtures" / "memory-tool.json"
)
SEEDS = range(8)
COMMANDS_PER_SEQUENCE = 40

FILES = (
    "MEMORY.md",
    "USER.md",
    "a.md",
    "b.md",
    "trips/kyoto.md",
    "trips/osaka.md",
    "trips/japan/nara.md",
    "trips/japan/hokkaido/sapporo.md",
    "people/grace.md",
    "archive/old/notes.md",
)
FOLDERS = ("trips", "trips/japan", "people", "archive", "archive/old", "travel", "later/now")
WORDS = ("kyoto", "temple", "dawn", "grace", "tea", "ramen", "train", "maple", "garden", "river")
BAD_PATHS = (
    "/memories/../outside.md",
    "/memories/trips/../../outside.md",
    "/tmp/memories/a.md",
    "memories/a.md",
    "/",
)


def memories(name: str) -> str:
    return f"/memories/{name}" if name else "/memories"


def text(rng: random.Random) -> str:
    lines = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        for _ in range(rng.randint(1, 5))
    ]
    return "\n".join(lines) + "\n"


def command(rng: random.Random) -> Command:
    kind = rng.choices(
        ("view", "create", "str_replace", "insert", "delete", "rename", "bad"),
        weights=(5, 6, 4, 3, 2, 3, 1),
    )[0]
    file = memories(rng.choice(FILES))
    if kind == "view":
        target = rng.choice((memories(""), memories(rng.choice(FOLDERS)), file, file, file))
        view: Command = {"command": "view", "path": target}
        if rng.random() < 0.2:
            view["view_range"] = rng.choice(([1, 2], [2, -1], [0, 1], [3, 9]))
        return view
    if kind == "create":
        return {"command": "create", "path": file, "file_text": text(rng)}
    if kind == "str_replace":
        old = rng.choice((*WORDS, f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "absent"))
        return {
            "command": "str_replace",
            "path": file,
            "old_str": old,
            "new_str": rng.choice(WORDS),
        }
    if kind == "insert":
        return {
            "command": "insert",
            "path": file,
            "insert_line": rng.randint(0, 6),
            "insert_text": " ".join(rng.sample(WORDS, 2)),
        }
    if kind == "delete":
        return {
            "command": "delete",
            "path": rng.choice((file, file, memories(rng.choice(FOLDERS)))),
        }
    if kind == "rename":
        if rng.random() < 0.3:
            source, target = rng.sample(FOLDERS, 2)
            if target.startswith(source + "/"):
                source, target = target, source
            return {"command": "rename", "old_path": memories(source), "new_path": memories(target)}
        return {"command": "rename", "old_path": file, "new_path": memories(rng.choice(FILES))}
    path = rng.choice(BAD_PATHS)
    return rng.choice(
        (
            {"command": "view", "path": path},
            {"command": "create", "path": path, "file_text": "Outside.\n"},
            {"command": "delete", "path": path},
        )
    )


SCRIPTED: list[Command] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/MEMORY.md", "file_text": "# Memory\ntea at dawn\n"},
    {"command": "create", "path": "/memories/MEMORY.md", "file_text": "again\n"},
    {"command": "create", "path": "/memories/trips/kyoto.md", "file_text": "# Kyoto\ntemple\n"},
    {"command": "create", "path": "/memories/trips/kyoto.md", "file_text": "twice\n"},
    {"command": "create", "path": "/memories/trips", "file_text": "a folder\n"},
    {"command": "create", "path": "/memories/trips/japan/nara.md", "file_text": "deer\n"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/trips"},
    {"command": "view", "path": "/memories/trips/"},
    {"command": "view", "path": "/memories/trips/kyoto.md"},
    {"command": "view", "path": "/memories/./trips/kyoto.md", "view_range": [2, -1]},
    {"command": "view", "path": "/memories/trips/missing.md"},
    {
        "command": "str_replace",
        "path": "/memories/trips/kyoto.md",
        "old_str": "temple",
        "new_str": "shrine",
    },
    {
        "command": "str_replace",
        "path": "/memories/trips/kyoto.md",
        "old_str": "temple",
        "new_str": "x",
    },
    {"command": "str_replace", "path": "/memories/trips", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/nowhere.md", "old_str": "a", "new_str": "b"},
    {
        "command": "insert",
        "path": "/memories/trips/kyoto.md",
        "insert_line": 1,
        "insert_text": "maple garden",
    },
    {
        "command": "insert",
        "path": "/memories/trips/kyoto.md",
        "insert_line": 9,
        "insert_text": "late",
    },
    {"command": "insert", "path": "/memories/trips", "insert_line": 0, "insert_text": "x"},
    {
        "command": "rename",
        "old_path": "/memories/trips/kyoto.md",
        "new_path": "/memories/trips/japan/nara.md",
    },
    {"command": "rename", "old_path": "/memories/trips/kyoto.md", "new_path": "/memories/kyoto.md"},
    {"command": "rename", "old_path": "/memories/trips/kyoto.md", "new_path": "/memories/again.md"},
    {"command": "rename", "old_path": "/memories/trips", "new_path": "/memories/travel/asia"},
    {"command": "view", "path": "/memories"},
    {"command": "rename", "old_path": "/memories/kyoto.md", "new_path": "/memories/USER.md"},
    {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/memory-old.md"},
    {"command": "view", "path": "/memories"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "delete", "path": "/memories/travel"},
    {"command": "delete", "path": "/memories/USER.md"},
    {"command": "delete", "path": "/memories/USER.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/../secrets"},
    {"command": "create", "path": "/etc/passwd", "file_text": "x\n"},
    {"command": "delete", "path": "/memories/a/../../b"},
]


def sequences() -> list[list[Command]]:
    """The scripted sequence, then one randomised sequence per seed."""
    drawn = []
    for seed in SEEDS:
        rng = random.Random(seed)
        drawn.append([command(rng) for _ in range(COMMANDS_PER_SEQUENCE)])
    return [SCRIPTED, *drawn]


def fixture_text() -> str:
    return json.dumps(sequences(), indent=1) + "\n"


if __name__ == "__main__":
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(fixture_text())
    print(f"wrote {FIXTURE}: {sum(map(len, sequences()))} commands", file=sys.stderr)
