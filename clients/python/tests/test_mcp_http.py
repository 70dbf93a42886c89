"""``memory serve``'s ``/mcp`` through the official MCP SDK's Streamable HTTP client, on every
storage backend: every tool and both resources, what each write left in the documents (read
back through the resources, ``/v1`` and, on markdown, the file), exactly-once tool calls, and
the tool list being the one ``memory mcp`` serves on stdio."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_memory import MemoryClient, personality_memory, user_profile
from backends import BACKENDS, backend_config
from mcp_support import (
    IDEMPOTENCY_META,
    RECALL_TOOLS,
    TOOLS,
    connect,
    ok,
    post,
    read_resource,
    refused,
    reply,
    request_body,
    run,
    snapshot,
    text_of,
    tool_call,
    view_token,
)
from memory_server import Server, memory_bin, memory_serve, model_dir, unique


def _with_recall(config: str, backend: str) -> str:
    """``config`` plus a vector provider over its default one and a personality
    (``recaller``) on it."""
    index = "" if backend == "markdown" else 'index_dir = "recall-index"\n'
    return (
        config
        + f'\n[providers.recall]\nkind = "vector"\nsource = "main"\nmodel_dir = "{model_dir()}"\n'
        + "# These tests rank: a query waits for the index however loaded the machine is.\n"
        + "recall = { catch_up_ms = 60000 }\n"
        + index
        + '\n[personalities.recaller]\nprovider = "recall"\n'
    )


@pytest.fixture(params=BACKENDS)
def backend_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Server]]:
    """A server on each backend (markdown, PostgreSQL, Redis), with ``recaller`` on a vector
    provider over it."""
    backend: str = request.param
    with backend_config(backend) as config, memory_serve(_with_recall(config, backend)) as server:
        yield backend, server


def test_every_tool_and_both_resources(backend_server: tuple[str, Server]) -> None:
    backend, server = backend_server
    with MemoryClient(server.url) as memory:
        run(lambda: _every_tool(server, memory, backend))
        run(lambda: _search(server, memory))


async def _every_tool(server: Server, memory: MemoryClient, backend: str) -> None:
    user = unique("grace")
    memory_path, user_path = personality_memory("ada"), user_profile(user)
    memory_uri, user_uri = f"memory://{memory_path}", f"memory://{user_path}"

    def text(path: str) -> str:
        return memory.documents.get(path).text

    async with connect(f"{server.url}/mcp/ada/{user}", initialize=False) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "agent-memory"
        assert init.capabilities.tools is not None
        assert init.capabilities.resources is not None

        tools = await session.list_tools()
        assert [tool.name for tool in tools.tools] == TOOLS, "no memory_search: no recall"
        for tool in tools.tools:
            assert tool.description, tool.name
            assert tool.inputSchema["additionalProperties"] is False, tool.name
        resources = await session.list_resources()
        assert [(str(r.uri), r.name, r.mimeType) for r in resources.resources] == [
            (memory_uri, "MEMORY.md", "text/markdown"),
            (user_uri, "USER.md", "text/markdown"),
        ]
        assert await read_resource(session, memory_uri) == ""
        assert await read_resource(session, user_uri) == ""

        # memory_add, to both files.
        added = await ok(session, "memory_add", {"file": "USER.md", "entry": "Name: Grace."})
        assert added.startswith("Added to USER.md."), added
        for entry in ("Planning a trip to Kyoto in May.", "Likes green tea."):
            added = await ok(session, "memory_add", {"file": "MEMORY.md", "entry": entry})
            assert added.startswith("Added to MEMORY.md."), added
        assert text(user_path) == "Name: Grace.\n"
        assert await read_resource(session, user_uri) == "Name: Grace.\n"
        added_both = "Planning a trip to Kyoto in May.\n\nLikes green tea.\n"
        assert text(memory_path) == added_both
        assert await read_resource(session, memory_uri) == added_both
        if backend == "markdown":
            files = server.root / "root"
            assert (files / memory_path).read_text() == added_both
            assert (files / user_path).read_text() == "Name: Grace.\n"

        # memory_replace and memory_remove.
        replaced = await ok(
            session, "memory_replace", {"file": "MEMORY.md", "old": "in May", "new": "in June"}
        )
        assert replaced.startswith("Replaced in MEMORY.md."), replaced
        after_replace = text(memory_path)
        assert after_replace == "Planning a trip to Kyoto in June.\n\nLikes green tea.\n"
        not_there = await refused(
            session, "memory_replace", {"file": "MEMORY.md", "old": "Osaka", "new": "Nara"}
        )
        assert "occurs 0 times" in not_there and "Nothing was written" in not_there
        assert text(memory_path) == after_replace
        removed = await ok(session, "memory_remove", {"file": "MEMORY.md", "substring": "green"})
        assert removed.startswith('Removed 1 line containing "green" from MEMORY.md.'), removed
        after_remove = text(memory_path)
        assert "green" not in after_remove and "Kyoto in June." in after_remove
        assert await read_resource(session, memory_uri) == after_remove

        # memory_view, and memory_consolidate guarded by its token.
        view = await ok(session, "memory_view", {})
        assert view.startswith(
            "## About You\n\nName: Grace.\n\n## Memory\n\nPlanning a trip to Kyoto in June."
        ), view
        assert "MEMORY.md: " in view and "USER.md: " in view
        token = view_token(view, "MEMORY.md")
        assert token != view_token(view, "USER.md")

        before = snapshot(memory, [memory_path, user_path])
        unviewed = await refused(
            session, "memory_consolidate", {"file": "MEMORY.md", "content": "Kyoto, June."}
        )
        assert "memory_view" in unviewed and "Nothing was written" in unviewed, unviewed
        assert snapshot(memory, [memory_path, user_path]) == before

        consolidated = await ok(
            session,
            "memory_consolidate",
            {"file": "MEMORY.md", "content": "Trip: Kyoto, June.", "viewed": token},
        )
        assert consolidated.startswith("Consolidated MEMORY.md"), consolidated
        assert text(memory_path) == "Trip: Kyoto, June.\n"
        assert await read_resource(session, memory_uri) == "Trip: Kyoto, June.\n"

        before = snapshot(memory, [memory_path, user_path])
        stale = await refused(
            session,
            "memory_consolidate",
            {"file": "MEMORY.md", "content": "Trip: Osaka.", "viewed": token},
        )
        assert "changed" in stale and "Nothing was written" in stale, stale
        assert snapshot(memory, [memory_path, user_path]) == before

        # memory_history: the list, then a revert to the text after the replace.
        history = await ok(session, "memory_history", {"file": "MEMORY.md", "limit": 20})
        assert history.startswith("MEMORY.md, the latest changes first:"), history
        numbers = [
            int(line.split(" ")[1]) for line in history.split("\n") if line.startswith("Revision ")
        ]
        assert numbers == [5, 4, 3, 2, 1], history  # add, add, replace, remove, consolidate
        assert "from tool" in history
        assert "+Trip: Kyoto, June." in history
        reverted = await ok(session, "memory_history", {"file": "MEMORY.md", "revert_to": 3})
        assert reverted.startswith("Reverted MEMORY.md to the text of revision 3"), reverted
        assert text(memory_path) == after_replace
        assert await read_resource(session, memory_uri) == after_replace
        assert [r.number for r in memory.history.list(memory_path, limit=10).revisions] == [
            6,
            5,
            4,
            3,
            2,
            1,
        ]
        assert memory.history.list(memory_path, limit=1).revisions[0].surface == "tool"
        assert text(user_path) == "Name: Grace.\n"


async def _search(server: Server, memory: MemoryClient) -> None:
    """memory_search, and memory_view's query, on the personality whose provider recalls."""
    user = unique("grace")
    entries = [
        "The staging database runs PostgreSQL 16 on port 5433.",
        "Grace prefers green tea over coffee.",
        "Deploys happen on Tuesdays after the standup.",
    ]
    async with connect(f"{server.url}/mcp/recaller/{user}") as session:
        tools = await session.list_tools()
        assert [tool.name for tool in tools.tools] == RECALL_TOOLS
        [view_tool] = [tool for tool in tools.tools if tool.name == "memory_view"]
        assert "query" in view_tool.inputSchema["properties"]
        for entry in entries:
            await ok(session, "memory_add", {"file": "MEMORY.md", "entry": entry})
        assert memory.documents.get(personality_memory("recaller")).text == (
            "\n\n".join(entries) + "\n"
        )

        found = await ok(
            session, "memory_search", {"query": "which port is the database on", "k": 1}
        )
        assert found.startswith('1 entry of MEMORY.md for "which port is the database on"'), found
        assert f"[1] {entries[0]}" in found
        assert entries[1] not in found and entries[2] not in found
        assert "port 5433" in await ok(session, "memory_view", {"query": "database port"})
        blank = await refused(session, "memory_search", {"query": "   "})
        assert "blank" in blank


def test_an_idempotency_key_in_meta_lands_the_call_once(
    backend_server: tuple[str, Server],
) -> None:
    _, server = backend_server
    user = unique("grace")
    url = f"{server.url}/mcp/ada/{user}"
    entry = f"Booked the ryokan ({unique('booking')})."
    arguments = {"file": "USER.md", "entry": entry}

    async def add_with(key: str) -> tuple[str, bool | None]:
        # A session of its own each time, as after a lost reply.
        async with connect(url) as session:
            result = await session.call_tool("memory_add", arguments, meta={IDEMPOTENCY_META: key})
            return text_of(result), result.isError

    with MemoryClient(server.url) as memory:
        first = run(lambda: add_with("trip-add-1"))
        assert first[0].startswith("Added to USER.md."), first
        assert first[1] is not True
        version = memory.documents.get(user_profile(user)).version
        again = run(lambda: add_with("trip-add-1"))
        assert again == first, "a resend replays the first result"
        document = memory.documents.get(user_profile(user))
        assert document.text.count(entry) == 1, document.text
        assert document.version == version, "the resend wrote nothing"
        assert len(memory.history.list(user_profile(user)).revisions) == 1

        # Another key is another call: it lands again.
        other = run(lambda: add_with("trip-add-2"))
        assert other[0].startswith("Added to USER.md."), other
        assert memory.documents.get(user_profile(user)).text.count(entry) == 2


def test_an_idempotency_key_header_lands_the_call_once(
    backend_server: tuple[str, Server],
) -> None:
    _, server = backend_server
    user = unique("grace")
    url = f"{server.url}/mcp/ada/{user}"
    entry = f"Allergic to peanuts ({unique('note')})."
    body = tool_call("memory_add", {"file": "USER.md", "entry": entry})
    with httpx.Client(timeout=60) as http, MemoryClient(server.url) as memory:
        first = reply(post(http, url, body, headers={"Idempotency-Key": "allergy-1"}))
        assert not first.tool_error and first.tool_text.startswith("Added to USER.md.")
        version = memory.documents.get(user_profile(user)).version
        second = reply(post(http, url, body, headers={"Idempotency-Key": "allergy-1"}))
        assert second == first, "a resend replays the first result"
        document = memory.documents.get(user_profile(user))
        assert document.text.count(entry) == 1, document.text
        assert document.version == version

        third = reply(post(http, url, body, headers={"Idempotency-Key": "allergy-2"}))
        assert third.tool_text.startswith("Added to USER.md.")
        assert memory.documents.get(user_profile(user)).text.count(entry) == 2


@pytest.mark.parametrize("personality", ["ada", "recaller", "concierge"])
def test_the_tools_and_resources_over_http_are_those_of_stdio(
    server: Server, personality: str
) -> None:
    """Full equality of the tool list (names, descriptions, input schemas, everything else)
    and of the resource list, between ``memory mcp`` on stdio and ``/mcp`` on the same
    config."""
    user = unique("grace")

    async def listed(session: ClientSession) -> tuple[list[Any], list[Any], str | None]:
        init = await session.initialize()
        tools = await session.list_tools()
        resources = await session.list_resources()
        return (
            [tool.model_dump() for tool in tools.tools],
            [resource.model_dump() for resource in resources.resources],
            init.instructions,
        )

    async def over_stdio() -> tuple[list[Any], list[Any], str | None]:
        params = StdioServerParameters(
            command=memory_bin(),
            args=["mcp", "--personality", personality, "--user", user],
            env={**os.environ, "MEMORY_CONFIG": str(server.root / "memory.toml")},
            cwd=server.root,
        )
        with (server.root / f"mcp-{user}.stderr").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await listed(session)

    async def over_http() -> tuple[list[Any], list[Any], str | None]:
        async with connect(f"{server.url}/mcp/{personality}/{user}", initialize=False) as session:
            return await listed(session)

    stdio_tools, stdio_resources, stdio_instructions = run(over_stdio)
    http_tools, http_resources, http_instructions = run(over_http)
    assert [tool["name"] for tool in stdio_tools] == (
        RECALL_TOOLS if personality == "recaller" else TOOLS
    )
    assert http_tools == stdio_tools
    memory_uri = (
        "memory://MEMORY.md"
        if personality == "concierge"
        else (f"memory://{personality_memory(personality)}")
    )
    assert [str(resource["uri"]) for resource in stdio_resources] == [
        memory_uri,
        f"memory://{user_profile(user)}",
    ]
    assert http_resources == stdio_resources
    assert http_instructions == stdio_instructions


def test_stateless_json_answers(server: Server) -> None:
    """No session: initialize is answered in plain JSON with no ``Mcp-Session-Id``, a
    notification gets 202 and no body, and a tools/call needs no initialize before it."""
    url = f"{server.url}/mcp/ada/{unique('grace')}"
    initialize = request_body(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )
    with httpx.Client(timeout=60) as http:
        init = reply(post(http, url, initialize))
        notified = post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        view = reply(post(http, url, tool_call("memory_view", {})))
    assert init.result is not None and init.result["serverInfo"]["name"] == "agent-memory"
    assert notified.status_code == 202, notified.text
    assert notified.content == b""
    assert "mcp-session-id" not in notified.headers
    assert not view.tool_error and "MEMORY.md: " in view.tool_text


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_two_servers_over_one_backend_answer_any_request(backend: str) -> None:
    """Stateless across servers: a view token from one guards a consolidate on the other, and
    a tool call resent to the other with the same idempotency key lands once."""
    user = unique("grace")
    path = f"/mcp/ada/{user}"
    with (
        backend_config(backend) as config,
        memory_serve(config) as first,
        memory_serve(config) as second,
        MemoryClient(first.url) as memory,
    ):

        async def scenario() -> None:
            async with connect(first.url + path) as a, connect(second.url + path) as b:
                await ok(a, "memory_add", {"file": "MEMORY.md", "entry": "Kyoto in May."})
                token = view_token(await ok(a, "memory_view", {}), "MEMORY.md")
                await ok(b, "memory_add", {"file": "MEMORY.md", "entry": "Osaka too."})
                # The token is of the text before b's add: b refuses the rewrite...
                stale = await refused(
                    b,
                    "memory_consolidate",
                    {"file": "MEMORY.md", "content": "Kyoto.", "viewed": token},
                )
                assert "changed" in stale, stale
                # ...and takes it with a token of the text as it is now, from a's view.
                token = view_token(await ok(a, "memory_view", {}), "MEMORY.md")
                rewrite = {"file": "MEMORY.md", "content": "Kyoto, then Osaka.", "viewed": token}
                assert (await ok(b, "memory_consolidate", rewrite)).startswith("Consolidated")

                meta = {IDEMPOTENCY_META: f"resent-{user}"}
                entry = {"file": "USER.md", "entry": "Name: Grace."}
                sent = await a.call_tool("memory_add", entry, meta=meta)
                resent = await b.call_tool("memory_add", entry, meta=meta)
                assert text_of(resent) == text_of(sent) and resent.isError is not True

        run(scenario)
        assert memory.documents.get(personality_memory("ada")).text == "Kyoto, then Osaka.\n"
        assert memory.documents.get(user_profile(user)).text == "Name: Grace.\n"


def test_a_platform_account_url_opens_the_linked_users_memory(
    backend_server: tuple[str, Server],
) -> None:
    _, server = backend_server
    user, account = unique("grace"), unique("tg")
    with MemoryClient(server.url) as memory:
        memory.identities.link("telegram", account, user)

        async def add() -> str:
            async with connect(f"{server.url}/mcp/ada/telegram/{account}") as session:
                resources = await session.list_resources()
                assert f"memory://{user_profile(user)}" in [
                    str(resource.uri) for resource in resources.resources
                ]
                return await ok(session, "memory_add", {"file": "USER.md", "entry": "On Telegram."})

        assert run(add).startswith("Added to USER.md.")
        assert memory.documents.get(user_profile(user)).text == "On Telegram.\n"
