"""The resolver: `bump --latest` (the newest provider that passes) and `bisect` (the commit
that broke it), on a generated provider history of forty commits with release tags."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.analysis.definitions import definition_changed
from atompin.bisecting import bisect
from atompin.cli import app
from atompin.manifest import load_manifest
from atompin.resolving import Judge, find_latest, open_locker, tag_candidates
from atompin.sources import git as git_source
from atompin.sources.git import GitCache
from atompin.testing import git_history, git_repo

runner = CliRunner()

PAIRS = """\
[components.plug]
repo = "repos/plug"
package = "plug"

[components.pv]
repo = "repos/pv"
package = "pv"

[[checks]]
consumer = "plug"
provider = "pv"
gate = true

[[pairs]]
name = "plug+pv"
plug = "v0.1.0"  # the plugin
pv = "v1.0.0"    # the provider, pinned by hand
"""

CONSUMER = {
    "plug/__init__.py": "",
    "plug/use.py": """
        from pv.core import helper, plan


        def go(cfg):
            return plan(cfg) + helper(cfg)
    """,
}

CORE = """
    def plan(config):
        return 1


    def helper(x):
        return x
"""
CORE_MOVED = """
    def plan(config):
        return 1
"""
CORE_GROUPS = """
    def plan(config, groups):
        return len(groups)
"""
CORE_FIXED = """
    from pv.util import helper


    def plan(config, groups=()):
        return len(groups)
"""
UTIL = """
    def helper(x):
        return x
"""

MOVE = "move helper to pv.util"
GROUPS = "plan takes the kv-cache groups"
EXTRA = "core: add an unrelated function"


def provider_history() -> list[tuple[str, dict[str, str | None], str | None]]:
    """Forty commits: releases v1.0.0, v1.1.0, v1.2.0 (helper moved), v2.0.0 (plan needs
    groups), v2.1.0rc1 (both fixed); then a rename of helper breaks it again at main's last two commits."""
    commits: list[tuple[str, dict[str, str | None], str | None]] = []

    def noise(i: int, tag: str | None = None) -> None:
        commits.append((f"noise {i}", {f"pv/noise/m{i}.py": f"def f{i}():\n    return {i}\n"}, tag))

    commits.append(("initial", {"pv/__init__.py": "", "pv/core.py": CORE, "pv/noise/__init__.py": ""}, "v1.0.0"))
    for i in range(2, 10):
        noise(i)
    noise(10, "v1.1.0")
    noise(11)
    commits.append((EXTRA, {"pv/core.py": textwrap.dedent(CORE) + "\n\ndef extra():\n    return 0\n"}, None))  # 12
    noise(13)
    commits.append((MOVE, {"pv/core.py": CORE_MOVED, "pv/util.py": UTIL}, None))  # 14
    for i in range(15, 20):
        noise(i)
    noise(20, "v1.2.0")
    for i in range(21, 26):
        noise(i)
    commits.append((GROUPS, {"pv/core.py": CORE_GROUPS}, None))  # 26
    for i in range(27, 30):
        noise(i)
    noise(30, "v2.0.0")
    for i in range(31, 36):
        noise(i)
    commits.append(("fix both", {"pv/core.py": CORE_FIXED}, "v2.1.0rc1"))  # 36
    noise(37)
    noise(38)
    renamed = {"pv/util.py": UTIL.replace("helper", "assist"), "pv/core.py": CORE_FIXED.replace("helper", "assist")}
    commits.append(("rename helper to assist", renamed, None))  # 39
    noise(40)
    return commits


@pytest.fixture(scope="session")
def project_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resolver") / "proj"
    git_history(root / "repos/pv", provider_history())
    git_repo(root / "repos/plug", [("v0.1.0", CONSUMER)])
    (root / "pairs.toml").write_text(PAIRS)
    return root


@pytest.fixture
def project(project_once: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the project (its pairs.toml path), with a cache of its own."""
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    return Path(shutil.copytree(project_once, tmp_path / "proj")) / "pairs.toml"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


def pin(manifest: Path, ref: str) -> None:
    manifest.write_text(manifest.read_text().replace('pv = "v1.0.0"', f'pv = "{ref}"'))


def commit_of(manifest: Path, subject: str) -> str:
    repo = manifest.parent / "repos/pv"
    out = subprocess.run(["git", "log", "--format=%H %s", "main"], cwd=repo, capture_output=True, text=True).stdout
    return next(line.split(" ", 1)[0] for line in out.splitlines() if line.split(" ", 1)[1] == subject)


def files_of(manifest: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (manifest, manifest.parent / "atompin.lock") if p.exists()}


# -- candidates -------------------------------------------------------------------------


def test_tag_candidates_are_ordered_by_version_not_by_name():
    tags = {t: f"c-{t}" for t in ("v1.9.0", "v1.10.0", "v1.10.0rc1", "nightly", "v1.8.0", "0.9.0", "v2.0.0.dev3")}
    assert [c.ref for c in tag_candidates(tags, None, False, {})] == ["v1.10.0", "v1.9.0", "v1.8.0", "0.9.0"]
    with_pre = tag_candidates(tags, None, True, {"v1.8.0": "1.8.0"})
    assert [c.ref for c in with_pre] == ["v2.0.0.dev3", "v1.10.0", "v1.10.0rc1", "v1.9.0"]
    assert [c.ref for c in tag_candidates(tags, "v1.9*", False, {})] == ["v1.9.0"]
    # A tag in a folder is no release unless the glob names it (aiter's `archive/2.4`, an old branch).
    foldered = {**tags, "archive/2.4": "c-archive", "release/3.0.0": "c-release"}
    assert [c.ref for c in tag_candidates(foldered, None, False, {})][:1] == ["v1.10.0"]
    assert [c.ref for c in tag_candidates(foldered, "release/*", False, {})] == ["release/3.0.0"]
    # Two pins: nothing older than the newer one, and at least newer than the older one.
    two = tag_candidates(tags, None, False, {"v1.8.0": "1.8.0", "v1.9.0": "1.9.0"})
    assert [(c.ref, c.commit, c.version) for c in two] == [
        ("v1.10.0", "c-v1.10.0", "1.10.0"),
        ("v1.9.0", "c-v1.9.0", "1.9.0"),
    ]


# -- bump --latest --------------------------------------------------------------------


def test_bump_latest_pins_the_newest_passing_tag(project: Path):
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    result = invoke("bump", "pv", "--latest", "--manifest", str(project))
    assert result.exit_code == 0, result.output
    assert project.read_text() == PAIRS.replace('pv = "v1.0.0"    #', 'pv = "v1.1.0"    #')
    locked = lockfile.read(project.parent / "atompin.lock")
    assert locked.pair("plug+pv").components["pv"].ref == "v1.1.0"  # type: ignore[union-attr]
    rows = [line.split() for line in result.output.splitlines() if line.startswith("  v")]
    assert [(r[0], r[3]) for r in rows] == [("v2.0.0", "fail"), ("v1.2.0", "fail"), ("v1.1.0", "pass")]
    assert "2 gated errors: arity-drift 1, unresolved-import 1" in result.output  # what decided v2.0.0
    assert "1 gated error: unresolved-import 1" in result.output  # and v1.2.0
    assert "newest passing: pv v1.1.0; pinning it in plug+pv" in result.output
    assert '+pv = "v1.1.0"    # the provider, pinned by hand' in result.output  # the pairs.toml edit
    assert "pv: v1.0.0 (" in result.output and "v1.1.0 (" in result.output  # the lock diff
    assert invoke("verify", "--manifest", str(project)).exit_code == 0


def test_bump_latest_when_nothing_passes_pins_nothing_and_suggests_bisect(project: Path):
    pin(project, "v1.1.0")
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    before = files_of(project)
    result = invoke("bump", "pv", "--latest", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    assert files_of(project) == before
    assert "no candidate passes: nothing pinned" in result.output
    assert "atompin bisect pv v1.1.0 v1.2.0" in result.output


def test_bump_latest_dry_run_writes_nothing(project: Path):
    before = files_of(project)
    result = invoke("bump", "pv", "--latest", "--dry-run", "--manifest", str(project))
    assert result.exit_code == 0 and "dry run: nothing written" in result.output
    assert files_of(project) == before


def test_bump_latest_with_pre_releases_and_a_glob(project: Path):
    pin(project, "v1.1.0")
    result = invoke("bump", "pv", "--latest", "--pre", "--dry-run", "--manifest", str(project))
    assert result.exit_code == 0 and "newest passing: pv v2.1.0rc1" in result.output
    project.write_text(PAIRS)  # back at v1.0.0
    result = invoke("bump", "pv", "--latest", "--match", "v1.*", "--manifest", str(project))
    assert result.exit_code == 0, result.output
    assert "v2.0.0" not in result.output and 'pv = "v1.1.0"' in project.read_text()


def test_bump_latest_on_a_branch_pins_the_newest_passing_commit(project: Path):
    pin(project, "v1.1.0")
    result = invoke("bump", "pv", "--latest", "--branch", "main", "--manifest", str(project))
    assert result.exit_code == 0, result.output
    # The two newest commits fail (helper renamed); the one before them passes.
    chosen = commit_of(project, "noise 38")
    assert f'pv = "{chosen}"    # the provider, pinned by hand' in project.read_text()
    rows = [line.split() for line in result.output.splitlines() if line.startswith("  ") and "gated" in line]
    tried = [(r[0], r[3]) for r in rows]
    assert tried == [
        (commit_of(project, "noise 40")[:12], "fail"),
        (commit_of(project, "rename helper to assist")[:12], "fail"),
        (chosen[:12], "pass"),
    ]
    assert "commits of branch 'main' after v1.1.0 (30 candidates)" in result.output


def test_bump_latest_on_a_branch_from_the_newest_pin(project: Path):
    pin(project, "v2.1.0rc1")
    search = find_latest(project, "pv", branch="main")
    assert [c.ref for c in search.candidates] == [
        commit_of(project, s) for s in ("noise 40", "rename helper to assist", "noise 38", "noise 37")
    ]
    assert search.plan is not None and search.plan.changed == ["plug+pv"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pv"], "give the new REF, or --latest"),
        (["pv", "v1.1.0", "--latest"], "not both"),
        (["pv", "v1.1.0", "--match", "v1*"], "need --latest"),
        (["pv", "--latest", "--branch", "main", "--match", "v1*"], "--branch takes a branch's commits"),
        (["pv", "--latest", "--branch", "v1.2.0"], "is a tag, not a branch"),
        (["pv", "--latest", "--pair", "nope"], "no pair named 'nope'"),
        (["nope", "--latest"], "no component 'nope'"),
    ],
)
def test_bump_latest_bad_input_is_exit_2(project: Path, args: list[str], message: str):
    before = files_of(project)
    result = invoke("bump", "--manifest", str(project), *args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert files_of(project) == before


def test_an_interrupted_search_leaves_everything_as_it_was(project: Path):
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    before = files_of(project)
    seen: list[str] = []

    def interrupt(message: str) -> None:
        seen.append(message)
        if message.startswith("trying pv v1.2.0"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        find_latest(project, "pv", progress=interrupt)
    assert any(m.startswith("trying pv v2.0.0") for m in seen)  # one candidate was judged already
    assert files_of(project) == before
    seen.clear()

    def interrupt_bisect(message: str) -> None:
        seen.append(message)
        if "step 4" in message:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bisect(project, "pv", "v1.0.0", "v2.0.0", progress=interrupt_bisect)
    assert any("step 3" in m for m in seen)
    assert files_of(project) == before
    assert not [p for p in project.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


# -- bisect -----------------------------------------------------------------------------


def test_bisect_names_the_commit_that_moved_a_function(project: Path):
    result = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    culprit = commit_of(project, MOVE)
    assert f"first worse commit: {culprit} (4 of 10), 2026-01-01T00:14:00+00:00" in result.output
    assert f"  {MOVE}" in result.output
    assert "+ error   unresolved-import  pv.core:helper  [fails the gate]" in result.output
    assert "changed here: pv/core.py (defines it), pv/util.py (defines it)" in result.output
    steps = [line for line in result.output.splitlines() if line.startswith("  ") and "/10 " in line]
    assert len(steps) <= 1 + math.ceil(math.log2(10))


def test_bisect_names_the_commit_that_added_a_required_parameter(project: Path):
    result = invoke("bisect", "pv", "v1.2.0", "v2.0.0", "--format", "json", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["schema"] == "atompin.bisect/1" and data["commits"] == 10
    culprit = data["culprit"]
    assert (culprit["commit"], culprit["subject"]) == (commit_of(project, GROUPS), GROUPS)
    [finding] = [f for f in culprit["findings"] if f["gated"]]
    assert (finding["rule"], finding["symbol"]) == ("arity-drift", "pv.core:plan")
    assert finding["files"] == [{"path": "pv/core.py", "how": "defines"}]
    assert finding["sites"] == ["plug/use.py:5"]
    assert culprit["before"]["gated_errors"] == {"unresolved-import": 1}  # the move was there already
    assert culprit["after"]["gated_errors"] == {"arity-drift": 1, "unresolved-import": 1}
    assert data["good"]["ref"] == "v1.2.0" and data["bad"]["verdict"] == "fail"


def test_bisect_markdown_is_a_report_for_a_pr(project: Path):
    result = invoke("bisect", "pv", "v1.1.0", "v2.0.0", "--format", "markdown", "--manifest", str(project))
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.startswith("**atompin bisect** pv v1.1.0..v2.0.0: 20 commits on the first-parent line")
    assert f"`{commit_of(project, MOVE)[:12]}`" in first
    assert (
        "| plug+pv | error (gate) | `unresolved-import` | `pv.core:helper` "
        "| `pv/core.py` (defines it), `pv/util.py` (defines it) |" in result.output
    )


def test_bisect_when_bad_is_not_worse(project: Path):
    result = invoke("bisect", "pv", "v1.0.0", "v1.1.0", "--manifest", str(project))
    assert result.exit_code == 0, result.output
    assert "no finding that fails a gate appears from v1.0.0 to v1.1.0" in result.output


def test_bisect_refs_in_the_wrong_order_are_bad_input(project: Path):
    result = invoke("bisect", "pv", "v1.2.0", "v1.1.0", "--manifest", str(project))
    assert result.exit_code == 2 and "give the older ref first" in result.output


def on_another_file_system(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repositories as if on another file system than the cache: fetched shallow, as from a
    server (on the same one, their objects are linked, with the whole history)."""
    monkeypatch.setattr(git_source, "_same_file_system", lambda a, b: False)


def test_bisect_offline_without_the_history_is_one_line_and_exit_3(project: Path, monkeypatch: pytest.MonkeyPatch):
    on_another_file_system(monkeypatch)
    result = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--offline", "--manifest", str(project))
    assert result.exit_code == 3 and "not in the cache; run once without --offline" in result.output
    for ref in ("v1.2.0", "v1.1.0"):  # both ends cached by `lock`, as depth-1 commits without history
        pin(project, ref)
        invoke("lock", "--manifest", str(project))
        project.write_text(PAIRS)
    before = files_of(project)
    result = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--offline", "--manifest", str(project))
    assert result.exit_code == 3, result.output
    assert result.output.strip().splitlines() == [
        f"atompin: error: {project.parent / 'repos/pv'}: the history from v1.1.0 to v1.2.0 is not in the cache; "
        "run once without --offline"
    ]
    assert files_of(project) == before


def test_bisect_fetches_a_blob_filtered_partial_history_then_works_offline(
    project: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(git_source, "_FIRST_DEEPEN", 2)  # several deepening rounds on a short range
    on_another_file_system(monkeypatch)
    online = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--format", "json", "--manifest", str(project))
    assert online.exit_code == 1, online.output
    cache = GitCache(project.parent.parent / "cache")
    repo = cache.repo(str(project.parent / "repos/pv"), create=False)
    assert repo is not None
    assert (Path(repo.git_dir) / "shallow").exists()  # history of the range, not the whole repository
    assert int(repo.git.rev_list("--count", "v1.2.0")) < 40
    assert repo.git.rev_list("--count", "v1.1.0..v1.2.0") == "10"
    assert "blob:limit" in repo.git.config("--get-regexp", "partialclonefilter")
    shutil.move(project.parent / "repos", project.parent / "repos-gone")  # the network is gone
    offline = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--format", "json", "--offline", "--manifest", str(project))
    assert offline.exit_code == 1, offline.output
    assert json.loads(offline.output)["culprit"] == json.loads(online.output)["culprit"]


def test_bisect_of_a_linked_repository_needs_no_deepening_and_works_offline(project: Path):
    """Given by path on the cache's file system, the provider's whole history is there after `lock`."""
    for ref in ("v1.2.0", "v1.1.0"):
        pin(project, ref)
        assert invoke("lock", "--manifest", str(project)).exit_code in (0, 1)
        project.write_text(PAIRS)
    repo = GitCache(project.parent.parent / "cache").repo(str(project.parent / "repos/pv"), create=False)
    assert repo is not None and not (Path(repo.git_dir) / "shallow").exists()
    offline = invoke("bisect", "pv", "v1.1.0", "v1.2.0", "--format", "json", "--offline", "--manifest", str(project))
    assert offline.exit_code == 1, offline.output
    assert json.loads(offline.output)["culprit"]


# -- speed: what each step parses -----------------------------------------------------


def test_each_trial_after_the_first_parses_only_the_changed_modules_the_consumer_reaches(project: Path):
    manifest, _ = load_manifest(project)
    with open_locker(manifest, project, project.parent.parent / "cache", False, None) as locker:
        judge = Judge(locker, "pv", list(manifest.pairs))
        tip = judge.resolve("main")
        commits = locker.git.first_parent_commits(judge.resolve("v1.0.0"), tip)
        assert judge.trial("v1.1.0").parsed == 1  # pv/core.py: the only module with names the consumer uses
        assert judge.trial(commits[10 - 2]).parsed == 0  # "noise 11": an unreached module changed
        assert judge.trial(commits[12 - 2]).parsed == 1  # "core: add ...": pv/core.py changed
        assert judge.trial(commits[12 - 2]).parsed == 0  # the same commit again: all cached


# -- which changed files hold a symbol ---------------------------------------------------


def test_a_definition_changes_when_its_code_does_not_when_its_layout_does():
    before = b"class Runner:\n    def run(self, n):\n        return n  # old\n\n\nLIMIT = 3\n"
    relaid = b"class Runner:\n\n    def run(self,\n            n):\n        return n\n\n\nLIMIT = 3\n"
    assert not definition_changed(before, relaid, "Runner.run")
    assert definition_changed(before, before.replace(b"(self, n)", b"(self, n, mode)"), "Runner.run")
    assert definition_changed(before, None, "Runner.run")  # the file was deleted
    assert definition_changed(None, before, "LIMIT")  # the file was added
    assert not definition_changed(before, before.replace(b"LIMIT = 3", b"LIMIT = 4"), "Runner.run")
    gated = b"import sys\nif sys.version_info >= (3, 12):\n    def f(a):\n        pass\nelse:\n    def f(a, b):\n        pass\n"
    assert definition_changed(gated, gated.replace(b"(a, b)", b"(a, b, c)"), "f")
    assert not definition_changed(b"def broken(:\n", b"def broken(:\n", "broken")  # unparseable: unknown


def test_bisect_says_how_each_changed_file_holds_the_symbol(project: Path, tmp_path: Path):
    """A commit that changes a definition in one file and only a caller in another."""
    repo = tmp_path / "calls"
    git_history(
        repo,
        [
            (
                "initial",
                {"pv/__init__.py": "", "pv/core.py": CORE, "pv/runner.py": "from pv.core import plan\n"},
                "v1.0.0",
            ),
            (
                GROUPS,
                {
                    "pv/core.py": textwrap.dedent(CORE_GROUPS) + "\n\ndef helper(x):\n    return x\n",
                    "pv/runner.py": "from pv.core import plan\nplan(None, [])\n",
                },
                "v1.1.0",
            ),
        ],
    )
    project.write_text(PAIRS.replace('repo = "repos/pv"', f'repo = "{repo}"'))
    result = invoke("bisect", "pv", "v1.0.0", "v1.1.0", "--format", "json", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    [finding] = json.loads(result.output)["culprit"]["findings"]
    assert finding["files"] == [{"path": "pv/core.py", "how": "defines"}, {"path": "pv/runner.py", "how": "names"}]


# -- the scheduled-job recipe ----------------------------------------------------------


def test_the_scheduled_recipe_calls_real_commands_and_reads_what_they_print(project: Path):
    import re

    import yaml

    workflow = yaml.safe_load((Path(__file__).parent.parent / "docs/recipes/latest-vllm.yml").read_text())
    assert "schedule" in workflow[True]  # YAML reads the key `on` as True
    runs = "\n".join(s.get("run", "") for s in workflow["jobs"]["latest"]["steps"])
    for words in (line.split() for line in runs.splitlines() if line.strip().startswith("atompin ")):
        help_text = invoke(words[1], "--help").output
        assert "Usage" in help_text, words
        assert all(w in help_text for w in words if w.startswith("--")), words
    # The lines the job reads with sed are the lines the commands print.
    newest = re.search(r"s/\^newest passing: vllm (.*?);\.\*/", runs)
    broke = re.search(r"s/\^find the commit that broke it: atompin bisect vllm //p", runs)
    assert newest and broke
    passing = invoke("bump", "pv", "--latest", "--dry-run", "--manifest", str(project)).output
    assert re.search(r"^newest passing: pv ([^;]*);", passing, re.M).group(1) == "v1.1.0"  # type: ignore[union-attr]
    pin(project, "v1.1.0")
    failing = invoke("bump", "pv", "--latest", "--manifest", str(project)).output
    [hint] = [
        line for line in failing.splitlines() if line.startswith("find the commit that broke it: atompin bisect ")
    ]
    assert hint.split()[-3:] == ["pv", "v1.1.0", "v1.2.0"]


def test_bump_latest_works_offline_from_the_cache(project: Path):
    online = invoke("bump", "pv", "--latest", "--dry-run", "--manifest", str(project))
    assert online.exit_code == 0
    shutil.move(project.parent / "repos", project.parent / "repos-gone")  # the network is gone
    offline = invoke("bump", "pv", "--latest", "--offline", "--manifest", str(project))
    assert offline.exit_code == 0, offline.output
    table = [line for line in online.output.splitlines() if line.startswith("  ")][:4]
    assert [line for line in offline.output.splitlines() if line.startswith("  ")][:4] == table
    assert 'pv = "v1.1.0"' in project.read_text()


def test_progress_names_each_candidate_and_each_step(project: Path):
    """On a terminal the same lines drive the status line; --verbose prints them in logs."""
    latest = invoke("--verbose", "bump", "pv", "--latest", "--dry-run", "--manifest", str(project))
    assert "atompin: trying pv v2.0.0 (1 of 3)" in latest.output
    assert "atompin: trying pv v1.1.0 (3 of 3)" in latest.output
    bisected = invoke("--verbose", "bisect", "pv", "v1.1.0", "v1.2.0", "--manifest", str(project))
    assert "atompin: bisect pv: 10 commits from v1.1.0 to v1.2.0; judging v1.1.0" in bisected.output
    assert "atompin: bisect pv: step 2, 9 commits left: " in bisected.output


def test_bump_latest_from_a_pin_without_a_version_tries_only_later_commits(project: Path):
    """A pin whose tree says no version (aiter pinned at a commit of main): the release tags
    cannot be told newer by version, and every tag was a candidate: `bump --latest` said
    "newer than" the pin of tags years older, and would pin an older release that passes (a
    downgrade). The search now stops at the first tag committed no later than the pin."""
    pin(project, commit_of(project, "noise 23"))  # after v1.2.0, before v2.0.0
    assert invoke("lock", "--manifest", str(project)).exit_code == 1
    before = files_of(project)
    result = invoke("bump", "pv", "--latest", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    rows = [line.split() for line in result.output.splitlines() if line.startswith("  v")]
    assert [(r[0], r[3]) for r in rows] == [("v2.0.0", "fail")]  # v1.1.0, which passes, is older
    assert f"release tags committed after {commit_of(project, 'noise 23')[:12]} (4 candidates)" in result.output
    assert "not tried: v1.2.0 (and the 2 older releases below it), committed no later than " in result.output
    assert "no candidate passes: nothing pinned" in result.output
    assert f"atompin bisect pv {commit_of(project, 'noise 23')} v2.0.0" in result.output
    assert files_of(project) == before


def test_bump_latest_suggests_no_bisect_when_the_pin_fails_the_same_way(project: Path):
    """Nothing passes, and the pin itself fails with the errors of the oldest candidate tried (aiter
    pinned at a commit ATOM's newer calls already break): a bisect from the pin would find nothing.
    It is said, instead of a bisect suggestion; one that adds an error is still bisected."""
    pin(project, commit_of(project, "noise 15"))  # after `helper` moved: failing, as v1.2.0 does
    result = invoke("bump", "pv", "--latest", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    rows = [line.split() for line in result.output.splitlines() if line.startswith("  v")]
    assert [(r[0], r[3]) for r in rows] == [("v2.0.0", "fail"), ("v1.2.0", "fail")]
    assert "atompin bisect" not in result.output
    assert f"the current pin {commit_of(project, 'noise 15')[:12]} fails too (1 gated error: unresolved-import 1)" in (
        result.output
    )
    assert "and v1.2.0 adds no gated error to it: nothing broke between them" in result.output
