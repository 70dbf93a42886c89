"""``/mcp`` on a server with API keys: for each way of calling (no key, a wrong key, each kind of
key, on each URL) and each request (tools/list, resources/list and /read, and every tool), the
exact outcome, and that a refused request wrote nothing (each document's text and version read
back through ``/v1`` with the admin key)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import pytest

from agent_memory import Add, MemoryClient, personality_memory, user_profile
from conftest import McpKeyedServer
from mcp_support import (
    RECALL_TOOLS,
    Reply,
    Snapshot,
    post,
    problem,
    reply,
    request_body,
    snapshot,
    tool_call,
    view_token,
)
from memory_server import unique

ORIGINAL = "Original.\n"
"""ada's MEMORY.md at revision 1: what ``revert_to: 1`` brings back."""
SEED = "Seed alpha.\n\nSeed gamma.\n"
"""ada's MEMORY.md before each request."""
PROFILES = {"alice": "Name: Alice.\n", "bob": "Name: Bob.\n"}
OTHER = "The other personality's notes.\n"
DOCUMENTS = [
    personality_memory("ada"),
    personality_memory("other"),
    user_profile("alice"),
    user_profile("bob"),
]


@dataclass(frozen=True)
class Target:
    """Whose memory a URL opens."""

    personality: str
    user: str


@dataclass(frozen=True)
class Call:
    """One request of the matrix."""

    label: str
    method: str
    scope: Literal["read", "write"]
    """The scope it needs."""
    params: Callable[[Target, str], dict[str, Any]]
    """Its params, for the memory it opens and a fresh view token of that MEMORY.md."""
    check: Callable[[Reply, Target, Snapshot], None]
    """What a request that worked answered and left (the documents after it)."""

    @property
    def tool(self) -> str | None:
        return self.params(Target("ada", "alice"), "")["name"] if self.is_tool else None

    @property
    def is_tool(self) -> bool:
        return self.method == "tools/call"


def _tool(
    label: str,
    scope: Literal["read", "write"],
    name: str,
    arguments: Callable[[str], dict[str, Any]],
    check: Callable[[str, Target, Snapshot], None],
) -> Call:
    def params(target: Target, token: str) -> dict[str, Any]:
        return {"name": name, "arguments": arguments(token)}

    def checked(answer: Reply, target: Target, after: Snapshot) -> None:
        assert not answer.tool_error, answer.tool_text
        check(answer.tool_text, target, after)

    return Call(label, "tools/call", scope, params, checked)


def _memory(after: Snapshot) -> str:
    return after[personality_memory("ada")][0]


def _listed_tools(answer: Reply, target: Target, after: Snapshot) -> None:
    assert answer.result is not None, answer.error
    names = [tool["name"] for tool in answer.result["tools"]]
    assert names, answer.result
    assert set(names) <= set(RECALL_TOOLS), names


def _listed_resources(answer: Reply, target: Target, after: Snapshot) -> None:
    assert answer.result is not None, answer.error
    uris = [resource["uri"] for resource in answer.result["resources"]]
    assert set(uris) <= {
        f"memory://{personality_memory(target.personality)}",
        f"memory://{user_profile(target.user)}",
    }, uris


def _read(path: Callable[[Target], str]) -> Callable[[Reply, Target, Snapshot], None]:
    def check(answer: Reply, target: Target, after: Snapshot) -> None:
        assert answer.result is not None, answer.error
        [contents] = answer.result["contents"]
        assert contents["uri"] == f"memory://{path(target)}"
        assert contents["text"] == after[path(target)][0]

    return check


def _memory_uri(target: Target) -> str:
    return personality_memory(target.personality)


def _user_uri(target: Target) -> str:
    return user_profile(target.user)


def _viewed(text: str, target: Target, after: Snapshot) -> None:
    assert "Seed alpha." in text and PROFILES[target.user].strip() in text, text


def _history(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith("MEMORY.md, the latest changes first:"), text


def _found(text: str, target: Target, after: Snapshot) -> None:
    assert "Seed alpha." in text, text


def _added(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith("Added to MEMORY.md."), text
    assert _memory(after) == SEED + "\nAdded over MCP.\n"


def _replaced(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith("Replaced in MEMORY.md."), text
    assert _memory(after) == SEED.replace("alpha", "beta")


def _removed(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith('Removed 1 line containing "gamma" from MEMORY.md.'), text
    assert "gamma" not in _memory(after) and "Seed alpha." in _memory(after)


def _consolidated(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith("Consolidated MEMORY.md"), text
    assert _memory(after) == "Consolidated seed.\n"


def _reverted(text: str, target: Target, after: Snapshot) -> None:
    assert text.startswith("Reverted MEMORY.md to the text of revision 1"), text
    assert _memory(after) == ORIGINAL


CALLS = [
    Call("tools/list", "tools/list", "read", lambda target, token: {}, _listed_tools),
    Call("resources/list", "resources/list", "read", lambda t, token: {}, _listed_resources),
    Call(
        "resources/read MEMORY.md",
        "resources/read",
        "read",
        lambda target, token: {"uri": f"memory://{_memory_uri(target)}"},
        _read(_memory_uri),
    ),
    Call(
        "resources/read USER.md",
        "resources/read",
        "read",
        lambda target, token: {"uri": f"memory://{_user_uri(target)}"},
        _read(_user_uri),
    ),
    _tool("memory_view", "read", "memory_view", lambda token: {}, _viewed),
    _tool(
        "memory_history",
        "read",
        "memory_history",
        lambda token: {"file": "MEMORY.md"},
        _history,
    ),
    _tool(
        "memory_search",
        "read",
        "memory_search",
        lambda token: {"query": "alpha", "k": 2},
        _found,
    ),
    _tool(
        "memory_add",
        "write",
        "memory_add",
        lambda token: {"file": "MEMORY.md", "entry": "Added over MCP."},
        _added,
    ),
    _tool(
        "memory_replace",
        "write",
        "memory_replace",
        lambda token: {"file": "MEMORY.md", "old": "alpha", "new": "beta"},
        _replaced,
    ),
    _tool(
        "memory_remove",
        "write",
        "memory_remove",
        lambda token: {"file": "MEMORY.md", "substring": "gamma"},
        _removed,
    ),
    _tool(
        "memory_consolidate",
        "write",
        "memory_consolidate",
        lambda token: {"file": "MEMORY.md", "content": "Consolidated seed.", "viewed": token},
        _consolidated,
    ),
    _tool(
        "memory_history revert_to",
        "write",
        "memory_history",
        lambda token: {"file": "MEMORY.md", "revert_to": 1},
        _reverted,
    ),
]

Outcome = Literal["ok", "refused", 400, 401, 403]
"""What a request gets: it works; it is refused for the scope its key lacks (a JSON-RPC error
naming the scope); or an HTTP error with a problem document."""


@dataclass(frozen=True)
class Way:
    """A way of calling: a key (an :class:`McpKeys` field name, ``wrong`` for a key the server
    does not know, None for none) on a URL path, and the outcome of each call."""

    label: str
    key: str | None
    path: str
    target: Target
    outcome: Callable[[Call], Outcome]


def _all(outcome: Outcome) -> Callable[[Call], Outcome]:
    return lambda call: outcome


def _reader(call: Call) -> Outcome:
    return "ok" if call.scope == "read" else "refused"


def _write_only(call: Call) -> Outcome:
    if call.method in ("tools/list", "resources/list"):
        return "ok"  # listing what it may use
    if call.tool == "memory_history":
        return "refused"  # memory_history reads, revert_to too: it needs read as well
    return "ok" if call.scope == "write" else "refused"


ALICE = Target("ada", "alice")
WAYS = [
    Way("no key", None, "/mcp/ada/alice", ALICE, _all(401)),
    Way("wrong key", "wrong", "/mcp/ada/alice", ALICE, _all(401)),
    Way("reader", "reader", "/mcp/ada/alice", ALICE, _reader),
    Way("write-only", "write_only", "/mcp/ada/alice", ALICE, _write_only),
    Way("metrics-only", "metrics_only", "/mcp/ada/alice", ALICE, _all(403)),
    Way("writer", "writer", "/mcp/ada/alice", ALICE, _all("ok")),
    Way("ada-alice", "ada_alice", "/mcp/ada/alice", ALICE, _all("ok")),
    Way("ada-alice on bob", "ada_alice", "/mcp/ada/bob", Target("ada", "bob"), _all(403)),
    Way("ada-alice on other", "ada_alice", "/mcp/other/alice", Target("other", "alice"), _all(403)),
    Way("ada-alice on /mcp", "ada_alice", "/mcp", ALICE, _all("ok")),
    Way("alice-two-personalities on /mcp", "alice_two_personalities", "/mcp", ALICE, _all(400)),
    Way("ada-two-users on /mcp", "ada_two_users", "/mcp", ALICE, _all(400)),
    Way("writer on /mcp", "writer", "/mcp", ALICE, _all(400)),
    Way("admin on /mcp", "admin", "/mcp", ALICE, _all(400)),
    Way("admin", "admin", "/mcp/ada/alice", ALICE, _all("ok")),
    Way("admin on bob", "admin", "/mcp/ada/bob", Target("ada", "bob"), _all("ok")),
]


@pytest.fixture(scope="module")
def admin(mcp_keyed_server: McpKeyedServer) -> Iterator[MemoryClient]:
    """The admin's /v1 client, after seeding the documents: ada's MEMORY.md has
    :data:`ORIGINAL` as revision 1."""
    server, keys = mcp_keyed_server.server, mcp_keyed_server.keys
    with MemoryClient(server.url, api_key=keys.admin) as memory:
        memory.sync("ada", "alice", [Add("memory", ORIGINAL.strip())])
        for user, profile in PROFILES.items():
            memory.sync("ada", user, [Add("user", profile.strip())])
        memory.sync("other", "alice", [Add("memory", OTHER.strip())])
        yield memory


def _reset(memory: MemoryClient) -> None:
    """ada's MEMORY.md back to :data:`SEED`, the profiles to theirs."""
    wanted = {personality_memory("ada"): SEED} | {
        user_profile(user): text for user, text in PROFILES.items()
    }
    for path, text in wanted.items():
        document = memory.documents.get(path)
        if document.text != text:
            memory.documents.replace(path, text, if_match=document.version)


def _key(server: McpKeyedServer, name: str | None) -> str | None:
    if name is None:
        return None
    if name == "wrong":
        return "amk_" + "0" * 64
    key = getattr(server.keys, name)
    assert isinstance(key, str)
    return key


@pytest.mark.parametrize("call", CALLS, ids=[call.label for call in CALLS])
@pytest.mark.parametrize("way", WAYS, ids=[way.label for way in WAYS])
def test_each_call_each_way(
    mcp_keyed_server: McpKeyedServer, admin: MemoryClient, way: Way, call: Call
) -> None:
    server = mcp_keyed_server.server
    url = server.url + way.path
    expected = way.outcome(call)
    with httpx.Client(timeout=60) as http:
        _reset(admin)
        # A fresh token of the MEMORY.md the URL opens, as the admin's view shows it.
        view = reply(
            post(
                http,
                f"{server.url}/mcp/{way.target.personality}/{way.target.user}",
                tool_call("memory_view", {}),
                key=mcp_keyed_server.keys.admin,
            )
        )
        token = view_token(view.tool_text, "MEMORY.md")
        before = snapshot(admin, DOCUMENTS)

        body = request_body(call.method, call.params(way.target, token))
        response = post(http, url, body, key=_key(mcp_keyed_server, way.key))
        after = snapshot(admin, DOCUMENTS)

    if expected == "ok":
        call.check(reply(response), way.target, after)
        if call.scope == "read":
            assert after == before, "a reading call wrote"
        else:
            del before[personality_memory("ada")], after[personality_memory("ada")]
            assert after == before, "a call wrote beside ada's MEMORY.md"
        return

    assert after == before, f"a refused call wrote: {response.status_code} {response.text}"
    if expected == "refused":
        _refused_for_scope(reply(response), call, way)
    elif expected == 401:
        _unauthorized(response, server.url, way)
    else:
        detail = str(problem(response, expected).get("detail", ""))
        if expected == 400:
            assert "personality" in detail and "user" in detail, detail


def _refused_for_scope(answer: Reply, call: Call, way: Way) -> None:
    """A JSON-RPC error naming the scope the key lacks (and the tool); ``revert_to`` on a
    read-only key may instead be a tool error saying that it writes, and on a write-only key
    names ``read``, which memory_history needs whatever its arguments."""
    scope = "read" if way.key == "write_only" and call.tool == "memory_history" else call.scope
    if call.label == "memory_history revert_to" and answer.error is None:
        assert answer.tool_error, answer.result
        message = answer.tool_text
    else:
        message = answer.error_message
        if call.tool is not None:
            assert call.tool in message, message
    assert re.search(rf"\b{scope}s?\b", message), message


def _unauthorized(response: httpx.Response, base: str, way: Way) -> None:
    problem(response, 401)
    challenge = response.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    metadata = f"{base}/.well-known/oauth-protected-resource{way.path}"
    assert f'resource_metadata="{metadata}"' in challenge, challenge
    if way.key is None:
        assert "error=" not in challenge, challenge
    else:
        assert 'error="invalid_token"' in challenge, challenge


def test_protected_resource_metadata(mcp_keyed_server: McpKeyedServer) -> None:
    """RFC 9728: where the 401's ``resource_metadata`` points."""
    server = mcp_keyed_server.server
    with httpx.Client(timeout=60) as http:
        answer = http.get(f"{server.url}/.well-known/oauth-protected-resource/mcp/ada/alice")
        unauthorized = post(http, f"{server.url}/mcp/ada/alice", request_body("tools/list"))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    metadata = answer.json()
    assert metadata["resource"] == f"{server.url}/mcp/ada/alice"
    assert metadata["bearer_methods_supported"] == ["header"]
    challenge = unauthorized.headers["www-authenticate"]
    assert f'resource_metadata="{answer.url}"' in challenge, challenge


def test_tool_calls_are_counted_in_metrics(mcp_keyed_server: McpKeyedServer) -> None:
    """``memory_http_mcp_tool_calls_total`` by tool and outcome: two views count as two ``ok``
    calls of memory_view, a call the key may not make as one ``refused``."""
    server, keys = mcp_keyed_server.server, mcp_keyed_server.keys
    url = f"{server.url}/mcp/ada/alice"
    sample = re.compile(
        r"^memory_http_mcp_tool_calls_total\{([^}]*)\} (\d+)$",
        re.MULTILINE,
    )

    def counted(http: httpx.Client, **labels: str) -> int:
        metrics = http.get(
            f"{server.url}/metrics", headers={"Authorization": f"Bearer {keys.metrics_only}"}
        )
        assert metrics.status_code == 200, metrics.text
        wanted = [f'{name}="{value}"' for name, value in labels.items()]
        return sum(
            int(found.group(2))
            for found in sample.finditer(metrics.text)
            if all(label in found.group(1).split(",") for label in wanted)
        )

    with httpx.Client(timeout=60) as http:
        viewed = counted(http, tool="memory_view", outcome="ok")
        refused = counted(http, outcome="refused")
        for _ in range(2):
            view = reply(post(http, url, tool_call("memory_view", {}), key=keys.reader))
            assert not view.tool_error
        add = tool_call("memory_add", {"file": "USER.md", "entry": "Not for a reader."})
        assert reply(post(http, url, add, key=keys.reader)).error is not None
        assert counted(http, tool="memory_view", outcome="ok") == viewed + 2
        assert counted(http, outcome="refused") == refused + 1


def test_platform_account_urls_follow_the_key(
    mcp_keyed_server: McpKeyedServer, admin: MemoryClient
) -> None:
    """``/mcp/{personality}/{platform}/{platform_user}`` opens the linked user's memory, so a
    key restricted to alice opens alice's account and not bob's; an account linked to nobody
    is 404."""
    server, keys = mcp_keyed_server.server, mcp_keyed_server.keys
    alice_account, bob_account = unique("tg-alice"), unique("tg-bob")
    admin.identities.link("telegram", alice_account, "alice")
    admin.identities.link("telegram", bob_account, "bob")
    read = request_body("resources/read", {"uri": f"memory://{user_profile('alice')}"})
    with httpx.Client(timeout=60) as http:
        _reset(admin)
        before = snapshot(admin, DOCUMENTS)
        mine = reply(
            post(http, f"{server.url}/mcp/ada/telegram/{alice_account}", read, key=keys.ada_alice)
        )
        add = tool_call("memory_add", {"file": "USER.md", "entry": "Bob's, not alice's."})
        theirs = post(http, f"{server.url}/mcp/ada/telegram/{bob_account}", add, key=keys.ada_alice)
        nobody = post(http, f"{server.url}/mcp/ada/telegram/{unique('tg')}", add, key=keys.admin)
        assert snapshot(admin, DOCUMENTS) == before
    assert mine.result is not None, mine.error
    assert mine.result["contents"][0]["text"] == PROFILES["alice"]
    problem(theirs, 403)
    problem(nobody, 404)
