"""The `check` and `demo` commands: exit statuses, JSON schema, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin.cli import app
from atompin.demo import CONSUMER_FILES, PROVIDER_031, PROVIDER_033
from atompin.testing import write_files

runner = CliRunner()


@pytest.fixture
def trees(tmp_path: Path) -> dict[str, Path]:
    return {
        "old": write_files(tmp_path / "old", PROVIDER_031),
        "new": write_files(tmp_path / "new", PROVIDER_033),
        "consumer": write_files(tmp_path / "consumer", CONSUMER_FILES),
        "cache": tmp_path / "cache",
    }


def test_check_passes_with_exit_0(trees):
    result = runner.invoke(
        app, ["check", str(trees["consumer"]), str(trees["old"]), "--cache-dir", str(trees["cache"])]
    )
    assert result.exit_code == 0, result.output
    assert "PASS: no findings" in result.output


def test_a_consumer_naming_nothing_of_the_provider_is_said_to_prove_nothing(trees, tmp_path: Path):
    """A check of the wrong package passes, but says why that means nothing (`no-contact`). A
    file naming the provider only in a comment or a docstring does not count."""
    files = {"tools/__init__.py": '"""Scripts around minivllm."""\n', "tools/run.py": "import os  # not minivllm\n"}
    consumer = write_files(tmp_path / "tools_only", files)
    args = ["check", str(consumer), str(trees["old"]), "--cache-dir", str(trees["cache"]), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    [finding] = json.loads(result.output)["findings"]
    assert (finding["rule"], finding["severity"], finding["symbol"]) == ("no-contact", "warning", "tools")
    assert finding["message"].startswith("no file of tools names minivllm (outside comments and strings)")
    # The plugin, which does use it, is not said to.
    result = runner.invoke(app, [*args[:1], str(trees["consumer"]), *args[2:]])
    assert "no-contact" not in result.output


def test_check_fails_with_exit_1_and_json_schema(trees):
    result = runner.invoke(
        app,
        ["check", str(trees["consumer"]), str(trees["new"]), "--format", "json", "--cache-dir", str(trees["cache"])],
    )
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["schema"] == "atompin.check/1"
    assert data["package"] == "minivllm"
    assert set(data["summary"]) >= {"import_sites", "symbols", "groups", "patch_sites", "findings_by_rule"}
    assert data["summary"]["findings_by_rule"] == {
        "arity-drift": 1,
        "missing-patch-target": 2,
        "override-drift": 1,
        "unresolved-import": 1,
    }
    for f in data["findings"]:
        assert set(f) == {"rule", "severity", "symbol", "sites", "message", "alternatives", "accepted"}
        assert all(":" in s for s in f["sites"])
    assert {f["symbol"] for f in data["findings"]} == {
        "minivllm.v1.core.kv_cache_utils:get_kv_cache_groups",
        "minivllm.v1.core.kv_cache_utils:_pool_bytes_per_block",
        "minivllm.v1.core.kv_cache_utils:may_override_num_blocks",
        "minivllm.v1.core.kv_cache_planning:_pool_bytes_per_block",  # the arithmetic case
        "miniplug.prefill:AiterPrefillBackend.run_prefill",  # the override the provider now calls with out=
    }


def test_no_cache_writes_no_cache(trees, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "envcache"))
    result = runner.invoke(app, ["check", str(trees["consumer"]), str(trees["old"]), "--no-cache"])
    assert result.exit_code == 0
    assert not (tmp_path / "envcache").exists()
    result = runner.invoke(app, ["check", str(trees["consumer"]), str(trees["old"])])
    assert (tmp_path / "envcache" / "index.sqlite").exists()


def test_missing_folder_is_exit_2_with_one_line(trees, tmp_path: Path):
    result = runner.invoke(app, ["check", str(tmp_path / "nope"), str(trees["old"]), "--no-cache"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "consumer folder does not exist" in result.output


def test_unknown_package_is_exit_2(trees):
    result = runner.invoke(app, ["check", str(trees["consumer"]), str(trees["old"]), "--package", "vllm", "--no-cache"])
    assert result.exit_code == 2
    assert "no package 'vllm'" in result.output and "minivllm" in result.output


def test_unknown_consumer_package_is_exit_2(trees):
    result = runner.invoke(
        app, ["check", str(trees["consumer"]), str(trees["old"]), "--consumer-package", "atom.plugin", "--no-cache"]
    )
    assert result.exit_code == 2
    assert "--consumer-package" in result.output


def test_ambiguous_provider_package_is_exit_2(trees):
    (trees["old"] / "other").mkdir()
    (trees["old"] / "other" / "__init__.py").write_text("")
    result = runner.invoke(app, ["check", str(trees["consumer"]), str(trees["old"]), "--no-cache"])
    assert result.exit_code == 2 and "several top-level packages" in result.output


def test_nothing_from_the_trees_is_executed(tmp_path: Path):
    marker = tmp_path / "executed"
    bomb = f"open({str(marker)!r}, 'w').write('x')\n"
    provider = write_files(tmp_path / "p", {"pv/__init__.py": bomb, "pv/m.py": bomb + "def f():\n    pass\n"})
    consumer = write_files(tmp_path / "c", {"plug/__init__.py": bomb + "from pv.m import f\n"})
    result = runner.invoke(app, ["check", str(consumer), str(provider), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert not marker.exists()


def test_demo_runs_and_explains():
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "minivllm 0.31.0: no findings" in result.output
    assert "missing-patch-target" in result.output and "unresolved-import" in result.output
    assert "silently installs nothing" in result.output
    assert "arity-drift" in result.output and "bind to vllm_config" in result.output


def test_help_shows_examples():
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0 and "Example" in result.output


def test_root_help_names_the_environment_it_reads():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("ATOMPIN_CACHE_DIR", "ATOMPIN_JOBS", "NO_COLOR"):
        assert name in result.output


def test_python_dash_m_works():
    proc = subprocess.run([sys.executable, "-m", "atompin", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("atompin ")


def test_a_failing_check_without_a_baseline_says_how_to_give_one(trees):
    from atompin.cli import NO_BASELINE_HINT

    args = ["check", str(trees["consumer"]), str(trees["new"]), "--cache-dir", str(trees["cache"])]
    alone = subprocess.run([sys.executable, "-m", "atompin", *args], capture_output=True, text=True)
    assert alone.returncode == 1
    assert NO_BASELINE_HINT in alone.stderr and NO_BASELINE_HINT not in alone.stdout
    based = subprocess.run(
        [sys.executable, "-m", "atompin", *args, "--baseline", str(trees["old"])], capture_output=True, text=True
    )
    assert "hint:" not in based.stderr
    as_json = subprocess.run(
        [sys.executable, "-m", "atompin", *args, "--format", "json"], capture_output=True, text=True
    )
    assert "hint:" not in as_json.stderr  # machine-readable output says nothing else
