"""The package installs from a checkout as the README says (``pip install ./clients/python``):
pip builds the directory into a wheel (flit-core) and installs it, not editable, and that copy
imports on its own, typed, with the ``anthropic`` extra declared. Offline: the build backend
is the dev venv's (``--no-build-isolation``) and the dependencies are not fetched
(``--no-deps``), so this checks the package, not PyPI."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def test_pip_installs_the_checkout_as_a_package_of_its_own(tmp_path: Path) -> None:
    target = tmp_path / "site-packages"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    install = subprocess.run(
        [
            *pip,
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(PACKAGE_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    # The installed copy, ahead of the dev venv's editable one, imports with all its modules.
    probe = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1])\n"
            "import agent_memory, agent_memory.claude_memory_tool\n"
            "print(agent_memory.__file__, agent_memory.MemoryClient.__name__)",
            str(target),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert probe.stdout.startswith(str(target / "agent_memory" / "__init__.py"))
    assert (target / "agent_memory" / "py.typed").is_file()

    pyproject = tomllib.loads((PACKAGE_DIR / "pyproject.toml").read_text())
    [metadata] = target.glob("agent_memory-*.dist-info/METADATA")
    fields = metadata.read_text().splitlines()
    assert f"Name: {pyproject['project']['name']}" in fields
    assert "Provides-Extra: anthropic" in fields
    [anthropic] = pyproject["project"]["optional-dependencies"]["anthropic"]
    requires = [f for f in fields if f.startswith("Requires-Dist: anthropic")]
    assert len(requires) == 1 and "extra == " in requires[0], requires
    assert anthropic.replace(" ", "") in requires[0].replace(" ", ""), requires
