"""Reading many blobs of a git tree through one long-lived `git cat-file --batch` (`_BlobReader`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from atompin.errors import SourceError
from atompin.sources.git import GitCache, GitTree
from atompin.testing import git_repo


def _tree(tmp_path: Path, count: int) -> tuple[GitTree, dict[str, str]]:
    files = {f"pv/m{i:03}.py": f"X = {i}\n" + "# filler\n" * (i % 7) for i in range(count)}
    repo = git_repo(tmp_path / "repo", [("v1", files)])
    cache = GitCache(tmp_path / "cache")
    return cache.tree(cache.resolve(str(repo), "v1")), files


def test_many_blobs_over_several_chunks_read_as_one_by_one(tmp_path: Path):
    tree, files = _tree(tmp_path, 150)  # more than two chunks of requests
    paths = sorted(files)
    assert [(p, d.decode()) for p, d in tree.read_many(paths)] == [(p, files[p]) for p in paths]
    # a second batch goes through the same git process
    first = tree._reader
    assert dict(tree.read_many(paths[::-1]))["pv/m099.py"] == files["pv/m099.py"].encode()
    assert tree._reader is first


def test_a_reader_stopped_early_leaves_the_next_read_in_step(tmp_path: Path):
    tree, files = _tree(tmp_path, 100)
    paths = sorted(files)
    started = tree.read_many(paths)
    assert [next(started) for _ in range(3)] == [(p, files[p].encode()) for p in paths[:3]]
    started.close()  # abandoned in the middle of its first chunk
    again = paths[50:] + paths[:50]
    assert list(tree.read_many(again)) == [(p, files[p].encode()) for p in again]


def test_a_missing_blob_names_its_file_and_the_next_read_works(tmp_path: Path):
    tree, files = _tree(tmp_path, 40)
    paths = sorted(files)
    _ = tree.files
    tree._blobs["pv/m005.py"] = "0" * 40  # an object git does not have
    with pytest.raises(SourceError, match="pv/m005.py"):
        list(tree.read_many(paths))
    rest = [p for p in paths if p != "pv/m005.py"]
    assert list(tree.read_many(rest)) == [(p, files[p].encode()) for p in rest]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks")
def test_a_forked_child_reads_through_its_own_git_and_leaves_the_parents_in_step(tmp_path: Path):
    tree, files = _tree(tmp_path, 80)
    paths = sorted(files)
    assert len(list(tree.read_many(paths))) == 80  # the parent's reader is running
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read everything, say whether it matched
        ok = b"0"
        try:
            ok = b"1" if list(tree.read_many(paths)) == [(p, files[p].encode()) for p in paths] else b"0"
        finally:
            os.write(write_fd, ok)
            os._exit(0)
    os.close(write_fd)
    assert os.read(read_fd, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(read_fd)
    assert list(tree.read_many(paths[::-1])) == [(p, files[p].encode()) for p in paths[::-1]]


def test_sizes_are_asked_of_git_once_for_the_files_asked_and_a_missing_blob_is_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    tree, files = _tree(tmp_path, 30)
    paths = sorted(files)
    _ = tree.files  # listed: no size known yet
    assert tree._sizes == {}
    runs: list[list[str]] = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **k: runs.append(cmd) or real(cmd, *a, **k))
    tree._blobs["pv/m007.py"] = "0" * 40  # an object git does not have (over a fetch filter's limit)
    asked = [paths[3], "pv/m007.py", paths[20], paths[3]]
    assert tree.sizes(asked) == [len(files[paths[3]]), 0, len(files[paths[20]]), len(files[paths[3]])]
    assert len(runs) == 1 and "--batch-check=%(objectsize)" in runs[0]
    assert tree.size(paths[20]) == len(files[paths[20]]) and len(runs) == 1  # known: git is not asked again
    assert sorted(tree._sizes) == sorted({paths[3], "pv/m007.py", paths[20]})


def test_tags_and_changed_lines_are_split_at_newlines_only(tmp_path: Path):
    # Git allows U+2028 and U+0085 in a tag's name, and a diff line may hold a form feed:
    # `str.splitlines` splits at all three.
    repo = git_repo(tmp_path / "repo", [("v1", {"pv/a.py": "x = 1\n"}), ("v2", {"pv/a.py": "x = 1\ny = 2\x0c-z\n"})])
    for odd in ("v3\u2028x", "v4\x85"):
        subprocess.run(["git", "tag", odd, "v2"], cwd=repo, check=True)
    cache = GitCache(tmp_path / "cache")
    v2 = cache.resolve(str(repo), "v2").commit
    assert set(cache.tags(str(repo))) == {"v1", "v2", "v3\u2028x", "v4\x85"}  # the remote's
    assert cache.resolve(str(repo), "v3\u2028x").commit == v2  # now in the cache too
    assert set(GitCache(tmp_path / "cache", offline=True).tags(str(repo))) == {"v2", "v3\u2028x"}
    assert cache.changed_lines(str(repo), v2, "pv/") == {"pv/a.py": ["+y = 2\x0c-z"]}
