"""The review and bump flow: lock diffs, bump, SARIF, Markdown, the CI recipes, the terminal."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import git
import hcl2
import pytest
import yaml
from typer.testing import CliRunner

from atompin import lockfile
from atompin.cli import app
from atompin.lockdiff import diff_locks
from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedFinding, LockedPair
from atompin.model import Rule
from atompin.report import markdown, sarif

runner = CliRunner()
ROOT = Path(__file__).parent.parent
SNAPSHOTS = Path(__file__).parent / "snapshots"
PAIRS = """\
# pins for the plugin
[components.miniplug]
repo = "repos/miniplug"
package = "miniplug"
declares = { minivllm = "miniplug/vllm-version.env" }

[components.minivllm]
repo = "repos/minivllm"
package = "minivllm"

[[checks]]
consumer = "miniplug"
provider = "minivllm"

[[pairs]]
name = "plug+old"
miniplug = "v0.1.0"   # the plugin release
minivllm = "v0.31.0"  # pinned on purpose

[[pairs]]
name = "plug+other"
miniplug = "v0.1.0"
minivllm = "v0.31.0"
"""


@pytest.fixture
def project(demo_project: Path) -> Path:
    demo_project.write_text(PAIRS)
    return demo_project


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


# -- diff -------------------------------------------------------------------------------


def _pair(
    name: str,
    verdict: str,
    commit: str,
    findings: list[LockedFinding],
    gate_verdict: str | None = None,
    import_sites: int = 3,
) -> LockedPair:
    return LockedPair(
        name=name,
        verdict=verdict,
        components={"pv": LockedComponent(repo="r", ref=commit[:4], ref_kind="tag", commit=commit, version="")},
        checks=[
            LockedCheck(
                consumer="c", provider="pv", gate=True, verdict=gate_verdict or verdict, import_sites=import_sites
            )
        ],
        findings=findings,
    )


def _finding(rule: str, symbol: str, line: int = 1) -> LockedFinding:
    return LockedFinding(check="c->pv", rule=rule, severity="error", symbol=symbol, message="m", sites=[f"a.py:{line}"])


def test_diff_each_kind_of_change():
    old = Lock(
        manifest_hash="x",
        pairs=[
            _pair("kept", "pass", "a" * 40, [_finding("unresolved-import", "m:gone", 3)]),
            _pair("removed", "pass", "b" * 40, []),
            _pair("same", "pass", "c" * 40, [_finding("unresolved-import", "m:x", 1)]),
        ],
    )
    new = Lock(
        manifest_hash="y",
        pairs=[
            _pair("kept", "fail", "d" * 40, [_finding("missing-patch-target", "m:f")], import_sites=5),
            _pair("added", "fail", "e" * 40, [_finding("arity-drift", "m:g")]),
            _pair("same", "pass", "c" * 40, [_finding("unresolved-import", "m:x", 9)]),  # only the line moved
        ],
    )
    d = diff_locks(old, new, distance=lambda repo, a, b: 7)
    by = {p.name: p for p in d.pairs}
    assert {n: p.status for n, p in by.items()} == {
        "added": "added",
        "kept": "changed",
        "removed": "removed",
        "same": "unchanged",
    }
    kept = by["kept"]
    assert (kept.old_verdict, kept.new_verdict, kept.worse_gates) == ("pass", "fail", ["c->pv"])
    assert [f.symbol for f in kept.appeared] == ["m:f"] and [f.symbol for f in kept.resolved] == ["m:gone"]
    assert kept.counts == [("c->pv", "import_sites", 3, 5)]
    assert kept.components[0].distance == 7 and "7 commits apart" in kept.components[0].describe()
    assert by["added"].worse and d.worse
    back = diff_locks(new, old)
    assert not back.worse and [f.symbol for f in {p.name: p for p in back.pairs}["kept"].resolved] == ["m:f"]
    assert not diff_locks(old, old).changed


def test_diff_cli_defaults_to_the_lock_at_head_and_fails_when_worse(project: Path):
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    repo = git.Repo.init(project.parent)
    repo.git.add("pairs.toml", "atompin.lock")
    repo.git.commit(
        "-qm",
        "base",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    same = invoke("diff", "--manifest", str(project))
    assert same.exit_code == 0 and "no changes" in same.output
    assert invoke("bump", "minivllm", "v0.33.0", "--pair", "plug+old", "--manifest", str(project)).exit_code == 1
    result = invoke("diff", "--manifest", str(project))
    assert result.exit_code == 1
    assert "plug+old: changed, verdict warn -> fail" in result.output
    assert "+ error   missing-patch-target" in result.output
    # Each line says where (two declares files make two findings of one rule and symbol).
    lines = [x for x in result.output.splitlines() if "+ error   missing-patch-target" in x]
    assert lines and all(" [miniplug->minivllm] at miniplug/patches.py:" in x for x in lines), lines
    # Each appeared finding says why under it, as the lock's listing does; a resolved one does not.
    out = result.output.splitlines()
    why = out[out.index(lines[0]) + 1]
    assert why.startswith("            ") and "has no attribute" in why, why
    data = json.loads(invoke("diff", "--manifest", str(project), "--format", "json").output)
    assert data["schema"] == "atompin.diff/1" and data["worse"] and [p["name"] for p in data["pairs"]] == ["plug+old"]
    bad = invoke("diff", "--manifest", str(project), "--base", "no-such-rev")
    assert bad.exit_code == 2 and "no-such-rev" in bad.output


def test_markdown_diff_snapshot(project: Path):
    invoke("lock", "--manifest", str(project))
    before = lockfile.read(project.parent / "atompin.lock")
    invoke("bump", "minivllm", "v0.33.0", "--pair", "plug+old", "--manifest", str(project))
    after = lockfile.read(project.parent / "atompin.lock")
    text = markdown.render_diff(diff_locks(before, after))
    assert text.splitlines()[:2] == [
        "<!-- atompin:lock-diff -->",  # the marker the CI recipe finds atompin's own comment by
        "**atompin**: `plug+old` warn → fail — ❌ a gated verdict got worse",
    ]
    _snapshot("diff.md", text)
    _snapshot("lock.md", markdown.render_lock(after))


def _snapshot(name: str, text: str) -> None:
    """Compare with tests/snapshots/NAME; ATOMPIN_UPDATE_SNAPSHOTS=1 rewrites it (then review the diff)."""
    import os

    path = SNAPSHOTS / name
    if os.environ.get("ATOMPIN_UPDATE_SNAPSHOTS"):
        path.write_text(text)
    assert text == path.read_text()


# -- bump -------------------------------------------------------------------------------


def test_bump_keeps_comments_and_touches_only_the_named_ref(project: Path):
    invoke("lock", "--manifest", str(project))
    before = project.read_text()
    result = invoke("bump", "minivllm", "v0.33.0", "--pair", "plug+old", "--manifest", str(project))
    assert result.exit_code == 1, result.output  # the gate got worse
    after = project.read_text()
    assert after == before.replace(
        'minivllm = "v0.31.0"  # pinned on purpose', 'minivllm = "v0.33.0"  # pinned on purpose'
    )
    locked = lockfile.read(project.parent / "atompin.lock")
    assert locked.pair("plug+old").components["minivllm"].ref == "v0.33.0"  # type: ignore[union-attr]
    assert locked.pair("plug+other").components["minivllm"].ref == "v0.31.0"  # type: ignore[union-attr]
    assert invoke("verify", "--manifest", str(project)).exit_code == 1  # current, but the bumped pair fails


def test_bump_dry_run_writes_nothing(project: Path):
    invoke("lock", "--manifest", str(project))
    files = {p: p.read_bytes() for p in (project, project.parent / "atompin.lock")}
    result = invoke("bump", "minivllm", "v0.33.0", "--dry-run", "--manifest", str(project))
    assert result.exit_code == 1
    assert '+minivllm = "v0.33.0"  # pinned on purpose' in result.output
    assert "verdict warn -> fail" in result.output
    assert all(p.read_bytes() == data for p, data in files.items())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "v1"], "no component 'nope'"),
        (["--", "minivllm", "-x"], "starts with '-'"),
        (["minivllm", "v0.33.0", "--pair", "zzz"], "no pair named 'zzz'"),
    ],
)
def test_bump_bad_input_is_exit_2(project: Path, args: list[str], message: str):
    result = invoke("bump", "--manifest", str(project), *args)
    assert result.exit_code == 2 and message in result.output


def test_bump_to_the_same_ref_does_nothing(project: Path):
    result = invoke("bump", "minivllm", "v0.31.0", "--manifest", str(project))
    assert result.exit_code == 0 and "nothing to do" in result.output


# -- SARIF ------------------------------------------------------------------------------


def _assert_sarif_2_1_0(log: dict) -> None:
    """The structure SARIF 2.1.0 requires (and code-scanning upload reads)."""
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert driver["name"] == "atompin" and isinstance(driver["rules"], list)
        ids = [r["id"] for r in driver["rules"]]
        assert ids == [r.value for r in Rule] and len(set(ids)) == len(ids)
        for rule in driver["rules"]:
            assert rule["shortDescription"]["text"]
        for result in run["results"]:
            assert result["ruleId"] in ids and ids[result["ruleIndex"]] == result["ruleId"]
            assert result["level"] in ("none", "note", "warning", "error")
            assert result["message"]["text"]
            for loc in result["locations"]:
                phys = loc["physicalLocation"]
                assert not phys["artifactLocation"]["uri"].startswith("/")
                assert isinstance(phys["region"]["startLine"], int) and phys["region"]["startLine"] >= 1


def test_sarif_for_check_and_lock(project: Path, tmp_path: Path):
    from atompin.demo import CONSUMER_FILES, PROVIDER_033
    from atompin.testing import write_files

    consumer, provider = write_files(tmp_path / "c", CONSUMER_FILES), write_files(tmp_path / "p", PROVIDER_033)
    result = invoke("check", str(consumer), str(provider), "--format", "sarif", "--no-cache")
    assert result.exit_code == 1
    log = json.loads(result.output)
    _assert_sarif_2_1_0(log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert "miniplug/patches.py" in uris
    invoke("bump", "minivllm", "v0.33.0", "--pair", "plug+old", "--manifest", str(project))
    lock_log = json.loads(sarif.render_lock(lockfile.read(project.parent / "atompin.lock")))
    _assert_sarif_2_1_0(lock_log)
    levels = {r["level"] for r in lock_log["runs"][0]["results"]}
    assert {"error", "warning", "note"} <= levels


def test_markdown_check(tmp_path: Path):
    from atompin.demo import CONSUMER_FILES, PROVIDER_033
    from atompin.testing import write_files

    consumer, provider = write_files(tmp_path / "c", CONSUMER_FILES), write_files(tmp_path / "p", PROVIDER_033)
    out = invoke("check", str(consumer), str(provider), "--format", "markdown", "--no-cache").output
    # Without a baseline, a keyword the provider passes to a method of that name only warns.
    assert out.startswith("**atompin check** `minivllm`: ❌ fail (4 error, 1 warning)")
    assert "<details>" in out and "| error | `arity-drift` |" in out


# -- recipes ------------------------------------------------------------------------------


def _atompin_commands(text: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            words = part.strip().lstrip("\\").split()
            if words[:1] == ["atompin"]:
                out.append(words)
    return out


def _assert_commands_exist(commands: list[list[str]]) -> None:
    assert commands
    for words in commands:
        sub = [w for w in words[1:3] if not w.startswith("-") and not w.startswith('"')]
        sub = sub[:2] if sub[:1] == ["relocations"] else sub[:1]
        help_text = invoke(*sub, "--help").output
        assert "Usage" in help_text, words
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in help_text, (words, option)


def test_github_actions_recipe_parses_and_calls_real_commands():
    workflow = yaml.safe_load((ROOT / "docs/recipes/github-actions.yml").read_text())
    steps = workflow["jobs"]["pins"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("github/codeql-action/upload-sarif") for u in uses)
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "atompin verify" in runs and "--format markdown" in runs and "--format sarif" in runs
    _assert_commands_exist(_atompin_commands(runs))


def test_renovate_recipe_matches_every_pin_in_pairs_toml():
    """One dependency per pin, named after its pair, for every component of the shipped manifest."""
    config = json.loads((ROOT / "docs/recipes/renovate.json").read_text())
    pairs = (ROOT / "pairs.toml").read_text()
    found = {}
    for manager in config["customManagers"]:
        assert "fileMatch" not in manager  # removed in current Renovate: --strict fails on it
        [pattern] = manager["managerFilePatterns"]
        assert pattern.startswith("/") and re.search(pattern.strip("/"), "pairs.toml")
        regex = manager["matchStrings"][0].replace("(?<", "(?P<")
        for m in re.finditer(regex, pairs):
            dep = manager["depNameTemplate"].replace("{{{depName}}}", m.group("depName"))
            found[dep] = (manager["packageNameTemplate"], m.group("currentValue"))
    assert found == {
        "atom-0.1.5+vllm-0.31 atom": ("ROCm/ATOM", "v0.1.5"),
        "atom-0.1.5+vllm-0.31 vllm": ("vllm-project/vllm", "v0.31.0"),
        "atom-0.1.5+vllm-0.31 aiter": ("ROCm/aiter", "v0.1.16"),
        "lmcache-0.5.6+vllm-0.33 vllm": ("vllm-project/vllm", "v0.33.0"),
        "lmcache-0.5.6+vllm-0.33 lmcache": ("LMCache/LMCache", "v0.5.6"),
    }
    # pairs named after a component's line get no minor or major update of that component
    held = set()
    for rule in config["packageRules"]:
        if rule.get("enabled") is False:
            assert rule["matchUpdateTypes"] == ["major", "minor"]
            held |= {d for d in found for p in rule["matchDepNames"] if re.search(p.strip("/"), d)}
    assert held == set(found) - {"atom-0.1.5+vllm-0.31 aiter"}
    assert "postUpgradeTasks" not in config  # hosted Renovate refuses commands without allowedCommands


def test_bake_recipe_takes_what_export_writes(project: Path):
    recipe = hcl2.loads((ROOT / "docs/recipes/docker-bake.hcl").read_text())
    names = {k.strip('"') for block in recipe["variable"] for k in block}
    manifest = (ROOT / "pairs.toml").read_text()
    assert {"ATOM_REF", "VLLM_REF", "ATOM_COMMIT", "ATOMPIN_PAIR"} <= names
    assert 'variables = { repo = "ATOM_REPO", ref = "ATOM_REF" }' in manifest
    # export on a real (small) lock writes variables the bake file declares the same way
    invoke("lock", "--manifest", str(project))
    exported = json.loads(invoke("export", "--manifest", str(project), "--pair", "plug+old").output)
    assert {"MINIVLLM_REF", "MINIVLLM_COMMIT", "ATOMPIN_PAIR", "ATOMPIN_VERDICT"} <= set(exported["variable"])
    dockerfile = (ROOT / "docs/recipes/Dockerfile.atom-vllm").read_text()
    commands = _atompin_commands(dockerfile)
    assert commands and commands[0][:2] == ["atompin", "check"]
    _assert_commands_exist(commands)


def test_dockerfile_gate_works_on_an_installed_tree(tmp_path: Path):
    """The Dockerfile's gate, run against a fake installed provider."""
    from atompin.demo import CONSUMER_FILES, PROVIDER_033
    from atompin.testing import write_files

    site = write_files(tmp_path / "site-packages", {**PROVIDER_033, "torch/__init__.py": "", "six.py": ""})
    record = [p for p in PROVIDER_033]
    write_files(
        site,
        {
            "minivllm-0.33.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: minivllm\nVersion: 0.33.0\n",
            "minivllm-0.33.0.dist-info/RECORD": "".join(f"{p},,\n" for p in record),
        },
    )
    consumer = write_files(tmp_path / "atom", CONSUMER_FILES)
    [words] = [
        c for c in _atompin_commands((ROOT / "docs/recipes/Dockerfile.atom-vllm").read_text()) if c[1] == "check"
    ]
    args = [w if w != "/opt/atom" else str(consumer) for w in words[1:]]
    args = [a if a != "vllm" else "minivllm" for a in args]
    args = [a if a != "atom.plugin.vllm" else "miniplug" for a in args] + ["--site", str(site)]
    cut = args.index("--pair")  # the pin check needs a lock: tests/test_integrations.py runs the gate whole
    result = invoke(*args[:cut], *args[cut + 4 :])
    assert result.exit_code == 1 and "missing-patch-target" in result.output, result.output


def test_pre_commit_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    [hook] = hooks
    assert hook["id"] == "atompin-verify" and hook["language"] == "python" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "pairs.toml") and re.search(hook["files"], "relocations/vllm/0.33.toml")
    _assert_commands_exist(_atompin_commands(hook["entry"]))


# -- terminal -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["check"], ["lock"], ["verify"], ["diff"], ["bump"], ["export"], ["demo"], ["relocations", "suggest"], ["bisect"]],
)
def test_every_command_help_shows_an_example(command: list[str]):
    result = invoke(*command, "--help")
    assert result.exit_code == 0 and "Example" in result.output


def test_unexpected_errors_are_one_line_without_debug(tmp_path: Path):
    code = "import sys, atompin.cli as c\ndef boom(*a, **k): raise RuntimeError('kaboom')\nc.app = boom\nc.main()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 4
    assert proc.stderr.strip().count("\n") == 0 and "internal error: RuntimeError: kaboom" in proc.stderr
    assert "Traceback" not in proc.stderr


def _progress_on_a_terminal(project: Path, env: dict[str, str]) -> bytes:
    """What `atompin lock` writes to stderr when stderr is a terminal (a pseudo-terminal here)."""
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "atompin", "lock", "--manifest", str(project)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env={"PATH": os.environ["PATH"], "TERM": "xterm-256color", **env},
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(leader)
    return out


def test_progress_on_a_terminal_is_coloured_unless_no_color(project: Path, tmp_path: Path):
    colour = re.compile(rb"\x1b\[[0-9;]*m")  # SGR: colours and styles; cursor moves are not colour
    coloured = _progress_on_a_terminal(project, {"ATOMPIN_CACHE_DIR": str(tmp_path / "c1")})
    plain = _progress_on_a_terminal(project, {"ATOMPIN_CACHE_DIR": str(tmp_path / "c2"), "NO_COLOR": "1"})
    assert b"checking" in coloured and b"checking" in plain  # the progress line is there both times
    assert colour.search(coloured) and not colour.search(plain)


def test_a_text_diff_says_why_each_appeared_finding_matters():
    """Under each finding that appeared, its message, as the lock's listing has it: what a bump
    breaks, and why, without opening the lock. Not for info findings, nor for resolved ones."""
    from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedFinding, LockedPair
    from atompin.report import text

    def lock(findings: list[LockedFinding]) -> Lock:
        comp = LockedComponent(repo="r", ref="v1", ref_kind="tag", commit="a" * 40)
        check = LockedCheck(consumer="c", provider="pv", gate=True, verdict="fail")
        pair = LockedPair(name="p", verdict="fail", components={"pv": comp}, checks=[check], findings=findings)
        return Lock(manifest_hash="x", pairs=[pair])

    def finding(severity: str, symbol: str, message: str) -> LockedFinding:
        return LockedFinding(
            check="c->pv", rule="missing-member", severity=severity, symbol=symbol, message=message, sites=["c/x.py:1"]
        )

    old = lock([finding("warning", "pv.a:gone", "was wrong before")])
    new = lock([finding("error", "pv.a:b", "b is gone: AttributeError"), finding("info", "pv.a:c", "only so")])
    assert text.render_diff(diff_locks(old, new)).splitlines()[1:] == [
        "  + error   missing-member: pv.a:b [c->pv] at c/x.py:1",
        "            b is gone: AttributeError",
        "  + info    missing-member: pv.a:c [c->pv] at c/x.py:1",
        "  - warning missing-member: pv.a:gone [c->pv] at c/x.py:1",
    ]
