"""Property tests of the Metis store on each backend: seeded random sequences of add, replace
and consolidate on both files, each write held to the pure model (tests/metis_model.py) of the
contract's update rules and caps. After every write: the store's text is the model's, the
result's hashes chain (``before_hash`` is the previous ``after_hash``) and are the SHA-256 of
the model's texts, the sizes and cap flags are the model's, and a refused write left the
text as it was. Also the specification's own two properties: an add never shrinks a document
that ends as the service leaves it, and consolidating twice to the same content gives the
same hash.

30 sequences of 15 writes per backend, about 1,400 requests each; seconds per backend."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from agent_memory import Caps, MemoryClient, RefusedError
from agent_memory.metis import (
    MemoryFile,
    MemoryHardCapExceeded,
    MemoryReplaceError,
    MemoryStore,
    WriteResult,
)
from memory_server import Server, unique
from metis_model import Op, OpGenerator, Outcome, apply, is_settled, size

SEQUENCES = 30
WRITES = 15

# Small caps, so sequences of short writes reach them (a store's caps only tighten the
# personality's, which has none here).
CAPS = {MemoryFile.MEMORY: Caps(soft=120, hard=240), MemoryFile.USER: Caps(soft=90, hard=180)}
UNCAPPED = {file: Caps(soft=None, hard=None) for file in MemoryFile}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run(store: MemoryStore, op: Op) -> WriteResult:
    if op.operation == "add":
        return store.add_entry(op.file, *op.texts)
    if op.operation == "replace":
        return store.replace(op.file, *op.texts)
    return store.consolidate(op.file, *op.texts)


@pytest.mark.parametrize("seed", range(SEQUENCES))
def test_random_writes_follow_the_model(each_backend: Server, tmp_path: Path, seed: int) -> None:
    user = unique("user")
    texts = {file: "" for file in MemoryFile}
    hashes = {file: sha256("") for file in MemoryFile}
    generator = OpGenerator(seed, CAPS)
    with (
        MemoryStore(tmp_path, base_url=each_backend.url, user=user, caps=CAPS) as store,
        MemoryStore(tmp_path, base_url=each_backend.url, user=user, caps=UNCAPPED) as person,
        MemoryClient(each_backend.url) as client,
    ):
        for step in range(WRITES):
            op = generator.next(texts)
            where = f"seed {seed}, write {step}: {op}"
            before = texts[op.file]
            caps = None if op.uncapped else CAPS[op.file]
            expected = apply(before, op, caps)
            result = _attempt(person if op.uncapped else store, op, before, expected, where)

            texts[op.file] = expected.text
            seen = client.prefetch(store.personality, user)
            assert seen.memory.text == texts[MemoryFile.MEMORY], where
            assert seen.user.text == texts[MemoryFile.USER], where
            if result is None:
                continue

            after = expected.text
            assert result.file is op.file, where
            assert result.before_hash == hashes[op.file] == sha256(before), where
            assert result.after_hash == sha256(after), where
            assert result.before_size_bytes == size(before), where
            assert result.after_size_bytes == size(after), where
            soft, hard = (None, None) if caps is None else (caps.soft, caps.hard)
            assert result.over_soft_cap == (soft is not None and size(after) > soft), where
            assert result.over_hard_cap == (hard is not None and size(after) > hard), where
            if op.operation == "add" and is_settled(before):
                assert result.after_size_bytes >= result.before_size_bytes, where
            if op.operation == "consolidate" and before == after:
                assert result.after_hash == result.before_hash, where
            hashes[op.file] = result.after_hash


def _attempt(
    store: MemoryStore, op: Op, before: str, expected: Outcome, where: str
) -> WriteResult | None:
    """Runs ``op``, checking it was refused as the model says; its result when it landed."""
    if expected.refusal is None:
        return run(store, op)
    if expected.refusal in ("blank-entry", "empty-old"):
        # Refused before anything is sent: a ValueError that is no refusal of the service's.
        with pytest.raises(ValueError) as refused:
            run(store, op)
        assert not isinstance(refused.value, RefusedError), where
    elif expected.refusal == "hard-cap-exceeded":
        with pytest.raises(MemoryHardCapExceeded) as capped:
            run(store, op)
        assert capped.value.file is op.file, where
        assert capped.value.hard_cap == store.caps_of(op.file).hard, where
        assert capped.value.attempted_size == size(apply(before, op, None).text), where
    else:
        with pytest.raises(MemoryReplaceError) as unmatched:
            run(store, op)
        assert unmatched.value.reason == expected.refusal, where
    return None


def test_the_sequences_reach_every_edge() -> None:
    """The property test is as good as the writes it tries: over its seeds they meet every
    refusal, land on both caps exactly and over the soft one, and leave a document over the
    hard cap by a write that did not grow it (after a writer without caps grew it)."""
    reached: Counter[str] = Counter()
    for seed in range(SEQUENCES):
        texts = {file: "" for file in MemoryFile}
        generator = OpGenerator(seed, CAPS)
        for _ in range(WRITES):
            op = generator.next(texts)
            caps = None if op.uncapped else CAPS[op.file]
            outcome = apply(texts[op.file], op, caps)
            reached[outcome.refusal or f"{op.operation} landed"] += 1
            after = size(outcome.text)
            if outcome.refusal is None and caps is not None:
                assert caps.soft is not None and caps.hard is not None
                reached["on the soft cap"] += after == caps.soft
                reached["over the soft cap"] += after > caps.soft
                reached["on the hard cap"] += after == caps.hard
                reached["over the hard cap, not grown"] += after > caps.hard
            reached["multibyte"] += size(outcome.text) > len(outcome.text)
            texts[op.file] = outcome.text
    edges = [
        *("blank-entry", "empty-old", "no-match", "ambiguous-match", "hard-cap-exceeded"),
        *("add landed", "replace landed", "consolidate landed"),
        *("on the soft cap", "over the soft cap", "on the hard cap"),
        *("over the hard cap, not grown", "multibyte"),
    ]
    assert [edge for edge in edges if reached[edge] == 0] == []
