"""Runs the asyncio client through the blocking client's surface, so one scenario exercises
both: every coroutine the async client returns is awaited on one event loop, and every async
iterator is drained into a list."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, cast

from agent_memory import AsyncMemoryClient, MemoryClient


class _Blocking:
    def __init__(self, target: object, runner: asyncio.Runner) -> None:
        self._target = target
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            return self._blocking(value)
        if inspect.isasyncgenfunction(value):
            return self._draining(value)
        if callable(value) or name.startswith("_") or isinstance(value, str | int | float):
            return value
        return _Blocking(value, self._runner)

    def _blocking(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._runner.run(function(*args, **kwargs))

        return call

    def _draining(self, function: Callable[..., AsyncIterator[Any]]) -> Callable[..., Any]:
        async def drain(iterator: AsyncIterator[Any]) -> list[Any]:
            return [item async for item in iterator]

        def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
            return iter(self._runner.run(drain(function(*args, **kwargs))))

        return call


class BlockingAsyncClient(_Blocking):
    """An :class:`AsyncMemoryClient` driven from blocking code; close it when done."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        runner = asyncio.Runner()
        client = runner.run(_make(base_url, kwargs))
        super().__init__(client, runner)
        self._client = client

    def close(self) -> None:
        self._runner.run(self._client.aclose())
        self._runner.close()


async def _make(base_url: str, kwargs: dict[str, Any]) -> AsyncMemoryClient:
    # Built inside the loop, so its connections belong to the loop that will use them.
    return AsyncMemoryClient(base_url, **kwargs)


def make_client(flavour: str, base_url: str, **kwargs: Any) -> MemoryClient:
    """A blocking client (``sync``) or an asyncio one behind the same surface (``async``)."""
    if flavour == "sync":
        return MemoryClient(base_url, **kwargs)
    return cast(MemoryClient, BlockingAsyncClient(base_url, **kwargs))
