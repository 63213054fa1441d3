"""Git sources: a cache of bare repositories, refs resolved to commits, files
read straight from git objects (never a work tree).

One bare repository per URL lives under `<cache>/git/`. Only what is asked
for is fetched: the requested ref, shallow, with large blobs filtered out.
A per-repository file lock makes concurrent runs on one cache safe; a cache
entry that git no longer recognises is removed and fetched again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from atompin.errors import InputError, SourceError
from atompin.model import RefKind
from atompin.refs import HEX, check_ref, check_url, is_local
from atompin.sources.tree import SourceTree
from atompin.sources.version import normalize_version

# Files above this size stay on the server; source files are far below it.
_BLOB_FILTER = "blob:limit=1m"
# Environment for every git command: never prompt, and only these transports.
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
    "GIT_CONFIG_NOSYSTEM": "1",
}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ResolvedRef:
    url: str
    ref: str
    commit: str
    kind: RefKind


class GitTree(SourceTree):
    """The files of one commit, read from git objects."""

    def __init__(self, repo: git.Repo, commit: str, label: str) -> None:
        self.repo = repo
        self.commit = commit
        self.label = label
        self._blobs: dict[str, str] = {}

    def list_files(self) -> list[str]:
        out = self.repo.git.ls_tree("-r", "--full-tree", "-z", self.commit)
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob" and mode != "120000":  # no symlinks: they point outside the tree
                self._blobs[path] = sha
        return list(self._blobs)

    def content_id(self, path: str) -> str:
        _ = self.files
        return self._blobs[path]

    def read(self, path: str) -> bytes:
        try:
            return self.repo.odb.stream(bytes.fromhex(self.content_id(path))).read()
        except (ValueError, GitCommandError) as exc:
            raise SourceError(f"{self.label}: cannot read {path} from git ({_last_line(exc)})") from exc

    def read_many(self, paths: list[str]) -> Iterator[tuple[str, bytes]]:
        """Many blobs through one `git cat-file --batch` (one process, not one request per file)."""
        if len(paths) < 16:
            yield from super().read_many(paths)
            return
        shas = [self.content_id(path) for path in paths]
        proc = subprocess.run(
            ["git", "--git-dir", str(self.repo.git_dir), "cat-file", "--batch"],
            input="".join(f"{sha}\n" for sha in shas).encode(),
            capture_output=True,
        )
        out, pos = proc.stdout, 0
        for path, sha in zip(paths, shas):
            end = out.find(b"\n", pos)
            header = out[pos:end].split() if end >= 0 else []
            if proc.returncode != 0 or len(header) != 3 or header[0].decode() != sha or header[1] != b"blob":
                raise SourceError(f"{self.label}: cannot read {path} from git (git cat-file --batch failed)")
            size = int(header[2])
            yield path, out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1


class GitCache:
    """Bare repositories per URL under `root`, shared by every run that uses `root`."""

    def __init__(self, root: Path, offline: bool = False, progress: Progress | None = None) -> None:
        self.root = root / "git"
        self.offline = offline
        self.progress = progress or (lambda _msg: None)
        self._remote_refs: dict[str, dict[str, str]] = {}

    # -- cache entries ----------------------------------------------------------

    def _key(self, url: str) -> str:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40]
        return f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:16]}"

    @contextmanager
    def _locked(self, url: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{self._key(url)}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def repo(self, url: str, create: bool = True) -> git.Repo | None:
        """The bare cache repository for `url` (created, or rebuilt when corrupt)."""
        path = self.root / f"{self._key(url)}.git"
        if path.exists():
            try:
                repo = git.Repo(path)
                repo.git.update_environment(**_GIT_ENV)
                repo.git.rev_parse("--git-dir")
                return repo
            except (InvalidGitRepositoryError, NoSuchPathError, GitCommandError, ValueError):
                self.progress(f"cache entry for {url} is corrupt; rebuilding it")
                shutil.rmtree(path, ignore_errors=True)
        if not create:
            return None
        repo = git.Repo.init(path, bare=True, mkdir=True)
        repo.git.update_environment(**_GIT_ENV)
        return repo

    # -- remote -----------------------------------------------------------------

    def remote_refs(self, url: str) -> dict[str, str]:
        """Every ref the remote advertises -> commit (tags peeled)."""
        if url in self._remote_refs:
            return self._remote_refs[url]
        self.progress(f"asking {url} for its refs")
        g = git.Git()
        g.update_environment(**_GIT_ENV)
        try:
            out = str(g.ls_remote("--", _fetch_url(url)))
        except GitCommandError as exc:
            raise SourceError(f"{url}: cannot list refs ({_last_line(exc)})") from exc
        refs: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name.endswith("^{}"):
                refs[name[:-3]] = sha  # the peeled commit of an annotated tag wins
            else:
                refs.setdefault(name, sha)
        self._remote_refs[url] = refs
        return refs

    def _fetch(self, repo: git.Repo, url: str, *refspecs: str, shallow: bool = True) -> None:
        args = ["--no-tags", "--quiet", f"--filter={_BLOB_FILTER}"]
        if shallow:
            args.append("--depth=1")
        try:
            repo.git.fetch(*args, "--", _fetch_url(url), *refspecs)
        except GitCommandError as exc:
            raise SourceError(f"{url}: fetch failed ({_last_line(exc)})") from exc

    # -- resolution -------------------------------------------------------------

    def resolve(self, url: str, ref: str) -> ResolvedRef:
        """Resolve `ref` (tag, branch, full or short commit) at `url` to a full commit."""
        for problem, what in ((check_url(url), f"repository URL {url!r}"), (check_ref(ref), f"ref {ref!r}")):
            if problem:
                raise InputError(f"{what} refused: {problem}")
        with self._locked(url):
            if self.offline:
                return self._resolve_cached(url, ref)
            return self._resolve_remote(url, ref)

    def _resolve_cached(self, url: str, ref: str) -> ResolvedRef:
        repo = self.repo(url, create=False)
        if repo is not None:
            for name, kind in ((f"refs/tags/{ref}", RefKind.TAG), (f"refs/atompin/heads/{ref}", RefKind.BRANCH)):
                commit = _rev_parse(repo, f"{name}^{{commit}}")
                if commit:
                    return ResolvedRef(url, ref, commit, kind)
            if HEX.match(ref):
                commit = _rev_parse(repo, f"{ref}^{{commit}}")
                if commit:
                    return ResolvedRef(url, ref, commit, RefKind.COMMIT)
        raise SourceError(f"{url} @ {ref} is not in the cache; run once without --offline")

    def _resolve_remote(self, url: str, ref: str) -> ResolvedRef:
        refs = self.remote_refs(url)
        repo = self.repo(url)
        assert repo is not None
        for remote_name, local_name, kind in (
            (f"refs/tags/{ref}", f"refs/tags/{ref}", RefKind.TAG),
            (f"refs/heads/{ref}", f"refs/atompin/heads/{ref}", RefKind.BRANCH),
        ):
            if remote_name not in refs:
                continue
            commit = refs[remote_name]
            # Already cached at the commit the remote advertises: nothing to fetch.
            if _rev_parse(repo, f"{local_name}^{{commit}}") != commit:
                self.progress(f"fetching {url} {kind.value} {ref}")
                self._fetch(repo, url, f"+{remote_name}:{local_name}")
            return ResolvedRef(url, ref, commit, kind)
        if not HEX.match(ref):
            raise InputError(f"{url}: no tag, branch or commit named {ref!r}")
        commit = _rev_parse(repo, f"{ref}^{{commit}}")
        if commit:
            return ResolvedRef(url, ref, commit, RefKind.COMMIT)
        self.progress(f"fetching {url} commit {ref}")
        if len(ref) == 40:
            try:
                self._fetch(repo, url, ref)
            except SourceError:
                pass  # the server may refuse unadvertised commits; fall back to all refs
            commit = _rev_parse(repo, f"{ref}^{{commit}}")
        if not commit:
            # A short id (or a refused one) needs history: fetch every branch and tag.
            self._fetch(
                repo,
                url,
                "+refs/heads/*:refs/atompin/all/heads/*",
                "+refs/tags/*:refs/atompin/all/tags/*",
                shallow=False,
            )
            commit = _rev_parse(repo, f"{ref}^{{commit}}")
        if not commit:
            raise InputError(f"{url}: no tag, branch or commit named {ref!r}")
        return ResolvedRef(url, ref, commit, RefKind.COMMIT)

    def tree(self, resolved: ResolvedRef) -> GitTree:
        repo = self.repo(resolved.url, create=False)
        if repo is None or not _rev_parse(repo, f"{resolved.commit}^{{commit}}"):
            raise SourceError(f"{resolved.url} @ {resolved.commit[:12]} is not in the cache; run without --offline")
        return GitTree(repo, resolved.commit, f"{resolved.url}@{resolved.commit[:12]}")

    def commits_between(self, url: str, old: str, new: str) -> int | None:
        """How many commits lead from `old` to `new`, when the cache has the history (else None)."""
        repo = self.repo(url, create=False)
        if repo is None or (repo.git_dir and Path(repo.git_dir, "shallow").exists()):
            return None
        try:
            return int(repo.git.rev_list("--count", f"{old}..{new}"))
        except (GitCommandError, ValueError):
            return None

    def exact_tag(self, url: str, commit: str) -> str:
        """A version tag that points at `commit` (remote when online, else the cache), or ""."""
        candidates: list[str] = []
        if not self.offline:
            candidates = [
                n[len("refs/tags/") :]
                for n, c in self.remote_refs(url).items()
                if c == commit and n.startswith("refs/tags/")
            ]
        else:
            repo = self.repo(url, create=False)
            if repo is not None:
                out = repo.git.for_each_ref("--points-at", commit, "--format=%(refname:short)", "refs/tags")
                candidates = out.split()
        versions = sorted((v, t) for t in candidates if (v := normalize_version(t)))
        return versions[-1][1] if versions else ""


def _fetch_url(url: str) -> str:
    # Local paths are made absolute so the bare cache repository finds them.
    if is_local(url) and not url.startswith("file://"):
        return os.path.abspath(url)
    return url


def _rev_parse(repo: git.Repo, spec: str) -> str:
    try:
        return repo.git.rev_parse("--verify", "--quiet", spec)
    except GitCommandError:
        return ""


def _last_line(exc: Exception) -> str:
    text = getattr(exc, "stderr", "") or str(exc)
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    line = lines[-1] if lines else "git failed"
    return line.removeprefix("stderr: ").strip("'").strip()


def file_at_revision(rev: str, path: Path) -> tuple[str, str] | None:
    """The text of the file at `path` as committed at git revision `rev` of the
    repository that holds it, with a label `rev:path` (None when it did not exist there)."""
    try:
        repo = git.Repo(path.resolve().parent, search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise InputError(f"{path}: not inside a git repository; pass OLD and NEW lock files") from None
    assert repo.working_tree_dir is not None
    rel = path.resolve().relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
    try:
        repo.git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")
    except GitCommandError:
        raise InputError(f"{rev!r} is not a commit of the repository that holds {path}; pass --base REV") from None
    try:
        return repo.git.show(f"{rev}:{rel}") + "\n", f"{rev}:{rel}"
    except GitCommandError:
        return None  # the file did not exist at that revision
