"""The baseline `lock` finds for the drift rules: declared, else the previous lock's pin, kept
while the pin stays; recorded in the lock. And `fail-on`, which lets an edge gate on warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.cli import app
from atompin.testing import git_repo, write_files

runner = CliRunner()

PROVIDER_1 = {
    "pv/__init__.py": '__version__ = "1.0.0"\n',
    "pv/prefill.py": """
        class PrefillBackend:
            def run(self, q):
                return q

            def prepare(self, batch):
                return batch


        def forward(layer, q):
            return layer.backend.run(q)
    """,
}
PROVIDER_2 = {
    "pv/__init__.py": '__version__ = "2.0.0"\n',
    "pv/prefill.py": """
        class PrefillBackend:
            def run(self, q, out=None):
                return q

            def prepare(self, batch):
                batch.sort()
                return batch


        def forward(layer, q, out):
            return layer.backend.run(q, out=out)
    """,
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/backend.py": """
        from pv.prefill import PrefillBackend


        class MyBackend(PrefillBackend):
            def run(self, q):
                return q

            def prepare(self, batch):
                return batch
    """,
}
MANIFEST = """\
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
{extra}
[[pairs]]
name = "plug+pv"
plug = "v0.1.0"
pv = "v1.0.0"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/pv", [("v1.0.0", PROVIDER_1), ("v2.0.0", PROVIDER_2)])
    git_repo(tmp_path / "repos/plug", [("v0.1.0", CONSUMER)])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text(MANIFEST.format(extra=""))
    return manifest


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


def test_the_previous_lock_is_the_baseline_after_a_bump_and_a_relock_keeps_it(project: Path):
    lock_path = project.parent / "atompin.lock"
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    first = lockfile.read(lock_path).pairs[0]
    assert first.checks[0].baseline_commit == ""  # nothing declared, no earlier lock
    assert "baseline" not in lock_path.read_text()

    bumped = invoke("bump", "pv", "v2.0.0", "--manifest", str(project))
    assert bumped.exit_code == 1, bumped.output  # the override can no longer take out=
    after = lockfile.read(lock_path).pairs[0]
    [check] = after.checks
    assert (check.baseline_commit, check.baseline_version, check.baseline_from) == (
        first.components["pv"].commit,
        "1.0.0",
        "previous-lock",
    )
    messages = {f.rule.value: f.message for f in after.findings}
    assert "out new since 1.0.0" in messages["override-drift"]
    assert "changed since 1.0.0" in messages["shadow-drift"] and "batch.sort()" in messages["shadow-drift"]

    text = lock_path.read_text()
    assert invoke("lock", "--manifest", str(project)).exit_code == 1
    assert lock_path.read_text() == text  # the pin did not move: the same baseline, the same lock


def test_a_declared_target_wins_over_the_previous_lock(project: Path):
    import git

    commit = git.Repo(project.parent / "repos/pv").git.rev_parse("v1.0.0^{commit}")
    files = {**CONSUMER, "plug/pv-version.env": f"PV_VERSION=1.0.0\nPV_COMMIT={commit}\n"}
    git_repo(project.parent / "repos/plug2", [("v0.1.0", files)])
    text = project.read_text().replace('repo = "repos/plug"', 'repo = "repos/plug2"')
    text = text.replace('package = "plug"\n', 'package = "plug"\ndeclares = { pv = "plug/pv-version.env" }\n', 1)
    project.write_text(text.replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))
    assert invoke("lock", "--manifest", str(project)).exit_code == 1
    [check] = lockfile.read(project.parent / "atompin.lock").pairs[0].checks
    assert (check.baseline_commit, check.baseline_from) == (commit, "declared")


def _declaring(project: Path, declared: str) -> None:
    """The consumer declares `declared` (a declares file's text) as its pv; the pair pins pv 2.0.0."""
    files = {**CONSUMER, "plug/pv-version.env": declared}
    git_repo(project.parent / "repos/plug2", [("v0.1.0", files)])
    text = project.read_text().replace('repo = "repos/plug"', 'repo = "repos/plug2"')
    text = text.replace('package = "plug"\n', 'package = "plug"\ndeclares = { pv = "plug/pv-version.env" }\n', 1)
    project.write_text(text.replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))


def test_a_declared_baseline_the_repository_lacks_is_said_in_the_lock(project: Path):
    """Checked without its baseline, the edge misses what changed since (here the override's
    `out=`, an error with the baseline): a warning says so, at the declaring line."""
    _declaring(project, "# what plug was written against\nPV_VERSION=0.9.0\nPV_COMMIT=" + "ab" * 20 + "\n")
    result = invoke("lock", "--manifest", str(project))
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    [check] = pair.checks
    assert check.baseline_commit == "" and check.baseline_from == ""
    [missing] = [f for f in pair.findings if f.rule.value == "baseline-unavailable"]
    assert (missing.severity.value, missing.symbol, missing.sites) == ("warning", "pv@v0.9.0", ["plug/pv-version.env:2"])
    assert "(v0.9.0 / abababababab) could not be resolved (no such ref in the repository)" in missing.message
    assert "--baseline REF" in missing.message
    assert "baseline-unavailable" in result.output


def test_a_previous_pin_gone_from_the_repository_is_said_without_the_declares_file_s_line(project: Path):
    """The declares file names no target, so the previous lock's pin is the baseline; gone
    (a force-push), the warning says so, sited nowhere: the declares file did not name it."""
    import git

    _declaring(project, "PV_REF=v1.0.0\n")
    project.write_text(project.read_text().replace('pv = "v2.0.0"', 'pv = "v1.0.0"'))
    lock_path = project.parent / "atompin.lock"
    invoke("lock", "--manifest", str(project))
    old = git.Repo(project.parent / "repos/pv").git.rev_parse("v1.0.0^{commit}")
    lock_path.write_text(lock_path.read_text().replace(old, "ab" * 20))
    project.write_text(project.read_text().replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))
    invoke("lock", "--manifest", str(project))
    pair = lockfile.read(lock_path).pairs[0]
    [missing] = [f for f in pair.findings if f.rule.value == "baseline-unavailable"]
    assert missing.message.startswith("the pair's previous pin in the lock (abababababab) could not be resolved")
    assert missing.sites == []


def test_a_declares_file_naming_no_target_is_said():
    from atompin.analysis.pinning import declared_target_skew

    [said] = declared_target_skew("plug", "pv", "plug/pv-version.env", "PV_REF=v1.0.0\n", "ab" * 20, "1.0.0")
    assert (said.rule.value, said.severity.value, said.sites[0].path) == (
        "declared-target-skew",
        "warning",
        "plug/pv-version.env",
    )
    assert "sets neither PV_VERSION (or a release tag in PV_TAG) nor PV_COMMIT" in said.message
    assert declared_target_skew("plug", "pv", "plug/pv-version.env", "PV_VERSION=1.0.0\n", "ab" * 20, "1.0.0") == []


def test_a_declared_baseline_found_by_its_commit_says_nothing(project: Path):
    import git

    commit = git.Repo(project.parent / "repos/pv").git.rev_parse("v1.0.0^{commit}")
    _declaring(project, f"PV_VERSION=0.9.0\nPV_COMMIT={commit}\n")  # no tag v0.9.0: the commit is found
    invoke("lock", "--manifest", str(project))
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert pair.checks[0].baseline_commit == commit
    assert not [f for f in pair.findings if f.rule.value == "baseline-unavailable"]


def test_a_baseline_option_naming_no_ref_is_said_and_one_naming_a_ref_is_used(project: Path):
    lock_path = project.parent / "atompin.lock"
    project.write_text(project.read_text().replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))
    invoke("lock", "--manifest", str(project), "--baseline", "v7.0.0")
    pair = lockfile.read(lock_path).pairs[0]
    [missing] = [f for f in pair.findings if f.rule.value == "baseline-unavailable"]
    assert missing.message.startswith("the --baseline given (v7.0.0) could not be resolved") and missing.sites == []
    assert invoke("lock", "--manifest", str(project), "--baseline", "v1.0.0").exit_code == 1
    pair = lockfile.read(lock_path).pairs[0]
    assert pair.checks[0].baseline_from == "option"
    assert "override-drift" in {f.rule.value for f in pair.findings}  # `out` new since 1.0.0: an error
    assert not [f for f in pair.findings if f.rule.value == "baseline-unavailable"]


def test_fail_on_makes_an_edge_gate_on_a_rule_s_warnings(tmp_path: Path, project: Path):
    consumer = {
        **CONSUMER,
        "plug/backend.py": CONSUMER["plug/backend.py"].replace("def run(self, q):", "def run(self, q, out=None):"),
    }
    git_repo(project.parent / "repos/plug3", [("v0.1.0", consumer)])
    project.write_text(project.read_text().replace('repo = "repos/plug"', 'repo = "repos/plug3"'))
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    invoke("bump", "pv", "v2.0.0", "--manifest", str(project))
    locked = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert [(f.rule.value, f.severity.value) for f in locked.findings] == [("shadow-drift", "warning")]

    project.write_text(project.read_text().replace("gate = true\n", 'gate = true\nfail-on = ["shadow-drift"]\n'))
    result = invoke("lock", "--manifest", str(project))
    assert result.exit_code == 1, result.output
    locked = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert [(f.rule.value, f.severity.value) for f in locked.findings] == [("shadow-drift", "error")]
    assert locked.verdict.value == "fail" and "fail-on" in locked.findings[0].message
    verbose = invoke("--verbose", "lock", "--manifest", str(project))
    assert "| +        batch.sort()" in verbose.output


def test_fail_on_names_rules_that_exist(project: Path):
    project.write_text(project.read_text().replace("gate = true\n", 'gate = true\nfail-on = ["shadow"]\n'))
    result = invoke("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "fail-on" in result.output


def test_check_names_a_folder_baseline_by_its_version(tmp_path: Path):
    consumer = write_files(tmp_path / "c", CONSUMER)
    old = write_files(tmp_path / "old", PROVIDER_1)
    new = write_files(tmp_path / "new", PROVIDER_2)
    result = invoke("check", str(consumer), str(new), "--baseline", str(old), "--no-cache", "--format", "json")
    assert result.exit_code == 1
    assert "out new since 1.0.0" in result.output


def test_a_git_tree_reads_many_blobs_in_one_go_like_one_by_one(tmp_path: Path):
    from atompin.sources.git import GitCache

    files = {f"pv/m{i}.py": f"X = {i}\n" + "# filler\n" * i for i in range(40)}
    repo = git_repo(tmp_path / "repo", [("v1", files)])
    cache = GitCache(tmp_path / "cache")
    tree = cache.tree(cache.resolve(str(repo), "v1"))
    paths = sorted(files)
    assert list(tree.read_many(paths)) == [(p, tree.read(p)) for p in paths]
    assert dict(tree.read_many(paths))["pv/m7.py"] == files["pv/m7.py"].encode()


def test_a_dockerfiles_arg_default_is_a_declared_target():
    """An image's own default pin (ATOM's Dockerfile: `ARG VLLM_COMMIT="..."`) is read as a
    declares file is; `LABEL` and `RUN` lines, and an `ARG` without a default, name nothing."""
    from atompin.analysis.pinning import declared_target, declared_target_skew, parse_env

    dockerfile = (
        'ARG BASE_IMAGE="rocm/pytorch:latest"\nFROM ${BASE_IMAGE} AS base\narg PV_VERSION=1.0.0\n'
        'ARG PV_COMMIT="' + "cd" * 20 + '"\nLABEL pv_commit="${PV_COMMIT}"\nRUN PV_X=1 make\nARG OTHER\n'
        "ENV PV_HOME=pv-home\n"
    )
    assert parse_env(dockerfile) == {
        "BASE_IMAGE": ("rocm/pytorch:latest", 1),
        "PV_VERSION": ("1.0.0", 3),
        "PV_COMMIT": ("cd" * 20, 4),
        "PV_HOME": ("pv-home", 8),
    }
    assert declared_target(dockerfile, "pv") == ("1.0.0", "cd" * 20)
    [said] = declared_target_skew("plug", "pv", "docker/Dockerfile", dockerfile, "ab" * 20, "1.0.0")
    assert said.sites[0].line == 4 and "commit cdcdcdcdcdcd declared, abababababab pinned" in said.message


def test_a_declared_commit_that_is_a_ref_is_said_and_is_no_baseline():
    """`ARG AITER_COMMIT="HEAD"` (ATOM's Dockerfiles): a build takes whatever the ref names when it
    runs. That is said, and it names no commit to check against."""
    from atompin.analysis.pinning import declared_target, declared_target_skew

    dockerfile = 'ARG PV_REPO="https://example.invalid/pv.git"\nARG PV_COMMIT="HEAD"\n'
    assert declared_target(dockerfile, "pv") == ("", "")
    [said] = declared_target_skew("plug", "pv", "docker/Dockerfile", dockerfile, "ab" * 20, "")
    assert (said.rule.value, said.severity.value, said.sites[0].line) == ("declared-target-skew", "warning", 2)
    assert "PV_COMMIT names 'HEAD', a ref, not a commit" in said.message
    assert "not the pinned abababababab" in said.message
    assert declared_target_skew("plug", "pv", "d", 'ARG PV_COMMIT="abcdef1"\n', "abcdef1" + "0" * 33, "") == []
    assert declared_target_skew("plug", "pv", "d", "PV_COMMIT=ABCDEF1\n", "abcdef1" + "0" * 33, "") == []


def test_several_declares_files_are_each_compared_and_the_first_target_found_is_the_baseline(project: Path):
    """ATOM declares its vLLM in vllm-version.env and, as the image's default, in its Dockerfile,
    which went stale (v0.25.1's commit, the env file 0.27.1's). Both are compared with the pin;
    the baseline is the first declared target the repository has, in the files' order."""
    import git

    commit = git.Repo(project.parent / "repos/pv").git.rev_parse("v1.0.0^{commit}")
    files = {
        **CONSUMER,
        "plug/pv-version.env": f"PV_VERSION=1.0.0\nPV_COMMIT={commit}\n",
        "docker/Dockerfile": 'FROM base\nARG PV_COMMIT="' + "cd" * 20 + '"\n',
    }
    git_repo(project.parent / "repos/plug2", [("v0.1.0", files)])
    text = project.read_text().replace('repo = "repos/plug"', 'repo = "repos/plug2"')
    declares = 'declares = { pv = ["docker/Dockerfile", "plug/pv-version.env"] }\n'
    project.write_text(text.replace('package = "plug"\n', f'package = "plug"\n{declares}', 1))
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    skews = sorted((f.sites, f.message) for f in pair.findings if f.rule.value == "declared-target-skew")
    assert [s for s, _ in skews] == [["docker/Dockerfile:2"]]  # the env file agrees with the pin
    assert "commit cdcdcdcdcdcd declared" in skews[0][1]
    # Neither file's target in the repository: the warning names both, at the first.
    unknown = files["plug/pv-version.env"].replace(commit, "ef" * 20).replace("1.0.0", "0.9.0")
    git_repo(project.parent / "repos/plug3", [("v0.1.0", {**files, "plug/pv-version.env": unknown})])
    project.write_text(project.read_text().replace('"repos/plug2"', '"repos/plug3"'))
    invoke("lock", "--manifest", str(project))
    [missing] = [f for f in lockfile.read(project.parent / "atompin.lock").pairs[0].findings if f.rule.value == "baseline-unavailable"]
    assert missing.sites == ["docker/Dockerfile:2"]
    assert "declares in docker/Dockerfile and plug/pv-version.env (cdcdcdcdcdcd / v0.9.0 / efefefefefef)" in missing.message
    project.write_text(project.read_text().replace('"repos/plug3"', '"repos/plug2"'))
    invoke("lock", "--manifest", str(project))
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    # The Dockerfile's commit is not in the repository: the next file's target is the baseline.
    assert (pair.checks[0].baseline_commit, pair.checks[0].baseline_from) == (commit, "declared")
    assert not [f for f in pair.findings if f.rule.value == "baseline-unavailable"]
    # Bumped, both files declare another pv than the pin.
    project.write_text(project.read_text().replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))
    assert invoke("lock", "--manifest", str(project)).exit_code == 1  # the override cannot take out=
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert pair.checks[0].baseline_commit == commit
    assert len([f for f in pair.findings if f.rule.value == "declared-target-skew"]) == 2


@pytest.mark.parametrize(
    ("requirement", "version", "said"),
    [
        ("pv<0.32.0,>=0.24.0", "0.33.0", True),  # vllm-beam-search-plugin 0.1.5 against vLLM 0.33
        ("pv<0.32.0,>=0.24.0", "0.31.0", False),
        ("pv==0.30.0+cpu", "0.30.0", False),  # vllm-rbln: a build of that release
        ("pv==0.30.0+cpu", "0.31.0", True),
        ("pv>=0.34", "0.34.0rc1", True),  # a pre-release is older than its release
        ("pv>=0.34.0rc1", "0.34.0rc2", False),
        ("pv[audio]~=0.31.0; python_version >= '3.10'", "0.32.0", True),
        ("pv==0.31.0; extra == 'pv'", "0.33.0", False),  # an optional extra: installed on request
        ("pv", "0.33.0", False),  # no version: unconstrained-plugin's to say
        ("other<1", "0.33.0", False),
    ],
)
def test_a_requirement_that_excludes_the_pin_is_said(requirement: str, version: str, said: bool):
    """The consumer's own requirement on the provider (its pyproject's dependencies) against the
    pinned release: pip will not install a pair it excludes together."""
    from atompin.analysis.pinning import read_pyproject, requirement_skew

    pyproject = f'[project]\nname = "plug"\ndependencies = [\n    "torch",\n    "{requirement}",\n]\n'
    found = requirement_skew("plug", "pv", "pv", read_pyproject(pyproject), version)
    assert bool(found) is said
    if said:
        [finding] = found
        assert (finding.rule.value, finding.severity.value) == ("declared-target-skew", "warning")
        assert finding.symbol == f"pv@{version}" and [str(s) for s in finding.sites] == ["pyproject.toml:5"]
        assert finding.message.startswith(f"plug requires {requirement}, which pv {version} does not satisfy")
    assert requirement_skew("plug", "pv", "pv", read_pyproject(pyproject), "") == []  # no version known: nothing to compare
    assert requirement_skew("plug", "pv", "pv", None, version) == []


def test_lock_says_when_the_consumers_requirement_excludes_the_pin(project: Path):
    files = {**CONSUMER, "pyproject.toml": '[project]\nname = "plug"\ndependencies = ["pv<2"]\n'}
    git_repo(project.parent / "repos/plug2", [("v0.1.0", files)])
    project.write_text(project.read_text().replace('repo = "repos/plug"', 'repo = "repos/plug2"'))
    assert invoke("lock", "--manifest", str(project)).exit_code == 0
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    assert not [f for f in pair.findings if f.rule.value == "declared-target-skew"]
    project.write_text(project.read_text().replace('pv = "v1.0.0"', 'pv = "v2.0.0"'))
    invoke("lock", "--manifest", str(project))
    pair = lockfile.read(project.parent / "atompin.lock").pairs[0]
    [skew] = [f for f in pair.findings if f.rule.value == "declared-target-skew"]
    assert skew.sites == ["pyproject.toml:3"] and "plug requires pv<2, which pv 2.0.0 does not satisfy" in skew.message


def test_a_release_tag_declares_a_version_and_an_empty_value_names_nothing():
    """vllm-ascend's Dockerfile: `ARG VLLM_TAG=v0.30.0` and `ARG VLLM_COMMIT=""` (empty: the tag
    is built). The tag is the declared version; the empty commit is no ref, and no skew."""
    from atompin.analysis.pinning import declared_target, declared_target_skew

    dockerfile = 'ARG PV_REPO=https://example.invalid/pv.git\nARG PV_TAG=v0.30.0\nARG PV_COMMIT=""\n'
    assert declared_target(dockerfile, "pv") == ("0.30.0", "")
    assert declared_target_skew("plug", "pv", "Dockerfile", dockerfile, "ab" * 20, "0.30.0") == []
    [said] = declared_target_skew("plug", "pv", "Dockerfile", dockerfile, "ab" * 20, "0.31.0")
    assert said.sites[0].line == 2 and "version 0.30.0 declared, 0.31.0 pinned" in said.message
    assert "a ref, not a commit" not in said.message
    # A version wins over a tag; a tag that is no version names none.
    assert declared_target("PV_VERSION=1.0\nPV_TAG=v2.0\n", "pv") == ("1.0", "")
    assert declared_target("PV_TAG=nightly\n", "pv") == ("", "")
