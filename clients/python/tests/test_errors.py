"""Each kind of error the API answers here, raised as its class with the problem document; and
the client's own: a server that cannot be reached, a malformed document path."""

from __future__ import annotations

import fcntl
import socket
import uuid
from collections.abc import Iterator

import pytest

from agent_memory import (
    Add,
    AgentMemoryError,
    BusyError,
    ConflictError,
    ConnectionFailedError,
    Edit,
    ForbiddenError,
    IfMatch,
    InvalidInputError,
    MemoryClient,
    NotFoundError,
    OutcomeUnknownError,
    PreconditionFailedError,
    RefusedError,
    UnauthorizedError,
    UnavailableError,
    personality_memory,
    user_profile,
)
from blocking import make_client
from conftest import CAPPED_HARD, KeyedServer
from memory_server import Server, memory_serve, model_dir, unique


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Each test runs once with the blocking client and once with the asyncio one."""
    param: str = request.param
    return param


@pytest.fixture
def memory(flavour: str, server: Server) -> Iterator[MemoryClient]:
    client = make_client(flavour, server.url)
    try:
        yield client
    finally:
        client.close()


def test_invalid_input_carries_its_problem_document(memory: MemoryClient) -> None:
    with pytest.raises(InvalidInputError) as caught:
        memory.prefetch("not an id!", "grace")
    error = caught.value
    assert error.status == 400 and error.kind == "invalid-input"
    assert error.problem is not None
    assert error.problem.type == "urn:agent-memory:problem:invalid-input"
    assert "not an id!" in error.problem.detail
    assert not error.problem.retryable
    assert error.code == error.problem.code == "invalid-id"
    assert error.idempotency_key is None
    assert isinstance(error, AgentMemoryError)

    # A blank entry is refused as input, with the key it was sent with.
    with pytest.raises(InvalidInputError) as blank:
        memory.sync(unique("ada"), "grace", [Add("memory", "   ")], idempotency_key="blank-1")
    assert blank.value.idempotency_key == "blank-1"

    # A replace without a guard does not exist in this client; an empty update list is fine,
    # an unknown update shape is not.
    with pytest.raises(InvalidInputError):
        memory.sync(unique("ada"), "grace", [{"action": "shout", "store": "memory"}])


def test_a_malformed_document_path_is_refused_before_sending(memory: MemoryClient) -> None:
    for path in ["personalities/../MEMORY.md", "users/grace/MEMORY.md", "/etc/passwd", ""]:
        with pytest.raises(ValueError, match="not a document path"):
            memory.documents.get(path)


def test_not_found(memory: MemoryClient) -> None:
    with pytest.raises(NotFoundError) as caught:
        memory.identities.resolve(unique("nowhere"), "1")
    assert caught.value.status == 404 and caught.value.kind == "not-found"
    # A problem only HTTP has carries no code.
    assert caught.value.code is None

    ada = unique("ada")
    memory.sync(ada, "grace", [Add("memory", "One.")])
    with pytest.raises(NotFoundError):
        memory.history.get(personality_memory(ada), 99)


def test_precondition_failed_on_a_stale_if_match_carries_the_current_version(
    memory: MemoryClient,
) -> None:
    grace = unique("grace")
    path = user_profile(grace)
    read = memory.documents.get(path)
    memory.documents.replace(path, "First.", if_match=read.version)
    now = memory.documents.get(path)

    with pytest.raises(PreconditionFailedError) as caught:
        memory.documents.replace(path, "Second.", if_match=read.version)
    error = caught.value
    assert error.status == 412 and error.code == "stale-version"
    assert error.current_version == now.version
    assert error.document == path
    assert memory.documents.get(path).text == "First.\n"

    with pytest.raises(PreconditionFailedError) as stale_sync:
        memory.sync(unique("ada"), grace, [Add("user", "x")], if_match=IfMatch(user=read.version))
    assert stale_sync.value.code == "stale-version"
    with pytest.raises(PreconditionFailedError):
        memory.documents.update(path, [Add("user", "x")], if_match=read.version)
    with pytest.raises(PreconditionFailedError):
        memory.history.revert(path, 1, if_match=read.version)
    # The current version from the error is what a retry takes.
    memory.documents.replace(path, "Second.", if_match=error.current_version or "")
    assert memory.documents.get(path).text == "Second.\n"


def test_conflict_when_an_identity_is_taken(memory: MemoryClient) -> None:
    platform = unique("chat")
    memory.identities.link(platform, "42", "alice")
    with pytest.raises(ConflictError) as caught:
        memory.identities.link(platform, "42", "bob")
    assert caught.value.status == 409 and caught.value.kind == "conflict"
    assert caught.value.code == "identity-taken"
    assert memory.identities.resolve(platform, "42").user == "alice"


def test_refusals_tell_which_by_their_code(memory: MemoryClient) -> None:
    grace = unique("grace")
    with pytest.raises(RefusedError) as over_cap:
        memory.sync("capped", grace, [Add("memory", "x" * (CAPPED_HARD + 1))])
    assert over_cap.value.status == 422 and over_cap.value.code == "hard-cap-exceeded"
    assert f"hard cap of {CAPPED_HARD}" in over_cap.value.detail

    ada = unique("ada")
    memory.sync(ada, grace, [Add("memory", "tea, then more tea.")])
    with pytest.raises(RefusedError) as missing:
        memory.sync(ada, grace, [Edit("memory", "coffee", "water")])
    assert missing.value.kind == "refused" and missing.value.code == "no-match"
    with pytest.raises(RefusedError) as twice:
        memory.sync(ada, grace, [Edit("memory", "tea", "water")])
    assert twice.value.code == "ambiguous-match"
    assert memory.documents.get(personality_memory(ada)).text == "tea, then more tea.\n"


def test_an_idempotency_key_reused_for_another_request_is_refused(memory: MemoryClient) -> None:
    ada, key = unique("ada"), str(uuid.uuid4())
    memory.sync(ada, "grace", [Add("memory", "First.")], idempotency_key=key)
    with pytest.raises(RefusedError) as caught:
        memory.sync(ada, "grace", [Add("memory", "Other.")], idempotency_key=key)
    assert caught.value.code == "key-reused"
    assert caught.value.idempotency_key == key

    # The same on another route: a key names one write, whatever it is.
    path = user_profile(unique("grace"))
    with pytest.raises(RefusedError) as elsewhere:
        memory.documents.replace(path, "Other.", if_match="*", idempotency_key=key)
    assert elsewhere.value.code == "key-reused"


def test_unauthorized_and_forbidden_with_keys(flavour: str, keyed_server: KeyedServer) -> None:
    url, keys = keyed_server.server.url, keyed_server.keys
    anonymous = make_client(flavour, url)
    wrong = make_client(flavour, url, api_key="amk_" + "0" * 64)
    reader = make_client(flavour, url, api_key=keys.reader)
    alice_only = make_client(flavour, url, api_key=keys.alice_only)
    writer = make_client(flavour, url, api_key=keys.writer)
    admin = make_client(flavour, url, api_key=keys.admin)
    try:
        with pytest.raises(UnauthorizedError) as no_key:
            anonymous.prefetch("ada", "alice")
        assert no_key.value.status == 401 and no_key.value.kind == "unauthorized"
        assert no_key.value.code is None
        with pytest.raises(UnauthorizedError):
            wrong.documents.get(user_profile("alice"))
        # Health is public.
        assert anonymous.health().ok

        assert reader.prefetch("ada", "alice").context is None
        with pytest.raises(ForbiddenError) as no_scope:
            reader.sync("ada", "alice", [Add("user", "Nope.")])
        assert no_scope.value.status == 403 and no_scope.value.kind == "forbidden"

        writer.sync("ada", "bob", [Add("user", "Bob.")])
        with pytest.raises(ForbiddenError):
            alice_only.documents.get(user_profile("bob"))
        assert alice_only.documents.get(user_profile("alice")).text == ""
        assert [u.id for u in alice_only.directory.iterate_users()] in ([], ["alice"])

        # Purge and identity links are an admin's.
        with pytest.raises(ForbiddenError):
            writer.documents.purge(user_profile("bob"))
        with pytest.raises(ForbiddenError):
            writer.identities.link("chat", "1", "bob")
        assert admin.identities.link("chat", "1", "bob").user == "bob"
        assert admin.documents.purge(user_profile("bob")).bytes > 0
    finally:
        for client in (anonymous, wrong, reader, alice_only, writer, admin):
            client.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unavailable_when_a_provider_is_down(flavour: str) -> None:
    config = f"""
default_provider = "files"

[providers.files]
kind = "markdown"
root = "root"

[providers.down]
kind = "postgres"
url = "postgres://postgres@127.0.0.1:{_closed_port()}/none?sslmode=disable"
deadline_ms = 300
connect_timeout_ms = 300

[personalities.stranded]
provider = "down"
"""
    with memory_serve(config) as running:
        client = make_client(flavour, running.url, max_retries=1)
        try:
            with pytest.raises(UnavailableError) as caught:
                client.prefetch("stranded", "grace")
            error = caught.value
            assert error.status == 503 and error.kind == "unavailable"
            assert error.code == "unavailable"
            assert error.problem is not None and error.problem.retryable
            # The other providers are still served, and readiness says which one is down.
            assert client.prefetch("elsewhere", "grace").context is None
            ready = client.ready()
            assert not ready.ok and ready.status == "degraded"
            down = next(p for p in ready.providers if p.name == "down")
            assert not down.ready and down.error
        finally:
            client.close()


def test_busy_and_outcome_unknown_past_the_request_timeout(flavour: str) -> None:
    config = f"""
default_provider = "files"

[serve]
request_timeout_ms = 1

[providers.files]
kind = "markdown"
root = "root"

[providers.recall]
kind = "vector"
source = "files"
model_dir = "{model_dir()}"

[personalities.recaller]
provider = "recall"
"""
    with memory_serve(config) as running:
        impatient = make_client(flavour, running.url, max_retries=0)
        patient = make_client(flavour, running.url)
        try:
            # A read that runs out of time is busy: nothing happened, retry later.
            with pytest.raises(BusyError) as busy:
                impatient.prefetch("recaller", "grace", query="anything about trips")
            assert busy.value.status == 503 and busy.value.kind == "busy"

            # A write that runs out of time goes on without its reply: outcome unknown...
            # The document's lock is held meanwhile, as another writer would: a markdown write
            # alone can finish within the 1 ms.
            ada = unique("ada")
            lock = running.root / "root" / "personalities" / ada / ".MEMORY.md.lock"
            lock.parent.mkdir(parents=True)
            with lock.open("a") as held:
                fcntl.flock(held, fcntl.LOCK_EX)
                with pytest.raises(OutcomeUnknownError) as unknown:
                    impatient.sync(ada, "grace", [Add("memory", "Landed once.")])
            key = unknown.value.idempotency_key
            assert unknown.value.status == 504 and key is not None
            # ...and repeating it with its key learns that it landed, without a second copy.
            repeat = patient.sync(
                ada, "grace", [Add("memory", "Landed once.")], idempotency_key=key
            )
            assert repeat.documents[0].replayed
            # A client that resends by itself lands a write once through the same timeouts.
            patient.sync(ada, "grace", [Add("memory", "Also once.")])
            text = patient.documents.get(personality_memory(ada)).text
            assert text.count("Landed once.") == 1 and text.count("Also once.") == 1
        finally:
            impatient.close()
            patient.close()


def test_connection_failed_when_nothing_answers(flavour: str) -> None:
    client = make_client(flavour, f"http://127.0.0.1:{_closed_port()}", max_retries=2)
    try:
        with pytest.raises(ConnectionFailedError) as read:
            client.health()
        assert read.value.problem is None and read.value.status is None
        assert read.value.code is None
        with pytest.raises(ConnectionFailedError) as write:
            client.sync("ada", "grace", [Add("memory", "x")], idempotency_key="lost-1")
        assert write.value.idempotency_key == "lost-1"
        assert "lost-1" in str(write.value)
    finally:
        client.close()


def test_client_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="base_url"):
        MemoryClient("localhost:8700")
    with pytest.raises(ValueError, match="max_retries"):
        MemoryClient(max_retries=-1)
    with pytest.raises(ValueError, match="api_key"):
        MemoryClient(api_key="")
