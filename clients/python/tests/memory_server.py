"""Starts a real ``memory serve`` for the tests: a fresh temp root and memory.toml, a free
loopback port, and SIGTERM at the end."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

STARTUP_TIMEOUT = 60.0


def memory_bin() -> str:
    """The ``memory`` binary: ``$MEMORY_BIN``, else the workspace's debug build."""
    explicit = os.environ.get("MEMORY_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR") or str(
        Path.home() / ".cache" / "agent-memory" / "target"
    )
    return str(Path(target) / "debug" / "memory")


def model_dir() -> str:
    """The default embedding model for recall (multilingual-e5-small):
    ``$MEMORY_E5_MODEL_DIR``, else where ``scripts/provision-model`` puts it."""
    return os.environ.get("MEMORY_E5_MODEL_DIR") or str(
        Path.home() / ".cache" / "agent-memory" / "models" / "multilingual-e5-small"
    )


def unique(prefix: str) -> str:
    """A fresh id, so tests sharing a server never touch each other's documents."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class Server:
    """A running ``memory serve``."""

    url: str
    root: Path
    process: subprocess.Popen[str]

    def stderr(self) -> str:
        log = self.root / "serve.stderr"
        return log.read_text(errors="replace") if log.exists() else ""


@contextmanager
def memory_serve(
    config: str,
    *,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    """Runs ``memory serve --port 0`` on ``config`` (the text of a memory.toml, in a fresh
    temp dir that relative roots resolve against) until the block ends."""
    binary = memory_bin()
    if not os.access(binary, os.X_OK):
        pytest.fail(
            f"no memory binary at {binary}: build it (cargo build --workspace) or set MEMORY_BIN"
        )
    root = Path(tempfile.mkdtemp(prefix="agent-memory-py-"))
    (root / "memory.toml").write_text(config)
    stderr = (root / "serve.stderr").open("w")
    process = subprocess.Popen(
        [binary, "serve", "--port", "0", *args],
        cwd=root,
        env={**os.environ, "MEMORY_CONFIG": str(root / "memory.toml"), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        server = Server(url=_wait_for_page_line(process, root), root=root, process=process)
        yield server
    finally:
        _stop(process)
        stderr.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_page_line(process: subprocess.Popen[str], root: Path) -> str:
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    try:
        line = lines.get(timeout=STARTUP_TIMEOUT)
    except queue.Empty:
        line = ""
    prefix = "Memory page: "
    if not line.startswith(prefix):
        _stop(process)
        log = (root / "serve.stderr").read_text(errors="replace")
        pytest.fail(f"memory serve did not start (first line {line!r}); stderr:\n{log}")
    return line[len(prefix) :].strip().rstrip("/")


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
