"""When a request is sent again and how long the client waits first, and what an answer that is
not the API's becomes: checked on scripted transports (``httpx.MockTransport``), since a real
server does not misbehave on cue."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from agent_memory import (
    Add,
    MemoryClient,
    OutcomeUnknownError,
    UnavailableError,
    UnexpectedResponseError,
    _core,
)

CALL = _core.health()
WRITE = _core.sync("ada", "grace", [Add("memory", "x")], None, None, None, "key-1", None)


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {})


def test_lost_replies_and_overload_are_resent_with_backoff() -> None:
    for status in (502, 503, 504):
        delay = _core.resend_delay(WRITE, 0, 4, response(status))
        assert delay is not None and 0.05 <= delay <= 0.1
    later = _core.resend_delay(CALL, 3, 4, response(503))
    assert later is not None and 0.4 <= later <= 0.8
    capped = _core.resend_delay(CALL, 30, 40, response(503))
    assert capped is not None and capped <= 5.0
    for error in (
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        httpx.ReadError("reset"),
    ):
        assert _core.resend_delay(WRITE, 0, 4, error) is not None
    assert _core.resend_delay(WRITE, 0, 4, httpx.RemoteProtocolError("closed")) is not None


def test_nothing_is_resent_past_max_retries_or_for_final_answers() -> None:
    assert _core.resend_delay(WRITE, 4, 4, response(503)) is None
    assert _core.resend_delay(WRITE, 0, 0, httpx.ConnectError("refused")) is None
    for status in (200, 400, 401, 403, 404, 409, 412, 422, 500):
        assert _core.resend_delay(WRITE, 0, 4, response(status)) is None
    assert _core.resend_delay(CALL, 0, 4, httpx.UnsupportedProtocol("ftp")) is None
    # Readiness answers 503 as its result: not resent.
    assert _core.resend_delay(_core.ready(), 0, 4, response(503)) is None


def test_retry_after_is_honoured_in_seconds_or_as_a_date_up_to_a_minute() -> None:
    assert _core.resend_delay(CALL, 0, 4, response(503, {"Retry-After": "3"})) == 3.0
    assert _core.resend_delay(CALL, 0, 4, response(503, {"Retry-After": "7200"})) == 60.0
    soon = email.utils.formatdate(time.time() + 10, usegmt=True)
    delay = _core.resend_delay(CALL, 0, 4, response(503, {"Retry-After": soon}))
    assert delay is not None and 8.0 <= delay <= 10.0
    garbage = _core.resend_delay(CALL, 0, 4, response(503, {"Retry-After": "soon"}))
    assert garbage is not None and garbage <= 0.1


def test_the_same_key_is_sent_on_every_attempt_until_an_answer() -> None:
    seen: list[tuple[str | None, bytes]] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers.get("Idempotency-Key"), request.content))
        if len(seen) == 1:
            raise httpx.ReadError("connection reset")
        if len(seen) == 2:
            return httpx.Response(502, text="<html>bad gateway</html>")
        return httpx.Response(
            200,
            headers={"Idempotent-Replayed": "true"},
            json={"documents": [], "retries": 0, "warnings": []},
        )

    with MemoryClient(
        "http://memory.test", http_client=httpx.Client(transport=httpx.MockTransport(flaky))
    ) as memory:
        memory.sync("ada", "grace", [Add("memory", "x")])
    assert len(seen) == 3
    keys = {key for key, _ in seen}
    assert len(keys) == 1 and None not in keys
    assert len({body for _, body in seen}) == 1


def test_answers_that_are_not_the_apis_become_clear_errors() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/health":
            return httpx.Response(200, json={"status": "fine"})
        if request.url.path == "/v1/users":
            return httpx.Response(502, text="<html>bad gateway</html>")
        if request.url.path == "/v1/personalities":
            return httpx.Response(503, headers={"Retry-After": "0"}, text="overloaded")
        return httpx.Response(504, text="gateway timeout")

    client = httpx.Client(transport=httpx.MockTransport(answer))
    with MemoryClient("http://memory.test", max_retries=0, http_client=client) as memory:
        with pytest.raises(UnexpectedResponseError, match="does not match the API"):
            memory.health()
        with pytest.raises(UnexpectedResponseError, match="HTTP 502: <html>bad gateway"):
            memory.directory.users()
        with pytest.raises(UnavailableError, match="HTTP 503"):
            memory.directory.personalities()
        with pytest.raises(OutcomeUnknownError) as unknown:
            memory.sync("ada", "grace", [Add("memory", "x")], idempotency_key="k-9")
        assert unknown.value.idempotency_key == "k-9" and unknown.value.problem is None
    # A client given an httpx.Client leaves it open for its owner.
    assert not client.is_closed
    client.close()
