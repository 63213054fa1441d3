"""Versions and baselines reach the analysis from every flow: `lock` (the detected version, and the
previous lock's provider as the baseline) and `check` (the provider's version file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.cli import app
from atompin.testing import git_repo, write_files

runner = CliRunner()

PROVIDER_01 = {
    "pv/__init__.py": '__version__ = "0.1.0"\n',
    "pv/old.py": "def x():\n    pass\n",
    "pv/core.py": "class Runner:\n    def init_buffer(self, size):\n        pass\n\n    def start(self):\n        self.init_buffer(1)\n",
}
PROVIDER_02 = {
    "pv/__init__.py": '__version__ = "0.2.0"\n',
    "pv/new.py": "def y():\n    pass\n",
    "pv/core.py": "class Runner:\n    def init_buffers(self, size):\n        pass\n",
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/mod.py": """
        import pv

        if pv.__version__ == "0.1.0":
            from pv.old import x
        else:
            from pv.new import y
    """,
    "plug/patch.py": """
        from pv.core import Runner

        def init_buffer(self, size):
            pass

        Runner.init_buffer = init_buffer
    """,
}
MANIFEST = """
[components.plug]
repo = "repos/plug"
package = "plug"

[components.pv]
repo = "repos/pv"
package = "pv"

[[checks]]
consumer = "plug"
provider = "pv"

[[pairs]]
name = "p"
plug = "v1"
pv = "{pv}"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/pv", [("v0.1.0", PROVIDER_01), ("v0.2.0", PROVIDER_02)])
    git_repo(tmp_path / "repos/plug", [("v1", CONSUMER)])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text(MANIFEST.format(pv="v0.1.0"))
    return manifest


def test_lock_decides_gates_at_the_pin_and_compares_with_the_previous_lock(project: Path):
    first = runner.invoke(app, ["lock", "--manifest", str(project)])
    assert first.exit_code == 0, first.output
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert [f.rule.value for f in pair.findings if f.severity.value != "info"] == []
    # Bump the provider: the previous lock's provider is the baseline.
    project.write_text(MANIFEST.format(pv="v0.2.0"))
    second = runner.invoke(app, ["lock", "--manifest", str(project)])
    assert second.exit_code == 1, second.output
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    found = {(f.rule.value, f.severity.value, f.symbol) for f in pair.findings}
    assert ("gate-flip", "warning", "pv.__version__ == '0.1.0'") in found
    assert ("missing-patch-target", "error", "pv.core:Runner.init_buffer") in found
    assert not any(f.rule.value == "unresolved-import" for f in pair.findings)


def test_check_reads_the_providers_version_file(tmp_path: Path):
    provider = write_files(tmp_path / "pv-0.2", PROVIDER_02)
    consumer = write_files(tmp_path / "plug", {k: v for k, v in CONSUMER.items() if k != "plug/patch.py"})
    result = runner.invoke(app, ["check", str(consumer), str(provider), "--package", "pv", "--no-cache"])
    assert result.exit_code == 0, result.output
    pinned = runner.invoke(
        app, ["check", str(consumer), str(provider), "--package", "pv", "--no-cache", "--provider-version", "0.1.0"]
    )
    assert pinned.exit_code == 1 and "pv.old" in pinned.output


def test_verbose_lists_the_version_gates_and_how_they_were_evaluated(tmp_path: Path):
    provider = write_files(tmp_path / "pv-0.2", PROVIDER_02)
    consumer = write_files(tmp_path / "plug", {k: v for k, v in CONSUMER.items() if k != "plug/patch.py"})
    args = ["check", str(consumer), str(provider), "--package", "pv", "--no-cache"]
    verbose = runner.invoke(app, ["--verbose", *args])
    assert "version gates (1), evaluated statically" in verbose.output
    assert "false     pv.__version__ == '0.1.0'  at plug/mod.py:3" in verbose.output
    assert "version gates" not in runner.invoke(app, args).output
    data = json.loads(runner.invoke(app, [*args, "--format", "json"]).output)
    assert data["gates"] == [
        {"site": "plug/mod.py:3", "text": "pv.__version__ == '0.1.0'", "value": "false", "baseline": ""}
    ]


def test_lock_verbose_says_each_gate_at_the_pins_version_or_commit(project: Path, tmp_path: Path):
    """`lock --verbose` says each version gate's value at the pinned provider: at its version, or
    at its short commit when its tree says none (not "?")."""
    runner.invoke(app, ["lock", "--manifest", str(project)])
    project.write_text(MANIFEST.format(pv="v0.2.0"))
    second = runner.invoke(app, ["--verbose", "lock", "--manifest", str(project)])
    assert "version gate pv.__version__ == '0.1.0' at plug/mod.py:3: false at 0.2.0, true at the baseline" in (
        second.output
    )
    # A release whose tree says no version: the commit names it.
    unversioned = {**PROVIDER_02, "pv/__init__.py": ""}
    git_repo(tmp_path / "repos/pv3", [("v0.1.0", PROVIDER_01), ("v0.2.0", PROVIDER_02), ("nightly", unversioned)])
    project.write_text(MANIFEST.format(pv="nightly").replace('"repos/pv"', '"repos/pv3"'))
    third = runner.invoke(app, ["--verbose", "lock", "--manifest", str(project)])
    commit = lockfile.read(project.parent / "atompin.lock").pairs[0].components["pv"].commit
    assert f"version gate pv.__version__ == '0.1.0' at plug/mod.py:3: undecided at {commit[:12]}" in third.output
    assert " at ?" not in third.output
