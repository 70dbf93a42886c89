"""Runs the asyncio client through the blocking client's surface (and the asyncio Metis store
through the blocking store's), so one scenario exercises both: every coroutine the async
object returns is awaited on one event loop, and every async iterator is drained into a
list."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from os import PathLike
from typing import Any, cast

from agent_memory import AsyncMemoryClient, MemoryClient
from agent_memory.metis import AsyncMemoryStore, AsyncMemoryTools, MemoryStore, MemoryTools


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


class BlockingAsyncStore(_Blocking):
    """An :class:`AsyncMemoryStore` driven from blocking code; close it when done."""

    def __init__(self, workspace: str | PathLike[str], **kwargs: Any) -> None:
        runner = asyncio.Runner()
        store = runner.run(_make_store(workspace, kwargs))
        super().__init__(store, runner)
        self._store = store

    def tools(self) -> MemoryTools:
        """The store's :class:`AsyncMemoryTools`, driven from blocking code."""
        return cast(MemoryTools, _Blocking(AsyncMemoryTools(self._store), self._runner))

    def close(self) -> None:
        self._runner.run(self._store.aclose())
        self._runner.close()


async def _make_store(workspace: str | PathLike[str], kwargs: dict[str, Any]) -> AsyncMemoryStore:
    return AsyncMemoryStore(workspace, **kwargs)


def make_store(flavour: str, workspace: str | PathLike[str], **kwargs: Any) -> MemoryStore:
    """A blocking Metis store (``sync``) or an asyncio one behind the same surface
    (``async``)."""
    if flavour == "sync":
        return MemoryStore(workspace, **kwargs)
    return cast(MemoryStore, BlockingAsyncStore(workspace, **kwargs))


def memory_tools(store: MemoryStore) -> MemoryTools:
    """The memory tools of a store from :func:`make_store`, of its flavour."""
    if isinstance(store, BlockingAsyncStore):
        return store.tools()
    return MemoryTools(store)
