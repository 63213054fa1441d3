"""Git sources: a cache of bare repositories, refs resolved to commits, files
read straight from git objects (never a work tree).

One bare repository per URL lives under `<cache>/git/`. Only what is asked
for is fetched: the requested ref, shallow, with large blobs filtered out.
A repository on this machine (a path or a file:// URL) is cloned instead, the
way `git clone PATH` does: its object files are linked, not packed again (see
`GitCache._link_local`).
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
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Sequence
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

# Files of this size and above stay on the server; source files are far below it.
_BLOB_FILTER = "blob:limit=1m"
_BLOB_LIMIT = 1024 * 1024  # the filter's limit in bytes
# How a local source sends objects. Its objects are often loose (a repository built commit by
# commit): git would search them all for deltas to make the smallest pack, although the pack
# only crosses a pipe. Without that search, and with light compression, fetching a vLLM release
# from such a repository takes a third of the time, for a cached pack a sixth bigger. (`-c`
# reaches the pack-objects that upload-pack starts; a remote's server is never told this.)
_LOCAL_UPLOAD_PACK = "git -c pack.window=0 -c core.compression=1 upload-pack"
# The file that marks an entry cloned from a repository on this machine (`GitCache._link_local`):
# it holds the source's whole history, so it is fetched into without --depth (which would cut it).
_LINKED = "atompin-linked"
# Paths given to one `git grep` (far below the system's limit on a command's arguments).
_PATHS_PER_COMMAND = 2000
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


@dataclass(frozen=True)
class CommitInfo:
    commit: str
    date: str  # the committer date, ISO 8601
    subject: str


class GitTree(SourceTree):
    """The files of one commit, read from git objects."""

    def __init__(self, repo: git.Repo, commit: str, label: str) -> None:
        self.repo = repo
        self.commit = commit
        self.label = label
        self._blobs: dict[str, str] = {}
        self._sizes: dict[str, int] = {}
        self._reader: tuple[int, _BlobReader] | None = None  # (pid, reader): see `_batch`

    def list_files(self) -> list[str]:
        # Without `--long`: the sizes are asked for few files (`sizes`), and listing them would
        # read the header of every blob (most of the listing's time where objects are loose).
        out = self.repo.git.ls_tree("-r", "--full-tree", "-z", self.commit)
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob" and mode != "120000":  # no symlinks: they point outside the tree
                self._blobs[path] = sha
        return list(self._blobs)

    def size(self, path: str) -> int:
        return self.sizes([path])[0]

    def sizes(self, paths: Sequence[str]) -> list[int]:
        """The sizes of these files' blobs, asked of git in one `cat-file --batch-check` for those
        not asked before; 0 for a blob not in the cache (over the fetch filter's limit)."""
        _ = self.files
        unknown = list(dict.fromkeys(path for path in paths if path not in self._sizes))
        if unknown:
            proc = subprocess.run(
                ["git", "--git-dir", str(self.repo.git_dir), "cat-file", "--batch-check=%(objectsize)"],
                input="".join(f"{self._blobs[path]}\n" for path in unknown).encode(),
                capture_output=True,
                env={**os.environ, **_GIT_ENV},
            )
            answers = proc.stdout.split(b"\n")
            for i, path in enumerate(unknown):
                # A blob git does not hold is answered "<id> missing".
                answer = answers[i] if i < len(answers) else b""
                self._sizes[path] = int(answer) if answer.isdigit() else 0
        return [self._sizes[path] for path in paths]

    def content_id(self, path: str) -> str:
        _ = self.files
        return self._blobs[path]

    def identity(self) -> str:
        return f"git:{self.commit}"

    def read(self, path: str) -> bytes:
        return next(self._batch([path]))[1]

    def read_many(self, paths: list[str]) -> Iterator[tuple[str, bytes]]:
        """Many blobs through this process's one `git cat-file --batch` (see `_BlobReader`)."""
        yield from self._batch(paths)

    def files_containing(self, paths: list[str], words: Sequence[bytes]) -> list[str]:
        """`git grep` finds them (in C, on every core) without sending each blob here; read one
        by one when there are few, or when git cannot answer."""
        if len(paths) < 64 or not words or any(b"\n" in word or b"\0" in word for word in words):
            return super().files_containing(paths, words)
        # A blob over the fetch filter's limit is not here: read it as any read would (grep would
        # fetch it too, but quietly and one by one).
        sizes = dict(zip(paths, self.sizes(paths)))
        small = [path for path in paths if sizes[path] < _BLOB_LIMIT]
        found = set(super().files_containing([path for path in paths if sizes[path] >= _BLOB_LIMIT], words))
        patterns = [arg for word in words for arg in ("-e", os.fsdecode(word))]
        for start in range(0, len(small), _PATHS_PER_COMMAND):
            proc = subprocess.run(
                ["git", "--git-dir", str(self.repo.git_dir), "grep", "-l", "-z", "-F", "--no-color", "--no-textconv"]
                + [*patterns, self.commit, "--", *small[start : start + _PATHS_PER_COMMAND]],
                capture_output=True,
                # Paths are names, not patterns; never a prompt.
                env={**os.environ, **_GIT_ENV, "GIT_LITERAL_PATHSPECS": "1"},
            )
            if proc.returncode not in (0, 1):  # 1: no file matched
                return super().files_containing(paths, words)
            prefix = f"{self.commit}:"
            found.update(os.fsdecode(entry).removeprefix(prefix) for entry in proc.stdout.split(b"\0") if entry)
        return [path for path in paths if path in found]

    def _batch(self, paths: list[str]) -> Iterator[tuple[str, bytes]]:
        """Every read goes through this process's own `_BlobReader` (a forked child starts its own:
        the parent's pipes are not its to use)."""
        if self._reader is None or self._reader[0] != os.getpid():
            self._reader = (os.getpid(), _BlobReader(self.repo.git_dir))
        reader = self._reader[1]
        shas = [self.content_id(path) for path in paths]
        try:
            yield from zip(paths, reader.read(shas))
        except _MissingBlob as exc:
            raise SourceError(
                f"{self.label}: cannot read {paths[shas.index(exc.sha)]} from the git cache (git cat-file "
                f"--batch failed); if this repeats, delete the cache folder {self.repo.git_dir} and run again"
            ) from None


class _MissingBlob(Exception):
    def __init__(self, sha: str) -> None:
        self.sha = sha


class _BlobReader:
    """One `git cat-file --batch` process, kept for every blob this process reads from a tree:
    starting git costs more than reading a few dozen files, and reads come one by one or in many
    small batches (the shares of `prefetch.Shares`). Requests are written a chunk at a time and the chunk's
    answers read whole before any is handed out, so a reader stopped early never leaves answers
    unread in the pipe. (GitPython keeps such a process too, but asks for one object per round trip.)"""

    # Requests written at once: far below a pipe's smallest buffer (a page), so that writing them
    # never waits for git, which could itself be waiting for its answers to be read.
    CHUNK = 64

    def __init__(self, git_dir: str | os.PathLike[str]) -> None:
        self._git_dir = os.fspath(git_dir)
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    def _started(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._proc = subprocess.Popen(
                ["git", "--git-dir", self._git_dir, "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **_GIT_ENV},
            )
            self._finalizer = weakref.finalize(self, _stop, self._proc)
        return self._proc

    def _stopped(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._proc = self._finalizer = None

    def read(self, shas: list[str]) -> Iterator[bytes]:
        """Each blob's bytes, in order; `_MissingBlob` for one git does not have (the process is
        then stopped, its answers out of step, and the next read starts another)."""
        for start in range(0, len(shas), self.CHUNK):
            yield from self._chunk(shas[start : start + self.CHUNK])

    def _chunk(self, shas: list[str]) -> list[bytes]:
        proc = self._started()
        assert proc.stdin is not None and proc.stdout is not None
        out: list[bytes] = []
        try:
            proc.stdin.write("".join(f"{sha}\n" for sha in shas).encode())
            proc.stdin.flush()
            for sha in shas:
                header = proc.stdout.readline().split()
                if len(header) != 3 or header[0].decode() != sha or header[1] != b"blob":
                    raise _MissingBlob(sha)
                size = int(header[2])
                data = proc.stdout.read(size)
                if len(data) != size or proc.stdout.read(1) != b"\n":
                    raise _MissingBlob(sha)
                out.append(data)
        except (OSError, ValueError) as exc:  # git ended (a broken pipe) or answered garbage
            self._stopped()
            raise _MissingBlob(shas[len(out)]) from exc
        except _MissingBlob:
            self._stopped()
            raise
        return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a `_BlobReader`'s git: closing its input is its signal to leave."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


class GitCache:
    """Bare repositories per URL under `root`, shared by every run that uses `root`."""

    def __init__(self, root: Path, offline: bool = False, progress: Progress | None = None) -> None:
        for folder in (root, root / "git"):
            if folder.exists() and not folder.is_dir():
                raise InputError(f"{folder}: the cache folder is a file; remove it or pass --cache-dir FOLDER")
        self.root = root / "git"
        self.offline = offline
        self.progress = progress or (lambda _msg: None)
        self._remote_refs: dict[str, dict[str, str]] = {}
        self._opened: dict[str, git.Repo] = {}  # entries checked in this run

    # -- cache entries ----------------------------------------------------------

    def _key(self, url: str) -> str:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40]
        return f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:16]}"

    def entry(self, url: str) -> Path:
        """The cache folder of one repository (what to delete when it cannot be rebuilt)."""
        return self.root / f"{self._key(url)}.git"

    @contextmanager
    def _locked(self, url: str) -> Iterator[None]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle = open(self.root / f"{self._key(url)}.lock", "w")
        except OSError as exc:
            raise InputError(
                f"{self.root}: cannot use the git cache ({exc.strerror or exc}); pass --cache-dir FOLDER"
            ) from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def repo(self, url: str, create: bool = True) -> git.Repo | None:
        """The bare cache repository for `url` (created, or rebuilt when corrupt)."""
        if url in self._opened:
            return self._opened[url]
        path = self.entry(url)
        if path.exists() or path.is_symlink():
            repo = _open_cached(path)
            if repo is not None:
                self._opened[url] = repo
                return repo
            self.progress(f"cache entry for {url} is corrupt; rebuilding it")
            self._discard(url)
        if not create:
            return None
        try:
            repo = self._link_local(url, path) or git.Repo.init(path, bare=True, mkdir=True)
        except (OSError, GitCommandError) as exc:
            raise InputError(
                f"{path}: cannot create the git cache entry ({_last_line(exc)}); delete that folder and run again"
            ) from None
        repo.git.update_environment(**_GIT_ENV)
        self._opened[url] = repo
        return repo

    def _link_local(self, url: str, path: Path) -> git.Repo | None:
        """A new entry for a repository on this machine (a path or a file:// URL), made the way
        `git clone PATH` makes one: its object files are hard-linked (git never writes one in
        place), so nothing is packed again and sent through a pipe; a fetch then finds every
        object there. None (fetch instead) for a network URL, a source on another file system
        (its objects would be copied), or one that lacks objects: shallow, partial, or
        borrowing another repository's."""
        source = _local_path(url)
        if source is None:
            return None
        objects = _complete_objects(source)
        if objects is None or not _same_file_system(objects, self.root):
            return None
        # --local links every object file (git copies what it cannot link); one branch and no
        # tags are copied, and that branch goes: the entry holds only the refs atompin fetched
        # into it, as any other entry does.
        try:
            repo = git.Repo.clone_from(
                str(source), path, env=_GIT_ENV, bare=True, local=True, no_tags=True, single_branch=True
            )
            repo.git.update_environment(**_GIT_ENV)
            for ref in filter(None, repo.git.for_each_ref("--format=%(refname)").split("\n")):
                repo.git.update_ref("-d", ref)
            repo.git.config("--remove-section", "remote.origin", with_exceptions=False)
        except GitCommandError:  # fetch instead, into a new entry
            shutil.rmtree(path, ignore_errors=True)
            return None
        (path / _LINKED).touch()
        return repo

    def _discard(self, url: str) -> None:
        """Remove a damaged cache entry (whatever it has become: a folder, a file, a link)."""
        self._opened.pop(url, None)
        path = self.entry(url)
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
        if path.exists() or path.is_symlink():
            raise InputError(f"{path}: the git cache entry is damaged and cannot be removed; delete it by hand")

    def cached_kind(self, url: str, ref: str) -> RefKind | None:
        """What the cache says `ref` is at `url` (None when the cache does not hold it). Reads only."""
        path = self.entry(url)
        repo = _open_cached(path) if path.is_dir() else None
        if repo is None or check_ref(ref):
            return None
        if _rev_parse(repo, f"refs/tags/{ref}^{{commit}}"):
            return RefKind.TAG
        if _rev_parse(repo, f"refs/atompin/heads/{ref}^{{commit}}"):
            return RefKind.BRANCH
        return None

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
            raise _remote_error(url, "cannot list refs", exc) from exc
        refs: dict[str, str] = {}
        for line in filter(None, out.split("\n")):  # not `splitlines`: a name may hold U+2028
            sha, _, name = line.partition("\t")
            if name.endswith("^{}"):
                refs[name[:-3]] = sha  # the peeled commit of an annotated tag wins
            else:
                refs.setdefault(name, sha)
        self._remote_refs[url] = refs
        return refs

    def _fetch(self, repo: git.Repo, url: str, *refspecs: str, shallow: bool = True) -> None:
        args = ["--no-tags", "--quiet", f"--filter={_BLOB_FILTER}", *_transport_options(url)]
        if shallow and not _linked(repo):
            args.append("--depth=1")
        try:
            repo.git.fetch(*args, "--", _fetch_url(url), *refspecs)
        except GitCommandError as exc:
            raise _remote_error(url, "fetch failed", exc) from exc

    # -- resolution -------------------------------------------------------------

    def resolve(self, url: str, ref: str) -> ResolvedRef:
        """Resolve `ref` (tag, branch, full or short commit) at `url` to a full commit."""
        for problem, what in ((check_url(url), f"repository URL {url!r}"), (check_ref(ref), f"ref {ref!r}")):
            if problem:
                raise InputError(f"{what} refused: {problem}")
        with self._locked(url):
            if self.offline:
                return self._resolve_cached(url, ref)
            refs = self.remote_refs(url)  # the remote answers: a later failure is the cache's
            try:
                return self._resolve_remote(url, ref)
            except (SourceError, GitCommandError) as exc:
                self.progress(f"cache entry for {url} failed ({_last_line(exc)}); rebuilding it")
                self._discard(url)
                self._remote_refs[url] = refs
                try:
                    return self._resolve_remote(url, ref)
                except (SourceError, GitCommandError) as again:
                    raise SourceError(
                        f"{url}: {_last_line(again)}; if this repeats, delete the cache folder {self.entry(url)}"
                    ) from again

    def _resolve_cached(self, url: str, ref: str) -> ResolvedRef:
        repo = self.repo(url, create=False)
        if repo is not None:
            for _, name, kind in ref_candidates(ref):
                commit = _rev_parse(repo, f"{name}^{{commit}}")
                if commit:
                    return ResolvedRef(url, ref, commit, kind)
            if HEX.match(ref):
                commit = _rev_parse(repo, f"{ref}^{{commit}}")
                if commit:
                    return ResolvedRef(url, ref, commit, RefKind.COMMIT)
                _refuse_ambiguous(repo, url, ref)
        raise SourceError(f"{url} @ {ref} is not in the cache; run once without --offline")

    def _resolve_remote(self, url: str, ref: str) -> ResolvedRef:
        refs = self.remote_refs(url)
        repo = self.repo(url)
        assert repo is not None
        for remote_name, local_name, kind in ref_candidates(ref):
            if remote_name not in refs:
                continue
            commit = refs[remote_name]
            # Already cached at the commit the remote advertises: nothing to fetch.
            if _rev_parse(repo, f"{local_name}^{{commit}}") != commit:
                if _linked(repo) and _rev_parse(repo, f"{commit}^{{commit}}") == commit:
                    # A linked entry holds the source's objects as they were when it was linked:
                    # when the commit is among them, only the ref is new (a fetch would find
                    # every object here, after asking the source what it has).
                    repo.git.update_ref(local_name, commit)
                else:
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
            _refuse_ambiguous(repo, url, ref)
            raise InputError(f"{url}: no tag, branch or commit named {ref!r}")
        return ResolvedRef(url, ref, commit, RefKind.COMMIT)

    def tree(self, resolved: ResolvedRef) -> GitTree:
        """The files of a resolved commit; a cache entry that cannot list them is rebuilt once."""
        try:
            return self._tree(resolved)
        except GitCommandError as exc:
            if self.offline:
                raise SourceError(
                    f"{resolved.url}: the git cache entry is damaged ({_last_line(exc)}); delete the cache folder "
                    f"{self.entry(resolved.url)} and run without --offline"
                ) from exc
            self.progress(f"cache entry for {resolved.url} is damaged ({_last_line(exc)}); rebuilding it")
            with self._locked(resolved.url):
                self._discard(resolved.url)
            self.resolve(resolved.url, resolved.ref)
            try:
                return self._tree(resolved)
            except GitCommandError as again:
                raise SourceError(
                    f"{resolved.url}: the git cache entry is damaged ({_last_line(again)}); delete the cache folder "
                    f"{self.entry(resolved.url)} and run again"
                ) from again

    def _tree(self, resolved: ResolvedRef) -> GitTree:
        repo = self.repo(resolved.url, create=False)
        if repo is None or not _rev_parse(repo, f"{resolved.commit}^{{commit}}"):
            raise SourceError(f"{resolved.url} @ {resolved.commit[:12]} is not in the cache; run without --offline")
        tree = GitTree(repo, resolved.commit, f"{resolved.url}@{resolved.commit[:12]}")
        _ = tree.files  # lists the commit's tree now: a damaged entry fails here, not mid-analysis
        return tree

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
                candidates = out.split("\n")
        versions = sorted((v, t) for t in candidates if (v := normalize_version(t)))
        return versions[-1][1] if versions else ""

    # -- history: tags and first-parent ranges (bump --latest, bisect) ----------

    def tags(self, url: str) -> dict[str, str]:
        """Every tag -> the commit it names: the remote's when online, the cache's when offline."""
        if not self.offline:
            return {n[len("refs/tags/") :]: c for n, c in self.remote_refs(url).items() if n.startswith("refs/tags/")}
        repo = self.repo(url, create=False)
        if repo is None:
            raise SourceError(f"{url}: not in the cache; run once without --offline")
        out = repo.git.for_each_ref(
            "--format=%(refname)%00%(objectname)%00%(*objectname)", "refs/tags", "refs/atompin/all/tags"
        )
        found: dict[str, str] = {}
        for line in filter(None, out.split("\n")):
            name, sha, peeled = line.split("\0")
            found[name.split("/tags/", 1)[1]] = peeled or sha
        return found

    def first_parent_commits(self, good: ResolvedRef, bad: ResolvedRef) -> list[str]:
        """The commits on `bad`'s first-parent line that `good` does not reach, oldest first.

        The cache's history is used when it holds the whole range; otherwise, online, the
        history is deepened (blob-filtered, so source files come along and large blobs do
        not) until it does. Offline without the history: SourceError (exit 3).
        """
        url = bad.url
        with self._locked(url):
            repo = self.repo(url, create=False)
            if repo is None:
                raise SourceError(f"{url}: not in the cache; run once without --offline")
            depth = _FIRST_DEEPEN
            while True:
                commits = _first_parent_range(repo, good.commit, bad.commit)
                if commits is not None:
                    return commits
                if self.offline:
                    raise SourceError(
                        f"{url}: the history from {good.ref} to {bad.ref} is not in the cache; run once without --offline"
                    )
                before = _shallow(repo)
                self.progress(f"fetching the history of {url} from {good.ref} to {bad.ref} (+{depth} commits)")
                try:
                    repo.git.fetch(
                        "--no-tags",
                        "--quiet",
                        f"--filter={_BLOB_FILTER}",
                        f"--deepen={depth}",
                        *_transport_options(url),
                        "--",
                        _fetch_url(url),
                        *(_refspec(r) for r in (good, bad)),
                    )
                except GitCommandError as exc:
                    raise SourceError(f"{url}: fetching history failed ({_last_line(exc)})") from exc
                if _shallow(repo) == before:
                    raise SourceError(f"{url}: the server sent no more history from {good.ref} to {bad.ref}")
                depth *= 2

    def commit_info(self, url: str, commit: str) -> CommitInfo:
        """The committer date (ISO 8601) and subject of a cached commit."""
        repo = self.repo(url, create=False)
        assert repo is not None
        date, _, subject = repo.git.log("-1", "--format=%cI%x00%s", commit).partition("\0")
        return CommitInfo(commit, date, subject)

    def first_parent(self, url: str, commit: str) -> str:
        """A cached commit's first parent ("" for a root commit)."""
        repo = self.repo(url, create=False)
        assert repo is not None
        return _rev_parse(repo, f"{commit}^1^{{commit}}")

    def changed_files(self, url: str, commit: str) -> list[str]:
        """The paths a commit changed against its first parent (both sides of a rename), sorted."""
        repo = self.repo(url, create=False)
        assert repo is not None
        parent = _rev_parse(repo, f"{commit}^1^{{commit}}")
        args = [parent, commit] if parent else ["--root", commit]
        out = repo.git.diff_tree("-r", "--no-commit-id", "--name-only", "--no-renames", "-z", *args)
        return sorted({p for p in out.split("\0") if p})

    def changed_lines(self, url: str, commit: str, under: str = "") -> dict[str, list[str]]:
        """Per changed path (below the folder `under`, e.g. "vllm/"), the lines the commit removed
        and added against its first parent ("-..." and "+..."); {} when git cannot show the diff."""
        repo = self.repo(url, create=False)
        assert repo is not None
        parent = _rev_parse(repo, f"{commit}^1^{{commit}}")
        args = [parent, commit] if parent else ["--root", commit]
        try:
            out = repo.git.diff_tree("-p", "-U0", "--no-commit-id", "--no-renames", *args, "--", under or ".")
        except GitCommandError:
            return {}  # e.g. a blob the filter left out, offline
        lines: dict[str, list[str]] = {}
        path, in_header = "", False
        for line in out.split("\n"):  # not `splitlines`: a line may hold a form feed
            if line.startswith("diff --git "):
                in_header = True
            elif in_header and line.startswith(("--- a/", "+++ b/")):
                path = line[6:]  # a side that is /dev/null (an added or deleted file) names no path
                lines.setdefault(path, [])
            elif line.startswith("@@"):
                in_header = False
            elif not in_header and line[:1] in "+-" and path:
                lines[path].append(line)
        return lines


# Prefixes of a remote-tracking branch as git prints it locally: "origin/main", "refs/remotes/origin/main".
_REMOTE_BRANCH = re.compile(r"^(?:origin/|(?:refs/)?remotes/[^/]+/)(?P<branch>.+)$")


def ref_candidates(ref: str) -> list[tuple[str, str, RefKind]]:
    """What a pinned ref can name at the remote, in the order tried: (the remote's ref, the
    cache's ref, kind). A tag or branch of that name; `HEAD` (the remote's default branch);
    full names (`refs/tags/X`, `refs/heads/X`); and a remote-tracking name as git shows it
    in a clone (`origin/main`, `refs/remotes/origin/main`) for the remote's branch `main`.
    `HEAD` and branches move, so they are branches."""
    if ref == "HEAD":
        return [("HEAD", "refs/atompin/HEAD", RefKind.BRANCH)]
    for prefix, kind in (("refs/tags/", RefKind.TAG), ("refs/heads/", RefKind.BRANCH)):
        if ref.startswith(prefix):
            name = ref.removeprefix(prefix)
            local = f"refs/tags/{name}" if kind is RefKind.TAG else f"refs/atompin/heads/{name}"
            return [(ref, local, kind)]
    out = [
        (f"refs/tags/{ref}", f"refs/tags/{ref}", RefKind.TAG),
        (f"refs/heads/{ref}", f"refs/atompin/heads/{ref}", RefKind.BRANCH),
    ]
    tracking = _REMOTE_BRANCH.match(ref)
    if tracking:  # only when no tag or branch is literally called so (tried first)
        branch = tracking.group("branch")
        out.append((f"refs/heads/{branch}", f"refs/atompin/heads/{branch}", RefKind.BRANCH))
    return out


def _local_path(url: str) -> Path | None:
    """The folder a path or file:// URL names; None for a network URL."""
    if url.startswith("file://"):
        parsed = urllib.parse.urlparse(url)
        return Path(urllib.parse.unquote(parsed.path)) if parsed.netloc in ("", "localhost") else None
    return Path(os.path.abspath(url)) if is_local(url) else None


def _complete_objects(source: Path) -> Path | None:
    """The object folder of the repository at `source` when it holds every object of its history
    itself: not shallow, not partial, borrowing from no other repository. Else None."""
    probe = git.Git(str(source))
    probe.update_environment(**_GIT_ENV)
    try:
        common, shallow = probe.rev_parse("--git-common-dir", "--is-shallow-repository").splitlines()
    except (GitCommandError, ValueError, OSError):
        return None
    objects = (source / common).resolve() / "objects"
    partial = probe.config("--get", "extensions.partialClone", with_exceptions=False)
    if shallow != "false" or partial or (objects / "info" / "alternates").exists() or not objects.is_dir():
        return None
    return objects


def _same_file_system(a: Path, b: Path) -> bool:
    """Can files under `a` be hard-linked under `b`?"""
    try:
        return a.stat().st_dev == b.stat().st_dev
    except OSError:
        return False


def _fetch_url(url: str) -> str:
    # Local paths become file:// URLs: git then uses the same transport as for a remote
    # (honouring the blob filter and lazy fetches of large blobs), and the bare cache
    # repository finds them whatever the current folder.
    if is_local(url) and not url.startswith("file://"):
        return Path(os.path.abspath(url)).as_uri()
    return url


def _transport_options(url: str) -> list[str]:
    """Options of a fetch from `url`: a local source (a path or a file:// URL) packs without
    searching for deltas."""
    return [f"--upload-pack={_LOCAL_UPLOAD_PACK}"] if _local_path(url) is not None else []


def _open_cached(path: Path) -> git.Repo | None:
    """The cache repository at `path`, or None when it is not one git can use."""
    if not path.is_dir() or path.is_symlink():
        return None
    try:
        repo = git.Repo(path)
        repo.git.update_environment(**_GIT_ENV)
        repo.git.rev_list("--max-count=1", "--all")  # reads config, HEAD, refs, tip objects, shallow
        return repo
    except Exception:  # any failure (git, GitPython's config parser, the file system): not usable
        return None


def _refuse_ambiguous(repo: git.Repo, url: str, ref: str) -> None:
    """InputError when a short commit id names several commits."""
    try:
        out = repo.git.rev_parse(f"--disambiguate={ref}")
    except GitCommandError:
        return
    commits = []
    for sha in out.split():
        try:
            if repo.git.cat_file("-t", sha) == "commit":
                commits.append(sha)
        except GitCommandError:
            continue
    if len(commits) > 1:
        raise InputError(
            f"{url}: short commit id {ref!r} is ambiguous ({len(commits)} commits start with it: "
            f"{', '.join(c[:12] for c in sorted(commits)[:3])}); give more of its digits"
        )


def _remote_error(url: str, what: str, exc: GitCommandError) -> SourceError:
    """A git failure talking to `url`, said plainly: a local path that is no repository says so."""
    if is_local(url):
        path = Path(url.removeprefix("file://"))
        if not path.exists():
            return SourceError(f"{url}: no such repository (the path does not exist); check repo in pairs.toml")
        if not (path / ".git").exists() and not (path / "HEAD").exists():
            return SourceError(f"{url}: not a git repository; check repo in pairs.toml")
    return SourceError(f"{url}: {what} ({_last_line(exc)})")


# A range's history is deepened by this many commits first, then twice as many each time.
_FIRST_DEEPEN = 128


def _refspec(resolved: ResolvedRef) -> str:
    """What to fetch for a resolved ref: its tag or branch (as `resolve` stores it), else the commit."""
    if resolved.kind is RefKind.TAG:
        return f"+refs/tags/{resolved.ref}:refs/tags/{resolved.ref}"
    if resolved.kind is RefKind.BRANCH:
        return f"+refs/heads/{resolved.ref}:refs/atompin/heads/{resolved.ref}"
    return resolved.commit


def _shallow(repo: git.Repo) -> frozenset[str]:
    """The commits whose parents the cache does not have (a shallow repository's boundary)."""
    path = Path(repo.git_dir, "shallow")
    return frozenset(path.read_text().split()) if path.exists() else frozenset()


def _first_parent_range(repo: git.Repo, good: str, bad: str) -> list[str] | None:
    """`bad`'s first-parent commits that `good` does not reach, oldest first; None when the
    cache's history stops inside the range (the oldest such commit lies on a shallow boundary)."""
    out = repo.git.rev_list("--first-parent", f"{good}..{bad}")
    commits = out.split()[::-1]
    if commits and commits[0] in _shallow(repo):
        return None
    return commits


def _linked(repo: git.Repo) -> bool:
    """Is this entry linked from a repository on this machine (`GitCache._link_local`): does it
    hold the source's whole history, as it was when it was linked?"""
    return Path(repo.git_dir, _LINKED).exists()


def _rev_parse(repo: git.Repo, spec: str) -> str:
    try:
        return repo.git.rev_parse("--verify", "--quiet", spec)
    except GitCommandError:
        return ""


def _last_line(exc: Exception) -> str:
    """The line of git's error output that says what went wrong: its first `fatal:` or `error:`
    line (later lines are advice such as "and the repository exists."), else its last line."""
    text = getattr(exc, "stderr", "") or str(exc)
    lines = [line.strip().removeprefix("stderr: ").strip("'").strip() for line in str(text).strip().splitlines()]
    lines = [line for line in lines if line]
    said = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    line = said or (lines[-1] if lines else "git failed")
    return line.removeprefix("fatal: ").removeprefix("error: ").strip()


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
