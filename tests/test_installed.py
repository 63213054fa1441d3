"""Inside the image: checks against installed distributions, and the runtime doctor (on fakes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from atompin.cli import app
from atompin.sources.installed import commit_matches, load_installed
from atompin.testing import git_repo, write_files

runner = CliRunner()

PROVIDER = {
    "fakevllm/__init__.py": "",
    "fakevllm/core.py": """
        FLAG = True
        def compute(x):
            return x
        def helper():
            return 1
        class Runner:
            def step(self, batch):
                return batch
    """,
}
CONSUMER = {
    "fakeplug/__init__.py": "",
    "fakeplug/register.py": """
        import logging
        logger = logging.getLogger("fakeplug")

        def register_platform():
            raise RuntimeError("platform hook failed")

        def register_model():
            from fakevllm.core import Runner
            orig = Runner.step
            def step(self, *args, **kwargs):
                return orig(self, *args, **kwargs)
            Runner.step = step
            Runner._fakeplug_patched = True
            _guarded()
            _logged()
            _never()

        def _guarded():
            import fakevllm.core as core
            original = getattr(core, "moved_fn", None)
            if original is None:
                return
            core.moved_fn = original

        def _logged():
            import fakevllm.core as core
            if core.FLAG:
                logger.warning("skipping the compute patch: FLAG is set")
                return
            core.compute = lambda x: x

        def _never():
            import fakevllm.core as core
            if not core.FLAG:
                core.helper = lambda: 2
    """,
}
ENTRY_POINTS = """\
[fakevllm.platform_plugins]
plat = fakeplug.register:register_platform

[fakevllm.general_plugins]
general = fakeplug.register:register_model
broken = fakeplug.nope:missing
"""


def install(site: Path, name: str, version: str, files: dict[str, str], extra: dict[str, str] | None = None) -> None:
    """A distribution as pip would leave it: package files plus .dist-info (METADATA, RECORD, ...)."""
    write_files(site, files)
    info = f"{name}-{version}.dist-info"
    meta = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", **(extra or {})}
    write_files(site, {k.replace("DIST", info): v for k, v in meta.items()})
    record = [*files, *(k.replace("DIST", info) for k in meta)]
    (site / info / "RECORD").write_text("".join(f"{path},,\n" for path in record))


# The plugin without its guarded installer of a vanished name: statically clean.
CLEAN = {
    **CONSUMER,
    "fakeplug/register.py": CONSUMER["fakeplug/register.py"]
    .replace('getattr(core, "moved_fn", None)', 'getattr(core, "compute", None)')
    .replace("core.moved_fn = original", "core.compute = original"),
}


def make_site(root: Path, consumer: dict[str, str]) -> Path:
    site = root / "site-packages"
    version_py = {"fakevllm/_version.py": "__version__ = version = '1.2.0'\n__commit_id__ = commit_id = 'gabcdef123'\n"}
    install(site, "fakevllm", "1.2.0", {**PROVIDER, **version_py})
    install(site, "fakeplug", "0.1.0", consumer, {"DIST/entry_points.txt": ENTRY_POINTS})
    return site


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path / "guarded", CONSUMER)


@pytest.fixture
def clean_site(tmp_path: Path) -> Path:
    return make_site(tmp_path / "clean", CLEAN)


def test_installed_distribution_is_read_not_imported(site: Path):
    dist = load_installed("fakevllm", [str(site)])
    assert (dist.name, dist.version, dist.commit) == ("fakevllm", "1.2.0", "gabcdef123")
    assert dist.tree.find_module("fakevllm.core") is not None
    assert "fakevllm" not in sys.modules
    assert commit_matches("gabcdef123", "abcdef1234567890" + "0" * 24)
    assert not commit_matches("gabcdef123", "bbcdef1234567890" + "0" * 24)
    assert not commit_matches("gab", "ab" + "0" * 38)  # too short to mean anything


def test_an_installed_distribution_s_identity_reads_no_file(site: Path, monkeypatch: pytest.MonkeyPatch):
    """A check's cache key names the installed provider by its files' sizes and times: its
    compiled libraries (hundreds of megabytes in an image) are never read for it."""
    tree = load_installed("fakevllm", [str(site)]).tree
    reads: list[str] = []
    monkeypatch.setattr(type(tree), "read", lambda self, path: reads.append(path) or b"")
    first = tree.identity()
    assert reads == [] and len(first) == 64
    (tree.root / "fakevllm/core.py").write_text("# changed, and longer than before\n")
    assert type(tree)(tree.root, list(tree.files), tree.label).identity() != first


def test_check_against_installed_distributions(site: Path, clean_site: Path):
    result = runner.invoke(
        app,
        [
            "check",
            "fakeplug",
            "--consumer-installed",
            "--installed",
            "fakevllm",
            "--site",
            str(clean_site),
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output
    guarded = runner.invoke(
        app, ["check", "fakeplug", "--consumer-installed", "--installed", "fakevllm", "--site", str(site), "--no-cache"]
    )
    assert guarded.exit_code == 1 and "fakevllm.core:moved_fn" in guarded.output
    missing = runner.invoke(
        app, ["check", "fakeplug", "--consumer-installed", "--installed", "nope", "--site", str(site)]
    )
    assert missing.exit_code == 2 and "no installed distribution 'nope'" in missing.output
    both = runner.invoke(app, ["check", "fakeplug", str(site), "--installed", "fakevllm", "--site", str(site)])
    assert both.exit_code == 2 and "not both" in both.output


@pytest.fixture
def locked(tmp_path: Path, clean_site: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    site = clean_site
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    provider = git_repo(tmp_path / "repos/fakevllm", [("v1.2.0", PROVIDER)])
    git_repo(tmp_path / "repos/fakeplug", [("v0.1.0", CLEAN)])
    commit = git.Repo(provider).git.rev_parse("v1.2.0^{commit}")
    manifest = tmp_path / "pairs.toml"
    manifest.write_text("""\
[components.fakeplug]
repo = "repos/fakeplug"
package = "fakeplug"

[components.fakevllm]
repo = "repos/fakevllm"
package = "fakevllm"

[[checks]]
consumer = "fakeplug"
provider = "fakevllm"

[[pairs]]
name = "p"
fakeplug = "v0.1.0"
fakevllm = "v1.2.0"
""")
    assert runner.invoke(app, ["lock", "--manifest", str(manifest)]).exit_code == 0
    (site / "fakevllm/_version.py").write_text(
        f"__version__ = version = '1.2.0'\n__commit_id__ = commit_id = 'g{commit[:9]}'\n"
    )
    return manifest, commit


def test_verify_installed_matches_the_pin(locked: tuple[Path, str], clean_site: Path):
    site = clean_site
    manifest, _ = locked
    args = ["verify", "--manifest", str(manifest), "--installed", "fakevllm", "--pair", "p", "--site", str(site)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (
        "installed fakevllm 1.2.0" in result.output
        and "fakeplug->fakevllm against the installed fakevllm" in result.output
    )
    check = runner.invoke(
        app,
        [
            "check",
            "fakeplug",
            "--consumer-installed",
            "--installed",
            "fakevllm",
            "--site",
            str(site),
            "--pair",
            "p",
            "--manifest",
            str(manifest),
            "--no-cache",
        ],
    )
    assert check.exit_code == 0, check.output


def test_verify_installed_version_and_commit_mismatch(locked: tuple[Path, str], clean_site: Path):
    site = clean_site
    manifest, commit = locked
    args = ["verify", "--manifest", str(manifest), "--installed", "fakevllm", "--pair", "p", "--site", str(site)]
    (site / "fakevllm/_version.py").write_text(
        "__version__ = version = '1.2.0'\n__commit_id__ = commit_id = 'g0000000aa'\n"
    )
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "built from commit g0000000aa" in result.output
    meta = site / "fakevllm-1.2.0.dist-info/METADATA"
    meta.write_text(meta.read_text().replace("Version: 1.2.0", "Version: 1.3.0"))
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "installed fakevllm is 1.3.0, but p pins 1.2.0" in result.output


def test_verify_installed_fails_the_build_with_a_named_list(locked: tuple[Path, str], clean_site: Path):
    site = clean_site
    manifest, _ = locked
    core = site / "fakevllm/core.py"
    core.write_text(core.read_text().replace("class Runner:", "class Worker:"))  # a bump that moved a symbol
    result = runner.invoke(
        app, ["verify", "--manifest", str(manifest), "--installed", "fakevllm", "--pair", "p", "--site", str(site)]
    )
    assert result.exit_code == 1
    assert "unresolved-import fakevllm.core:Runner at fakeplug/register.py:8" in result.output


def test_verify_installed_prints_one_row_per_line_and_per_finding(locked: tuple[Path, str], clean_site: Path):
    """Through a real process with stdout and stderr merged, as a CI log shows them."""
    site = clean_site
    manifest, _ = locked
    core = site / "fakevllm/core.py"
    core.write_text(core.read_text().replace("class Runner:", "class Worker:").replace("def compute", "def run"))
    args = ["verify", "--manifest", str(manifest), "--installed", "fakevllm", "--pair", "p", "--site", str(site)]
    proc = subprocess.run(
        [sys.executable, "-m", "atompin", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    rows = proc.stdout.splitlines()
    assert proc.returncode == 1
    assert all(row[:6] in ("ok    ", "warn  ", "FAIL  ") for row in rows), rows
    assert rows[0] == "ok    p: verdict pass"
    summary = rows.index("FAIL  fakeplug->fakevllm against the installed fakevllm: 2 error(s)")
    findings = rows[summary + 1 :]
    assert len(findings) == 2 and all(r.startswith("FAIL    ") for r in findings)
    assert any("unresolved-import fakevllm.core:Runner at fakeplug/register.py:8" in r for r in findings)


# -- doctor (runs code: in a subprocess, on fakes) ------------------------------------------


def doctor(site: Path, *extra: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "atompin",
            "doctor",
            "fakeplug",
            "--provider",
            "fakevllm",
            "--site",
            str(site),
            "--format",
            "json",
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_doctor_rows_for_every_state(site: Path):
    code, report = doctor(site)
    assert code == 1
    eps = {e["name"]: (e["state"], e["detail"]) for e in report["entry_points"]}
    assert eps["general"] == ("ok", "")
    assert eps["plat"][0] == "raised" and "platform hook failed" in eps["plat"][1]
    assert eps["broken"][0] == "load failed" and "fakeplug.nope" in eps["broken"][1]
    rows = {r["target"]: (r["state"], r["reason"]) for r in report["patches"]}
    assert rows["fakevllm.core:Runner.step"] == ("installed", "")
    assert rows["fakevllm.core:moved_fn"][0] == "stood down" and "getattr-default" in rows["fakevllm.core:moved_fn"][1]
    assert rows["fakevllm.core:compute"] == (
        "stood down",
        "the installer logged: skipping the compute patch: FLAG is set",
    )
    # Nothing explains helper, and a hook raised: the row says so.
    assert rows["fakevllm.core:helper"][0] == "raised" and "platform hook failed" in rows["fakevllm.core:helper"][1]
    assert "fakevllm.core:Runner._fakeplug_patched" not in rows  # a marker flag is not a patch


def test_doctor_unexplained_patch_fails(site: Path):
    code, report = doctor(site, "--group", "fakevllm.general_plugins")
    rows = {r["target"]: r["state"] for r in report["patches"]}
    assert rows["fakevllm.core:helper"] == "not installed"
    assert code == 1 and not report["ok"]


def test_doctor_help_says_it_runs_code():
    result = runner.invoke(app, ["doctor", "--help"])
    assert "IMPORTS AND RUNS CODE" in result.output and "Example" in result.output
