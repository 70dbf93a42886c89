"""What ``/mcp`` makes of requests an MCP client should not send, as raw HTTP: each is answered
with a 4xx (a problem document) or a JSON-RPC or tool error that names what was wrong, never a
5xx, and writes nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from agent_memory import MemoryClient, personality_memory, user_profile
from mcp_support import (
    ACCEPT,
    IDEMPOTENCY_META,
    Reply,
    post,
    problem,
    reply,
    request_body,
    snapshot,
    tool_call,
)
from memory_server import Server, unique

ENTRY = "Should never land."
"""What every bad request below would add if it were taken."""


@dataclass(frozen=True)
class Memory:
    """A memory of its own for one test: its /mcp URL and its two documents."""

    url: str
    paths: list[str]


@pytest.fixture
def memory(server: Server, client: MemoryClient) -> Iterator[Memory]:
    """A fresh personality and user on the session's server; after the test, both documents
    are checked to be as they were (never written)."""
    personality, user = unique("bad"), unique("grace")
    paths = [personality_memory(personality), user_profile(user)]
    before = snapshot(client, paths)
    assert all(text == "" for text, _ in before.values())
    yield Memory(f"{server.url}/mcp/{personality}/{user}", paths)
    assert snapshot(client, paths) == before, "a refused request wrote"


def _add(file: str = "USER.md", entry: object = ENTRY) -> dict[str, object]:
    return tool_call("memory_add", {"file": file, "entry": entry})


def _client_error(response: httpx.Response) -> str:
    """A 4xx answer's text (a problem document, or a JSON-RPC error)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    return response.text


def _rpc_error_or_4xx(response: httpx.Response, code: int | None = None) -> str:
    """The message of a JSON-RPC error (in a 200 or a 4xx; with ``code`` when given), or a
    4xx's problem detail."""
    assert response.status_code < 500, (response.status_code, response.text)
    if response.status_code == 200:
        error = reply(response).error
    else:
        _client_error(response)
        body = response.json()
        if not (isinstance(body, dict) and "error" in body):
            assert response.headers["content-type"].startswith("application/problem+json")
            return str(body.get("detail") or body.get("title"))
        error = body["error"]
    assert error is not None, response.text
    if code is not None:
        assert error["code"] == code, error
    message = error["message"]
    assert isinstance(message, str), error
    return message


def test_a_body_that_is_not_json(memory: Memory) -> None:
    with httpx.Client(timeout=60) as http:
        response = post(http, memory.url, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/ca')
    message = _rpc_error_or_4xx(response, -32700)
    assert re.search(r"(?i)json|parse", message), message


def test_json_that_is_not_json_rpc(memory: Memory) -> None:
    with httpx.Client(timeout=60) as http:
        for body in (
            {"hello": "world"},
            {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 1, "params": {"name": "memory_add"}},
            "just a string",
            42,
        ):
            response = post(http, memory.url, json.dumps(body))
            message = _rpc_error_or_4xx(response, -32600)
            assert re.search(r"(?i)json|invalid|method|request|missing|unknown", message), (
                body,
                message,
            )


def test_an_unknown_tool_and_an_unknown_method(memory: Memory) -> None:
    with httpx.Client(timeout=60) as http:
        unknown_tool = reply(post(http, memory.url, tool_call("memory_fly", {"to": "Kyoto"})))
        unknown_method = reply(post(http, memory.url, request_body("memory/teleport", {})))
    assert unknown_tool.error is not None and unknown_tool.error["code"] == -32602
    assert "memory_fly" in unknown_tool.error_message
    assert unknown_method.error is not None and unknown_method.error["code"] == -32601
    assert unknown_method.error_message


@dataclass(frozen=True)
class WrongArguments:
    label: str
    tool: str
    arguments: dict[str, object]
    names: str
    """What the answer must name: the argument (or value) that was wrong."""


WRONG_ARGUMENTS = [
    WrongArguments("entry a number", "memory_add", {"file": "USER.md", "entry": 42}, "entry"),
    WrongArguments("entry missing", "memory_add", {"file": "USER.md"}, "entry"),
    WrongArguments("entry empty", "memory_add", {"file": "USER.md", "entry": ""}, "blank"),
    WrongArguments("file a list", "memory_add", {"file": ["USER.md"], "entry": ENTRY}, "file"),
    WrongArguments(
        "file not one of the two", "memory_add", {"file": "NOTES.md", "entry": ENTRY}, "NOTES.md"
    ),
    WrongArguments(
        "an argument too many",
        "memory_add",
        {"file": "USER.md", "entry": ENTRY, "when": "now"},
        "when",
    ),
    WrongArguments(
        "new a boolean",
        "memory_replace",
        {"file": "USER.md", "old": "Grace", "new": False},
        "new",
    ),
    WrongArguments(
        "limit a string", "memory_history", {"file": "USER.md", "limit": "five"}, "limit"
    ),
    WrongArguments(
        "limit out of range", "memory_history", {"file": "USER.md", "limit": 1000}, "limit"
    ),
    WrongArguments(
        "revert_to negative", "memory_history", {"file": "USER.md", "revert_to": -1}, "revert_to"
    ),
    WrongArguments(
        "consolidate blank",
        "memory_consolidate",
        {"file": "USER.md", "content": "  ", "viewed": "0123456789ab"},
        "blank",
    ),
    WrongArguments(
        "consolidate a made-up token",
        "memory_consolidate",
        {"file": "USER.md", "content": ENTRY, "viewed": "not-a-token"},
        "view",
    ),
]


@pytest.mark.parametrize("case", WRONG_ARGUMENTS, ids=[case.label for case in WRONG_ARGUMENTS])
def test_wrong_arguments(memory: Memory, case: WrongArguments) -> None:
    """Answered with a tool error (``isError``, the text saying what was wrong and, for a
    writing tool, that nothing was written) or a JSON-RPC invalid-params error naming it."""
    with httpx.Client(timeout=60) as http:
        answer = reply(post(http, memory.url, tool_call(case.tool, case.arguments)))
    if answer.error is not None:
        assert answer.error["code"] == -32602, answer.error
        text = answer.error_message
    else:
        text = _tool_error(answer, case.tool)
    assert case.names in text, text


def test_arguments_that_are_no_object_or_missing(memory: Memory) -> None:
    """A tools/call whose params are not those of tools/call: invalid params, naming what."""
    with httpx.Client(timeout=60) as http:
        for params in (
            {"name": "memory_add", "arguments": ["USER.md", ENTRY]},
            {"name": "memory_add", "arguments": "USER.md"},
            {"arguments": {"file": "USER.md", "entry": ENTRY}},
            None,
        ):
            response = post(http, memory.url, request_body("tools/call", params))
            message = _rpc_error_or_4xx(response, -32602)
            assert re.search(r"(?i)argument|object|name|param", message), (params, message)


def _tool_error(answer: Reply, tool: str) -> str:
    """A tool error's text; a writing tool's says that nothing was written."""
    assert answer.tool_error, answer.result
    if tool != "memory_history":
        assert "Nothing was written" in answer.tool_text, answer.tool_text
    return answer.tool_text


def test_a_body_over_the_limit_is_413_naming_it(memory: Memory) -> None:
    big = _add(entry="x" * (2 * 1024 * 1024))
    with httpx.Client(timeout=60) as http:
        response = post(http, memory.url, big)
    detail = json.dumps(problem(response, 413))
    assert re.search(r"1048576|1 ?MiB", detail), detail


def test_a_batch_is_refused(memory: Memory) -> None:
    batch = [_add(), _add(entry=ENTRY + " Twice."), request_body("tools/list")]
    with httpx.Client(timeout=60) as http:
        response = post(http, memory.url, batch)
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        body = response.json()
        # One error for the batch, or an error for each of its requests: never a result.
        errors = body if isinstance(body, list) else [body]
        assert all("error" in answer and "result" not in answer for answer in errors), body
        text = json.dumps(body)
    else:
        text = _client_error(response)
    assert re.search(r"(?i)batch|array", text), text


def test_get_and_delete_are_405(memory: Memory) -> None:
    with httpx.Client(timeout=60) as http:
        answers = [
            http.get(memory.url, headers={"Accept": "text/html"}),
            http.get(memory.url, headers={"Accept": "text/event-stream"}),
            http.delete(
                memory.url, headers={"Mcp-Session-Id": "no-such-session", "Accept": ACCEPT}
            ),
        ]
    for answer in answers:
        assert answer.status_code == 405, (answer.request.method, answer.status_code, answer.text)
        problem(answer, 405)
        assert answer.headers.get("allow") == "POST", answer.headers


def test_a_post_without_the_right_accept_or_content_type(memory: Memory) -> None:
    body = json.dumps(_add())
    with httpx.Client(timeout=60) as http:
        answers = [
            http.post(memory.url, content=body, headers={"Content-Type": "application/json"}),
            http.post(
                memory.url,
                content=body,
                headers={"Accept": "text/html", "Content-Type": "application/json"},
            ),
            http.post(
                memory.url,
                content=body,
                headers={"Accept": "application/json", "Content-Type": "application/json"},
            ),
            http.post(
                memory.url, content=body, headers={"Accept": ACCEPT, "Content-Type": "text/plain"}
            ),
        ]
    for answer in answers:
        assert 400 <= answer.status_code < 500, (answer.request.headers, answer.status_code)
        assert re.search(r"(?i)accept|content-type|media", answer.text), answer.text


def test_bad_urls(server: Server) -> None:
    with httpx.Client(timeout=60) as http:
        plain = post(http, f"{server.url}/mcp", request_body("tools/list"))
        bad_id = post(http, f"{server.url}/mcp/Bad%20Id!/alice", request_body("tools/list"))
        unlinked = post(
            http, f"{server.url}/mcp/ada/telegram/{unique('nobody')}", request_body("tools/list")
        )
        too_deep = post(http, f"{server.url}/mcp/ada/a/b/c", request_body("tools/list"))
    # Without a key restricted to one personality and one user, /mcp names no memory.
    assert "personality" in json.dumps(problem(plain, 400)), plain.text
    assert "Bad Id!" in json.dumps(problem(bad_id, 400)), bad_id.text
    assert "telegram" in json.dumps(problem(unlinked, 404)), unlinked.text
    assert 400 <= too_deep.status_code < 500, too_deep.text


def test_a_foreign_origin_or_host_is_403(memory: Memory) -> None:
    """No keys, on loopback: a web page elsewhere (DNS rebinding) gets nothing."""
    with httpx.Client(timeout=60) as http:
        origin = post(http, memory.url, _add(), headers={"Origin": "http://evil.example"})
        host = post(http, memory.url, _add(), headers={"Host": "evil.example"})
    problem(origin, 403)
    problem(host, 403)


@pytest.mark.parametrize(
    "key",
    ["", "x" * 129, "with space", "caf\u00e9", "tab\there"],
    ids=["empty", "129 chars", "a space", "not ascii", "a tab"],
)
def test_a_malformed_idempotency_key_is_refused(memory: Memory, key: str) -> None:
    """Keys are 1-128 visible ASCII characters; any other is refused before the call runs,
    whether in ``_meta`` or in the header."""
    with httpx.Client(timeout=60) as http:
        in_meta = post(
            http,
            memory.url,
            tool_call(
                "memory_add", {"file": "USER.md", "entry": ENTRY}, meta={IDEMPOTENCY_META: key}
            ),
        )
        message = _rpc_error_or_4xx(in_meta, -32602)
        assert "idempotency" in message.lower(), message
        if key.isascii() and "\t" not in key:  # a header can carry it
            in_header = post(http, memory.url, _add(), headers={"Idempotency-Key": key})
            message = _rpc_error_or_4xx(in_header)
            assert "idempotency" in message.lower(), message
