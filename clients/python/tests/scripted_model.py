"""Plays the model for the Anthropic SDK: a transport that answers each Messages request with
the next scripted assistant message, so the SDK's tool runner runs with no network call."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from memory_server import unique


def assistant_message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """An assistant message of the Messages API, as JSON."""
    return {
        "id": f"msg_{unique('m')}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


class ScriptedModel:
    """Plays the model: answers each Messages request with the next scripted message, and
    keeps the requests (where the runner puts the tool results)."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        return httpx2.Response(200, json=self.replies[len(self.requests) - 1])

    def tool_results(self) -> list[dict[str, Any]]:
        return [
            block
            for request in self.requests
            for message in request["messages"]
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
