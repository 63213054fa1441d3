"""Builders for small, hermetic source trees and git repositories: the demo and the
test suite make their providers and consumers with these (no network, fixed dates,
so the same input gives the same commit ids)."""

from __future__ import annotations

import textwrap
from pathlib import Path

_IDENTITY = {
    "GIT_AUTHOR_NAME": "atompin demo",
    "GIT_AUTHOR_EMAIL": "demo@atompin.invalid",
    "GIT_COMMITTER_NAME": "atompin demo",
    "GIT_COMMITTER_EMAIL": "demo@atompin.invalid",
}


def dedent_files(files: dict[str, str]) -> dict[str, str]:
    """path -> source as the tests write it (indented triple-quoted strings), dedented."""
    return {rel: textwrap.dedent(text).lstrip("\n") for rel, text in files.items()}


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (path -> source, dedented) under `root`; returns `root`."""
    for rel, text in dedent_files(files).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def git_repo(path: Path, releases: list[tuple[str, dict[str, str]]]) -> Path:
    """A git repository at `path` with one commit per release, each tagged (when a tag is given).

    Commit dates are fixed, so the same releases give the same commit ids.
    """
    import git

    repo = git.Repo.init(path, initial_branch="main")
    for i, (tag, files) in enumerate(releases):
        for tracked in repo.git.ls_files().splitlines():
            (path / tracked).unlink()
        write_files(path, files)
        repo.git.add("-A")
        when = f"2026-01-{i + 1:02d}T00:00:00+00:00"
        env = {**_IDENTITY, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        repo.git.commit("-q", "--allow-empty", "-m", f"release {tag or i}", env=env)
        if tag:
            repo.git.tag(tag)
    return path


def git_history(path: Path, commits: list[tuple[str, dict[str, str | None], str | None]]) -> Path:
    """A git repository at `path` whose `main` branch has one commit per entry, in one
    `git fast-import` run (fast enough for thousands of commits).

    Each entry is (subject, changes, tag): `changes` maps a path to its new text
    (dedented) or to None to delete it, on top of the previous commit; `tag` (when
    given) names the commit with a lightweight tag. Dates are fixed (one minute
    apart), so the same entries give the same commit ids.
    """
    import subprocess

    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream: list[bytes] = []
    for i, (subject, changes, tag) in enumerate(commits, 1):
        when = f"{1767225600 + 60 * i} +0000"  # 2026-01-01T00:00:00Z, then a minute per commit
        message = subject.encode()
        stream += [
            b"commit refs/heads/main\n",
            b"mark :%d\n" % i,
            f"author {_IDENTITY['GIT_AUTHOR_NAME']} <{_IDENTITY['GIT_AUTHOR_EMAIL']}> {when}\n".encode(),
            f"committer {_IDENTITY['GIT_COMMITTER_NAME']} <{_IDENTITY['GIT_COMMITTER_EMAIL']}> {when}\n".encode(),
            b"data %d\n%s\n" % (len(message), message),
        ]
        if i > 1:
            stream.append(b"from :%d\n" % (i - 1))
        for rel, text in sorted(changes.items()):
            if text is None:
                stream.append(f"D {rel}\n".encode())
            else:
                data = textwrap.dedent(text).lstrip("\n").encode()
                stream += [f"M 100644 inline {rel}\n".encode(), b"data %d\n" % len(data), data, b"\n"]
        stream.append(b"\n")
        if tag:
            stream.append(f"reset refs/tags/{tag}\nfrom :{i}\n\n".encode())
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=b"".join(stream), check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=path, check=True)
    return path
