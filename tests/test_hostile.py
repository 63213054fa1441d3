"""Adversarial inputs, by category (README, "Reliability"): each test builds a small hostile
input and checks the promise atompin makes about it. No hostile input may end in exit 4
(an internal error): `run` fails a test on any exception that is not a clean exit.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.analysis.limits import MAX_FILE_BYTES, TOO_DEEP
from atompin.cli import app
from atompin.errors import InputError
from atompin.files import write_atomically
from atompin.report.export import env, github
from atompin.sources.git import GitCache
from atompin.testing import git_repo, write_files

runner = CliRunner()

# One passing pair over the demo's repositories: verify exits 0 on its lock.
ONE_PAIR = """\
[components.plug]
repo = "repos/miniplug"
package = "miniplug"

[components.pv]
repo = "repos/minivllm"
package = "minivllm"

[[checks]]
consumer = "plug"
provider = "pv"
gate = true

[[pairs]]
name = "a"
plug = "v0.1.0"
pv = "v0.31.0"
"""


def run(*args: str):  # type: ignore[no-untyped-def]
    """The CLI in-process; an exception other than a clean exit would be exit 4 (a bug)."""
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"internal error (exit 4): {result.exception!r}\n{result.output}")
    assert result.exit_code in (0, 1, 2, 3), result.output
    return result


@pytest.fixture
def project(demo_project: Path) -> Path:
    """The demo's repositories with ONE_PAIR as pairs.toml, locked; returns the manifest path."""
    demo_project.write_text(ONE_PAIR)
    assert run("lock", "--manifest", str(demo_project)).exit_code == 0
    return demo_project


def verify(manifest: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run("verify", "--manifest", str(manifest), *extra)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    lines = [line for line in result.output.splitlines() if line.startswith("atompin: error:")]
    assert len(lines) == 1, result.output
    return lines[0]


# -- manifest ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("gate = true", 'gate = "false"', r":12: checks\[0\]\.gate: Input should be a valid boolean"),
        ('name = "a"', 'name = "a\\nfoo=bar"', r":15: pairs\[0\]\.name: pair name .* refused"),
        ('name = "a"', 'name = "</details><img src=x>"', r":15: pairs\[0\]\.name: pair name .* refused"),
        ('name = "a"', 'name = "$(touch pwned)"', r":15: pairs\[0\]\.name: pair name .* refused"),
        (
            'package = "minivllm"',
            'package = "minivllm"\nvariables = { ref = "PV_REF\\nx=1" }',
            r":8: components\.pv\.variables\.ref: .* is not a variable name",
        ),
        ('pv = "v0.31.0"', 'pv = "v0.31.0\\u0007"', r":17: pairs\[0\]\.pv: ref .* refused"),
        ('pv = "v0.31.0"', "pv = 31", r":17: pairs\[0\]\.pv: a ref must be a string"),
        ('repo = "repos/minivllm"', 'repo = "repos/mini\\tvllm"', r":6: components\.pv\.repo: repository URL refused"),
    ],
)
def test_manifest_types_and_names_are_refused_with_their_line(project: Path, old: str, new: str, expected: str):
    before = (project.parent / "atompin.lock").read_bytes()
    edit(project, old, new)
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2
    assert re.search(expected, one_line_error(result)), result.output
    assert (project.parent / "atompin.lock").read_bytes() == before


def test_errors_in_variables_tables_point_at_their_line(project: Path):
    edit(project, 'package = "minivllm"\n', 'package = "minivllm"\n\n[components.pv.variables]\nref = 3\n')
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and ":10: components.pv.variables.ref:" in one_line_error(result)


def test_non_utf8_manifest_table_and_lock_are_exit_2_with_the_byte_offset(project: Path):
    lock_path = project.parent / "atompin.lock"
    good_lock = lock_path.read_bytes()
    lock_path.write_bytes(good_lock.replace(b'name = "a"', b'name = "\xff"'))
    result = verify(project)
    assert result.exit_code == 2 and re.search(r"atompin\.lock:\d+: byte \d+ \(0xff\) is not UTF-8", result.output)
    lock_path.write_bytes(good_lock)

    table = project.parent / "relocations/minivllm/0.33.toml"
    table.write_bytes(b"# \xc3\x28\n" + table.read_bytes())
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "0.33.toml:1: byte 2 (0xc3) is not UTF-8" in one_line_error(result)
    table.write_bytes(table.read_bytes()[5:])

    project.write_bytes(project.read_bytes() + b"\n# caf\xe9\n")
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "pairs.toml:19: byte" in one_line_error(result)
    assert lock_path.read_bytes() == good_lock


def test_relocation_paths_that_point_nowhere_are_errors(project: Path):
    edit(project, "[components.plug]", 'relocations = "tables"\n\n[components.plug]')
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "pairs.toml:1: relocations = 'tables': no such folder" in one_line_error(result)
    edit(project, 'relocations = "tables"\n', "")
    (project.parent / "relocations/minivllm/extra.toml").mkdir()
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "extra.toml: is a folder, not a relocation table" in one_line_error(result)
    provider = project.parent / "repos/minivllm"
    result = run("check", str(project.parent / "repos/miniplug"), str(provider), "--relocations", "nowhere.toml")
    assert result.exit_code == 2 and "nowhere.toml: relocations does not exist" in one_line_error(result)


def test_arch_constants_that_name_nothing_are_errors(project: Path):
    edit(project, 'package = "minivllm"', 'package = "minivllm"\narch-constants = ["minivllm/nowhere.py:ARCHS"]')
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2
    assert "components.pv.arch-constants: 'minivllm/nowhere.py:ARCHS' names no literal list" in one_line_error(result)


def test_toml_nested_too_deeply_is_one_line(project: Path):
    project.write_text(project.read_text() + "x = " + "[" * 5000 + "]" * 5000 + "\n")
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and "not valid TOML" in one_line_error(result)


# -- refs and URLs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('pv = "v0.31.0"', 'pv = "--upload-pack=touch pwned"', "starts with '-'"),
        ('repo = "repos/minivllm"', 'repo = "ext::sh -c touch% pwned"', "transport runs commands"),
        ('repo = "repos/minivllm"', 'repo = "fd::17"', "transport runs commands"),
        ('pv = "v0.31.0"', 'pv = "v0.31.0@{1}"', "not a valid git ref name"),
    ],
)
def test_option_like_refs_and_command_transports_are_refused(project: Path, old: str, new: str, message: str):
    edit(project, old, new)
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 2 and message in one_line_error(result)
    assert not (project.parent / "pwned").exists() and not Path("pwned").exists()


def test_a_repository_that_does_not_exist_says_so(project: Path, tmp_path: Path):
    edit(project, 'repo = "repos/minivllm"', f'repo = "{tmp_path / "nowhere"}"')
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 3 and "no such repository" in one_line_error(result)
    edit(project, f'repo = "{tmp_path / "nowhere"}"', f'repo = "{tmp_path}"')
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 3 and "not a git repository" in one_line_error(result)


def _commits_sharing_a_prefix(repo: Path) -> tuple[str, str]:
    """Two commits whose ids share their first 7 hex digits (found by varying the message)."""
    g = git.Repo(repo).git
    tree, parent = g.rev_parse("HEAD^{tree}"), g.rev_parse("HEAD")
    head = f"tree {tree}\nparent {parent}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\n"
    seen: dict[str, bytes] = {}
    n = 0
    while True:
        body = f"{head}collide {n}\n".encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if sha[:7] in seen:
            made = []
            for content in (seen[sha[:7]], body):
                made.append(
                    subprocess.run(
                        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
                        cwd=repo,
                        input=content,
                        capture_output=True,
                        check=True,
                    )
                    .stdout.decode()
                    .strip()
                )
            for i, sha_made in enumerate(made):
                g.branch(f"collide-{i}", sha_made)
            return made[0], made[1]
        seen[sha[:7]] = body
        n += 1


def test_an_ambiguous_short_commit_id_is_called_ambiguous(project: Path, tmp_path: Path):
    repo = project.parent / "repos/minivllm"
    first, second = _commits_sharing_a_prefix(repo)
    assert first[:7] == second[:7] and first != second
    with pytest.raises(InputError, match=f"short commit id '{first[:7]}' is ambiguous"):
        GitCache(tmp_path / "c").resolve(str(repo), first[:7])
    assert GitCache(tmp_path / "c").resolve(str(repo), first[:12]).commit == first


def test_a_local_provider_by_absolute_path_reads_files_over_the_blob_filter(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    big = "BIG = '" + "x" * 1_200_000 + "'\n"
    git_repo(tmp_path / "pv", [("v1", {"pv/__init__.py": "def f(): pass\n", "pv/big.py": big})])
    git_repo(tmp_path / "cn", [("v1", {"cn/__init__.py": "from pv import f\nfrom pv.big import BIG\n"})])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text(
        f'[components.cn]\nrepo = "{tmp_path / "cn"}"\npackage = "cn"\n'
        f'[components.pv]\nrepo = "{tmp_path / "pv"}"\npackage = "pv"\n'
        '[[checks]]\nconsumer = "cn"\nprovider = "pv"\n[[pairs]]\nname = "p"\ncn = "v1"\npv = "v1"\n'
    )
    assert run("lock", "--manifest", str(manifest)).exit_code == 0
    assert lockfile.read(tmp_path / "atompin.lock").pairs[0].checks[0].symbols == 2


# -- hostile code -------------------------------------------------------------------

HOSTILE_SOURCES = {
    "concatenation": "X = " + " + ".join(['"s"'] * 1000) + "\n",
    "attribute chain": "X = a" + ".b" * 20_000 + "\n",
    "nested calls": "X = " + "f(" * 150 + ")" * 150 + "\n",
    "nested blocks": "".join("    " * i + "if x:\n" for i in range(90)) + "    " * 90 + "pass\n",
}


@pytest.mark.parametrize("shape", sorted(HOSTILE_SOURCES))
def test_hostile_but_valid_python_is_unknown_for_that_file(tmp_path: Path, shape: str):
    body = HOSTILE_SOURCES[shape]
    write_files(tmp_path / "provider", {"pv/__init__.py": "def f(): pass\n", "pv/deep.py": body})
    write_files(
        tmp_path / "consumer",
        {"cn/__init__.py": "from pv import f\nfrom pv.deep import X\n", "cn/deep.py": "import pv\n" + body},
    )
    result = run("check", str(tmp_path / "consumer"), str(tmp_path / "provider"), "--package", "pv", "--no-cache")
    assert result.exit_code in (0, 1), result.output
    if shape in ("concatenation", "attribute chain"):  # deeper than Python's recursion: unknown, not a crash
        assert "cn/deep.py" in result.output and "unparseable" in result.output


def test_a_long_line_of_sites_is_read_in_one_pass(tmp_path: Path):
    # 100,000 uses of a member, triple quotes in one-line strings and a `#` in each, on one
    # line of 2.8 MB: the text searches cite them all (atompin before took 37 s on it; now
    # about 1 s). A subprocess, so a hang ends the test instead of the suite.
    role = "from abc import ABC, abstractmethod\n\n\nclass Role(ABC):\n"
    role += "".join(f"    @classmethod\n    def {m}(cls):\n        return None\n\n" for m in ("a", "b", "c", "hook"))
    role += "\ndef use(backend):\n    return backend.hook()\n"
    line = "x = [" + 'b.hook(), Maker(b), \'"""#\', ' * 100_000 + "]\n"
    provider = write_files(tmp_path / "provider", {"pv/__init__.py": "", "pv/role.py": role, "pv/big.py": line})
    mine = "import pv.role\n\n\nclass Mine:\n"
    mine += "".join(f"    @classmethod\n    def {m}(cls):\n        return None\n\n" for m in ("a", "b", "c"))
    mine += "\npv.role.use(Mine)\n"
    consumer = write_files(tmp_path / "consumer", {"cn/__init__.py": "", "cn/mine.py": mine})
    proc = subprocess.run(
        [sys.executable, "-m", "atompin", "check", str(consumer), str(provider), "--package", "pv", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the provider calls .hook at pv/big.py:1 (+100000)" in proc.stdout


def test_deep_code_is_analysed_and_code_past_the_recursion_is_unknown(run_check):  # type: ignore[no-untyped-def]
    deep = "X = " + " + ".join(["pv.f"] * 150) + " + pv.gone\n"  # deeper than any real file
    result = run_check({"pv/__init__.py": "def f(): pass\n"}, {"cn/__init__.py": "import pv\n" + deep})
    assert [(f.rule.value, f.symbol) for f in result.findings] == [("unresolved-import", "pv:gone")]
    past = "X = " + " + ".join(["pv.g"] * 5000) + "\n"
    result = run_check({"pv/__init__.py": "def f(): pass\n"}, {"cn/__init__.py": "import pv\n" + past})
    assert [f.rule.value for f in result.findings] == ["unparseable"]
    assert TOO_DEEP in result.findings[0].message


def test_a_file_over_the_size_limit_is_unknown_without_being_parsed(run_check):  # type: ignore[no-untyped-def]
    huge = "import pv\n" + "pv.missing = 1\n" * (MAX_FILE_BYTES // 15 + 1)
    result = run_check({"pv/__init__.py": "def f(): pass\n"}, {"cn/__init__.py": huge})
    assert [f.rule.value for f in result.findings] == ["unparseable"]
    assert "per-file limit" in result.findings[0].message


def test_folders_with_fifos_symlink_loops_and_links_out_of_the_tree(tmp_path: Path):
    write_files(tmp_path / "provider", {"pv/__init__.py": "def f(): pass\n"})
    consumer = write_files(tmp_path / "consumer", {"cn/__init__.py": "from pv import f\n"})
    outside = write_files(tmp_path / "outside", {"evil.py": "from pv import gone\n"})
    os.mkfifo(consumer / "cn/fifo.py")
    os.symlink("loop.py", consumer / "cn/loop.py")
    os.symlink("nowhere.py", consumer / "cn/dangling.py")
    os.symlink(outside / "evil.py", consumer / "cn/evil.py")
    os.symlink(outside, consumer / "cn/linked_dir")
    os.symlink("__init__.py", consumer / "cn/inside.py")
    # A subprocess, so a hang would end the test instead of the suite.
    proc = subprocess.run(
        [sys.executable, "-m", "atompin", "check", str(consumer), str(tmp_path / "provider"), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gone" not in proc.stdout and "evil" not in proc.stdout


def test_a_folder_lists_regular_files_and_links_to_them_inside_it_and_stamps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from atompin.sources import tree as trees
    from atompin.sources.tree import FolderTree, size_and_time

    root = write_files(tmp_path / "t", {"cn/__init__.py": "x = 1\n", "cn/sub/m.py": "", ".hidden/h.py": ""})
    write_files(root, {"cn/__pycache__/c.py": "", "node_modules/n.py": "", "cn/.git/g.py": ""})
    outside = write_files(tmp_path / "outside", {"evil.py": ""})
    os.mkfifo(root / "cn/fifo.py")
    os.symlink("loop.py", root / "cn/loop.py")
    os.symlink(outside / "evil.py", root / "cn/evil.py")
    os.symlink(outside, root / "cn/linked_dir")
    os.symlink("__init__.py", root / "cn/inside.py")
    tree = FolderTree(root)
    assert tree.files == {"cn/__init__.py", "cn/sub/m.py", "cn/inside.py"}
    # each listed file's stamp is its size and time, taken by the listing (no second stat)
    expected = {p: size_and_time(root / p) for p in tree.files}
    monkeypatch.setattr(trees, "size_and_time", lambda path: pytest.fail(f"stat again: {path}"))
    assert {p: tree.stamp(p) for p in tree.files if p != "cn/inside.py"} == {
        p: stamp for p, stamp in expected.items() if p != "cn/inside.py"
    }
    monkeypatch.undo()
    assert tree.stamp("cn/inside.py") == expected["cn/inside.py"]  # a link: stamped through it
    (root / "cn/__init__.py").write_text("x = 22\n")
    assert FolderTree(root).stamp("cn/__init__.py") != tree.stamp("cn/__init__.py")


def test_a_folder_file_reads_whole_and_one_swapped_for_a_fifo_reads_empty(tmp_path: Path):
    from atompin.sources.tree import FolderTree

    big = bytes(range(256)) * 1000  # past one read's first chunk
    write_files(tmp_path, {"pv/__init__.py": "", "pv/big.py": "x = 1\n"})
    (tmp_path / "pv/big.py").write_bytes(big)
    tree = FolderTree(tmp_path)
    assert tree.read("pv/big.py") == big and tree.read("pv/__init__.py") == b""
    assert tree.content_id("pv/big.py") == git.Repo.init(tmp_path / "g").git.hash_object(str(tmp_path / "pv/big.py"))
    (tmp_path / "pv/big.py").unlink()
    os.mkfifo(tmp_path / "pv/big.py")  # swapped after the listing: read without blocking
    assert FolderTree(tmp_path).read("pv/big.py") == b""


# -- import sentinel: checked code that would leave a mark if it ever ran ----------------


def test_no_checked_code_is_imported_or_run(tmp_path: Path, monkeypatch):
    mark = tmp_path / "MARK"
    payload = f"open({str(mark)!r}, 'a').write(__name__ + '\\n')\n"
    provider = {
        "pv/__init__.py": payload + "def f(): pass\n",
        "pv/_version.py": payload + "__version__ = '1.0'\n",
        "setup.py": payload,
        "conftest.py": payload,
        "pv.pth": f"import os; {payload}",
    }
    consumer = {
        "cn/__init__.py": payload + "from pv import f\nimport importlib\nimportlib.import_module('pv')\n",
        "cn/vllm-version.env": "VLLM_VERSION=$(touch " + str(mark) + ")\n",
        "pyproject.toml": '[project]\nname = "cn"\nversion = "1"\n',
        "setup.py": payload,
    }
    write_files(tmp_path / "provider", provider)
    write_files(tmp_path / "consumer", consumer)
    assert run("check", str(tmp_path / "consumer"), str(tmp_path / "provider"), "--no-cache").exit_code == 0
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/pv", [("v1.0", provider)])
    git_repo(tmp_path / "repos/cn", [("v1", consumer)])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text(
        '[components.cn]\nrepo = "repos/cn"\npackage = "cn"\ndeclares = { pv = "cn/vllm-version.env" }\n'
        '[components.pv]\nrepo = "repos/pv"\npackage = "pv"\n'
        '[[checks]]\nconsumer = "cn"\nprovider = "pv"\n[[pairs]]\nname = "p"\ncn = "v1"\npv = "v1.0"\n'
    )
    assert run("lock", "--manifest", str(manifest)).exit_code in (0, 1)
    assert verify(manifest).exit_code in (0, 1)
    assert not mark.exists()


# -- concurrency and kill -9 ---------------------------------------------------------------


def _atompin(*args: str, **kwargs) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    return subprocess.Popen(
        [sys.executable, "-m", "atompin", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_parallel_locks_on_one_cache_and_one_lock_agree(project: Path, tmp_path: Path, monkeypatch):
    expected = (project.parent / "atompin.lock").read_bytes()
    (project.parent / "atompin.lock").unlink()
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "fresh-cache"))
    procs = [_atompin("lock", "--manifest", str(project), "-q") for _ in range(4)]
    codes = [p.wait(timeout=300) for p in procs]
    assert codes == [0, 0, 0, 0], [p.stderr.read() for p in procs if p.stderr]
    assert (project.parent / "atompin.lock").read_bytes() == expected
    assert not list(project.parent.glob(".atompin.lock.*"))


def test_kill_9_mid_fetch_keeps_the_old_lock_and_the_next_run_recovers(project: Path, tmp_path: Path, monkeypatch):
    """Killed while git writes the new pin into the cache: a fetch, or (a source on this machine,
    whose linked objects hold the commit) the ref's update."""
    lock_path = project.parent / "atompin.lock"
    before = lock_path.read_bytes()
    edit(project, 'pv = "v0.31.0"', 'pv = "v0.33.0"')
    marker = tmp_path / "fetching"
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    fake = tmp_path / "git"
    fake.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            case " $* " in
              *" fetch "*|*" update-ref refs/"*) : > {shlex.quote(str(marker))}; exec sleep 600;;
            esac
            exec {shlex.quote(real_git)} "$@"
            """
        )
    )
    fake.chmod(0o755)
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "killed-cache"))
    proc = _atompin(
        "lock",
        "--manifest",
        str(project),
        start_new_session=True,
        env={**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(fake)},
    )
    try:
        for _ in range(600):
            if marker.exists() or proc.poll() is not None:
                break
            try:
                proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        assert marker.exists(), proc.stderr.read() if proc.stderr else ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert lock_path.read_bytes() == before
    result = run("lock", "--manifest", str(project))  # same (half-fetched) cache, real git
    assert result.exit_code == 1, result.output
    assert lockfile.read(lock_path).pairs[0].components["pv"].ref == "v0.33.0"


def test_temporary_files_of_killed_runs_are_removed(project: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = project.parent
    leftovers = [folder / f".atompin.lock.{dead.pid}.abcd1234.tmp", folder / ".atompin.lock.zz_x9y8w.tmp"]
    running = folder / f".atompin.lock.{os.getppid()}.abcd1234.tmp"  # a live process still writing
    for path in [*leftovers, running]:
        path.write_text("partial")
    edit(project, 'name = "a"', 'name = "b"')
    assert run("lock", "--manifest", str(project)).exit_code == 0
    assert not any(p.exists() for p in leftovers) and running.exists()


# -- cache corruption -----------------------------------------------------------------


def _sql(db: Path, *statements: str) -> None:
    con = sqlite3.connect(db)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def _entries(cache: Path) -> list[Path]:
    found = sorted(cache.glob("git/*.git"))
    assert found
    return found


def _damage_objects(cache: Path) -> None:
    """Zeros over every object file, packed or loose, past its header. Written as a new file: an
    entry made from a path links the source's own files (git never writes one in place)."""
    damaged = 0
    for entry in _entries(cache):
        for found in (entry / "objects").rglob("*"):
            if found.is_file() and "info" not in found.parts and found.suffix != ".idx":
                data = found.read_bytes()
                found.unlink()
                found.write_bytes(data[:12] + b"\0" * (len(data) - 12))
                damaged += 1
    assert damaged


def _damage_refs(cache: Path) -> None:
    for entry in _entries(cache):
        for ref in (entry / "refs").rglob("*"):
            if ref.is_file():
                ref.write_text("not a sha\n")


CORRUPTIONS = {
    "garbage rows": lambda c: _sql(c / "index.sqlite", "UPDATE modules SET data = x'00ff00'"),
    "text rows": lambda c: _sql(c / "index.sqlite", "UPDATE modules SET data = 'garbage'"),
    "wrong schema": lambda c: _sql(
        c / "index.sqlite", "DROP TABLE modules", "CREATE TABLE modules (k INTEGER, v INTEGER, w TEXT)"
    ),
    "not sqlite": lambda c: (c / "index.sqlite").write_bytes(b"this is not a database" * 100),
    "sqlite file is a folder": lambda c: ((c / "index.sqlite").unlink(), (c / "index.sqlite").mkdir()),
    "damaged objects": _damage_objects,
    "git config": lambda c: [(e / "config").write_text("[[[ not config\n") for e in _entries(c)],
    "git refs": _damage_refs,
    "shallow file": lambda c: [(e / "shallow").write_text("garbage\n") for e in _entries(c)],
    "HEAD": lambda c: [(e / "HEAD").write_text("garbage\n") for e in _entries(c)],
    "entry replaced by a file": lambda c: [
        (__import__("shutil").rmtree(e), e.write_text("a file")) for e in _entries(c)
    ],
}


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_a_damaged_cache_is_rebuilt(project: Path, tmp_path: Path, damage: str):
    lock_path = project.parent / "atompin.lock"
    expected = lock_path.read_bytes()
    CORRUPTIONS[damage](tmp_path / "cache")
    lock_path.unlink()
    result = run("lock", "--manifest", str(project))
    assert result.exit_code == 0, result.output
    assert lock_path.read_bytes() == expected
    assert run("lock", "--manifest", str(project), "--offline").exit_code == 0  # the rebuilt cache serves


def test_a_cache_path_that_is_a_file_is_one_line(project: Path, tmp_path: Path):
    cache_file = tmp_path / "cache-file"
    cache_file.write_text("")
    for command in (
        ["lock", "--manifest", str(project), "--cache-dir", str(cache_file)],
        ["verify", "--manifest", str(project), "--cache-dir", str(cache_file)],
        [
            "check",
            str(project.parent / "repos/miniplug"),
            str(project.parent / "repos/minivllm"),
            "--cache-dir",
            str(cache_file),
        ],
    ):
        result = run(*command)
        assert result.exit_code == 2 and "the cache folder is a file" in one_line_error(result)


# -- lock tampering ------------------------------------------------------------------------


TAMPERING = [
    # (what the lock is made to say, what verify must answer)
    (
        'repo = "repos/minivllm"',
        'repo = "repos/fork"',
        "pv.repo: atompin.lock says 'repos/fork', pairs.toml says 'repos/minivllm'",
    ),
    ('ref = "v0.31.0"', 'ref = "v0.33.0"', "pv.ref: atompin.lock says 'v0.33.0', pairs.toml says 'v0.31.0'"),
    (
        'verdict = "warn"',
        'verdict = "pass"',
        "pair a: verdict: atompin.lock says pass, a recomputation from its findings and pairs.toml's gates says warn",
    ),
    ("gate = true", "gate = false", "plug->pv gate: atompin.lock says false, pairs.toml says true"),
    (
        'ref-kind = "tag"',
        'ref-kind = "branch"',
        "atompin.lock says ref 'v0.1.0' is a branch, the git cache says it is a tag",
    ),
    ('ref-kind = "tag"', 'ref-kind = "commit"', "but a commit ref is a prefix of its commit id"),
    ('name = "a"', 'name = "b"', "pair b: atompin.lock says it exists, pairs.toml says there is no such pair"),
    ('manifest-hash = "sha256:', 'manifest-hash = "sha256:0', "locked from another pairs.toml entry"),
]


@pytest.mark.parametrize(("old", "new", "expected"), TAMPERING)
def test_verify_re_derives_a_tampered_lock(project: Path, old: str, new: str, expected: str):
    lock_path = project.parent / "atompin.lock"
    assert verify(project).exit_code == 0
    text = lock_path.read_text()
    if old == 'manifest-hash = "sha256:':  # the pair's hash, not the lock's
        head, _, pairs = text.partition("[[pairs]]")
        lock_path.write_text(head + "[[pairs]]" + pairs.replace(old, new, 1))
    else:
        edit(lock_path, old, new)
    result = verify(project)
    assert result.exit_code == 1, result.output
    assert expected in result.output, result.output


def test_verify_re_derives_removed_components_and_findings(project: Path):
    lock_path = project.parent / "atompin.lock"
    good = lock_path.read_text()
    start = good.index("[pairs.components.plug]")
    lock_path.write_text(good[:start] + good[good.index("[pairs.components.pv]") :])
    result = verify(project)
    assert result.exit_code == 1 and "components: atompin.lock says pv, pairs.toml says plug, pv" in result.output
    finding = good.index("[[pairs.findings]]")
    lock_path.write_text(good[:finding])  # the pair's one finding, gone
    result = verify(project)
    assert result.exit_code == 1 and "findings-by-rule: atompin.lock says" in result.output


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('verdict = "warn"', 'verdict = "banana"'),
        ("gate = true", 'gate = "true"'),
        ('ref = "v0.31.0"', 'ref = "-v0.31.0"'),
        ('repo = "repos/minivllm"', 'repo = "ext::sh"'),
        ('name = "a"', 'name = "a\\nx=1"'),
        ("commit = ", 'commit = "HEAD"\nx = '),
    ],
)
def test_a_lock_that_says_what_atompin_never_writes_is_refused(project: Path, old: str, new: str):
    edit(project.parent / "atompin.lock", old, new)
    for command in (["verify"], ["export", "--format", "env"]):
        result = run(*command, "--manifest", str(project))
        assert result.exit_code == 2 and "atompin.lock:" in one_line_error(result)


def test_a_commit_rewritten_consistently_is_caught_by_recheck_and_lock_check(project: Path):
    lock_path = project.parent / "atompin.lock"
    assert run("lock", "--manifest", str(project), "--check").exit_code == 0
    assert verify(project, "--recheck").exit_code == 0
    other = git.Repo(project.parent / "repos/minivllm").git.rev_parse("v0.33.0^{commit}")
    locked = lockfile.read(lock_path).pairs[0].components["pv"].commit
    edit(lock_path, locked, other)
    before = lock_path.read_bytes()
    result = verify(project, "--recheck")
    assert result.exit_code == 1 and "recheck: atompin.lock: pair a differs from a re-lock: pv commit" in result.output
    result = run("lock", "--manifest", str(project), "--locked")
    assert result.exit_code == 1 and "pv commit" in result.output
    assert lock_path.read_bytes() == before  # --check writes nothing


def test_a_pair_that_lock_pair_did_not_re_lock_is_stale(demo_project: Path):
    lock_path = demo_project.parent / "atompin.lock"
    assert run("lock", "--manifest", str(demo_project)).exit_code == 1
    good, bad = "miniplug-0.1.0+minivllm-0.31", "miniplug-0.1.0+minivllm-0.33"
    text = demo_project.read_text()
    demo_project.write_text(
        text[: text.index(f'name = "{bad}"')]
        + text[text.index(f'name = "{bad}"') :].replace('minivllm = "v0.33.0"', 'minivllm = "v0.31.0"')
    )
    assert run("lock", "--manifest", str(demo_project), "--pair", good).exit_code == 0
    result = verify(demo_project)
    assert result.exit_code == 1
    assert f"pair {bad}: atompin.lock was locked from another pairs.toml entry" in result.output
    assert f"pair {bad}: minivllm.ref: atompin.lock says 'v0.33.0', pairs.toml says 'v0.31.0'" in result.output
    assert good not in result.output.replace(f"ok    {good}", "")
    result = run("export", "--manifest", str(demo_project), "--pair", bad)
    assert result.exit_code == 1, result.output  # a stale lock fails like a failing gate
    message = one_line_error(result)
    assert f"pair {bad}: atompin.lock was locked from another pairs.toml entry" in message
    assert "--allow-stale" in message
    assert run("export", "--manifest", str(demo_project), "--pair", good).exit_code == 0  # the other pair is current
    assert run("lock", "--manifest", str(demo_project), "--pair", bad).exit_code == 0
    assert verify(demo_project).exit_code == 0
    assert lockfile.read(lock_path).pair(bad) is not None


def test_remote_sees_a_tag_the_lock_calls_a_branch(project: Path):
    edit(project.parent / "atompin.lock", 'ref-kind = "tag"\n', 'ref-kind = "branch"\n')
    result = verify(project, "--remote")
    assert result.exit_code == 1 and "says ref 'v0.1.0' is a branch, repos/miniplug says it is a tag" in result.output


# -- output injection (env and GitHub outputs) ---------------------------------------------


def _github_outputs(text: str) -> dict[str, str]:
    """Parse $GITHUB_OUTPUT as the runner does: `name=value`, or `name<<DELIM` ... `DELIM`."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        else:
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
    return out


def test_github_outputs_use_the_heredoc_form_for_multi_line_values():
    values = {"ATOMPIN_PAIR": "a", "X_REF": "v1\nevil=1\nATOMPIN_EOF_x", "Y_REPO": "p=q"}
    parsed = _github_outputs(github(values))
    assert parsed == {"atompin_pair": "a", "x_ref": values["X_REF"], "y_repo": "p=q"}


def test_env_lines_quote_for_shells_and_refuse_line_breaks():
    values = {"A_REPO": "repos/my $(touch pwned) repo", "A_REF": "v1", "A_URL": "https://h/x.git"}
    text = env(values)
    assert text.count("\n") == 3 and "A_REF=v1\n" in text and "A_URL=https://h/x.git\n" in text
    repo_line = next(line for line in text.splitlines() if line.startswith("A_REPO="))
    assert shlex.split(repo_line.split("=", 1)[1]) == ["repos/my $(touch pwned) repo"]
    with pytest.raises(InputError, match="control character"):
        env({"A_REF": "v1\nB=2"})
    with pytest.raises(InputError, match="not a variable name"):
        github({"A\nB": "v1"})


def test_export_of_a_hostile_repo_path_and_appending_to_github_output(project: Path, tmp_path: Path):
    hostile = project.parent / "repos/my $(touch pwned) 'repo'"
    (project.parent / "repos/minivllm").rename(hostile)
    edit(project, 'repo = "repos/minivllm"', "repo = \"repos/my $(touch pwned) 'repo'\"")
    assert run("lock", "--manifest", str(project)).exit_code == 0
    lines = run("export", "--manifest", str(project), "--format", "env").output.splitlines()
    repo_line = next(line for line in lines if line.startswith("PV_REPO="))
    assert shlex.split(repo_line.split("=", 1)[1]) == ["repos/my $(touch pwned) 'repo'"]
    outputs = tmp_path / "github_output"
    outputs.write_text("earlier=step\n")
    assert run("export", "--manifest", str(project), "--format", "github", "-o", str(outputs)).exit_code == 0
    parsed = _github_outputs(outputs.read_text())
    assert parsed["earlier"] == "step" and parsed["pv_repo"] == "repos/my $(touch pwned) 'repo'"
    assert parsed["atompin_pair"] == "a" and not (project.parent / "pwned").exists()


# -- exit statuses -------------------------------------------------------------------------


def test_export_to_a_folder_is_exit_2(project: Path, tmp_path: Path):
    result = run("export", "--manifest", str(project), "-o", str(tmp_path))
    assert result.exit_code == 2 and "is a folder; give a file path" in one_line_error(result)
    with pytest.raises(InputError, match="is a folder"):
        write_atomically(tmp_path, "x")


def test_lock_path_that_is_a_folder_is_exit_2(project: Path, tmp_path: Path):
    result = run("lock", "--manifest", str(project), "--lock", str(tmp_path))
    assert result.exit_code == 2 and "is a folder" in one_line_error(result)
