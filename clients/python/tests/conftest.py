"""Fixtures: one real ``memory serve`` on markdown shared by the session (tests use ids of their
own), and clients of it; one on each storage backend, and Metis stores on it."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from agent_memory import MemoryClient
from agent_memory.metis import MemoryStore
from backends import BACKENDS, backend_config
from blocking import make_store
from memory_server import Server, memory_serve, model_dir, unique

# Caps small enough to hit in a test: past 128 bytes a write is refused.
CAPPED_HARD = 128

MARKDOWN_CONFIG = f"""
default_provider = "files"

[providers.files]
kind = "markdown"
root = "root"

[providers.recall]
kind = "vector"
source = "files"
model_dir = "{model_dir()}"
# These tests rank: a query waits for the index however loaded the machine is.
recall = {{ catch_up_ms = 60000 }}

[personalities.capped]
caps.memory = {{ soft = 64, hard = {CAPPED_HARD} }}

[personalities.concierge]
memory_scope = "global"

[personalities.recaller]
provider = "recall"
"""


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """A markdown server for the whole session."""
    with memory_serve(MARKDOWN_CONFIG) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[MemoryClient]:
    """A blocking client of the session's server."""
    with MemoryClient(server.url) as memory:
        yield memory


@pytest.fixture(scope="session", params=BACKENDS)
def each_backend(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A server on each storage backend in turn (markdown, PostgreSQL, Redis), each shared by
    the session: tests keep apart by ids of their own."""
    with backend_config(request.param) as config, memory_serve(config) as running:
        yield running


@pytest.fixture(params=["sync", "async"])
def metis_store(
    request: pytest.FixtureRequest, each_backend: Server, tmp_path: Path
) -> Iterator[MemoryStore]:
    """A Metis store, blocking and then asyncio, on each backend: a workspace of its own (so
    a personality of its own) and a user of its own, with Metis's caps."""
    store = make_store(request.param, tmp_path, base_url=each_backend.url, user=unique("user"))
    try:
        yield store
    finally:
        store.close()


def new_key() -> str:
    """A fresh API key, as ``memory key new`` makes them."""
    return f"amk_{secrets.token_hex(32)}"


def key_sha256(key: str) -> str:
    """What ``[serve.keys]`` stores of ``key``."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Keys:
    """The keys of the keyed server."""

    admin: str
    writer: str
    reader: str
    alice_only: str


@dataclass(frozen=True)
class KeyedServer:
    server: Server
    keys: Keys


@pytest.fixture(scope="session")
def keyed_server() -> Iterator[KeyedServer]:
    """A server with API keys: an admin token, a read+write key, a read key, and a read key
    restricted to user ``alice``."""
    keys = Keys(*(new_key() for _ in range(4)))

    config = f"""
[providers.files]
kind = "markdown"
root = "root"
default_provider = "files"

[serve.keys]
writer = {{ sha256 = "{key_sha256(keys.writer)}", scopes = ["read", "write"] }}
reader = {{ sha256 = "{key_sha256(keys.reader)}", scopes = ["read"] }}
alice-reader = {{ sha256 = "{key_sha256(keys.alice_only)}", scopes = ["read"], users = ["alice"] }}
"""
    # default_provider must come before the tables in TOML; keep it first.
    config = 'default_provider = "files"\n' + config.replace('default_provider = "files"\n', "")
    with memory_serve(config, env={"MEMORY_SERVE_TOKEN": keys.admin}) as running:
        yield KeyedServer(running, keys)


@dataclass(frozen=True)
class McpKeys:
    """The keys of the keyed server for ``/mcp``."""

    admin: str
    """The admin token (``MEMORY_SERVE_TOKEN``)."""
    reader: str
    """Scope read."""
    writer: str
    """Scopes read and write, unrestricted."""
    write_only: str
    """Scope write alone."""
    metrics_only: str
    """Scope metrics alone: neither read nor write."""
    ada_alice: str
    """Read and write, restricted to personality ``ada`` and user ``alice``."""
    alice_two_personalities: str
    """Read and write, restricted to user ``alice`` and personalities ``ada`` and ``other``."""
    ada_two_users: str
    """Read and write, restricted to personality ``ada`` and users ``alice`` and ``bob``."""


@dataclass(frozen=True)
class McpKeyedServer:
    server: Server
    keys: McpKeys


@pytest.fixture(scope="session")
def mcp_keyed_server() -> Iterator[McpKeyedServer]:
    """A markdown server with API keys for the ``/mcp`` tests (:class:`McpKeys`); ``ada`` is on a
    vector provider, so her tools include ``memory_search``."""
    keys = McpKeys(*(new_key() for _ in fields(McpKeys)))

    config = f"""default_provider = "files"

[providers.files]
kind = "markdown"
root = "root"

[providers.recall]
kind = "vector"
source = "files"
model_dir = "{model_dir()}"

[personalities.ada]
provider = "recall"

[serve.keys.reader]
sha256 = "{key_sha256(keys.reader)}"
scopes = ["read"]

[serve.keys.writer]
sha256 = "{key_sha256(keys.writer)}"
scopes = ["read", "write"]

[serve.keys.write-only]
sha256 = "{key_sha256(keys.write_only)}"
scopes = ["write"]

[serve.keys.metrics-only]
sha256 = "{key_sha256(keys.metrics_only)}"
scopes = ["metrics"]

[serve.keys.ada-alice]
sha256 = "{key_sha256(keys.ada_alice)}"
scopes = ["read", "write"]
personalities = ["ada"]
users = ["alice"]

[serve.keys.alice-two-personalities]
sha256 = "{key_sha256(keys.alice_two_personalities)}"
scopes = ["read", "write"]
personalities = ["ada", "other"]
users = ["alice"]

[serve.keys.ada-two-users]
sha256 = "{key_sha256(keys.ada_two_users)}"
scopes = ["read", "write"]
personalities = ["ada"]
users = ["alice", "bob"]
"""
    with memory_serve(config, env={"MEMORY_SERVE_TOKEN": keys.admin}) as running:
        yield McpKeyedServer(running, keys)
