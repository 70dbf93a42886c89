"""A ``memory serve`` on a Metis workspace (the markdown provider's ``layout = "metis"``), the
login name both the store and that server take the user from, and one writer of the
concurrency test (run in a process of its own)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from agent_memory import Caps
from agent_memory.metis import MemoryFile, MemoryStore
from memory_server import Server, memory_serve

START_TIMEOUT = 60.0


@contextmanager
def metis_workspace_server(workspace: Path, **table: str) -> Iterator[Server]:
    """A server whose one provider is the Metis workspace ``workspace`` (its documents in
    ``<workspace>/.metis/``), with ``table``'s extra keys (``personality``, ``user``)."""
    keys = {"kind": "markdown", "root": str(workspace), "layout": "metis", **table}
    provider = "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())
    with memory_serve(
        f'default_provider = "workspace"\n\n[providers.workspace]\n{provider}'
    ) as server:
        yield server


def log_in_as(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Makes ``name`` the login name of this process and of the servers it starts from now
    on: ``LOGNAME``, which both ``getpass.getuser()`` and the server read first."""
    monkeypatch.setenv("LOGNAME", name)


def concurrent_entry(writer: int, n: int) -> str:
    """The ``n``-th entry of writer ``writer``: unique, multibyte."""
    return f"writer {writer:02d} entry {n:03d}: ünïcode 日本 🎉"


def add_entries(
    base_url: str, workspace: str, user: str, writer: int, count: int, start: Barrier
) -> None:
    """Adds ``count`` entries to the workspace's MEMORY.md, starting with the other writers
    (``start``), with no caps of the store's own so none is refused."""
    uncapped = {MemoryFile.MEMORY: Caps(soft=None, hard=None)}
    with MemoryStore(workspace, base_url=base_url, user=user, caps=uncapped) as store:
        start.wait(timeout=START_TIMEOUT)
        for n in range(count):
            store.add_entry(MemoryFile.MEMORY, concurrent_entry(writer, n))
