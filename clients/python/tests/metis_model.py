"""A pure model of the Metis store over the service, for the property tests: what each write
does to a document by the contract's update rules (CONTRACT.md, "Updates") and its caps
("Budgets": refused over the hard cap when it also grows the document), and a seeded
generator of writes that go where the rules have edges (blank and padded text, multibyte
characters, overlapping matches, sizes one byte either side of a cap, documents pushed over
the cap by someone else)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from agent_memory import Caps
from agent_memory.metis import MemoryFile, Operation
from agent_memory.metis._files import WHITESPACE

Refusal = Literal["blank-entry", "empty-old", "no-match", "ambiguous-match", "hard-cap-exceeded"]


@dataclass(frozen=True)
class Op:
    """One write: ``texts`` is ``(entry,)``, ``(old, new)`` or ``(content,)``."""

    operation: Operation
    file: MemoryFile
    texts: tuple[str, ...]
    uncapped: bool = False
    """Written by a writer without caps (a person, another agent): it can leave the document
    over the store's hard cap."""


@dataclass(frozen=True)
class Outcome:
    """The document after a write (as before when refused), and why it was refused."""

    text: str
    refusal: Refusal | None = None


def size(text: str) -> int:
    """UTF-8 bytes."""
    return len(text.encode())


def is_blank(text: str) -> bool:
    return text.strip(WHITESPACE) == ""


def is_settled(text: str) -> bool:
    """Whether ``text`` ends as the service's adds and consolidations leave a document: empty,
    or one newline after the last non-whitespace (an edit can leave other endings)."""
    return text in ("", text.rstrip(WHITESPACE) + "\n")


def occurrences(text: str, old: str) -> int:
    """How many times ``old`` occurs in ``text``, overlapping occurrences included."""
    count, at = 0, text.find(old)
    while at != -1:
        count += 1
        at = text.find(old, at + 1)
    return count


def apply(text: str, op: Op, caps: Caps | None) -> Outcome:
    """What ``op`` does to ``text`` under ``caps`` (``None``: uncapped)."""
    if op.operation == "add":
        [entry] = op.texts
        if is_blank(entry):
            return Outcome(text, "blank-entry")
        entry = entry.strip(WHITESPACE)
        after = f"{entry}\n" if is_blank(text) else f"{text.rstrip(WHITESPACE)}\n\n{entry}\n"
    elif op.operation == "replace":
        old, new = op.texts
        if old == "":
            return Outcome(text, "empty-old")
        found = occurrences(text, old)
        if found != 1:
            return Outcome(text, "no-match" if found == 0 else "ambiguous-match")
        after = text.replace(old, new, 1)
    else:
        [content] = op.texts
        after = "" if is_blank(content) else f"{content.strip(WHITESPACE)}\n"
    if caps is not None and caps.hard is not None and size(after) > max(caps.hard, size(text)):
        return Outcome(text, "hard-cap-exceeded")
    return Outcome(after)


# Pieces of text: ASCII, Unicode White_Space the service trims (U+3000, U+00A0, U+0085), one
# that Python's isspace takes and the service does not (U+001C), one neither takes (U+200B),
# 2-, 3- and 4-byte characters, a combining mark, line ends of both kinds.
_PIECES = (
    "a",
    "b",
    "aa",
    "Kyoto",
    "make check",
    "-",
    "# ",
    "* ",
    ".",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "\u3000",
    "\xa0",
    "\x85",
    "\x1c",
    "\u200b",
    "é",
    "ß",
    "日本",
    "🎉",
    "x\u0303",
)
_SOLID = ("x", "é", "日", "🎉")
"""Characters of 1 to 4 bytes, none of them whitespace."""


def random_text(rng: random.Random, most_pieces: int) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, most_pieces)))


def solid_text(rng: random.Random, nbytes: int) -> str:
    """A text of exactly ``nbytes`` UTF-8 bytes (1 or more) that no trim changes."""
    chars = []
    left = nbytes
    while left > 4:
        char = rng.choice(_SOLID)
        chars.append(char)
        left -= size(char)
    chars.append("x" * left)
    return "".join(chars)


class OpGenerator:
    """Seeded writes to both files, each picked knowing the documents as the model has them
    (to aim at a cap, or at text that is there)."""

    def __init__(self, seed: int, caps: dict[MemoryFile, Caps]) -> None:
        self._rng = random.Random(seed)
        self._caps = caps
        self._last_content: dict[MemoryFile, str] = {}

    def next(self, texts: dict[MemoryFile, str]) -> Op:
        rng = self._rng
        file = rng.choice(list(MemoryFile))
        text, caps = texts[file], self._caps[file]
        assert caps.soft is not None and caps.hard is not None
        roll = rng.random()
        if roll < 0.35:
            return Op("add", file, (random_text(rng, 12),))
        if roll < 0.45:
            # Landing one byte under, on or over a cap.
            target = rng.choice((caps.soft, caps.hard)) + rng.choice((-1, 0, 1))
            overhead = 1 if is_blank(text) else size(text.rstrip(WHITESPACE)) + 3
            if target - overhead < 1:
                return Op("add", file, (random_text(rng, 4),))
            padding = rng.choice(("", " ", "\n\t"))
            return Op("add", file, (padding + solid_text(rng, target - overhead) + padding,))
        if roll < 0.65:
            new = rng.choice(("", random_text(rng, 6), solid_text(rng, rng.randint(1, caps.soft))))
            return Op("replace", file, (self._old(text), new))
        if roll < 0.75 and file in self._last_content:
            # The same consolidation again: the same text and hash, written or not.
            return Op("consolidate", file, (self._last_content[file],))
        if roll < 0.90:
            content = rng.choice(
                (
                    random_text(rng, 20),
                    " \n" + solid_text(rng, rng.randint(1, caps.hard)) + "\n\n",
                    solid_text(rng, caps.hard + rng.choice((-1, 0, 1))),  # with its newline
                    "",
                )
            )
            self._last_content[file] = content
            return Op("consolidate", file, (content,))
        # Someone without caps pushes the document over the hard cap.
        return Op("consolidate", file, (solid_text(rng, caps.hard + rng.randint(1, 40)),), True)

    def _old(self, text: str) -> str:
        rng = self._rng
        roll = rng.random()
        if text and roll < 0.6:
            start = rng.randrange(len(text))
            return text[start : start + rng.randint(1, 24)]
        if roll < 0.8:
            return "not in any document"
        return random_text(rng, 2)
