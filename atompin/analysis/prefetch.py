"""Work done in a second process while this one goes on.

A cold check spends its time parsing: the consumer's files, the provider modules it uses,
the provider files its rules search. Much of that does not depend on the rest until the
checks run, so on a machine with a second core it is forked off:

- while the consumer is scanned, one child indexes the provider modules the consumer's import
  statements name, with the bases and re-exports that pulls in (`ProviderIndex.start_indexing`),
  and another reads the identifiers of every provider file for the rules' name searches
  (`NameSearch.reading_task`); on two cores one child does both. Both jobs are cut in shares
  (`Shares`) that whoever is free takes: this process takes those left after its scan (the
  modules' with `ProviderIndex.index_rest`; of a folder, no identifiers: its files are searched
  in place instead, `NameSearch.in_place`). When the scan was cached, the modules it names are
  indexed by both processes from the start;
- while the names, patches and calls are checked, a child runs the contact rules
  (`engine.ContactRules`; protocol-drift first, and the others unless this process, done with
  its checks, has taken them), and another searches the provider for its own calls of what the
  consumer replaced with a narrower function (`CallerSearch.start_search`). That one is
  started as soon as the scan knows the patches, before it ends, and waits until the children
  above are done (`wait_until_ended`): the core they free is idle until the scan ends. When
  they end after the scan, they send what they made here, not to the cache, and the search,
  not begun yet, is called off and started again once it is here
  (`CallerSearch.call_off_unstarted`).

Each child sends back bytes: its results and what it would have written to the cache (it
reads the cache through a connection of its own). What a child did not do is done here on
demand, so a wrong guess or a failed child costs time, never a finding.

A child never writes files or the terminal, but for the cache's database where told
(`written_there`: the provider side's child, which ends before this process needs what it
made, writes it there in one transaction through its own connection), and leaves without
running the parent's cleanup.

No fork where it cannot pay or is unsafe: one core, a platform other than Linux (macOS
forbids much after a fork; Windows has none), other threads running (a lock held by one would
never be released in the child; only daemon threads, such as the one redrawing a terminal's
status line, are let be), or `ATOMPIN_JOBS=1`.
"""

from __future__ import annotations

import functools
import os
import pickle
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol


def parallel_jobs() -> int:
    """How many processes may work at once: `ATOMPIN_JOBS`, else the CPUs this process may use."""
    env = os.environ.get("ATOMPIN_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _only_daemons_beside_us() -> bool:
    """No other thread but daemons (a terminal's status line redraws from one): a worker thread
    may hold a lock (git, the cache) that the child would wait on forever; the status line's
    locks are never taken by a child, which only computes and writes to its pipe."""
    me = threading.current_thread()
    return all(t is me or t.daemon for t in threading.enumerate())


class Worker:
    """A forked process computing a list of (key, bytes); `collect()` waits for it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.done = False

    def close(self) -> None:
        """Stop the child and reap it, its results unread (the run ended another way); nothing
        when they were collected."""
        if self.done:
            return
        self.done = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)

    def collect_into(self, cache: _Cache) -> bytes | None:
        """`collect`, stored into `cache` (see `store`): the task's answer, if it sent one."""
        return store(self.collect(), cache)

    def collect(self) -> list[tuple[str, bytes]]:
        """The child's results; none when it failed (the parent then does the work itself)."""
        self.done = True
        chunks = []
        with os.fdopen(self.fd, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        if status != 0 or not chunks:
            return []
        try:
            entries = pickle.loads(b"".join(chunks))
        except (pickle.UnpicklingError, EOFError, ValueError):
            return []
        return [(k, v) for k, v in entries if isinstance(k, str) and isinstance(v, bytes)]


Task = Callable[[], list[tuple[str, bytes]]]

# The key under which a task sends its own answer (pickled) beside the cache entries it wrote.
ANSWER = "\0answer"
# The key of an entry saying that the next N (its data) are on disk already (`written_there`).
WRITTEN = "\0written"


class _Cache(Protocol):
    def put_raw(self, key: str, data: bytes) -> None: ...

    def put_written(self, key: str, data: bytes) -> None: ...

    def write_now(self, entries: list[tuple[str, bytes]]) -> bool: ...

    def reopened(self) -> _Cache: ...


def store(entries: Iterable[tuple[str, bytes]], cache: _Cache) -> bytes | None:
    """Put what a task sent into `cache`: every entry but its answer (`ANSWER`), returned; those
    the child wrote to disk itself (`written_there`) are kept, not written again."""
    answer = None
    written = 0
    for key, data in entries:
        if key == ANSWER:
            answer = data
        elif key == WRITTEN:
            written = int(data)
        elif written:
            written -= 1
            cache.put_written(key, data)
        else:
            cache.put_raw(key, data)
    return answer


def written_there(task: Task, cache: _Cache, ahead: Shares) -> Task:
    """`task`, which also writes what it made into `cache`'s database itself, through a connection
    of its own, before sending it, when it ends while the parent is still busy: a child that ends
    first writes in time the parent would spend on it later (tens of megabytes of identifiers, on
    a big provider). `ahead` holds one share per task so made: the task writes when it takes one,
    and the parent takes those left (`Shares.take_rest`) when it is about to wait for the child,
    which then sends its entries at once. They are also sent as they are when the cache keeps
    nothing on disk, or the write fails."""

    @functools.wraps(task)  # its `__wrapped__` says which task it runs
    def run() -> list[tuple[str, bytes]]:
        entries = task()
        made = [(key, data) for key, data in entries if key != ANSWER]
        if not made or ahead.take() is None or not _wrote(cache, made):
            return entries
        return [(WRITTEN, str(len(made)).encode()), *made, *((k, d) for k, d in entries if k == ANSWER)]

    return run


def _wrote(cache: _Cache, entries: list[tuple[str, bytes]]) -> bool:
    """Did `cache`, reopened here, write `entries` to disk? Never raises: the receiver writes them."""
    try:
        return cache.reopened().write_now(entries)
    except Exception:  # the database cannot even be opened here: the parent writes them, as before
        return False


def wait_until_ended(workers: Sequence[Worker]) -> None:
    """Wait until each of these children (of the process that forked this one) has done its work:
    it is sending what it made, or has ended. For work done ahead, on a guess, which must not take
    a core from what the run waits for. Nothing is read: the parent reads it all."""
    left = [worker.fd for worker in workers if not worker.done]
    while left:
        ready, _, _ = select.select(left, [], [])
        left = [fd for fd in left if fd not in ready]


def fork_worker(*tasks: Task) -> Worker | None:
    """Run `tasks` in a forked child, one after the other, their results in one list; None (and
    nothing run) where that is not worth it or safe."""
    if parallel_jobs() < 2 or not sys.platform.startswith("linux") or not _only_daemons_beside_us():
        return None
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's cleanup
        status = 1
        try:
            os.close(read_fd)
            data = pickle.dumps([entry for task in tasks for entry in task()], protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
            status = 0
        except BaseException:  # the parent does the work itself
            pass
        finally:
            os._exit(status)
    os.close(write_fd)
    return Worker(pid, read_fd)


class Shares:
    """A job cut in `count` numbered shares, each taken by one of the processes working on it,
    whichever is free: a pipe made before they fork holds one byte per share, and a process takes
    the next share by reading one byte (reads of a pipe are atomic), so two processes whose other
    work ends at different times both keep working until the job is done. A share taken by a
    process that dies is lost: its work must be redone by whoever needs it."""

    MAX = 256  # one byte each, far below a pipe's buffer: writing them never blocks

    def __init__(self, count: int) -> None:
        if not 0 < count <= self.MAX:
            raise ValueError(f"between 1 and {self.MAX} shares, not {count}")
        read_fd, write_fd = os.pipe()
        os.write(write_fd, bytes(range(count)))
        os.close(write_fd)  # once they are all taken, a read meets the end of the pipe
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)  # closed with this object

    def __iter__(self) -> Iterator[int]:
        """The shares this process takes, one at a time, until none is left."""
        while (taken := self.take()) is not None:
            yield taken

    def take(self) -> int | None:
        """The next share, taken by this process; None when none is left."""
        taken = self._pipe.read(1)
        return taken[0] if taken else None

    def take_rest(self) -> None:
        """Take every share left (none is then left for the other processes)."""
        for _ in self:
            pass
