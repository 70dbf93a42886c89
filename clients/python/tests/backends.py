"""memory.toml for each storage backend, each in a schema or key prefix of its own, removed
afterwards where the server's command-line tool is at hand."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

BACKENDS = ("markdown", "postgres", "redis")


def service_url(variable: str) -> str | None:
    """A backend server's URL from the environment; without one the test fails, or skips
    (noted in ``$MEMORY_SKIPPED_LOG`` for scripts/test to list) when
    ``MEMORY_SKIP_MISSING_SERVICES=1``."""
    url = os.environ.get(variable)
    if url:
        return url
    why = f"{variable} is not set"
    if os.environ.get("MEMORY_SKIP_MISSING_SERVICES") != "1":
        pytest.fail(
            f"{why}: start the server (scripts/services.sh), or set "
            "MEMORY_SKIP_MISSING_SERVICES=1 to skip its tests"
        )
    log = os.environ.get("MEMORY_SKIPPED_LOG")
    if log:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"clients/python {test}: {why}\n")
    pytest.skip(why)


@contextmanager
def backend_config(backend: str) -> Iterator[str]:
    """The text of a memory.toml whose default provider is ``backend``."""
    name = f"pyclient_{uuid.uuid4().hex[:12]}"
    if backend == "markdown":
        yield 'default_provider = "main"\n\n[providers.main]\nkind = "markdown"\nroot = "root"\n'
    elif backend == "postgres":
        url = service_url("MEMORY_TEST_POSTGRES_URL")
        assert url is not None
        try:
            yield (
                'default_provider = "main"\n\n[providers.main]\nkind = "postgres"\n'
                f'url = "{url}"\nschema = "{name}"\n'
            )
        finally:
            if shutil.which("psql"):
                subprocess.run(
                    [
                        "psql",
                        "-w",
                        url.split("?")[0],
                        "-qc",
                        f"DROP SCHEMA IF EXISTS {name} CASCADE",
                    ],
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
    elif backend == "redis":
        url = service_url("MEMORY_TEST_REDIS_URL")
        assert url is not None
        try:
            yield (
                'default_provider = "main"\n\n[providers.main]\nkind = "redis"\n'
                f'url = "{url}"\nprefix = "{name}"\n'
            )
        finally:
            if shutil.which("redis-cli"):
                keys = subprocess.run(
                    ["redis-cli", "-u", url, "--scan", "--pattern", f"*{name}*"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                ).stdout.split()
                if keys:
                    subprocess.run(
                        ["redis-cli", "-u", url, "DEL", *keys],
                        capture_output=True,
                        timeout=30,
                        check=False,
                    )
    else:
        raise ValueError(f"unknown backend {backend!r}")
