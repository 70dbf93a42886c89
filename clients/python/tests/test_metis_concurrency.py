"""What the service adds over Metis's single-writer files (its specification's invariant 6
leaves concurrent writers open): 8 processes adding to one workspace's MEMORY.md through the
Metis store at once lose nothing, on each backend."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from agent_memory.metis import MemoryFile, MemoryStore
from memory_server import Server, unique
from metis_support import START_TIMEOUT, add_entries, concurrent_entry

WRITERS = 8
ENTRIES = 20
FINISH_TIMEOUT = 120.0


def test_eight_processes_adding_at_once_lose_nothing(each_backend: Server, tmp_path: Path) -> None:
    user = unique("user")
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(WRITERS)
    writers = [
        spawn.Process(
            target=add_entries,
            args=(each_backend.url, str(tmp_path), user, writer, ENTRIES, start),
        )
        for writer in range(WRITERS)
    ]
    try:
        for process in writers:
            process.start()
        for process in writers:
            process.join(timeout=START_TIMEOUT + FINISH_TIMEOUT)
        assert [process.exitcode for process in writers] == [0] * WRITERS
    finally:
        for process in writers:
            if process.is_alive():
                process.kill()
                process.join()

    with MemoryStore(tmp_path, base_url=each_backend.url, user=user) as store:
        text = store.read(MemoryFile.MEMORY)
    entries = text.removesuffix("\n").split("\n\n")
    expected = [concurrent_entry(w, n) for w in range(WRITERS) for n in range(ENTRIES)]
    assert sorted(entries) == sorted(expected)  # every entry once, and nothing else
    # Each writer's entries in the order it added them.
    for writer in range(WRITERS):
        own = [entry for entry in entries if entry.startswith(f"writer {writer:02d} ")]
        assert own == [concurrent_entry(writer, n) for n in range(ENTRIES)]
