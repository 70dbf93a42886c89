"""The Metis store's surface beyond the specification's twelve tests, on the session's markdown
server, with the blocking and the asyncio store: events, the tools (arguments checked against
their schemas, errors the model sees, registering with a dispatcher), caps (the store's, a
subclass's, the personality's), where the server and key come from, and bad input refused
before anything is sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_memory import AsyncMemoryClient, Caps, MemoryClient, UnauthorizedError
from agent_memory.metis import (
    AsyncMemoryStore,
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryReplaceError,
    MemoryStore,
    MemoryTool,
    ToolExecutionError,
    register_memory_tools,
)
from blocking import make_store, memory_tools
from conftest import CAPPED_HARD, KeyedServer
from memory_server import Server, unique

Event = tuple[str, Mapping[str, object]]


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Each test runs with the blocking store and with the asyncio one."""
    flavour: str = request.param
    return flavour


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def store(
    flavour: str, server: Server, tmp_path: Path, events: list[Event]
) -> Iterator[MemoryStore]:
    """A store of its own on the session's server, recording its events in ``events``."""
    store = make_store(
        flavour,
        tmp_path,
        base_url=server.url,
        user=unique("user"),
        on_event=lambda name, payload: events.append((name, payload)),
    )
    try:
        yield store
    finally:
        store.close()


def test_every_write_that_lands_is_an_event(store: MemoryStore, events: list[Event]) -> None:
    added = store.add_entry(MemoryFile.MEMORY, "Kyoto.")
    assert events == [
        (
            "memory.updated",
            {
                "file": "MEMORY.md",
                "operation": "add",
                "before_hash": added.before_hash,
                "after_hash": added.after_hash,
                "before_size_bytes": 0,
                "after_size_bytes": 7,
            },
        )
    ]
    events.clear()

    # Over the soft cap: the eviction signal follows (nothing is evicted).
    over = store.consolidate(MemoryFile.USER, "u" * 1600)
    assert [name for name, _ in events] == ["memory.updated", "memory.eviction"]
    assert events[0][1]["operation"] == "consolidate"
    assert events[1][1] == {
        "file": "USER.md",
        "trigger": "size_cap_exceeded",
        "entries_evicted": 0,
        "size_before_bytes": 0,
        "size_after_bytes": over.after_size_bytes,
    }
    events.clear()

    # A write that changes nothing is still a write that landed; a refused one is none.
    store.replace(MemoryFile.MEMORY, "Kyoto.", "Kyoto.")
    with pytest.raises(MemoryReplaceError):
        store.replace(MemoryFile.MEMORY, "Osaka", "Kyoto")
    with pytest.raises(MemoryHardCapExceeded):
        store.add_entry(MemoryFile.MEMORY, "x" * 5000)
    with pytest.raises(ValueError):
        store.add_entry(MemoryFile.MEMORY, " ")
    assert [(name, payload["operation"]) for name, payload in events] == [
        ("memory.updated", "replace")
    ]
    assert events[0][1]["before_hash"] == events[0][1]["after_hash"] == added.after_hash


def test_a_failing_subscriber_does_not_fail_the_write(
    flavour: str, server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(name: str, payload: Mapping[str, object]) -> None:
        raise RuntimeError("the bus is down")

    store = make_store(flavour, tmp_path, base_url=server.url, user=unique("u"), on_event=broken)
    try:
        with caplog.at_level(logging.ERROR, logger="agent_memory.metis"):
            result = store.add_entry(MemoryFile.MEMORY, "y" * 2100)
        assert result.over_soft_cap and store.read(MemoryFile.MEMORY) == "y" * 2100 + "\n"
        logged = [record for record in caplog.records if record.name == "agent_memory.metis"]
        assert [record.getMessage() for record in logged] == [
            "on_event('memory.updated') raised; the write it reports landed",
            "on_event('memory.eviction') raised; the write it reports landed",
        ]
        assert all(record.exc_info is not None for record in logged)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("tool", "arguments", "names"),
    [
        ("memory_add", {"file": "MEMORY.md"}, "'entry' is missing"),
        ("memory_add", {"file": "MEMORY.md", "entry": "x", "tags": []}, "no argument 'tags'"),
        ("memory_add", {"file": "MEMORY.md", "entry": 3}, "'entry' must be a string, got int"),
        ("memory_add", {"file": "NOTES.md", "entry": "x"}, "'file' must be 'MEMORY.md' or"),
        ("memory_add", {"file": "MEMORY.md", "entry": ""}, "'entry' must be at least 1"),
        ("memory_replace", {"file": "USER.md", "old": "x"}, "'new' is missing"),
        ("memory_replace", {"file": "USER.md", "old": None, "new": ""}, "'old' must be a string"),
        ("memory_consolidate", {"content": "x"}, "'file' is missing"),
        ("memory_consolidate", ["MEMORY.md", "x"], "arguments must be an object"),
        ("memory_forget", {"file": "MEMORY.md"}, "no memory tool 'memory_forget'"),
    ],
)
def test_tool_arguments_must_fit_the_schema(
    store: MemoryStore, tool: str, arguments: Any, names: str
) -> None:
    with pytest.raises(ToolExecutionError) as unfit:
        memory_tools(store).call(tool, arguments)
    assert names in str(unfit.value)
    assert unfit.value.is_user_visible is True
    assert not store.exists(MemoryFile.MEMORY) and not store.exists(MemoryFile.USER)


def test_what_the_model_can_fix_is_a_user_visible_tool_error(store: MemoryStore) -> None:
    tools = memory_tools(store)
    assert tools.call("memory_add", {"file": "USER.md", "entry": "aa aa"}) == (
        "Added to USER.md (0 → 6 bytes)."
    )
    for arguments, cause in [
        ({"file": "USER.md", "old": "aa", "new": "b"}, MemoryReplaceError),  # twice
        ({"file": "USER.md", "old": "bb", "new": "b"}, MemoryReplaceError),  # not there
        ({"file": "USER.md", "old": "", "new": "b"}, ValueError),  # no text to find
    ]:
        with pytest.raises(ToolExecutionError) as failed:
            tools.call("memory_replace", arguments)
        assert failed.value.is_user_visible is True
        assert isinstance(failed.value.__cause__, cause)
        assert "USER.md" in str(failed.value) or "old_text" in str(failed.value)
    with pytest.raises(ToolExecutionError) as blank:
        tools.call("memory_add", {"file": "USER.md", "entry": " \n\u3000"})  # fits minLength
    assert blank.value.is_user_visible and "blank" in str(blank.value)
    assert store.read(MemoryFile.USER) == "aa aa\n"


class Dispatcher:
    """A dispatcher that registers tools as Metis's does: one ``register`` call each."""

    def __init__(self) -> None:
        self.tools: list[MemoryTool[Any]] = []

    def register(self, tool: MemoryTool[Any]) -> None:
        self.tools.append(tool)


def test_register_memory_tools_gives_the_dispatcher_the_three_tools(
    server: Server, tmp_path: Path
) -> None:
    dispatcher = Dispatcher()
    with MemoryStore(tmp_path, base_url=server.url, user=unique("user")) as store:
        register_memory_tools(dispatcher, store)
        assert [tool.name for tool in dispatcher.tools] == [
            "memory_add",
            "memory_replace",
            "memory_consolidate",
        ]
        assert all(tool.definition.side_effects == "write" for tool in dispatcher.tools)
        add = dispatcher.tools[0]
        assert add.call({"file": "MEMORY.md", "entry": "Kyoto."}) == (
            "Added to MEMORY.md (0 → 7 bytes)."
        )
        assert store.read(MemoryFile.MEMORY) == "Kyoto.\n"

    async def on_an_async_store() -> str:
        async with AsyncMemoryStore(tmp_path, base_url=server.url, user=store.user) as aio:
            register_memory_tools(dispatcher, aio)
            replace = dispatcher.tools[4]
            result: str = await replace.call({"file": "MEMORY.md", "old": "o.", "new": "o!"})
            return result

    assert asyncio.run(on_an_async_store()) == "Replaced in MEMORY.md (7 → 7 bytes)."
    assert len(dispatcher.tools) == 6


def test_caps_are_the_stores_or_a_subclasses_or_the_personalitys_tighter_ones(
    flavour: str, server: Server, tmp_path: Path
) -> None:
    class TinyStore(MemoryStore):
        @staticmethod
        def soft_cap(file: MemoryFile) -> int:
            return 10

        @staticmethod
        def hard_cap(file: MemoryFile) -> int:
            return 40

    with TinyStore(tmp_path, base_url=server.url, user=unique("user")) as tiny:
        assert tiny.caps_of(MemoryFile.USER) == Caps(10, 40)
        assert tiny.add_entry(MemoryFile.USER, "a fact of 21 bytes.!").over_soft_cap
        with pytest.raises(MemoryHardCapExceeded) as tiny_capped:
            tiny.add_entry(MemoryFile.USER, "another fact, too long")
        assert (tiny_capped.value.attempted_size, tiny_capped.value.hard_cap) == (45, 40)

    # caps= wins over the static caps, per file; None limits none.
    caps = {MemoryFile.MEMORY: Caps(soft=None, hard=None), MemoryFile.USER: Caps(5, 8)}
    store = make_store(flavour, tmp_path, base_url=server.url, user=unique("u"), caps=caps)
    try:
        big = store.add_entry(MemoryFile.MEMORY, "m" * 5000)
        assert (big.over_soft_cap, big.over_hard_cap) == (False, False)
        with pytest.raises(MemoryHardCapExceeded) as capped:
            store.add_entry(MemoryFile.USER, "nine byte")
        assert (capped.value.attempted_size, capped.value.hard_cap) == (10, 8)
    finally:
        store.close()

    # A personality configured tighter than the store (conftest's "capped": 64 / 128 bytes):
    # its caps apply, and the error names the cap that refused.
    capped_store = make_store(
        flavour, tmp_path, base_url=server.url, personality="capped", user=unique("u")
    )
    try:
        with pytest.raises(MemoryHardCapExceeded) as configured:
            capped_store.consolidate(MemoryFile.MEMORY, "c" * 200)
        assert (configured.value.attempted_size, configured.value.hard_cap) == (201, CAPPED_HARD)
        assert capped_store.caps_of(MemoryFile.MEMORY).hard == 4096
    finally:
        capped_store.close()


def test_the_server_and_key_come_from_the_environment(
    keyed_server: KeyedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_URL", keyed_server.server.url)
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    with MemoryStore(tmp_path, user="grace") as anonymous, pytest.raises(UnauthorizedError):
        anonymous.read(MemoryFile.USER)

    monkeypatch.setenv("MEMORY_API_KEY", keyed_server.keys.writer)
    with MemoryStore(tmp_path, user=unique("user")) as keyed:
        keyed.add_entry(MemoryFile.USER, "Name: Grace.")
        assert keyed.read(MemoryFile.USER) == "Name: Grace.\n"


def test_a_client_passed_in_stays_open(server: Server, tmp_path: Path) -> None:
    with MemoryClient(server.url) as client:
        with MemoryStore(tmp_path, client=client, user=unique("user")) as store:
            store.add_entry(MemoryFile.MEMORY, "Kyoto.")
        assert client.health().ok  # the store's close left the client open
    with pytest.raises(ValueError, match="client= or base_url="):
        MemoryStore(tmp_path, client=client, base_url=server.url)

    async def closed_async_store() -> None:
        async with AsyncMemoryClient(server.url) as aio:
            async with AsyncMemoryStore(tmp_path, client=aio, user=unique("user")) as store:
                assert await store.read(MemoryFile.MEMORY) == "Kyoto.\n"  # the workspace's
            assert (await aio.health()).ok

    asyncio.run(closed_async_store())


def test_exists_says_whether_the_file_was_ever_written(store: MemoryStore) -> None:
    assert not store.exists(MemoryFile.MEMORY)
    store.add_entry(MemoryFile.MEMORY, "Kyoto.")
    store.consolidate(MemoryFile.MEMORY, "")
    assert store.exists(MemoryFile.MEMORY) and store.read(MemoryFile.MEMORY) == ""
    assert not store.exists(MemoryFile.USER)


@pytest.mark.parametrize("file", ["NOTES.md", "memory.md", "MEMORY", "", 3, None, b"USER.md"])
def test_a_file_other_than_the_two_is_refused_before_sending(store: MemoryStore, file: Any) -> None:
    for call in (
        lambda: store.read(file),
        lambda: store.exists(file),
        lambda: store.size_bytes(file),
        lambda: store.add_entry(file, "x"),
        lambda: store.replace(file, "x", "y"),
        lambda: store.consolidate(file, "x"),
        lambda: store.caps_of(file),
        lambda: MemoryStore.soft_cap(file),
    ):
        with pytest.raises(ValueError, match=r"'MEMORY\.md' or 'USER\.md'"):
            call()


def test_bad_texts_are_refused_before_sending(store: MemoryStore) -> None:
    for blank in ["", " ", "\n\t\u3000\xa0\x85"]:
        with pytest.raises(ValueError, match="entry"):
            store.add_entry(MemoryFile.MEMORY, blank)
    with pytest.raises(ValueError, match="old_text"):
        store.replace(MemoryFile.MEMORY, "", "x")
    not_text: Any = 42
    with pytest.raises(TypeError, match="entry must be a str, got int"):
        store.add_entry(MemoryFile.MEMORY, not_text)
    with pytest.raises(TypeError, match="new_text"):
        store.replace(MemoryFile.MEMORY, "x", not_text)
    with pytest.raises(TypeError, match="new_content"):
        store.consolidate(MemoryFile.MEMORY, not_text)
    assert not store.exists(MemoryFile.MEMORY)
    # U+001C is whitespace to Python's isspace but not to the service: an entry, not blank.
    assert store.add_entry(MemoryFile.MEMORY, "\x1c").after_size_bytes == 2


def test_bad_arguments_to_the_store_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="personality="):
        MemoryStore(tmp_path, personality="../ada", user="grace")
    with pytest.raises(ValueError, match="user="):
        MemoryStore(tmp_path, user="grace hopper")
    with pytest.raises(ValueError, match=r"'MEMORY\.md' or 'USER\.md'"):
        MemoryStore(tmp_path, user="grace", caps={"NOTES.md": Caps(1, 2)})  # type: ignore[dict-item]
