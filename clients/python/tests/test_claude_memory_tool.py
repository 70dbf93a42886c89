"""The Claude memory tool backend against a real ``memory serve``, driven through the Anthropic
SDK's own types: its command models, ``call`` with the tool's JSON input (what its runner
does), ``tool_use`` blocks, and its tool runner itself over a scripted transport (no network
call to Anthropic)."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.lib.tools import BetaFunctionToolResultType, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolResultBlockParam,
    BetaToolUseBlock,
)

from agent_memory import (
    Add,
    AsyncMemoryClient,
    ConnectionFailedError,
    Edit,
    ForbiddenError,
    IfMatch,
    MemoryClient,
    RefusedError,
    UnauthorizedError,
    personality_memory,
    personality_note,
    personality_notes,
    user_profile,
)
from agent_memory._memory_tool import _File, _Write
from agent_memory.claude_memory_tool import (
    AgentMemoryTool,
    AsyncAgentMemoryTool,
    idempotency_key_for_tool_use,
)
from conftest import CAPPED_HARD, KeyedServer
from dropping_proxy import DroppingProxy
from memory_server import Server, unique
from scripted_model import ScriptedModel, assistant_message


class Driver:
    """One backend, blocking or asyncio, behind blocking calls."""

    def __init__(self, flavour: str, url: str, personality: str, user: str, **kwargs: Any):
        self.flavour = flavour
        self.personality, self.user = personality, user
        self._runner = asyncio.Runner()
        if flavour == "sync":
            self._client: Any = MemoryClient(url, **kwargs)
            self.tool: Any = AgentMemoryTool(self._client, personality, user, session="conv-1")
        else:

            async def make() -> tuple[AsyncMemoryClient, AsyncAgentMemoryTool]:
                client = AsyncMemoryClient(url, **kwargs)
                return client, AsyncAgentMemoryTool(client, personality, user, session="conv-1")

            self._client, self.tool = self._runner.run(make())

    def _blocking(self, result: Any) -> Any:
        return self._runner.run(result) if self.flavour == "async" else result

    def call(self, tool_input: object) -> str:
        """As the SDK's tool runner calls a tool: with the model's JSON input."""
        result: BetaFunctionToolResultType = self._blocking(self.tool.call(tool_input))
        assert isinstance(result, str)
        return result

    def execute(self, command: BetaMemoryTool20250818Command) -> str:
        """With the SDK's command model."""
        result: BetaFunctionToolResultType = self._blocking(self.tool.execute(command))
        assert isinstance(result, str)
        return result

    def run(self, block: BetaToolUseBlock) -> BetaToolResultBlockParam:
        """With a ``tool_use`` block, keyed on its id."""
        result: BetaToolResultBlockParam = self._blocking(self.tool.run(block))
        return result

    def close(self) -> None:
        if self.flavour == "sync":
            self._client.close()
        else:
            self._runner.run(self._client.aclose())
        self._runner.close()


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


@pytest.fixture
def driver(flavour: str, server: Server) -> Iterator[Driver]:
    """A backend for a fresh conversation."""
    backend = Driver(flavour, server.url, unique("ada"), unique("grace"))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def memory(server: Server) -> Iterator[MemoryClient]:
    """Another writer, and a way to look at what the tool wrote."""
    with MemoryClient(server.url) as client:
        yield client


def tool_error(action: Callable[[], object]) -> str:
    with pytest.raises(ToolError) as caught:
        action()
    content = caught.value.content
    assert isinstance(content, str)
    return content


ALREADY = (
    "This tool call was already carried out: its change to {file} landed before, and was not "
    "made twice. View the file to see it."
)


def use(tool_input: dict[str, object], tool_use_id: str = "toolu_01") -> BetaToolUseBlock:
    return BetaToolUseBlock(id=tool_use_id, input=tool_input, name="memory", type="tool_use")


def test_the_tool_definition_is_the_sdks_memory_tool(driver: Driver) -> None:
    assert driver.tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert driver.tool.name == "memory"


def test_view_lists_files_and_folders_with_their_sizes(
    driver: Driver, memory: MemoryClient
) -> None:
    memory.sync(
        driver.personality, driver.user, [{"action": "add", "store": "user", "content": "Grace."}]
    )
    memory.notes.create(personality_note(driver.personality, "trips/kyoto.md"), "Temples.")
    listing = driver.execute(BetaMemoryTool20250818ViewCommand(command="view", path="/memories"))
    # MEMORY.md is empty, so it is not there; a folder's size is the sum of its files'.
    assert listing == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n16B\t/memories\n7B\t/memories/USER.md\n9B\t/memories/trips/\n"
        "9B\t/memories/trips/kyoto.md"
    )
    # Each path as given, as the SDK's reference backend shows it.
    for same in ["/memories/", "/memories/.", "/memories/trips/.."]:
        assert driver.call({"command": "view", "path": same}) == listing.replace("/memories", same)
    folder = driver.call({"command": "view", "path": "/memories/trips"})
    assert folder.endswith("9B\t/memories/trips\n9B\t/memories/trips/kyoto.md")


def test_view_shows_numbered_lines_and_honours_view_range(
    driver: Driver, memory: MemoryClient
) -> None:
    memory.sync(
        driver.personality,
        driver.user,
        [{"action": "replace", "store": "memory", "content": "one\ntwo\nthree\nfour"}],
    )
    # Split and numbered as the SDK's reference backend does: the newline the memory ends
    # its text with leaves an empty last line.
    whole = driver.call({"command": "view", "path": "/memories/MEMORY.md"})
    assert whole == (
        "Here's the content of /memories/MEMORY.md with line numbers:\n"
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\t"
    )
    part = driver.call({"command": "view", "path": "/memories/MEMORY.md", "view_range": [2, 3]})
    assert part == (
        "Here's the content of /memories/MEMORY.md with line numbers:\n     2\ttwo\n     3\tthree"
    )
    header = "Here's the content of /memories/MEMORY.md with line numbers:\n"

    def view(view_range: object) -> str:
        return driver.call(
            {"command": "view", "path": "/memories/MEMORY.md", "view_range": view_range}
        )

    # view_range as the SDK's reference backend reads it: -1 is the end, a start below 1 is
    # 1, a range past the end shows what it covers, and anything but a pair is ignored.
    assert view([3, -1]) == header + "     3\tthree\n     4\tfour\n     5\t"
    assert view([0, 2]) == header + "     1\tone\n     2\ttwo"
    assert view([4, 9]) == header + "     4\tfour\n     5\t"
    assert view([3, 1]) == header
    assert view([9, -1]) == header
    assert view([1]) == whole
    for bad in (["one", "two"], "1-2"):
        assert "a list of two integers" in tool_error(partial(view, bad))

    # A file exists while it holds text: the empty USER.md is not there.
    empty = tool_error(lambda: driver.call({"command": "view", "path": "/memories/USER.md"}))
    assert empty == "The path /memories/USER.md does not exist. Please provide a valid path."


def test_create_writes_the_whole_file_as_a_tool_revision(
    driver: Driver, memory: MemoryClient
) -> None:
    created = driver.execute(
        BetaMemoryTool20250818CreateCommand(
            command="create", path="/memories/USER.md", file_text="Name: Grace.\nLikes tea."
        )
    )
    assert created == "File created successfully at: /memories/USER.md"
    path = user_profile(driver.user)
    assert memory.documents.get(path).text == "Name: Grace.\nLikes tea.\n"

    again = tool_error(
        lambda: driver.call(
            {"command": "create", "path": "/memories/USER.md", "file_text": "Name: G."}
        )
    )
    assert again == "File /memories/USER.md already exists"
    assert memory.documents.get(path).text == "Name: Grace.\nLikes tea.\n"
    # Any other path is a note beside the personality's MEMORY.md.
    note = driver.call(
        {"command": "create", "path": "/memories/topics/tea.md", "file_text": "# Tea\nGreen."}
    )
    assert note == "File created successfully at: /memories/topics/tea.md"
    tea = memory.notes.get(personality_note(driver.personality, "topics/tea.md"))
    assert tea.text == "# Tea\nGreen.\n"
    noted = memory.history.list(tea.path).revisions[0]
    assert noted.surface == "tool" and noted.session == "conv-1"

    newest = memory.history.list(path).revisions[0]
    assert newest.surface == "tool" and newest.session == "conv-1"
    assert newest.personality == driver.personality
    assert newest.idempotency_key is not None


def test_str_replace_edits_one_occurrence_and_explains_misses(
    driver: Driver, memory: MemoryClient
) -> None:
    memory.sync(
        driver.personality,
        driver.user,
        [{"action": "replace", "store": "memory", "content": "a\nb\ntea time\nc\ntea again"}],
    )
    missing = tool_error(
        lambda: driver.execute(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace", path="/memories/MEMORY.md", old_str="coffee", new_str="x"
            )
        )
    )
    assert missing == (
        "No replacement was performed, old_str `coffee` did not appear verbatim in "
        "/memories/MEMORY.md."
    )
    twice = tool_error(
        lambda: driver.call(
            {
                "command": "str_replace",
                "path": "/memories/MEMORY.md",
                "old_str": "tea",
                "new_str": "x",
            }
        )
    )
    assert twice == (
        "No replacement was performed. Multiple occurrences of old_str `tea` in lines: 3, 5. "
        "Please ensure it is unique"
    )
    empty = tool_error(
        lambda: driver.call(
            {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "", "new_str": "x"}
        )
    )
    assert "must not be empty" in empty

    edited = driver.call(
        {
            "command": "str_replace",
            "path": "/memories/MEMORY.md",
            "old_str": "tea time",
            "new_str": "green tea time",
        }
    )
    assert edited == (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     1\ta\n     2\tb\n     3\tgreen tea time\n     4\tc\n     5\ttea again"
    )
    text = memory.documents.get(personality_memory(driver.personality)).text
    assert text == "a\nb\ngreen tea time\nc\ntea again\n"
    # The edit after it is based on the version the first one left, read again as needed.
    driver.call(
        {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "c\n", "new_str": ""}
    )
    assert memory.documents.get(personality_memory(driver.personality)).text == (
        "a\nb\ngreen tea time\ntea again\n"
    )


def test_insert_puts_text_after_a_line(driver: Driver, memory: MemoryClient) -> None:
    memory.sync(
        driver.personality,
        driver.user,
        [{"action": "replace", "store": "user", "content": "one\nthree"}],
    )
    inserted = driver.execute(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path="/memories/USER.md", insert_line=1, insert_text="two\n"
        )
    )
    assert inserted == "The file /memories/USER.md has been edited."
    driver.call(
        {"command": "insert", "path": "/memories/USER.md", "insert_line": 0, "insert_text": "zero"}
    )
    driver.call(
        {"command": "insert", "path": "/memories/USER.md", "insert_line": 4, "insert_text": "four"}
    )
    assert memory.documents.get(user_profile(driver.user)).text == "zero\none\ntwo\nthree\nfour\n"

    out_of_range = tool_error(
        lambda: driver.call(
            {"command": "insert", "path": "/memories/USER.md", "insert_line": 9, "insert_text": "x"}
        )
    )
    assert (
        out_of_range == "Invalid `insert_line` parameter: 9. It should be within the range [0, 5]."
    )
    negative = tool_error(
        lambda: driver.call(
            {
                "command": "insert",
                "path": "/memories/USER.md",
                "insert_line": -1,
                "insert_text": "x",
            }
        )
    )
    assert "[0, 5]" in negative


def test_delete_is_a_revision_that_revert_undoes(driver: Driver, memory: MemoryClient) -> None:
    memory.sync(
        driver.personality,
        driver.user,
        [{"action": "add", "store": "memory", "content": "Keep me."}],
    )
    deleted = driver.execute(
        BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/MEMORY.md")
    )
    assert deleted == "Successfully deleted /memories/MEMORY.md"
    path = personality_memory(driver.personality)
    assert memory.documents.get(path).text == ""
    revisions = memory.history.list(path).revisions
    assert [r.number for r in revisions] == [2, 1] and not revisions[0].tombstone
    memory.history.revert(path, 1)
    assert memory.documents.get(path).text == "Keep me.\n"

    # A note, and a folder's notes in one call: each a revision, restorable.
    for name in ("trips/kyoto.md", "trips/japan/nara.md"):
        driver.call({"command": "create", "path": f"/memories/{name}", "file_text": name})
    assert driver.call({"command": "delete", "path": "/memories/trips"}) == (
        "Successfully deleted /memories/trips"
    )
    assert memory.notes.list(personality_notes(driver.personality)).notes == ()
    kyoto = personality_note(driver.personality, "trips/kyoto.md")
    memory.history.revert(kyoto, 1)
    assert memory.notes.get(kyoto).text == "trips/kyoto.md\n"

    directory = tool_error(lambda: driver.call({"command": "delete", "path": "/memories"}))
    assert directory == "Cannot delete the /memories directory itself"
    missing = tool_error(lambda: driver.call({"command": "delete", "path": "/memories/gone.md"}))
    assert missing == "The path /memories/gone.md does not exist"


def test_rename_moves_files_and_folders(driver: Driver, memory: MemoryClient) -> None:
    memory.sync(
        driver.personality, driver.user, [{"action": "add", "store": "memory", "content": "Mine."}]
    )
    # Out of the pair: the note gets the text, MEMORY.md is emptied, in one call.
    moved = driver.execute(
        BetaMemoryTool20250818RenameCommand(
            command="rename", old_path="/memories/MEMORY.md", new_path="/memories/old/memory.md"
        )
    )
    assert moved == "Successfully renamed /memories/MEMORY.md to /memories/old/memory.md"
    assert memory.documents.get(personality_memory(driver.personality)).text == ""
    note = personality_note(driver.personality, "old/memory.md")
    assert memory.notes.get(note).text == "Mine.\n"
    # A folder: each note moves, its history with it.
    driver.call({"command": "rename", "old_path": "/memories/old", "new_path": "/memories/new"})
    renamed = personality_note(driver.personality, "new/memory.md")
    assert memory.notes.get(renamed).text == "Mine.\n"
    assert [r.number for r in memory.history.list(renamed).revisions] == [1]
    taken = tool_error(
        lambda: driver.call(
            {"command": "rename", "old_path": "/memories/new", "new_path": "/memories/new"}
        )
    )
    assert taken == "The destination /memories/new already exists"
    root = tool_error(
        lambda: driver.call(
            {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}
        )
    )
    assert root == "Cannot rename the /memories directory itself"


def test_paths_are_checked_in_the_reference_backends_words(driver: Driver) -> None:
    attempts: list[dict[str, object]] = [
        {"command": "view", "path": "/memories/foo"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "/memories/x.md", "insert_line": 0, "insert_text": "x"},
    ]
    for attempt in attempts:
        message = tool_error(partial(driver.call, attempt))
        assert message == f"The path {attempt['path']} does not exist. Please provide a valid path."
    for escaping in ["/memories/../etc/passwd", "/memories/x/../../MEMORY.md"]:
        message = tool_error(partial(driver.call, {"command": "view", "path": escaping}))
        assert message == f"Path {escaping} would escape /memories directory"
    for outside in ["/etc/passwd", "memories/MEMORY.md", "/memoriesX", "//memories/USER.md"]:
        message = tool_error(partial(driver.call, {"command": "view", "path": outside}))
        assert message == f"Path must start with /memories, got: {outside}"
    # A path the notes' rule refuses is named, with the rule.
    hidden = tool_error(
        lambda: driver.call({"command": "create", "path": "/memories/.secret", "file_text": "x"})
    )
    assert hidden.startswith("/memories/.secret could not be written: ")
    assert "invalid note path" in hidden
    # Normalised: a trailing slash, `.` and `..` that stay inside.
    driver.call({"command": "create", "path": "/memories/USER.md", "file_text": "Grace."})
    assert "with line numbers" in driver.call(
        {"command": "view", "path": "/memories/notes/../USER.md"}
    )


def test_bad_input_is_a_tool_error_never_a_crash(driver: Driver) -> None:
    assert "Unknown command 'explode'" in tool_error(lambda: driver.call({"command": "explode"}))
    assert "`path` parameter is required" in tool_error(lambda: driver.call({"command": "view"}))
    assert "`file_text` parameter is required" in tool_error(
        lambda: driver.call({"command": "create", "path": "/memories/USER.md"})
    )
    assert "`insert_line` parameter is required and must be an integer" in tool_error(
        lambda: driver.call(
            {
                "command": "insert",
                "path": "/memories/USER.md",
                "insert_line": "first",
                "insert_text": "x",
            }
        )
    )
    assert "must be an object" in tool_error(lambda: driver.call(["view"]))
    nul = tool_error(
        lambda: driver.call({"command": "create", "path": "/memories/USER.md", "file_text": "a\0b"})
    )
    assert "could not be written" in nul
    assert "Clearing all memory is not offered" in tool_error(
        lambda: driver._blocking(driver.tool.clear_all_memory())
    )


def test_a_write_after_someone_else_wrote_asks_to_view_again(
    driver: Driver, memory: MemoryClient
) -> None:
    memory.sync(
        driver.personality, driver.user, [{"action": "add", "store": "memory", "content": "First."}]
    )
    driver.call({"command": "view", "path": "/memories/MEMORY.md"})
    memory.sync(
        driver.personality,
        driver.user,
        [{"action": "replace", "store": "memory", "content": "Theirs."}],
    )
    changed = tool_error(
        lambda: driver.call(
            {
                "command": "str_replace",
                "path": "/memories/MEMORY.md",
                "old_str": "First.",
                "new_str": "Mine.",
            }
        )
    )
    assert changed.startswith("/memories/MEMORY.md changed since you last viewed it")
    assert "View it again" in changed
    path = personality_memory(driver.personality)
    assert memory.documents.get(path).text == "Theirs.\n"

    # Viewing again gives the model the new text; its next write lands.
    assert "Theirs." in driver.call({"command": "view", "path": "/memories/MEMORY.md"})
    driver.call(
        {
            "command": "insert",
            "path": "/memories/MEMORY.md",
            "insert_line": 1,
            "insert_text": "Mine.",
        }
    )
    assert memory.documents.get(path).text == "Theirs.\nMine.\n"

    # A write the model bases on text that changed since its last write is refused too.
    memory.sync(
        driver.personality, driver.user, [{"action": "add", "store": "memory", "content": "More."}]
    )
    again = tool_error(
        lambda: driver.call(
            {
                "command": "str_replace",
                "path": "/memories/MEMORY.md",
                "old_str": "Mine.",
                "new_str": "M",
            }
        )
    )
    assert "changed since you last viewed it" in again


def test_the_hard_cap_refusal_comes_through(flavour: str, server: Server) -> None:
    capped = Driver(flavour, server.url, "capped", unique("grace"))
    try:
        refused = tool_error(
            lambda: capped.call(
                {
                    "command": "create",
                    "path": "/memories/MEMORY.md",
                    "file_text": "x" * (CAPPED_HARD + 1),
                }
            )
        )
        assert f"over its hard cap of {CAPPED_HARD}" in refused
        assert refused.endswith("(/memories/MEMORY.md)")
    finally:
        capped.close()


def test_a_tool_use_runs_once_whatever_happens_to_its_reply(
    flavour: str, server: Server, memory: MemoryClient
) -> None:
    personality, user = unique("ada"), unique("grace")
    path = personality_memory(personality)
    memory.sync(personality, user, [Add("memory", "Start.")])
    block = use(
        {
            "command": "insert",
            "path": "/memories/MEMORY.md",
            "insert_line": 0,
            "insert_text": "Once.",
        },
        tool_use_id="toolu_once_" + unique("id"),
    )
    address = server.url.removeprefix("http://").split(":")
    with DroppingProxy((address[0], int(address[1])), drop_every=1, max_drops_per_key=1) as proxy:
        # The first write's reply is lost and this client does not resend by itself.
        lossy = Driver(flavour, proxy.url, personality, user, max_retries=0)
        try:
            # A lost reply is the deployment's problem: raised, not told to the model.
            with pytest.raises(ConnectionFailedError):
                lossy.run(block)
            assert proxy.stats.dropped == 1
            # The agent runs the same tool_use again: the server answers with the first outcome.
            result = lossy.run(block)
            assert result == {
                "type": "tool_result",
                "tool_use_id": block.id,
                "content": ALREADY.format(file="/memories/MEMORY.md"),
            }
            # Once done, running it again is answered from the backend, without a request.
            relayed = proxy.stats.relayed
            assert lossy.run(block) == result
            assert proxy.stats.relayed == relayed
        finally:
            lossy.close()

    assert memory.documents.get(path).text == "Once.\nStart.\n"
    revision = memory.history.list(path).revisions[0]
    assert revision.number == 2
    assert revision.idempotency_key == idempotency_key_for_tool_use(block.id)

    # Another backend (a restarted agent) running the block again is told it already ran.
    fresh = Driver(flavour, server.url, personality, user)
    try:
        rerun = fresh.run(block)
        assert rerun == result
    finally:
        fresh.close()
    assert memory.documents.get(path).text == "Once.\nStart.\n"


def test_a_tool_use_run_again_elsewhere_after_the_file_changed_is_already_carried_out(
    flavour: str, server: Server, memory: MemoryClient
) -> None:
    personality, user = unique("ada"), unique("grace")
    path = user_profile(user)
    block = use(
        {"command": "create", "path": "/memories/USER.md", "file_text": "Name: Grace."},
        tool_use_id="toolu_twice_" + unique("id"),
    )
    first = Driver(flavour, server.url, personality, user)
    try:
        assert first.run(block)["content"] == "File created successfully at: /memories/USER.md"
    finally:
        first.close()
    memory.sync(personality, user, [{"action": "add", "store": "user", "content": "Likes tea."}])

    # Another process has no memory of the block: it views the file (now at another version)
    # and sends the write with the block's key, which the server knows for another request.
    second = Driver(flavour, server.url, personality, user)
    try:
        rerun = second.run(block)
    finally:
        second.close()
    assert rerun == {
        "type": "tool_result",
        "tool_use_id": block.id,
        "content": ALREADY.format(file="/memories/USER.md"),
    }
    assert memory.documents.get(path).text == "Name: Grace.\n\nLikes tea.\n"
    assert [r.number for r in memory.history.list(path).revisions] == [2, 1]


def test_a_refusal_the_server_alone_finds_comes_in_the_tools_words(driver: Driver) -> None:
    driver.call({"command": "create", "path": "/memories/MEMORY.md", "file_text": "aaa\nb"})
    # "aa" occurs once in "aaa" as the SDK counts, twice as the server does (overlapping):
    # the server refuses the edit as ambiguous, and the model gets the SDK's text for it.
    refused = tool_error(
        lambda: driver.call(
            {
                "command": "str_replace",
                "path": "/memories/MEMORY.md",
                "old_str": "aa",
                "new_str": "c",
            }
        )
    )
    assert refused == (
        "No replacement was performed. Multiple occurrences of old_str `aa` in lines: 1, 1. "
        "Please ensure it is unique"
    )
    assert driver.call({"command": "view", "path": "/memories/MEMORY.md"}).endswith(
        "     1\taaa\n     2\tb\n     3\t"
    )


def test_the_servers_no_match_comes_in_the_tools_words(flavour: str, server: Server) -> None:
    # The server's no-match cannot be provoked through the tool (its check on the viewed text
    # agrees with the server's), so a real one is handed to the backend's mapping.
    personality, user = unique("ada"), unique("grace")
    with MemoryClient(server.url) as memory:
        memory.sync(personality, user, [Add("memory", "Tea.")])
        with pytest.raises(RefusedError) as caught:
            memory.sync(personality, user, [Edit("memory", "coffee", "water")])
    no_match = caught.value
    assert no_match.code == "no-match"
    backend = Driver(flavour, server.url, personality, user)
    try:
        step = _Write(
            _File("MEMORY.md"), (Edit("memory", "coffee", "water"),), IfMatch(memory="some-version")
        )
        mapped = backend.tool._commands.failure(no_match, step)
    finally:
        backend.close()
    assert mapped.content == (
        "No replacement was performed, old_str `coffee` did not appear verbatim in "
        "/memories/MEMORY.md."
    )


def test_tool_use_keys_fit_the_idempotency_key_grammar() -> None:
    assert idempotency_key_for_tool_use("toolu_01ABC") == "memory-tool:toolu_01ABC"
    for odd in ["x" * 200, "with space", "ünï"]:
        key = idempotency_key_for_tool_use(odd)
        assert re.fullmatch(r"memory-tool:[0-9a-f]{64}", key)


def _script() -> ScriptedModel:
    calls = [
        ("toolu_1", {"command": "view", "path": "/memories"}),
        (
            "toolu_2",
            {"command": "create", "path": "/memories/USER.md", "file_text": "Name: Grace."},
        ),
        ("toolu_3", {"command": "create", "path": "/memories/notes.md", "file_text": "x"}),
    ]
    tool_uses = [
        {"type": "tool_use", "id": tool_id, "name": "memory", "input": tool_input}
        for tool_id, tool_input in calls
    ]
    return ScriptedModel(
        [
            assistant_message(tool_uses, "tool_use"),
            assistant_message([{"type": "text", "text": "Noted."}], "end_turn"),
        ]
    )


def _check_runner_results(
    model: ScriptedModel, memory: MemoryClient, personality: str, user: str
) -> None:
    assert model.requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = {result["tool_use_id"]: result for result in model.tool_results()}
    assert set(results) == {"toolu_1", "toolu_2", "toolu_3"}
    assert "up to 2 levels deep in /memories" in str(results["toolu_1"]["content"])
    assert not results["toolu_1"].get("is_error")
    assert "File created successfully at: /memories/USER.md" in str(results["toolu_2"]["content"])
    assert "File created successfully at: /memories/notes.md" in str(results["toolu_3"]["content"])
    assert memory.documents.get(user_profile(user)).text == "Name: Grace.\n"
    assert memory.notes.get(personality_note(personality, "notes.md")).text == "x\n"


def test_the_sdks_tool_runner_runs_the_backend(server: Server, memory: MemoryClient) -> None:
    model = _script()
    personality, user = unique("ada"), unique("grace")
    anthropic_client = anthropic.Anthropic(
        api_key="test-key", http_client=httpx2.Client(transport=httpx2.MockTransport(model))
    )
    with MemoryClient(server.url) as client:
        tool = AgentMemoryTool(client, personality, user)
        final = anthropic_client.beta.messages.tool_runner(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": "I'm Grace."}],
            tools=[tool],
        ).until_done()
    assert final.content[0].type == "text"
    _check_runner_results(model, memory, personality, user)


def test_the_sdks_async_tool_runner_runs_the_async_backend(
    server: Server, memory: MemoryClient
) -> None:
    model = _script()
    personality, user = unique("ada"), unique("grace")

    async def converse() -> None:
        async def respond(request: httpx2.Request) -> httpx2.Response:
            return model(request)

        anthropic_client = anthropic.AsyncAnthropic(
            api_key="test-key",
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(respond)),
        )
        async with AsyncMemoryClient(server.url) as client:
            tool = AsyncAgentMemoryTool(client, personality, user)
            final = await anthropic_client.beta.messages.tool_runner(
                model="claude-sonnet-5-5",
                max_tokens=1024,
                messages=[{"role": "user", "content": "I'm Grace."}],
                tools=[tool],
            ).until_done()
        assert final.content[0].type == "text"

    asyncio.run(converse())
    _check_runner_results(model, memory, personality, user)


def test_a_str_replace_run_again_is_already_carried_out(
    flavour: str, server: Server, memory: MemoryClient
) -> None:
    personality, user = unique("ada"), unique("grace")
    path = personality_memory(personality)
    memory.sync(personality, user, [{"action": "replace", "store": "memory", "content": "tea"}])
    block = use(
        {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "tea", "new_str": "x"},
        tool_use_id="toolu_edit_" + unique("id"),
    )
    already = {
        "type": "tool_result",
        "tool_use_id": block.id,
        "content": ALREADY.format(file="/memories/MEMORY.md"),
    }
    first = Driver(flavour, server.url, personality, user)
    try:
        assert "has been edited" in str(first.run(block)["content"])
        # Its old_str is gone now: the same call must still not be told it failed.
        assert first.run(block) == already
    finally:
        first.close()
    fresh = Driver(flavour, server.url, personality, user)
    try:
        assert fresh.run(block) == already
        # A new call whose old_str is missing is told so, in the SDK's words.
        missing = fresh.run(
            use(
                {
                    "command": "str_replace",
                    "path": "/memories/MEMORY.md",
                    "old_str": "tea",
                    "new_str": "y",
                },
                tool_use_id="toolu_new_" + unique("id"),
            )
        )
        assert missing.get("is_error") is True
        assert missing["content"] == (
            "No replacement was performed, old_str `tea` did not appear verbatim in "
            "/memories/MEMORY.md."
        )
        ambiguous = fresh.run(
            use(
                {
                    "command": "str_replace",
                    "path": "/memories/MEMORY.md",
                    "old_str": "",
                    "new_str": "y",
                },
                tool_use_id="toolu_empty_" + unique("id"),
            )
        )
        assert ambiguous.get("is_error") is True
    finally:
        fresh.close()
    assert memory.documents.get(path).text == "x\n"
    assert [r.number for r in memory.history.list(path).revisions] == [2, 1]


def test_deployment_failures_are_raised_to_the_developer(
    flavour: str, keyed_server: KeyedServer
) -> None:
    personality, user = unique("ada"), unique("grace")
    view: dict[str, object] = {"command": "view", "path": "/memories"}
    create: dict[str, object] = {
        "command": "create",
        "path": "/memories/MEMORY.md",
        "file_text": "x",
    }
    no_key = Driver(flavour, keyed_server.server.url, personality, user)
    try:
        for tool_input in (view, create):
            with pytest.raises(UnauthorizedError):
                no_key.call(tool_input)
        with pytest.raises(UnauthorizedError):
            no_key.run(use(create, tool_use_id="toolu_unauthorized"))
    finally:
        no_key.close()
    # A read key reads, and its write is forbidden: raised, not told to the model.
    reader = Driver(
        flavour, keyed_server.server.url, personality, user, api_key=keyed_server.keys.reader
    )
    try:
        assert "up to 2 levels deep" in reader.call(view)
        with pytest.raises(ForbiddenError):
            reader.call(create)
    finally:
        reader.close()
    # Nothing listening.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nowhere = Driver(flavour, f"http://127.0.0.1:{port}", personality, user, max_retries=0)
    try:
        with pytest.raises(ConnectionFailedError):
            nowhere.call(view)
        with pytest.raises(ConnectionFailedError):
            nowhere.run(use(view, tool_use_id="toolu_nowhere"))
    finally:
        nowhere.close()


def test_importing_the_tool_without_the_sdk_says_which_extra_to_install() -> None:
    script = (
        "import sys\n"
        "sys.modules['anthropic'] = None\n"
        "try:\n"
        "    import agent_memory.claude_memory_tool\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
        "import agent_memory\n"
        "print('client ok', agent_memory.MemoryClient.__name__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert "ImportError" in run.stdout
    # The SDK by the extra's own range, or the extra from a checkout; never a registry name
    # this package is not published under.
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    [requirement] = pyproject["project"]["optional-dependencies"]["anthropic"]
    assert f"pip install '{requirement.replace(' ', '')}'" in run.stdout
    assert "pip install './clients/python[anthropic]'" in run.stdout
    assert "agent-memory[" not in run.stdout
    assert "client ok MemoryClient" in run.stdout
