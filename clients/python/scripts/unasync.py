"""Writes the blocking twin of each asyncio module of the client: ``X_async.py`` is the source,
``X_sync.py`` is generated from it (committed, never edited by hand).

    scripts/unasync.py           rewrite the blocking modules
    scripts/unasync.py --check   fail, naming them, when a blocking module is not what its
                                 source generates (check.sh runs this)

The blocking code is the asyncio code without ``async``, ``await`` and ``Awaitable[...]``, with
each asyncio name swapped for its blocking one (``AsyncMemoryClient`` -> ``MemoryClient``,
``aclose`` -> ``close``, ``asyncio.sleep`` -> ``time.sleep``, ...) and the few phrases of its
docstrings that name the flavour swapped too (``PHRASES``). Then ruff drops the imports it no
longer uses, sorts the rest and formats it, so it reads as if written by hand. The same idea
as httpcore's ``unasync.py``: a source written once, and a mechanical rewrite whose rules fit
on one screen.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""clients/python."""

SOURCES = (
    "src/agent_memory/_client_async.py",
    "src/agent_memory/_memory_tool_async.py",
    "src/agent_memory/metis/_store_async.py",
)
"""The asyncio modules; each one's twin is the same path with ``_sync`` for ``_async``."""

HEADER = "# Generated from {source} by scripts/unasync.py: edit that file, not this one.\n"

CODE: tuple[tuple[str, str], ...] = (
    (r"\basync (def|with|for)\b", r"\1"),
    (r"\bawait ", ""),
    # AsyncMemoryClient, AsyncIterator, httpx.AsyncClient, BetaAsyncAbstractMemoryTool...
    (r"\b(\w*?)Async(?=[A-Z])", r"\1"),
    (r"\baclose\b", "close"),
    (r"\b__a(enter|exit)__\b", r"__\1__"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"^import asyncio$", "import time"),
    # An async generator cannot `yield from`; a blocking one should.
    (r"^(\s*)for (\w+) in ([^\n]+):\n\s+yield \2$", r"\1yield from \3"),
)
"""Regular expressions and their replacements, applied in order to the whole text."""

PHRASES: tuple[tuple[str, str], ...] = (
    ("An asyncio client of", "A blocking client of"),
    ("safe to share between tasks", "safe to share between threads"),
    ("over ``memory serve`` (asyncio)", "over ``memory serve`` (blocking)"),
)
"""Docstring phrases that say which flavour the code is: each must occur in some source, so
a rewording there cannot silently leave the blocking docstring behind."""


def blocking(source: str) -> str:
    """The blocking twin of an asyncio module's text, before ruff."""
    text = source
    for old, new in PHRASES:
        text = text.replace(old, new)
    for pattern, replacement in CODE:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    return _unwrap(text, "Awaitable[")


def _unwrap(text: str, opening: str) -> str:
    """``text`` with each ``Awaitable[X]`` (``opening`` and its closing bracket) made ``X``:
    brackets nest, so a regular expression cannot find the closing one."""
    while (start := text.find(opening)) != -1:
        depth, end = 1, start + len(opening)
        while depth:
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            end += 1
        text = text[:start] + text[start + len(opening) : end - 1] + text[end:]
    return text


def ruff(text: str, path: Path) -> str:
    """``text`` with its unused imports dropped, the rest sorted, and formatted, by the venv's
    ruff as check.sh checks them (the settings are pyproject.toml's)."""
    for command in (["check", "--select", "I,F401", "--fix", "--quiet"], ["format"]):
        text = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    return text


def generated(source: Path, target: Path) -> str:
    """What ``target`` holds when it is current."""
    header = HEADER.format(source=source.name)
    return ruff(header + blocking(source.read_text()), target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a module is stale")
    check = parser.parse_args().check
    sources = [ROOT / name for name in SOURCES]
    texts = [path.read_text() for path in sources]
    unused = [old for old, _ in PHRASES if not any(old in text for text in texts)]
    if unused:
        print(f"unasync.py: PHRASES not found in any source: {unused}", file=sys.stderr)
        return 1
    stale = []
    for source in sources:
        target = source.with_name(source.name.replace("_async.py", "_sync.py"))
        text = generated(source, target)
        if target.exists() and target.read_text() == text:
            continue
        stale.append(target.relative_to(ROOT))
        if not check:
            target.write_text(text)
    if check and stale:
        names = ", ".join(map(str, stale))
        print(f"!!! {names}: not what scripts/unasync.py generates; run it", file=sys.stderr)
        return 1
    for name in [] if check else stale:
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
