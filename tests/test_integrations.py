"""atompin with the tools around it: command-line conventions, refs as git users write them,
stale locks refused by export and diff, docker buildx bake files, SARIF for code scanning,
Markdown for pull requests, the recipes, and the package build."""

from __future__ import annotations

import json
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


# -- docker buildx bake ------------------------------------------------------------------------


def _verify_bake(manifest: Path, *files: Path, pair: str = GOOD):  # type: ignore[no-untyped-def]
    args = [a for f in files for a in ("--bake", str(f))]
    return invoke("verify", "--manifest", str(manifest), "--pair", pair, *args)


def _pins(manifest: Path, pair: str = GOOD) -> dict[str, str]:
    import json

    return {
        k: v["default"]
        for k, v in json.loads(invoke("export", "--manifest", str(manifest), "--pair", pair).output)["variable"].items()
    }


@pytest.fixture
def good_only(demo_project: Path) -> Path:
    """The demo project with only the passing pair, locked."""
    text = demo_project.read_text()
    demo_project.write_text(text[: text.index('[[pairs]]\nname = "miniplug-0.1.0+minivllm-0.33"')])
    assert invoke("lock", "--manifest", str(demo_project)).exit_code == 0
    return demo_project


def test_later_bake_files_override_earlier_ones_hcl_and_json(good_only: Path, monkeypatch: pytest.MonkeyPatch):
    import json

    monkeypatch.delenv("MINIVLLM_REF", raising=False)
    pins = _pins(good_only)
    base = good_only.parent / "docker-bake.hcl"
    base.write_text('variable "MINIVLLM_REF" { default = "v0.30.0" }\ntarget "t" { args = { R = MINIVLLM_REF } }\n')
    over = good_only.parent / "override.json"
    over.write_text(json.dumps({"variable": {"MINIVLLM_REF": {"default": pins["MINIVLLM_REF"]}}}))
    alone = _verify_bake(good_only, base)
    assert alone.exit_code == 1 and "MINIVLLM_REF = 'v0.30.0', but the lock pins 'v0.31.0'" in alone.output
    assert "docker-bake.hcl:1:" in alone.output  # file and line of the value bake would use
    assert _verify_bake(good_only, base, over).exit_code == 0
    reverse = _verify_bake(good_only, over, base)  # the later file wins, whatever its format
    assert reverse.exit_code == 1 and "v0.30.0" in reverse.output


def test_bake_files_with_a_byte_order_mark_read_as_without(good_only: Path, monkeypatch: pytest.MonkeyPatch):
    # Windows editors save one: `{` after it still means JSON, and HCL parses as it would.
    monkeypatch.delenv("MINIVLLM_REF", raising=False)
    pins = _pins(good_only)
    over = good_only.parent / "override.json"
    over.write_bytes(b"\xef\xbb\xbf" + json.dumps({"variable": {"MINIVLLM_REF": {"default": "v0.30.0"}}}).encode())
    hcl = good_only.parent / "docker-bake.hcl"
    hcl.write_bytes(b"\xef\xbb\xbf" + f'variable "MINIVLLM_REF" {{ default = "{pins["MINIVLLM_REF"]}" }}\n'.encode())
    assert _verify_bake(good_only, hcl).exit_code == 0
    result = _verify_bake(good_only, hcl, over)
    assert result.exit_code == 1 and "MINIVLLM_REF = 'v0.30.0', but the lock pins 'v0.31.0'" in result.output


def test_a_bake_file_that_is_not_utf8_is_one_line_of_bad_input(good_only: Path):
    hcl = good_only.parent / "docker-bake.hcl"
    hcl.write_bytes(b'variable "A" { default = "x" }\n# caf\xe9\n')
    result = _verify_bake(good_only, hcl)
    assert result.exit_code == 2
    assert "docker-bake.hcl:2: byte 36 (0xe9) is not UTF-8; save the bake file as UTF-8" in result.output
    assert "Traceback" not in result.output


def test_a_later_variable_block_replaces_the_earlier_one_whole(good_only: Path):
    pins = _pins(good_only)
    first = good_only.parent / "a.hcl"
    first.write_text(f'variable "MINIVLLM_COMMIT" {{ default = "{pins["MINIVLLM_COMMIT"]}" }}\n')
    second = good_only.parent / "b.hcl"  # no default: bake makes it the empty string
    second.write_text('variable "MINIVLLM_COMMIT" {}\ntarget "t" { args = { C = "${MINIVLLM_COMMIT}" } }\n')
    result = _verify_bake(good_only, first, second)
    assert result.exit_code == 1 and "MINIVLLM_COMMIT = ''" in result.output and "target t reads it" in result.output


def test_environment_overrides_defaults_unless_bake_is_told_not_to(good_only: Path, monkeypatch: pytest.MonkeyPatch):
    hcl = good_only.parent / "docker-bake.hcl"
    hcl.write_text('variable "MINIVLLM_REF" { default = "v0.31.0" }\ntarget "t" { args = { R = MINIVLLM_REF } }\n')
    assert _verify_bake(good_only, hcl).exit_code == 0
    monkeypatch.setenv("MINIVLLM_REF", "v0.33.0")
    result = _verify_bake(good_only, hcl)
    assert result.exit_code == 1 and "the environment sets MINIVLLM_REF='v0.33.0'" in result.output
    monkeypatch.setenv("BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP", "1")
    assert _verify_bake(good_only, hcl).exit_code == 0


@pytest.mark.parametrize(
    ("target", "ok"),
    [
        ('target "t" { dockerfile = "Dockerfile" }', True),  # declared, read by no target
        ('target "t" { args = { C = MINIVLLM_COMMIT } }', False),  # read as it is
        ('target "t" { args = { C = "${MINIVLLM_COMMIT}" } }', False),
        ('target "t" { args = { C = notequal("", MINIVLLM_COMMIT) ? MINIVLLM_COMMIT : MINIVLLM_REF } }', True),
        ('target "t" { args = { C = MINIVLLM_COMMIT != "" ? MINIVLLM_COMMIT : MINIVLLM_REF } }', True),
        ('target "t" { args = { C = coalesce(MINIVLLM_COMMIT, MINIVLLM_REF) } }', True),
        ('variable "C" { default = "${MINIVLLM_COMMIT}" }\ntarget "t" { tags = ["x:${C}"] }', False),  # through C
    ],
)
def test_an_empty_pinned_variable_fails_only_when_the_build_uses_it(good_only: Path, target: str, ok: bool):
    hcl = good_only.parent / "docker-bake.hcl"
    hcl.write_text(
        'variable "MINIVLLM_REF" { default = "v0.31.0" }\nvariable "MINIVLLM_COMMIT" { default = "" }\n' + target + "\n"
    )
    result = _verify_bake(good_only, hcl)
    assert (result.exit_code == 0) is ok, result.output
    if ok:
        assert "empty and read by no target as it is: MINIVLLM_COMMIT" in result.output


def test_interpolated_defaults_are_evaluated(good_only: Path):
    hcl = good_only.parent / "docker-bake.hcl"
    hcl.write_text('variable "V" { default = "0.31.0" }\nvariable "MINIVLLM_REF" { default = "v${V}" }\n')
    assert _verify_bake(good_only, hcl).exit_code == 0
    hcl.write_text('variable "MINIVLLM_REF" { default = lower("V0.31.0") }\n')
    result = _verify_bake(good_only, hcl)
    assert result.exit_code == 0 and "does not evaluate" in result.output  # said, not guessed


def _merged(*texts: str, environ: dict[str, str] | None = None, tmp: Path) -> dict[str, str | None]:
    from atompin import bakefile

    paths = []
    for i, text in enumerate(texts):
        path = tmp / f"f{i}.{'json' if text.lstrip().startswith('{') else 'hcl'}"
        path.write_text(text)
        paths.append(path)
    bake = bakefile.merge([bakefile.read(p) for p in paths], environ or {})
    return {name: value.value for name, value in bake.values.items()}


def test_bake_merging_follows_buildx_for_top_level_attributes(tmp_path: Path):
    """The cases of buildx's own tests (bake/hcl_test.go), through atompin's merge."""
    block = 'variable "FOO" { default = "abc" }\ntarget "app" { args = { v1 = "pre-${FOO}" } }\n'
    # TestHCLMultiFileAttrs: a top-level attribute in a later file wins over the block's default...
    assert _merged(block, 'FOO = "def"\n', tmp=tmp_path)["FOO"] == "def"
    # ...and the environment still wins over both, since a variable block exists
    assert _merged(block, 'FOO = "def"\n', environ={"FOO": "ghi"}, tmp=tmp_path)["FOO"] == "ghi"
    # TestHCLMultiFileGlobalAttrs: the later of two top-level attributes wins
    assert _merged('FOO = "abc"\n', 'FOO = "def"\n', tmp=tmp_path)["FOO"] == "def"
    # without a variable block the environment does not override an attribute
    assert _merged('FOO = "abc"\n', environ={"FOO": "x"}, tmp=tmp_path)["FOO"] == "abc"
    # TestHCLMultiFileSharedVariables: a variable of one file is read by a target of another
    assert (
        _merged(block, 'target "app" { args = { v2 = "${FOO}-post" } }\n', environ={"FOO": "def"}, tmp=tmp_path)["FOO"]
        == "def"
    )
    # an environment variable set to the empty string still overrides
    assert _merged(block, environ={"FOO": ""}, tmp=tmp_path)["FOO"] == ""


@pytest.mark.parametrize(
    ("name", "tag"),
    [
        ("atom-0.1.5+vllm-0.31", "atom-0.1.5_vllm-0.31"),
        ("nightly", "nightly"),
        (".hidden pair/x", "_hidden-pair-x"),
        ("x" * 200, "x" * 128),
    ],
)
def test_the_pair_name_as_an_image_tag(name: str, tag: str):
    from atompin.verify import image_tag

    assert image_tag(name) == tag
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", image_tag(name))  # Docker's tag grammar


def test_export_writes_the_tag_safe_pair_name(good_only: Path):
    pins = _pins(good_only)
    assert pins["ATOMPIN_PAIR"] == GOOD and pins["ATOMPIN_PAIR_TAG"] == "miniplug-0.1.0_minivllm-0.31"


def _readme_step(title: str) -> list[list[str]]:
    """The atompin commands of one README code block, as written."""
    text = (ROOT / "README.md").read_text()
    block = text.split(title, 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["atompin"]:
            commands.append(words[1:])
    return commands


def _shipped_project(tmp_path: Path) -> Path:
    """The shipped pairs.toml, relocation tables and bake recipe in a folder, with a lock that
    pins what `atompin lock` would (commits made up: the tests do not reach the network)."""
    import shutil

    from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedPair
    from atompin.locking import pair_digest, tables_for_pair
    from atompin.manifest import load_manifest
    from atompin.relocations import digests, manifest_tables

    root = tmp_path / "stack"
    shutil.copytree(ROOT / "relocations", root / "relocations")
    shutil.copy(ROOT / "pairs.toml", root / "pairs.toml")
    shutil.copy(ROOT / "docs/recipes/docker-bake.hcl", root / "docker-bake.hcl")
    manifest, _ = load_manifest(root / "pairs.toml")
    providers = [manifest.components[e.provider].package for e in manifest.checks]
    loaded = manifest_tables(root / manifest.relocations, root, providers)
    # A lock that re-derives from pairs.toml (pins, edges, gates, per-pair hashes), as `lock` writes it.
    pairs = [
        LockedPair(
            name=pair.name,
            verdict="pass",
            manifest_hash=pair_digest(manifest, pair, tables_for_pair(manifest, loaded, pair)),
            components={
                name: LockedComponent(
                    repo=manifest.components[name].repo,
                    ref=ref,
                    ref_kind="tag",
                    commit=f"{i:x}" * 40,
                    version=ref.lstrip("v"),
                )
                for i, (name, ref) in enumerate(sorted(pair.refs.items()), start=1)
            },
            checks=[
                LockedCheck(consumer=e.consumer, provider=e.provider, gate=e.gate, verdict="pass")
                for e in manifest.edges(pair)
            ],
        )
        for pair in manifest.pairs
    ]
    tables = digests(loaded)
    lockfile.write(root / "atompin.lock", Lock(manifest_hash=manifest.digest(), relocation_tables=tables, pairs=pairs))
    return root


def test_readme_image_build_step_passes_as_written_with_the_shipped_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import json

    root = _shipped_project(tmp_path)
    monkeypatch.chdir(root)
    for name in ("ATOM_REF", "ATOM_COMMIT", "VLLM_REF", "VLLM_COMMIT", "AITER_REF", "ATOMPIN_PAIR"):
        monkeypatch.delenv(name, raising=False)
    commands = _readme_step("### 2. In the image build")
    assert [c[0] for c in commands] == ["verify", "export", "verify"]
    for args in commands:
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
        assert "FAIL" not in result.output and "warn" not in result.output, result.output
    exported = json.loads((root / "atompin.bake.json").read_text())["variable"]
    assert exported["ATOMPIN_PAIR_TAG"]["default"] == "atom-0.1.5_vllm-0.31"  # what the recipe's tag uses
    # the recipe is judged for real: a default that disagrees with the lock fails
    bake = root / "docker-bake.hcl"
    bake.write_text(bake.read_text().replace('default = "v0.31.0"', 'default = "v0.30.0"'))
    assert invoke(*commands[0]).exit_code == 1
    assert invoke(*commands[2]).exit_code == 0  # with the export given after it, the lock's pins win


def test_dockerfile_gate_runs_whole_against_an_installed_provider(good_only: Path, tmp_path: Path):
    """The recipe's gate, as written, with the image's paths replaced by the test's."""
    from atompin.demo import CONSUMER_FILES, PROVIDER_031, PROVIDER_033
    from atompin.testing import write_files

    dockerfile = (ROOT / "docs/recipes/Dockerfile.atom-vllm").read_text()
    gate = re.search(r"atompin check [^\n]*", dockerfile).group(0).split()[1:]  # type: ignore[union-attr]
    consumer = write_files(tmp_path / "atom", CONSUMER_FILES)

    def run(version: str, files: dict[str, str]):  # type: ignore[no-untyped-def]
        site = write_files(tmp_path / f"site-{version}", {**files, "torch/__init__.py": "", "six.py": ""})
        meta = f"Metadata-Version: 2.1\nName: minivllm\nVersion: {version}\n"
        record = "".join(f"{p},,\n" for p in files)
        info = f"minivllm-{version}.dist-info"
        write_files(site, {f"{info}/METADATA": meta, f"{info}/RECORD": record})
        swap = {
            "/opt/atom": str(consumer),
            "vllm": "minivllm",
            "atom.plugin.vllm": "miniplug",
            '"${ATOMPIN_PAIR}"': GOOD,
            "/opt/atompin/pairs.toml": str(good_only),
        }
        return invoke(*[swap.get(w, w) for w in gate], "--site", str(site))

    assert run("0.31.0", PROVIDER_031).exit_code == 0
    moved = run("0.33.0", PROVIDER_033)  # the image installed another vLLM than the pair pins
    assert moved.exit_code == 1 and "pins 0.31.0" in moved.output and "missing-patch-target" in moved.output


# -- SARIF for code scanning ------------------------------------------------------------------

SCHEMA = Path(__file__).parent / "data/sarif/sarif-schema-2.1.0.json"


def _validate_sarif(text: str) -> dict:
    """The log, validated against the official SARIF 2.1.0 schema (formats checked too)."""
    import json

    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    log = json.loads(text)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return log


@pytest.fixture
def twin_pairs(demo_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two pairs with the same pins (the same findings), locked; the working folder is the project."""
    text = demo_project.read_text().replace('minivllm = "v0.31.0"', 'minivllm = "v0.33.0"')
    demo_project.write_text(text.replace('name = "miniplug-0.1.0+minivllm-0.31"', 'name = "twin-a"'))
    monkeypatch.chdir(demo_project.parent)
    invoke("lock")
    return demo_project


def test_sarif_of_a_lock_validates_against_the_official_schema(twin_pairs: Path):
    log = _validate_sarif(invoke("lock", "--format", "sarif").stdout)
    [run] = log["runs"]
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["fullDescription"]["text"] and rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["helpUri"].startswith("https://")
    assert {r["level"] for r in run["results"]} >= {"error", "warning"}


def test_sarif_results_are_anchored_on_the_pairs_line_of_pairs_toml(twin_pairs: Path):
    log = _validate_sarif(invoke("lock", "--format", "sarif").stdout)
    lines = twin_pairs.read_text().splitlines()
    seen = set()
    for result in log["runs"][0]["results"]:
        [primary] = result["locations"]
        where = primary["physicalLocation"]
        assert where["artifactLocation"] == {"uri": "pairs.toml", "uriBaseId": "%SRCROOT%"}
        line = lines[where["region"]["startLine"] - 1]
        assert line == f'name = "{result["properties"]["pair"]}"'
        seen.add(result["properties"]["pair"])
    assert seen == {"twin-a", BAD}


def test_sarif_related_locations_resolve_in_the_component_at_its_commit(twin_pairs: Path):
    log = _validate_sarif(invoke("lock", "--format", "sarif").stdout)
    [run] = log["runs"]
    bases = run["originalUriBaseIds"]
    commit = lockfile.read(twin_pairs.parent / "atompin.lock").pair(BAD).components["miniplug"].commit  # type: ignore[union-attr]
    base_id = f"MINIPLUG@{commit[:12]}"
    assert bases[base_id]["uri"] == "repos/miniplug/" and bases[base_id]["uriBaseId"] == "%SRCROOT%"
    repo = git.Repo(twin_pairs.parent / "repos/miniplug")
    related = [loc for r in run["results"] for loc in r.get("relatedLocations", [])]
    assert related
    for loc in related:
        artifact = loc["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == base_id
        source = repo.git.show(f"{commit}:{artifact['uri']}").splitlines()  # the file is there at the commit
        assert 1 <= loc["physicalLocation"]["region"]["startLine"] <= len(source)
    with_sites = next(r for r in run["results"] if r.get("relatedLocations"))
    assert "](1)" in with_sites["message"]["text"]  # the message links its first site


def test_sarif_fingerprints_tell_pairs_apart_and_survive_moved_lines(twin_pairs: Path):
    log = _validate_sarif(invoke("lock", "--format", "sarif").stdout)
    by_pair: dict[str, set[str]] = {}
    for r in log["runs"][0]["results"]:
        by_pair.setdefault(r["properties"]["pair"], set()).add(r["partialFingerprints"]["atompinFinding/v2"])
    assert len(by_pair["twin-a"]) == len(by_pair[BAD]) > 1  # the same findings...
    assert not by_pair["twin-a"] & by_pair[BAD]  # ...are two alerts, one per pair
    moved = twin_pairs.read_text().replace("[[pairs]]", "# a comment that moves every line\n[[pairs]]", 1)
    twin_pairs.write_text(moved)
    again = json.loads(invoke("lock", "--format", "sarif").stdout)
    assert {r["partialFingerprints"]["atompinFinding/v2"] for r in again["runs"][0]["results"]} == (
        by_pair["twin-a"] | by_pair[BAD]
    )


def test_sarif_component_repositories_map_to_browsable_commits():
    from atompin.report.sarif import browse_uri, repository_uri

    commit = "0123456789abcdef0123456789abcdef01234567"
    for repo in ("https://github.com/ROCm/ATOM", "https://github.com/ROCm/ATOM.git", "git@github.com:ROCm/ATOM.git"):
        assert browse_uri(repo, commit, ".") == {"uri": f"https://github.com/ROCm/ATOM/blob/{commit}/"}
    assert browse_uri("https://gitlab.com/a/b", commit, ".")["uri"] == f"https://gitlab.com/a/b/-/blob/{commit}/"
    assert repository_uri("git@github.com:ROCm/ATOM.git") == "https://github.com/ROCm/ATOM.git"
    assert repository_uri("repos/local") is None


def test_sarif_uris_are_percent_encoded_and_messages_escaped(tmp_path: Path):
    import json

    from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedFinding, LockedPair
    from atompin.report import sarif

    commit = "ab" * 20
    finding = LockedFinding(
        check="plug->pv",
        rule="missing-patch-target",
        severity="error",
        symbol="pv.m:f",
        message=r"see [docs](1) and {0} and C:\path",
        sites=["plug/a b+c%.py:3", "plug/ü.py:4"],
    )
    pair = LockedPair(
        name="p+1",
        verdict="fail",
        components={
            "plug": LockedComponent(repo="https://github.com/o/plug", ref="v1", ref_kind="tag", commit=commit),
            "pv": LockedComponent(repo="https://github.com/o/pv", ref="v1", ref_kind="tag", commit=commit),
        },
        checks=[LockedCheck(consumer="plug", provider="pv", gate=True, verdict="fail")],
        findings=[finding],
    )
    manifest = tmp_path / "my pairs.toml"
    manifest.write_text('[[pairs]]\nname = "p+1"\n')
    log = _validate_sarif(sarif.render_lock(Lock(manifest_hash="x", pairs=[pair]), str(manifest)))
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20pairs.toml"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in result["relatedLocations"]]
    assert uris == ["plug/a%20b%2Bc%25.py", "plug/%C3%BC.py"]
    text = result["message"]["text"]
    assert r"see \[docs\](1) and {{0}} and C:\\path" in text  # no link, no placeholder
    assert r"[plug/a b+c%.py:3](1)" in text and r"[plug/ü.py:4](2)" in text  # the real links
    assert json.dumps(log)  # plain JSON


def test_sarif_of_a_check_validates_against_the_official_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from atompin.demo import CONSUMER_FILES, PROVIDER_033
    from atompin.testing import write_files

    consumer, provider = write_files(tmp_path / "c", CONSUMER_FILES), write_files(tmp_path / "p", PROVIDER_033)
    monkeypatch.chdir(consumer)  # uploaded from the consumer's repository
    result = invoke("check", ".", str(provider), "--format", "sarif", "--no-cache")
    log = _validate_sarif(result.stdout)
    for r in log["runs"][0]["results"]:
        for loc in r["locations"] + r.get("relatedLocations", []):
            artifact = loc["physicalLocation"]["artifactLocation"]
            assert (consumer / artifact["uri"]).is_file() and artifact["uriBaseId"] == "%SRCROOT%"


# -- Markdown for pull requests ----------------------------------------------------------------


def test_markdown_diff_is_narrow_escaped_and_marked(tmp_path: Path):
    """Rendered by a CommonMark/GFM-table renderer (markdown-it, which rich brings): hostile text in
    a message stays text, the table keeps four short columns, and the comment carries its marker."""
    from markdown_it import MarkdownIt

    from atompin.lockdiff import diff_locks
    from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedFinding, LockedPair
    from atompin.report.markdown import DIFF_MARKER, render_diff

    hostile = "a | b *bold* <script>x</script> [link](http://x) `tick` \\ & _u_\nsecond line"

    def lock(findings: list[LockedFinding]) -> Lock:
        comp = LockedComponent(repo="r", ref="v1", ref_kind="tag", commit="a" * 40)
        check = LockedCheck(consumer="c", provider="pv", gate=True, verdict="fail" if findings else "pass")
        pair = LockedPair(name="p", verdict=check.verdict, components={"pv": comp}, checks=[check], findings=findings)
        return Lock(manifest_hash="x", pairs=[pair])

    finding = LockedFinding(
        check="c->pv",
        rule="missing-patch-target",
        severity="error",
        symbol="pv.a:b",
        message=hostile,
        sites=["c/x.py:1"],
    )
    text = render_diff(diff_locks(lock([]), lock([finding])))
    assert text.startswith(DIFF_MARKER + "\n")
    html = MarkdownIt("commonmark").enable("table").render(text)
    [item] = [li for li in html.split("<li>")[1:] if "pv.a:b" in li]
    item = item.split("</li>")[0]
    assert "<script>" not in item and "<strong>" not in item and "<em>" not in item and "href=" not in item
    assert "&lt;script&gt;x&lt;/script&gt;" in item and "*bold*" in item and "[link](http://x)" in item
    assert "a | b" in item and "_u_" in item and "second line" in item
    header = next(line for line in text.splitlines() if line.startswith("| #"))
    assert header == "| # | severity | rule | where |"
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert len(row) < 80 and hostile.split("\n")[0][:5] not in row  # the message is not in the table
    assert html.count("<tr>") == 2 and html.count("<td>") == 4


def test_the_actions_recipe_updates_only_the_comment_with_the_marker():
    import yaml

    from atompin.report.markdown import DIFF_MARKER

    workflow = yaml.safe_load((ROOT / "docs/recipes/github-actions.yml").read_text())
    [step] = [s for s in workflow["jobs"]["pins"]["steps"] if s.get("name") == "Lock diff as a PR comment"]
    assert DIFF_MARKER in step["run"] and "--edit-last" not in step["run"]
    assert "gh api --method PATCH" in step["run"]
    runs = "\n".join(s.get("run", "") for s in workflow["jobs"]["pins"]["steps"])
    assert 'pip install "$ATOMPIN_INSTALL"' in runs and "pip install atompin" not in runs
    assert workflow["env"]["ATOMPIN_INSTALL"].startswith("atompin @ git+https://git.example.invalid/")
    for step in workflow["jobs"]["pins"]["steps"]:  # untrusted PR text reaches scripts through env only
        assert "${{" not in step.get("run", ""), step["run"]


def test_every_recipe_installs_atompin_from_the_marked_variable():
    for name in ("docker-bake.hcl", "Dockerfile.atom-vllm", "github-actions.yml"):
        text = (ROOT / "docs/recipes" / name).read_text()
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "ATOMPIN_INSTALL" in code and not re.search(r"pip install +atompin\b", code), name
    assert "CHANGE ME" in (ROOT / "docs/recipes/docker-bake.hcl").read_text()
    assert "CHANGE ME" in (ROOT / "docs/recipes/github-actions.yml").read_text()
    assert "postUpgradeTasks" not in json.loads((ROOT / "docs/recipes/renovate.json").read_text())


# -- bump --rename -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        ("atom-0.1.5+vllm-0.31", "v0.31.0", "v0.33.0", "atom-0.1.5+vllm-0.33"),
        ("atom-0.1.5+vllm-0.31.0", "v0.31.0", "v0.33.1", "atom-0.1.5+vllm-0.33.1"),
        ("atom+vllm-v0.31", "v0.31.0", "v0.33.0", "atom+vllm-v0.33"),
        ("atom-0.1.5+vllm-0.31", "v0.31.1", "v0.31.2", None),  # the name's precision did not change
        ("atom-0.1.5+vllm-0.30", "v0.31.0", "v0.33.0", None),  # it names another version
        ("atom-0.1.5+myvllm-0.31", "v0.31.0", "v0.33.0", None),  # another component's name
        ("atom-0.1.5+vllm-0.31", "v0.31.0", "main", None),  # not a version
        ("stack", "v0.31.0", "v0.33.0", None),
    ],
)
def test_renamed_pair(name: str, old: str, new: str, expected: str | None):
    from atompin.bumping import renamed_pair

    assert renamed_pair(name, "vllm", old, new) == expected


def test_bump_offers_and_applies_a_rename(demo_project: Path):
    invoke("lock", "--manifest", str(demo_project))
    offered = invoke("bump", "minivllm", "v0.33.0", "--pair", GOOD, "--manifest", str(demo_project), "--dry-run")
    assert f"rerun with --rename to call it '{BAD}'" in offered.output  # the 0.33 pair's name already exists
    text = demo_project.read_text()
    demo_project.write_text(text[: text.index(f'[[pairs]]\nname = "{BAD}"')])
    invoke("lock", "--manifest", str(demo_project))
    result = invoke("bump", "minivllm", "v0.33.0", "--manifest", str(demo_project), "--rename")
    assert f"renamed pair '{GOOD}' to '{BAD}'" in result.output
    assert f'name = "{BAD}"' in demo_project.read_text() and GOOD not in demo_project.read_text()
    lock = lockfile.read(demo_project.parent / "atompin.lock")
    assert [p.name for p in lock.pairs] == [BAD] and lock.pairs[0].components["minivllm"].ref == "v0.33.0"
    assert invoke("verify", "--manifest", str(demo_project)).output.count("stale") == 0


def test_bump_rename_refuses_a_name_that_exists(demo_project: Path):
    invoke("lock", "--manifest", str(demo_project))
    result = invoke("bump", "minivllm", "v0.33.0", "--pair", GOOD, "--manifest", str(demo_project), "--rename")
    assert result.exit_code == 2 and "a pair of that name exists" in result.output


# -- arch-coverage messages ----------------------------------------------------------------------


def test_lock_names_each_automatically_found_feature_with_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from atompin.testing import git_repo
    from tests.test_overrides_archs import ARCH_FILES

    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/kx", [("v2.0", ARCH_FILES)])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text(
        '[fleet]\ngpu-archs = ["gfx1151"]\n\n[components.kx]\nrepo = "repos/kx"\npackage = "kx"\n\n'
        '[[pairs]]\nname = "fleet"\nkx = "v2.0"\n'
    )
    assert invoke("lock", "--manifest", str(manifest)).exit_code == 0  # a warning, never a gate
    [finding] = [f for f in lockfile.read(tmp_path / "atompin.lock").pairs[0].findings if f.rule == "arch-coverage"]
    assert finding.symbol == "kx" and "kx/ops/alias.py:2" in finding.sites
    assert "the kernels of kx.ops.alias (kx/ops/alias.py:2) support only gfx90a" in finding.message
    assert "the kernels of kx.ops.gemm (kx/ops/gemm.py:1) support only gfx942" in finding.message
    assert "these features cannot run on this fleet" in finding.message


# -- the package build -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build` on a copy of the tracked sources (no index needed: --no-isolation)."""
    import shutil
    import subprocess
    import sys

    source = tmp_path_factory.mktemp("src") / "atompin"
    for rel in git.Repo(ROOT).git.ls_files().splitlines():
        if (ROOT / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, source / rel)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "deprecated" not in proc.stdout + proc.stderr
    return out


def test_the_wheel_holds_the_package_and_the_command(built: Path):
    import zipfile

    [wheel] = built.glob("atompin-*-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    package = sorted(n for n in names if n.startswith("atompin/"))
    tracked = sorted(
        p.relative_to(ROOT).as_posix() for p in (ROOT / "atompin").rglob("*.py") if "__pycache__" not in p.parts
    )
    assert package == tracked
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "atompin = atompin.cli:main" in meta
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Requires-Dist: python-hcl2" in metadata and "License-Expression: Apache-2.0" in metadata


def test_the_installed_wheel_runs_the_demo(built: Path, tmp_path: Path):
    """Installed alone (its own folder first on the path), the wheel runs atompin's offline demo."""
    import os
    import subprocess
    import sys

    [wheel] = built.glob("atompin-*-py3-none-any.whl")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target), "ATOMPIN_CACHE_DIR": str(tmp_path / "cache")}
    where = subprocess.run(
        [sys.executable, "-c", "import atompin; print(atompin.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(target))
    demo = subprocess.run(
        [sys.executable, "-m", "atompin", "demo"], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert demo.returncode == 0, demo.stdout[-1000:] + demo.stderr[-1000:]


def test_the_sdist_carries_the_tables_recipes_and_tests_and_builds_again(built: Path, tmp_path: Path):
    import subprocess
    import sys
    import tarfile

    [sdist] = built.glob("atompin-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
        archive.extractall(tmp_path, filter="data")
    for table in (ROOT / "relocations").rglob("*.toml"):
        assert table.relative_to(ROOT).as_posix() in names
    for rel in ("pairs.toml", "docs/recipes/docker-bake.hcl", "docs/recipes/renovate.json", ".pre-commit-hooks.yaml"):
        assert rel in names
    assert "tests/data/sarif/sarif-schema-2.1.0.json" in names and "tests/data/sarif/LICENSE.md" in names
    [unpacked] = [p for p in tmp_path.iterdir() if p.name.startswith("atompin-")]
    again = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(tmp_path / "w"), str(unpacked)],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-2000:]


def test_sarif_fingerprints_of_a_check_do_not_depend_on_where_the_checkout_is(tmp_path: Path):
    from atompin.demo import CONSUMER_FILES, PROVIDER_033
    from atompin.testing import write_files

    provider = write_files(tmp_path / "p", PROVIDER_033)
    prints = []
    for where in ("one", "two"):
        consumer = write_files(tmp_path / where, CONSUMER_FILES)
        log = json.loads(invoke("check", str(consumer), str(provider), "--format", "sarif", "--no-cache").stdout)
        prints.append([r["partialFingerprints"] for r in log["runs"][0]["results"]])
    assert prints[0] == prints[1] and prints[0]


def test_sarif_keeps_a_symbol_failing_two_ways_as_two_alerts():
    # One finding per severity of a symbol: two results, two fingerprints; the first (worst) keeps
    # the fingerprint the symbol always had, so its alert survives the split.
    from atompin.model import CheckResult, Finding, Rule, Severity, Site, Summary
    from atompin.report import sarif

    error = Finding(Rule.UNRESOLVED_IMPORT, Severity.ERROR, "pv.m:Runner", (Site("plug/a.py", 2),), "raises")
    caught = Finding(Rule.UNRESOLVED_IMPORT, Severity.WARNING, "pv.m:Runner", (Site("plug/b.py", 5),), "degraded")
    result = CheckResult("plug", "../pv", "pv", Summary(), (error, caught))
    prints = [r["partialFingerprints"] for r in json.loads(sarif.render_check(result))["runs"][0]["results"]]
    alone = CheckResult("plug", "../pv", "pv", Summary(), (error,))
    [before] = [r["partialFingerprints"] for r in json.loads(sarif.render_check(alone))["runs"][0]["results"]]
    assert prints[0] == before and prints[1] != prints[0]


def test_a_symbol_s_new_error_beside_its_old_warning_appears_in_the_diff():
    from atompin.lockdiff import diff_pair
    from atompin.lockfile import LockedComponent, LockedFinding, LockedPair

    def pair(*severities: str) -> LockedPair:
        comp = LockedComponent(repo="r", ref="v1", ref_kind="tag", commit="a" * 40)
        findings = [
            LockedFinding(check="c->pv", rule="unresolved-import", severity=s, symbol="pv.m:Runner", message=s)
            for s in severities
        ]
        return LockedPair(name="p", verdict="fail", components={"pv": comp}, findings=findings)

    d = diff_pair(pair("warning"), pair("error", "warning"))
    assert [f.severity.value for f in d.appeared] == ["error"] and d.resolved == []
    # A line that moved is still neither appeared nor resolved.
    assert diff_pair(pair("warning"), pair("warning")).appeared == []
