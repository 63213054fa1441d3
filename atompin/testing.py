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
