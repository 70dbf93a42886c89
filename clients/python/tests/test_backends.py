"""Exactly-once writes through lost replies, and the turn cycle, on every storage backend:
16 concurrent clients add entries through a proxy that drops every third reply; afterwards
every acknowledged add is in the document exactly once, and nothing else is."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from agent_memory import Add, AsyncMemoryClient, MemoryClient, SyncReport, personality_memory
from backends import BACKENDS, backend_config
from dropping_proxy import DroppingProxy
from memory_server import memory_serve

CLIENTS = 16
ADDS_PER_CLIENT = 8


def _entry(run: str, client: int, n: int) -> str:
    return f"entry {run} c{client:02d} n{n:02d}"


def _adds_sync(url: str, personality: str, run: str) -> list[tuple[str, SyncReport]]:
    def one_client(index: int) -> list[tuple[str, SyncReport]]:
        done = []
        with MemoryClient(url, max_retries=4) as memory:
            for n in range(ADDS_PER_CLIENT):
                entry = _entry(run, index, n)
                done.append((entry, memory.sync(personality, "grace", [Add("memory", entry)])))
        return done

    with ThreadPoolExecutor(CLIENTS) as pool:
        return [acked for acks in pool.map(one_client, range(CLIENTS)) for acked in acks]


def _adds_async(url: str, personality: str, run: str) -> list[tuple[str, SyncReport]]:
    async def one_client(index: int) -> list[tuple[str, SyncReport]]:
        done = []
        async with AsyncMemoryClient(url, max_retries=4) as memory:
            for n in range(ADDS_PER_CLIENT):
                entry = _entry(run, index, n)
                report = await memory.sync(personality, "grace", [Add("memory", entry)])
                done.append((entry, report))
        return done

    async def all_clients() -> list[tuple[str, SyncReport]]:
        results = await asyncio.gather(*(one_client(i) for i in range(CLIENTS)))
        return [acked for acks in results for acked in acks]

    return asyncio.run(all_clients())


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_acknowledged_add_lands_exactly_once_through_lost_replies(
    backend: str, flavour: str
) -> None:
    run = uuid.uuid4().hex[:8]
    with backend_config(backend) as config, memory_serve(config) as server:
        address = urlsplit(server.url)
        assert address.hostname is not None and address.port is not None
        with DroppingProxy((address.hostname, address.port), drop_every=3) as proxy:
            adds = _adds_sync if flavour == "sync" else _adds_async
            acknowledged = adds(proxy.url, "ada", run)

        with MemoryClient(server.url) as direct:
            text = direct.documents.get(personality_memory("ada")).text

    assert len(acknowledged) == CLIENTS * ADDS_PER_CLIENT
    for entry, _ in acknowledged:
        assert text.count(entry) == 1, f"{entry!r} is in the document {text.count(entry)} times"
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    assert len(paragraphs) == len(acknowledged), "the document holds entries nobody added"

    # Replies were lost, and a lost reply's resend was answered by a replay, not a new write.
    assert proxy.stats.dropped >= len(acknowledged) // 4
    assert any(count == 2 for count in proxy.stats.dropped_by_key.values())
    replayed = sum(1 for _, report in acknowledged if report.documents[0].replayed)
    assert replayed == len(proxy.stats.dropped_by_key)


@pytest.mark.parametrize("backend", BACKENDS)
def test_turn_cycle_on_each_backend(backend: str) -> None:
    with (
        backend_config(backend) as config,
        memory_serve(config) as server,
        MemoryClient(server.url) as memory,
    ):
        seen = memory.prefetch("ada", "grace")
        assert seen.context is None
        assert seen.personality.kind == backend
        report = memory.sync(
            "ada",
            "grace",
            [Add("user", "Name: Grace."), Add("memory", "Planning a trip to Kyoto in May.")],
            if_match=seen.if_match,
        )
        assert all(doc.written for doc in report.documents)
        after = memory.prefetch("ada", "grace")
        assert after.context == (
            "## About You\n\nName: Grace.\n\n## Memory\n\nPlanning a trip to Kyoto in May."
        )
        assert after.memory.version == report.documents[0].version_after
        revisions = memory.history.list(personality_memory("ada"))
        assert [r.number for r in revisions.revisions] == [1]
        assert memory.ready().ok
