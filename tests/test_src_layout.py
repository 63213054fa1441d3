"""A consumer in the src layout (`src/pkg/...`, packaging metadata at the root): its modules are
named below `src`, its files keep their paths, and its entry points are read from the root."""

from __future__ import annotations

import shutil

import git
import pytest
from test_reach import PROVIDER, PYPROJECT  # a plugin registering `plug.register` with pv
from typer.testing import CliRunner

from atompin import lockfile
from atompin.analysis.packages import consumer_packages
from atompin.cli import app
from atompin.demo import DEMO_MANIFEST, write_demo_repos
from atompin.errors import InputError
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files, git_repo


def src_plugin() -> dict[str, str]:
    return {
        "pyproject.toml": PYPROJECT,
        "src/plug/__init__.py": "",
        "src/plug/register.py": "import plug.live\n\ndef register():\n    return None\n",
        "src/plug/live.py": "from pv.utils import gone\nfrom plug.helpers import use\n",
        "src/plug/helpers.py": "from pv.utils import helper as use\n",
        "src/plug/unused.py": "from pv.utils import missing\n",
        "tests/test_plug.py": "import plug\n",
    }


def test_the_tree_names_modules_below_src_and_keeps_paths():
    tree = MemoryTree(dedent_files(src_plugin()), "plug")
    assert tree.package_root == "src/"
    assert tree.top_level_packages() == ["plug"]
    assert tree.python_files("plug") == [
        "src/plug/__init__.py",
        "src/plug/helpers.py",
        "src/plug/live.py",
        "src/plug/register.py",
        "src/plug/unused.py",
    ]
    assert tree.module_name("src/plug/live.py") == ("plug.live", False)
    assert tree.module_name("src/plug/__init__.py") == ("plug", True)
    found = tree.find_module("plug.helpers")
    assert found is not None and found.path == "src/plug/helpers.py"
    assert consumer_packages(tree, "plug", "pv") == ["plug"]
    with pytest.raises(InputError, match="no package 'other' here \\(top-level packages: plug\\)"):
        consumer_packages(tree, "other", "pv")


def test_a_src_folder_that_is_a_package_is_no_src_layout():
    tree = MemoryTree(dedent_files({"src/__init__.py": "", "src/plug/__init__.py": "", "plug2/__init__.py": ""}), "t")
    assert tree.package_root == ""
    assert tree.module_name("src/plug/__init__.py") == ("src.plug", True)
    assert tree.top_level_packages() == ["plug2", "src"]


def test_a_src_layout_plugin_is_checked_like_any_other(run_check):
    result = run_check(PROVIDER, src_plugin())
    by_path = {f.sites[0].path: (f.severity.value, f.symbol) for f in result.findings}
    # Reached from the entry point at the root: an error; nothing reaches `unused`: a warning.
    assert by_path == {
        "src/plug/live.py": ("error", "pv.utils:gone"),
        "src/plug/unused.py": ("warning", "pv.utils:missing"),
    }


def test_a_src_layout_consumer_locks_like_the_same_consumer_laid_out_flat(tmp_path):
    """The demo's plugin moved under `src/` (its declared pins too): the same verdicts and
    findings as the flat layout, each site under `src/`."""
    flat = write_demo_repos(tmp_path / "flat")
    src = write_demo_repos(tmp_path / "src")
    repo = src.parent / "repos/miniplug"
    files = {}
    for path in git.Repo(repo).git.ls_files().splitlines():
        moved = f"src/{path}" if path.startswith("miniplug/") else path
        files[moved] = (repo / path).read_text()
    shutil.rmtree(repo)
    git_repo(repo, [("v0.1.0", files)])
    src.write_text(DEMO_MANIFEST.replace('"miniplug/vllm-version.env"', '"src/miniplug/vllm-version.env"'))
    runner = CliRunner()
    for manifest in (flat, src):
        result = runner.invoke(app, ["lock", "--manifest", str(manifest)])
        assert result.exit_code == 1, result.output
    flat_lock, src_lock = (lockfile.read(m.parent / "atompin.lock") for m in (flat, src))
    assert [p.verdict for p in src_lock.pairs] == [p.verdict for p in flat_lock.pairs]

    def findings(locked, prefix=""):
        return sorted(
            (p.name, f.rule, f.symbol, tuple(s.removeprefix(prefix) for s in f.sites))
            for p in locked.pairs
            for f in p.findings
        )

    assert findings(src_lock, "src/") == findings(flat_lock)
    assert len(findings(flat_lock)) == 10
    sites = [s for p in src_lock.pairs for f in p.findings for s in f.sites if "miniplug/" in s]
    assert sites and all(s.startswith("src/miniplug/") for s in sites)
