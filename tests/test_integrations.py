"""atompin with the tools around it: command-line conventions, refs as git users write them,
stale locks refused by export and diff, docker buildx bake files, SARIF for code scanning,
Markdown for pull requests, the recipes, and the package build."""

from __future__ import annotations

import re
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.cli import app

runner = CliRunner()
ROOT = Path(__file__).parent.parent
GOOD = "miniplug-0.1.0+minivllm-0.31"
BAD = "miniplug-0.1.0+minivllm-0.33"
COMMANDS = [["check"], ["lock"], ["verify"], ["diff"], ["bump"], ["export"], ["doctor"], ["demo"]]
COMMANDS += [["relocations", "suggest"]]


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


@pytest.fixture
def locked(demo_project: Path) -> Path:
    """The demo project, locked (its pairs.toml path)."""
    assert invoke("lock", "--manifest", str(demo_project)).exit_code == 1  # the 0.33 pair fails its gate
    return demo_project


# -- command-line conventions ----------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-v", "--verbose", "--debug", "-q", "--quiet"])
@pytest.mark.parametrize("command", COMMANDS)
def test_global_flags_are_accepted_after_the_subcommand(command: list[str], flag: str):
    result = invoke(*command, flag, "--help")
    assert result.exit_code == 0, result.output
    assert flag in result.output  # and documented there


def test_verbose_after_the_subcommand_means_the_same_as_before_it(locked: Path):
    before = invoke("-v", "lock", "--manifest", str(locked)).output
    after = invoke("lock", "--manifest", str(locked), "--verbose").output
    plain = invoke("lock", "--manifest", str(locked)).output
    assert before == after and "relocation-state" in after and "relocation-state" not in plain


def test_quiet_after_verify_prints_only_failures(locked: Path):
    loud = invoke("verify", "--manifest", str(locked))
    quiet = invoke("verify", "--manifest", str(locked), "-q")
    assert loud.exit_code == quiet.exit_code == 1
    assert "ok    " in loud.output and "ok    " not in quiet.output and "FAIL" in quiet.output


def test_top_level_help_lists_every_exit_status():
    text = invoke("--help").output
    for status in ("0  pass", "1  findings fail the gate", "2  bad input", "3  git or network", "4  internal error"):
        assert status in text


def _examples(help_text: str) -> list[str]:
    lines = help_text.split("Example:", 1)[1].split("Options:", 1)[0].split("Arguments:", 1)[0]
    return [line.strip() for line in lines.splitlines() if line.strip()]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_examples_verbatim(command: list[str]):
    """Each example line of the docstring is one line of help: none merged, none re-wrapped."""
    from atompin import cli

    func = {"suggest": cli.relocations_suggest}.get(command[-1]) or getattr(cli, command[-1])
    doc = func.__doc__.split("Example:", 1)[1]
    expected = [line.strip() for line in doc.splitlines() if line.strip() and line.strip() != "\b"]
    wide = runner.invoke(app, [*command, "--help"], terminal_width=60).output  # narrow: re-wrapping would show
    assert _examples(wide) == expected


def test_export_example_keeps_two_commands_on_two_lines():
    examples = _examples(invoke("export", "--help").output)
    assert examples[0].startswith("atompin export") and examples[1].startswith("docker buildx bake")


@pytest.mark.parametrize("command", COMMANDS)
def test_placeholders_name_what_to_give_not_a_python_type(command: list[str]):
    text = invoke(*command, "--help").output
    assert not re.search(r"<(str|path|int|list\[[^\]]*\]|Path)>", text), text
    assert "list[" not in text


def test_path_and_name_placeholders():
    text = invoke("verify", "--help").output
    assert "--bake PATH" in text and "--pair NAME" in text and "--manifest PATH" in text


# -- refs as git users write them --------------------------------------------------------------


def _pin(manifest: Path, component: str, old: str, new: str) -> None:
    text = manifest.read_text()
    assert f'{component} = "{old}"' in text
    manifest.write_text(text.replace(f'{component} = "{old}"', f'{component} = "{new}"', 1))


@pytest.mark.parametrize("ref", ["HEAD", "origin/main", "refs/remotes/origin/main", "refs/heads/main"])
def test_head_and_remote_branch_names_resolve_to_the_branch_tip(demo_project: Path, ref: str):
    repo = git.Repo(demo_project.parent / "repos/minivllm")
    tip = repo.git.rev_parse("main")
    _pin(demo_project, "minivllm", "v0.31.0", ref)
    result = invoke("lock", "--manifest", str(demo_project), "--pair", GOOD)
    assert result.exit_code in (0, 1), result.output
    comp = lockfile.read(demo_project.parent / "atompin.lock").pair(GOOD).components["minivllm"]  # type: ignore[union-attr]
    assert (comp.ref, comp.ref_kind, comp.commit) == (ref, "branch", tip)
    # resolved once, the same ref works offline from the cache
    again = invoke("lock", "--manifest", str(demo_project), "--pair", GOOD, "--offline")
    assert again.exit_code in (0, 1) and "unchanged" in again.output


def test_refs_tags_names_a_tag(demo_project: Path):
    _pin(demo_project, "minivllm", "v0.31.0", "refs/tags/v0.31.0")
    invoke("lock", "--manifest", str(demo_project), "--pair", GOOD)
    comp = lockfile.read(demo_project.parent / "atompin.lock").pair(GOOD).components["minivllm"]  # type: ignore[union-attr]
    assert comp.ref_kind == "tag" and comp.version == "0.31.0"
    assert comp.commit == git.Repo(demo_project.parent / "repos/minivllm").git.rev_parse("v0.31.0^{commit}")


def test_a_branch_literally_named_like_a_remote_branch_wins(demo_project: Path):
    repo = git.Repo(demo_project.parent / "repos/minivllm")
    repo.git.branch("origin/main", "v0.31.0")  # a branch called "origin/main", not main's tip
    _pin(demo_project, "minivllm", "v0.31.0", "origin/main")
    invoke("lock", "--manifest", str(demo_project), "--pair", GOOD)
    comp = lockfile.read(demo_project.parent / "atompin.lock").pair(GOOD).components["minivllm"]  # type: ignore[union-attr]
    assert comp.commit == repo.git.rev_parse("v0.31.0^{commit}") != repo.git.rev_parse("main")


def test_an_unknown_remote_branch_is_still_bad_input(demo_project: Path):
    _pin(demo_project, "minivllm", "v0.31.0", "origin/no-such-branch")
    result = invoke("lock", "--manifest", str(demo_project))
    assert result.exit_code == 2 and "no tag, branch or commit named 'origin/no-such-branch'" in result.output


# -- a stale lock is refused by export and diff -------------------------------------------------


def _make_stale(manifest: Path) -> None:
    manifest.write_text(manifest.read_text().replace('minivllm = "v0.33.0"', 'minivllm = "v0.31.0"'))


def test_export_refuses_a_stale_lock_unless_allowed(locked: Path, tmp_path: Path):
    out = tmp_path / "atompin.bake.json"
    assert invoke("export", "--manifest", str(locked), "--pair", GOOD, "-o", str(out)).exit_code == 0
    out.unlink()
    _make_stale(locked)
    result = invoke("export", "--manifest", str(locked), "--pair", GOOD, "-o", str(out))
    assert result.exit_code == 1 and not out.exists()
    [line] = result.output.strip().splitlines()
    assert "stale" in line and "run `atompin lock`" in line and "--allow-stale" in line
    allowed = invoke("export", "--manifest", str(locked), "--pair", GOOD, "-o", str(out), "--allow-stale")
    assert allowed.exit_code == 0 and out.exists()


def test_export_refuses_a_lock_older_than_a_relocation_table(locked: Path):
    table = locked.parent / "relocations/minivllm/0.33.toml"
    table.write_text(table.read_text() + "\n# a new entry would go here\n[[moved]]\nold = 'a:b'\nnew = 'c:d'\n")
    result = invoke("export", "--manifest", str(locked), "--pair", GOOD)
    assert result.exit_code == 1 and "relocation tables changed" in result.output


def test_diff_refuses_a_stale_default_new_lock(locked: Path, monkeypatch: pytest.MonkeyPatch):
    repo = git.Repo.init(locked.parent)
    repo.git.add("pairs.toml", "atompin.lock")
    repo.git.commit(
        "-qm",
        "lock",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t.invalid",
        },
    )
    monkeypatch.chdir(locked.parent)
    assert invoke("diff").exit_code == 0
    _make_stale(locked)
    result = invoke("diff")
    assert result.exit_code == 1 and "stale" in result.output and "run `atompin lock`" in result.output
    assert invoke("diff", "--allow-stale").exit_code == 0
    # explicit lock files are compared as they are
    lock_file = str(locked.parent / "atompin.lock")
    assert invoke("diff", lock_file, lock_file).exit_code == 0
