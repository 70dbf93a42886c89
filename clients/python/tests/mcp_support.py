"""Talking to ``memory serve``'s ``/mcp`` (MCP's Streamable HTTP transport): through the official
MCP SDK's client, and as raw JSON-RPC POSTs for what the SDK would not send."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent, TextResourceContents
from pydantic import AnyUrl

from agent_memory import MemoryClient

T = TypeVar("T")

ACCEPT = "application/json, text/event-stream"
"""What a Streamable HTTP client must accept."""

IDEMPOTENCY_META = "agent-memory/idempotency-key"

TOOLS = [
    "memory_view",
    "memory_add",
    "memory_replace",
    "memory_remove",
    "memory_consolidate",
    "memory_history",
    "memory_notes",
]
"""The tools on a personality whose provider cannot recall, in the order they are offered."""

RECALL_TOOLS = [*TOOLS, "memory_search"]
"""The tools on a personality whose provider is a vector one."""


def run(make: Callable[[], Awaitable[T]]) -> T:
    """Runs one coroutine to its end, in an event loop of its own."""

    async def main() -> T:
        return await make()

    return asyncio.run(main())


@asynccontextmanager
async def connect(
    url: str, key: str | None = None, *, initialize: bool = True
) -> AsyncIterator[ClientSession]:
    """An SDK session with the ``/mcp`` URL ``url`` (initialized unless told not to), sending
    ``key`` as a bearer token when given."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        if initialize:
            await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    """A tool result's text (every text block, joined by newlines)."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def ok(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    """Calls ``tool`` and returns its text, failing the test if it is a tool error."""
    result = await session.call_tool(tool, arguments)
    assert result.isError is not True, f"{tool} {arguments}: {text_of(result)}"
    return text_of(result)


async def refused(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    """Calls ``tool`` and returns its text, failing the test unless it is a tool error."""
    result = await session.call_tool(tool, arguments)
    assert result.isError is True, f"{tool} {arguments} was not refused: {text_of(result)}"
    return text_of(result)


async def read_resource(session: ClientSession, uri: str) -> str:
    """A resource's text, checking it is one markdown text."""
    read = await session.read_resource(AnyUrl(uri))
    [contents] = read.contents
    assert isinstance(contents, TextResourceContents), contents
    assert contents.mimeType == "text/markdown"
    assert str(contents.uri) == uri
    return contents.text


def view_token(view: str, file: str) -> str:
    """The view token ``memory_view`` printed for ``file`` (``MEMORY.md`` or ``USER.md``)."""
    tokens = view[view.rfind("View tokens") :] if "View tokens" in view else view
    found = re.search(rf"{re.escape(file)}:?\s+(?:view\s+)?([0-9a-f]{{8,}})\b", tokens)
    assert found is not None, f"no view token for {file} in:\n{view}"
    return found.group(1)


# Raw JSON-RPC over HTTP.

_ids = itertools.count(1)


def request_body(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One JSON-RPC request object."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        body["params"] = dict(params)
    return body


def tool_call(
    tool: str, arguments: Mapping[str, Any], meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A ``tools/call`` request object."""
    params: dict[str, Any] = {"name": tool, "arguments": dict(arguments)}
    if meta is not None:
        params["_meta"] = dict(meta)
    return request_body("tools/call", params)


def post(
    http: httpx.Client,
    url: str,
    body: object,
    *,
    key: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """POSTs ``body`` (JSON, or raw bytes/str as is) to ``url`` as a Streamable HTTP client
    does: both content types accepted, JSON sent."""
    sent = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    sent.update(headers or {})
    content = body if isinstance(body, bytes | str) else json.dumps(body)
    return http.post(url, content=content, headers=sent)


@dataclass(frozen=True)
class Reply:
    """A JSON-RPC response to one request."""

    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @property
    def tool_text(self) -> str:
        """A tool result's text."""
        assert self.result is not None, self.error
        return "\n".join(
            block["text"] for block in self.result["content"] if block.get("type") == "text"
        )

    @property
    def tool_error(self) -> bool:
        assert self.result is not None, self.error
        return self.result.get("isError") is True

    @property
    def error_message(self) -> str:
        assert self.error is not None, f"not an error: {self.result}"
        message = self.error.get("message")
        assert isinstance(message, str), self.error
        return message


def reply(response: httpx.Response) -> Reply:
    """The JSON-RPC response of a 200 answer (``application/json``, one object)."""
    assert response.status_code == 200, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert "mcp-session-id" not in response.headers, "the server is stateless"
    body = response.json()
    assert isinstance(body, dict), body
    assert body.get("jsonrpc") == "2.0", body
    return Reply(result=body.get("result"), error=body.get("error"))


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The problem document (RFC 9457) of an error answer with ``status``."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json"), (
        response.headers,
        response.text,
    )
    body = response.json()
    assert isinstance(body, dict), body
    assert body.get("status") == status, body
    return body


# What the tools wrote, as /v1 shows it.

Snapshot = dict[str, tuple[str, str]]


def snapshot(memory: MemoryClient, paths: list[str]) -> Snapshot:
    """Each document's text and version, read through /v1."""
    documents = {path: memory.documents.get(path) for path in paths}
    return {path: (doc.text, doc.version) for path, doc in documents.items()}
