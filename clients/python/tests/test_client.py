"""Every call of both clients against a real ``memory serve`` (markdown): the turn cycle,
documents, history, identities, the directory, search and health."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agent_memory import (
    GLOBAL_MEMORY,
    Add,
    Budgets,
    Caps,
    ConflictError,
    Edit,
    IfMatch,
    MemoryClient,
    NotFoundError,
    PreconditionFailedError,
    RefusedError,
    Remove,
    Replace,
    personality_memory,
    personality_note,
    personality_notes,
    user_profile,
)
from blocking import make_client
from conftest import CAPPED_HARD
from memory_server import Server, unique


@pytest.fixture(params=["sync", "async"])
def memory(request: pytest.FixtureRequest, server: Server) -> Iterator[MemoryClient]:
    """Each test runs once with the blocking client and once with the asyncio one."""
    client = make_client(request.param, server.url)
    try:
        yield client
    finally:
        client.close()


def test_turn_cycle_prefetch_then_sync_guarded_by_its_versions(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")

    seen = memory.prefetch(ada, grace)
    assert seen.context is None
    assert seen.personality.id == ada
    assert seen.personality.kind == "markdown"
    assert seen.personality.scope == "per-personality"
    assert seen.memory.path == personality_memory(ada)
    assert seen.user.path == user_profile(grace)
    assert seen.memory.text == "" and seen.memory.modified is None
    assert seen.warnings == ()

    report = memory.sync(
        ada,
        grace,
        [Add("user", "Name: Grace."), {"action": "add", "store": "memory", "content": "Kyoto."}],
        if_match=seen.if_match,
        session="conversation-1",
    )
    assert [doc.store for doc in report.documents] == ["memory", "user"]
    memory_report = report.get("memory")
    assert memory_report is not None and memory_report.written
    assert memory_report.version_before == seen.memory.version
    assert memory_report.document.path == personality_memory(ada)
    assert not memory_report.replayed

    after = memory.prefetch(ada, grace)
    assert after.context == "## About You\n\nName: Grace.\n\n## Memory\n\nKyoto."
    assert after.memory.version == memory_report.version_after
    assert after.memory.modified is not None

    # A sync on a version that moved on is refused whole; the documents keep their text.
    with pytest.raises(PreconditionFailedError) as refused:
        memory.sync(ada, grace, [Add("memory", "stale")], if_match=seen.if_match)
    assert refused.value.current_version == after.memory.version
    assert refused.value.document == personality_memory(ada)
    assert memory.prefetch(ada, grace).context == after.context

    # max_chars keeps the tail of the rendered context.
    short = memory.prefetch(ada, grace, max_chars=6)
    assert short.context is not None and len(short.context) <= 6


def test_a_repeated_key_is_answered_once_and_marked_replayed(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    key = str(uuid.uuid4())
    first = memory.sync(ada, grace, [Add("memory", "Once.")], idempotency_key=key)
    again = memory.sync(ada, grace, [Add("memory", "Once.")], idempotency_key=key)
    assert not first.documents[0].replayed and not first.replayed
    assert again.documents[0].replayed and again.replayed
    assert again.documents[0].version_after == first.documents[0].version_after
    assert memory.documents.get(personality_memory(ada)).text.count("Once.") == 1


def test_documents_get_replace_update_purge(memory: MemoryClient) -> None:
    grace = unique("grace")
    path = user_profile(grace)

    empty = memory.documents.get(path)
    assert (empty.path, empty.store, empty.text) == (path, "user", "")

    replaced = memory.documents.replace(path, "Name: Grace.", if_match=empty.version)
    assert replaced.written and replaced.version_before == empty.version
    doc = memory.documents.get(path)
    assert doc.text == "Name: Grace.\n"
    assert doc.version == replaced.version_after

    updated = memory.documents.update(
        path,
        [Add("user", "Likes tea."), Edit("user", "tea", "green tea"), Remove("user", "Name:")],
        if_match=doc.version,
        surface="cli",
    )
    assert updated.lines_removed == 1
    assert memory.documents.get(path).text.strip() == "Likes green tea."

    # Without a guard an update batch applies to whatever is there.
    memory.documents.update(path, [Replace("user", "Fresh start.")])
    assert memory.documents.get(path).text == "Fresh start.\n"

    # "*" overwrites whatever is there.
    memory.documents.replace(path, "Overwritten.", if_match="*")
    assert memory.documents.get(path).text == "Overwritten.\n"

    purged = memory.documents.purge(path)
    assert purged.path == path
    assert purged.bytes == len("Overwritten.\n")
    assert purged.revisions >= 4
    assert memory.documents.get(path).text == ""


def test_notes_are_read_and_written_by_layout_path(memory: MemoryClient) -> None:
    personality = unique("ada")
    kyoto = personality_note(personality, "trips/kyoto.md")
    with pytest.raises(NotFoundError):
        memory.notes.get(kyoto)
    created = memory.notes.create(kyoto, "# Kyoto\nTemples.", session="s-1")
    with pytest.raises(ConflictError) as exists:
        memory.notes.create(kyoto, "again")
    assert exists.value.code == "note-exists"
    read = memory.notes.get(kyoto)
    assert (read.text, read.version, read.path) == (
        "# Kyoto\nTemples.\n",
        created.version_after,
        kyoto,
    )

    with pytest.raises(PreconditionFailedError):
        memory.notes.write(kyoto, "stale", if_match="not-the-version")
    written = memory.notes.write(kyoto, "# Kyoto\nShrines.", if_match=read.version)
    updated = memory.notes.update(kyoto, [Add("memory", "Maples.")], if_match=written.version_after)
    listed = memory.notes.list(personality_notes(personality), prefix="trips/")
    assert listed.folder == personality_notes(personality)
    assert [(n.path, n.version, n.description) for n in listed.notes] == [
        ("trips/kyoto.md", updated.version_after, "Kyoto")
    ]

    moved = memory.notes.rename(kyoto, "trips/nara.md")
    nara = personality_note(personality, "trips/nara.md")
    assert memory.notes.get(nara).version == moved.version_after
    memory.notes.delete(nara)
    with pytest.raises(NotFoundError):
        memory.notes.get(nara)

    page = memory.history.list(nara, text=True)
    assert [r.text or "" for r in page.revisions] == ["", "# Kyoto\nShrines.\n\nMaples.\n"]
    arrival = page.revisions[1].number
    assert memory.history.get(nara, arrival).number == arrival
    assert "-Maples." in memory.history.diff(nara).diff
    memory.history.revert(nara, arrival)
    assert memory.notes.get(nara).text == "# Kyoto\nShrines.\n\nMaples.\n"
    with pytest.raises(ValueError, match="not a note's layout path"):
        memory.notes.get(personality_memory(personality))


def test_global_memory_is_shared_by_global_scope_personalities(memory: MemoryClient) -> None:
    grace = unique("grace")
    entry = f"Deployment-wide note {uuid.uuid4()}."
    report = memory.sync("concierge", grace, [Add("memory", entry)])
    assert report.documents[0].document.kind == "global-memory"
    assert report.documents[0].document.path == GLOBAL_MEMORY
    assert entry in memory.documents.get(GLOBAL_MEMORY).text
    assert memory.prefetch("concierge", grace).personality.scope == "global"


def test_history_pages_revisions_diffs_and_reverts(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    path = personality_memory(ada)
    for n in range(5):
        memory.sync(ada, grace, [Add("memory", f"Note {n}.")], session="s-1")

    first_page = memory.history.list(path, limit=2, diff=True)
    assert first_page.path == path
    assert [r.number for r in first_page.revisions] == [5, 4]
    assert first_page.next_before == 4
    newest = first_page.revisions[0]
    assert newest.diff is not None and "+Note 4." in newest.diff
    assert newest.text is None
    assert newest.surface == "api" and newest.session == "s-1"
    assert newest.personality == ada and newest.user == grace
    assert newest.updates == (Add("memory", "Note 4."),)

    second_page = memory.history.list(path, limit=2, before=first_page.next_before, text=True)
    assert [r.number for r in second_page.revisions] == [3, 2]
    assert second_page.revisions[0].text == "Note 0.\n\nNote 1.\n\nNote 2.\n"

    assert [r.number for r in memory.history.iterate(path, limit=2)] == [5, 4, 3, 2, 1]

    one = memory.history.get(path, 2)
    assert one.number == 2 and one.text == "Note 0.\n\nNote 1.\n"
    assert one.version == second_page.revisions[1].version

    newest_diff = memory.history.diff(path)
    assert (newest_diff.from_revision, newest_diff.to_revision) == (4, 5)
    assert "+Note 4." in newest_diff.diff
    between = memory.history.diff(path, 1, 3)
    assert "+Note 1." in between.diff and "+Note 2." in between.diff
    assert memory.history.diff(path, 5).diff == ""

    current = memory.documents.get(path)
    reverted = memory.history.revert(path, 2, if_match=current.version)
    assert reverted.written
    assert memory.documents.get(path).text == "Note 0.\n\nNote 1.\n"
    assert memory.history.list(path, limit=1).revisions[0].number == 6


def test_history_redacts_a_revision_of_a_document_and_of_a_note(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    path = personality_memory(ada)
    memory.sync(ada, grace, [Add("memory", "Card 4242.")])
    memory.sync(ada, grace, [Add("memory", "Tea.")])
    memory.sync(ada, grace, [Replace("memory", "Tea.")])

    redacted = memory.history.redact(path, 1, idempotency_key=f"redact-{ada}")
    assert (redacted.number, redacted.path, redacted.text) == (1, path, None)
    assert redacted.redacted_at is not None and redacted.redacted_at > 0
    assert redacted.updates == () and not redacted.tombstone
    assert redacted.bytes_after == len("Card 4242.\n")
    listed = memory.history.list(path, text=True)
    assert [(r.number, r.text, r.redacted_at is not None) for r in listed.revisions] == [
        (3, "Tea.\n", False),
        (2, "Card 4242.\n\nTea.\n", False),
        (1, None, True),
    ]
    # Once is enough: again, it is answered as it is.
    assert memory.history.redact(path, 1).redacted_at == redacted.redacted_at
    with pytest.raises(NotFoundError) as gone:
        memory.history.revert(path, 1)
    assert gone.value.code == "revision-not-found"
    with pytest.raises(RefusedError) as in_use:
        memory.history.redact(path, 3)
    assert in_use.value.code == "revision-in-use"
    with pytest.raises(NotFoundError) as never:
        memory.history.redact(path, 99)
    assert never.value.code == "revision-not-found"
    assert memory.documents.get(path).text == "Tea.\n"

    pin = personality_note(ada, "secrets/pin.md")
    created = memory.notes.create(pin, "PIN 1234.")
    memory.notes.write(pin, "No PIN here.", if_match=created.version_after)
    oldest = memory.history.list(pin).revisions[-1]
    erased = memory.history.redact(pin, oldest.number)
    assert (erased.path, erased.text) == (pin, None)
    assert erased.redacted_at is not None
    assert memory.history.get(pin, oldest.number).text is None
    assert memory.notes.get(pin).text == "No PIN here.\n"


def test_identities_link_resolve_list_unlink(memory: MemoryClient) -> None:
    platform = unique("chat")
    grace, ada = unique("grace"), unique("ada")

    linked = memory.identities.link(platform, "12345", grace)
    assert (linked.identity, linked.previous, linked.user) == (f"{platform}:12345", None, grace)
    # Platform ids are any text: slashes and dot segments stay one path segment.
    odd = memory.identities.link(platform, "../a/b c", ada)
    assert odd.platform_user == "../a/b c"

    resolved = memory.identities.resolve(platform, "12345")
    assert (resolved.platform, resolved.platform_user, resolved.user) == (platform, "12345", grace)
    assert memory.identities.resolve(platform, "../a/b c").user == ada

    relinked = memory.identities.link(platform, "12345", ada, relink=True)
    assert (relinked.previous, relinked.user) == (grace, ada)

    mine = [i for i in memory.identities.iterate(limit=1) if i.platform == platform]
    assert sorted(i.platform_user for i in mine) == ["../a/b c", "12345"]
    page = memory.identities.list(limit=1)
    assert len(page.items) == 1 and page.next_after is not None

    unlinked = memory.identities.unlink(platform, "12345")
    assert (unlinked.previous, unlinked.user) == (ada, None)
    with pytest.raises(NotFoundError):
        memory.identities.resolve(platform, "12345")


def test_directory_lists_personalities_and_users_in_pages(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    memory.sync(ada, grace, [Add("memory", "Here."), Add("user", "Here too.")])

    personalities = list(memory.directory.iterate_personalities(limit=2))
    ids = [p.id for p in personalities]
    assert ids == sorted(ids)
    assert {"capped", "concierge", "recaller", ada} <= set(ids)
    recaller = next(p for p in personalities if p.id == "recaller")
    assert recaller.recall and recaller.kind == "vector"
    first = memory.directory.personalities(limit=1)
    assert len(first.items) == 1 and first.next_after == first.items[0].id

    users = [u.id for u in memory.directory.iterate_users(limit=3)]
    assert users == sorted(users) and grace in users
    page = memory.directory.users(limit=1)
    assert len(page.items) == 1 and page.next_after is not None
    assert memory.directory.users(after=page.next_after, limit=1).items[0].id > page.items[0].id


def test_search_ranks_a_recall_personalitys_entries(memory: MemoryClient) -> None:
    # The recall personality's MEMORY.md is shared by every test: look for this run's entries.
    marker = uuid.uuid4().hex[:8]
    memory.sync(
        "recaller",
        unique("grace"),
        [
            Add("memory", f"- Trip {marker}: flying to Kyoto in May to see the temples."),
            Add("memory", f"- Diet {marker}: vegetarian, no mushrooms."),
        ],
    )
    found = memory.search("recaller", "travel plans to Japan", limit=5)
    assert found.path == personality_memory("recaller")
    assert found.behind is None and found.unranked == ()
    assert 1 <= len(found.ranked) <= 5
    mine = [entry for entry in found.ranked if marker in entry]
    assert mine and f"Trip {marker}" in mine[0]
    assert len(found.ranked_from) == len(found.ranked)


def test_search_names_the_note_an_entry_is_in(memory: MemoryClient) -> None:
    marker = uuid.uuid4().hex[:8]
    note = personality_note("recaller", f"pets/{marker}.md")
    memory.notes.create(note, f"The cat {marker} eats wet salmon food twice a day.")
    try:
        found = memory.search("recaller", f"what does the cat {marker} eat", limit=5)
    finally:
        # Other tests list the recall personality's resources: it keeps no note of ours.
        memory.notes.delete(note)
    entries = list(
        zip(found.ranked + found.unranked, found.ranked_from + found.unranked_from, strict=True)
    )
    assert (f"The cat {marker} eats wet salmon food twice a day.", note) in entries
    assert all(
        source == found.path or source.startswith(personality_notes("recaller") + "/")
        for _, source in entries
    )


def test_health_and_readiness(memory: MemoryClient) -> None:
    health = memory.health()
    assert health.ok and health.status == "ok"
    assert {p.name for p in health.providers} >= {"files", "recall"}
    ready = memory.ready()
    assert ready.ok and all(p.ready for p in ready.providers)


def test_sync_guard_on_one_document_leaves_the_other_unchecked(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    seen = memory.prefetch(ada, grace)
    memory.sync(ada, grace, [Add("user", "Moved on.")])
    # Only the memory document is guarded, and only it is touched: the call lands.
    report = memory.sync(
        ada, grace, [Add("memory", "ok")], if_match=IfMatch(memory=seen.memory.version)
    )
    assert report.get("memory") is not None and report.get("user") is None


def test_sync_caps_tighten_the_personalitys_for_the_call(memory: MemoryClient) -> None:
    ada, grace = unique("ada"), unique("grace")
    soft = memory.sync(ada, grace, [Add("memory", "x" * 99)], caps=Budgets(memory=Caps(50, None)))
    assert soft.documents[0].over_soft_cap  # 100 bytes, over the call's soft cap
    with pytest.raises(RefusedError) as hard:
        memory.sync(ada, grace, [Add("memory", "y")], caps={"memory": {"hard": 101}})
    assert hard.value.code == "hard-cap-exceeded" and "hard cap of 101" in hard.value.detail
    # USER.md's caps do not touch MEMORY.md, and a call cannot loosen a personality's caps.
    memory.sync(ada, grace, [Add("memory", "y")], caps=Budgets(user=Caps(1, 1)))
    with pytest.raises(RefusedError) as configured:
        memory.sync(
            "capped", grace, [Add("memory", "z" * 200)], caps=Budgets(memory=Caps(None, 10_000))
        )
    assert f"hard cap of {CAPPED_HARD}" in configured.value.detail
    assert memory.documents.get(personality_memory(ada)).text == "x" * 99 + "\n\ny\n"
