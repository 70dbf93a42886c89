"""A stand-in for Anthropic's Messages API on loopback, for the README's memory tool examples:
the SDK reaches it through ``ANTHROPIC_BASE_URL``, as it would reach Anthropic. Asked without a
tool result it answers with one ``tool_use`` of the memory tool; asked with one (the tool's
answer sent back) it ends the turn. It keeps every request, so a test can check what the SDK
sent back.

It holds message threads as the API does (the SDK's tool runner uses them): a request with
``thread: {"type": "create"}`` starts one, and ``{"type": "continue", "previous_message_id": ...}``
sends only the new messages, the tools and history being the thread's. An unknown or already
continued id is refused with the API's ``error.details.error_code``, which the SDK recovers from
by sending the whole conversation again."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeMessagesApi:
    """What the fake model does, and what it was asked."""

    #: The memory tool command of its one ``tool_use``.
    tool_input: dict[str, Any]
    #: The text of its final, ``end_turn`` message.
    final_text: str
    #: For ``ANTHROPIC_BASE_URL``, once started.
    base_url: str = ""
    #: Every request to ``/v1/messages`` (the JSON bodies), in order.
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: The ids of the ``tool_use`` blocks it answered with, in order.
    tool_use_ids: list[str] = field(default_factory=list)
    #: The threads it holds, by the id of the reply each ends at.
    threads: dict[str, _Thread] = field(default_factory=dict)

    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks the requests carried."""
        return [
            block
            for request in self.requests
            for message in request.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]

    def answer(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for one request."""
        if path.split("?")[0] != "/v1/messages":
            return _refusal(404, f"no route {path}")
        try:
            request = json.loads(body)
        except ValueError:
            return _refusal(400, "the body is not JSON")
        self.requests.append(request)
        if request.get("stream"):
            return _refusal(400, "streaming is not played")
        # The conversation so far: the thread's, continued with this request's messages, or the
        # request's own.
        tools = request.get("tools") or []
        messages = request.get("messages") or []
        thread = request.get("thread")
        if thread is not None and thread.get("type") == "continue":
            previous = thread.get("previous_message_id", "")
            held = self.threads.get(previous)
            if held is None:
                return _refusal(404, f"no thread ends at {previous}", "thread_not_found")
            if held.continued:
                why = f"the thread at {previous} was continued already"
                return _refusal(409, why, "thread_already_continued")
            held.continued = True
            tools, messages = held.tools, [*held.messages, *messages]
        elif thread is not None and thread.get("type") != "create":
            return _refusal(400, f"unknown thread type {thread.get('type')!r}")
        if not any(t.get("type") == "memory_20250818" and t.get("name") == "memory" for t in tools):
            return _refusal(400, "the request offers no memory tool (memory_20250818)")
        last = messages[-1] if messages else {}
        content = last.get("content")
        answered = isinstance(content, list) and any(
            block.get("type") == "tool_result" for block in content
        )
        reply: list[dict[str, Any]]
        if last.get("role") == "user" and answered:
            reply, stop_reason = [{"type": "text", "text": self.final_text}], "end_turn"
        else:
            tool_use_id = f"toolu_fake_{len(self.tool_use_ids) + 1}"
            self.tool_use_ids.append(tool_use_id)
            tool_use = {"type": "tool_use", "id": tool_use_id, "name": "memory"}
            reply, stop_reason = [{**tool_use, "input": self.tool_input}], "tool_use"
        message_id = f"msg_fake_{len(self.requests)}"
        if thread is not None:
            history = [*messages, {"role": "assistant", "content": reply}]
            self.threads[message_id] = _Thread(tools, history)
        return 200, {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-fake"),
            "content": reply,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }


@dataclass
class _Thread:
    """A thread the fake holds: its tools and its conversation up to its last reply."""

    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    continued: bool = False


def _refusal(status: int, why: str, error_code: str | None = None) -> tuple[int, dict[str, Any]]:
    # Anthropic's error shape, so the SDK raises it with the message in view.
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    error: dict[str, Any] = {"type": kind, "message": f"fake Messages API: {why}"}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return status, {"type": "error", "error": error}


@contextmanager
def fake_messages_api(tool_input: dict[str, Any], final_text: str) -> Iterator[FakeMessagesApi]:
    """Serves a :class:`FakeMessagesApi` on 127.0.0.1 and a free port until the block ends."""
    api = FakeMessagesApi(tool_input=tool_input, final_text=final_text)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            status, body = api.answer(self.path, self.rfile.read(length))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the test reports what matters

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
