"""A provider folder searched in place (git's grep, `NameSearch.in_place`) answers every question
about names as reading every file's identifiers does, however the name is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from atompin.analysis import name_sites
from atompin.analysis.cache import AnalysisCache
from atompin.analysis.name_sites import NameSearch
from atompin.sources import tree as tree_module
from atompin.sources.tree import FolderTree, MemoryTree, SourceTree
from atompin.testing import write_files

# Each file writes `name` (or `t`) one way; the identifiers read every one of them the same way in
# both searches, including the ways a line-by-line search must not miss.
EDGES = {
    "pv/__init__.py": "",
    "pv/attr_after_break.py": "x = (obj.\n    name)\n",
    "pv/attr_tab.py": "y = obj.\tname\n",
    "pv/attr_in_comment.py": "# see obj.name for more\n",
    "pv/attr_longer.py": "z = obj.names + obj._name + obj.name2\n",
    "pv/sentence.py": '"""Ends here.\n    name is the next word."""\n',
    "pv/def_continued.py": '"""A def\n    name, in words."""\n',  # the identifiers read text, not code
    "pv/def_twice.py": "# def def name\n",
    "pv/def_plain.py": "class A:\n    def name(self, x):\n        return x\n",
    "pv/def_other.py": "def named(self):\n    pass\n\ndef rename(self):\n    pass\n",
    "pv/call_next_line.py": "v = (run.name\n    (1))\n",
    "pv/call_vtab.py": "w = name\x0b(2)\n",
    "pv/call_cr.py": "w = name\r(2)\n",
    "pv/call_digit.py": "w = 2name(3) + _name(4) + namex(5)\n",
    "pv/call_accent.py": "w = ét(1)\n",  # the identifiers read ASCII words: a call of `t`
    "pv/call_t.py": "w = t (1)\n",
    "pv/string.py": "s = 'name(' + \".name\"\n",
    "pv/nothing.py": "x = 1\n",
    **{f"pv/filler_{i:02}.py": f"X{i} = {i}\n" for i in range(64)},  # enough files for git to search
}

NAMES = ["name", "t", "named", "nowhere"]

# Git with Perl's regular expressions searches the folders here (else the tests that need it are
# skipped: atompin then reads every file's identifiers, as the other tests check).
needs_git_grep = pytest.mark.skipif(not tree_module.FolderTree(".").searches_in_place, reason="git grep -P")


def _answers(search: NameSearch) -> dict[str, object]:
    every = search.tree.python_files("pv")
    return {
        "defining": search.files_defining([({"name"}, 1), ({"name", "named", "rename"}, 2), ({"nowhere"}, 1)]),
        "calling": {name: search.files_calling([name], every) for name in NAMES},
        "calling some": search.files_calling(["name", "t"], every[::3]),
        "unread": sorted(search.unread(NAMES)),
        "text": {name: [(s.path, s.line) for s in sites] for name, sites in search.find_text(NAMES).items()},
        "uses": {name: [(s.path, s.line, s.kind) for s in sites] for name, sites in search.find(NAMES).items()},
    }


@pytest.mark.parametrize("with_git", [pytest.param(True, marks=needs_git_grep), False])
def test_a_folder_searched_in_place_answers_as_every_file_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_git: bool
) -> None:
    root = write_files(tmp_path / "p", EDGES)
    if not with_git:  # git without Perl's expressions, or none: the files are searched here, for the names
        monkeypatch.setattr(tree_module, "_git_grep_perl", lambda: None)
    searched_here: list[str] = []
    for method in ("files_matching", "files_containing"):
        real = getattr(SourceTree, method)
        spy = lambda self, p, w, real=real: searched_here.extend(p) or real(self, p, w)  # noqa: E731
        monkeypatch.setattr(SourceTree, method, spy)
    every_file = _answers(NameSearch(FolderTree(root), "pv", AnalysisCache(), in_place=False))
    name_sites._LAST_LOADED.clear()  # as a new process: nothing at hand
    in_place = NameSearch(FolderTree(root), "pv", AnalysisCache())
    in_place.search_in_place_unless_read()
    assert in_place.in_place is with_git
    in_place.in_place = True
    assert _answers(in_place) == every_file
    assert bool(searched_here) is not with_git
    # The answers are not empty: each way of writing a name is read as one.
    assert every_file["defining"] == [["pv/def_continued.py", "pv/def_plain.py"], ["pv/def_other.py"], []]
    calling = every_file["calling"]
    assert isinstance(calling, dict)
    assert calling["name"] == [
        "pv/call_cr.py",
        "pv/call_next_line.py",
        "pv/call_vtab.py",
        "pv/def_plain.py",
        "pv/string.py",
    ]
    assert calling["t"] == ["pv/call_accent.py", "pv/call_t.py"]
    assert every_file["unread"] == ["named", "nowhere", "t"]


@needs_git_grep
def test_searching_in_place_reads_only_the_files_with_a_line_that_can_write_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is read ahead, and a question reads the identifiers of only the files git finds."""
    root = write_files(tmp_path / "p", EDGES)
    read: list[str] = []
    real = SourceTree.read_many
    monkeypatch.setattr(SourceTree, "read_many", lambda self, paths: read.extend(paths) or real(self, paths))
    search = NameSearch(FolderTree(root), "pv", AnalysisCache())
    search.search_in_place_unless_read()
    assert search.in_place
    search.load()
    assert search.reading_task() is None and read == []
    assert search.files_defining([({"name"}, 1)]) == [["pv/def_continued.py", "pv/def_plain.py"]]
    # the definitions (and `def def name`, which the identifiers read as a definition of `def`), and
    # a file with a line ending in `def` (the name may be on the next one)
    assert sorted(read) == ["pv/def_continued.py", "pv/def_plain.py", "pv/def_twice.py"]


@needs_git_grep
@pytest.mark.parametrize("read_first", [False, True])
def test_a_folder_is_searched_in_place_unless_every_file_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_first: bool
) -> None:
    """The identifiers of every file, read by a second process while the consumer was scanned,
    are used; when the scan ends first, the shares no process has taken are left unread, and the
    folder is searched in place."""
    from atompin.analysis.prefetch import store

    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)
    name_sites._LAST_LOADED.clear()  # as a new process: nothing at hand
    root = write_files(tmp_path / "p", EDGES)
    cache = AnalysisCache()
    search = NameSearch(FolderTree(root), "pv", cache)
    task = search.reading_task()
    assert task is not None
    if read_first:
        store(task(), cache)
    search.stop_reading()
    assert task() == []  # nothing is left to read
    search.search_in_place_unless_read()
    assert search.in_place is not read_first
    assert search.files_defining([({"name"}, 1)]) == [["pv/def_continued.py", "pv/def_plain.py"]]


@needs_git_grep
def test_git_searches_a_folder_whatever_the_environment_says_of_pathspecs_and_however_many_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git --literal-pathspecs` (as some editors run git) sets GIT_LITERAL_PATHSPECS for the hooks
    it runs: the folder's files are still searched. Thousands of names are searched a few hundred
    at a time (git's Perl expressions take patterns of some 30 kB at most); an argument git cannot
    take (a NUL) is searched here."""
    root = write_files(tmp_path / "p", EDGES)
    searched_here: list[str] = []
    real = SourceTree.files_matching
    monkeypatch.setattr(SourceTree, "files_matching", lambda self, p, w: searched_here.extend(p) or real(self, p, w))
    many = {f"generated_name_{i:05}" for i in range(5000)}
    every_file = NameSearch(FolderTree(root), "pv", AnalysisCache(), in_place=False)
    answer = every_file.files_defining([({"name"} | many, 1), (many, 1)])
    name_sites._LAST_LOADED.clear()  # as a new process: nothing at hand
    in_place = NameSearch(FolderTree(root), "pv", AnalysisCache(), in_place=True)
    assert answer == [["pv/def_continued.py", "pv/def_plain.py"], []]
    assert in_place.files_defining([({"name"} | many, 1), (many, 1)]) == answer
    assert searched_here == []  # git answered every search
    monkeypatch.setenv("GIT_LITERAL_PATHSPECS", "1")
    monkeypatch.setenv("GIT_NOGLOB_PATHSPECS", "1")
    assert in_place.files_calling(["t"], FolderTree(root).python_files("pv")) == ["pv/call_accent.py", "pv/call_t.py"]
    assert searched_here == []
    folder = FolderTree(root)
    paths = folder.python_files("pv")
    assert folder.files_matching(paths, ["a\0b", "name"]) == real(folder, paths, ["a\0b", "name"])
    assert searched_here == paths


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_text_sites_are_on_their_lines_however_many_a_file_holds(end: str):
    # Counted on from one site to the next: a file of many sites is read once, not once a site;
    # lines end where the parser ends them.
    lines = ["import pv", *(f"x{i}.hook()" if i % 3 else f"# x{i}.hook()" for i in range(1, 3001))]
    tree = MemoryTree({"pv/__init__.py": "", "pv/many.py": end.join(lines) + end}, "provider")
    sites = NameSearch(tree, "pv", AnalysisCache()).find_text(["hook"])["hook"]
    assert [site.line for site in sites] == [i + 1 for i in range(1, 3001) if i % 3]  # comments left out


def test_a_module_path_in_an_import_is_no_attribute_read():
    # vLLM 0.33's `vllm/engine/protocol.py:23`, `from vllm.v1.engine.input_processor import
    # InputProcessor`, was cited as a read of `.input_processor`.
    source = (
        "from pv.engine.hook import Hook\n"
        "import pv.engine.hook as h, pv.hook\n"
        "    from pv.hook import x\n"
        "def f(e):\n"
        "    return e.hook, Hook\n"
        "import pv; e = None; e.hook\n"
    )
    tree = MemoryTree({"pv/__init__.py": "", "pv/engine/__init__.py": "", "pv/user.py": source}, "provider")
    sites = NameSearch(tree, "pv", AnalysisCache()).find_text(["hook"])["hook"]
    assert [site.line for site in sites] == [5, 6]


def test_a_baseline_takes_cached_identifiers_rather_than_search_and_keeps_the_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bump's baseline is the pin the last lock read: every file's identifiers are cached, and
    taking them beats searching in place and reading a third of vLLM's files again (0.6 s against
    0.2 s at vLLM 0.32). The answers are the same; and the identifiers the pin's search holds for
    a bisect's next step (`_LAST_LOADED`) stay the pin's."""
    from atompin.analysis.baseline import Baseline
    from atompin.analysis.provider import ProviderIndex

    root = write_files(tmp_path / "p", EDGES)
    cache = AnalysisCache()
    tree = FolderTree(root)

    def baseline() -> Baseline:
        return Baseline(ProviderIndex(tree, "pv", cache), "1.0")

    searched = baseline()
    assert searched._search.in_place  # nothing cached: searched in place
    expected = searched.find_text(NAMES)
    NameSearch(tree, "pv", cache).load()  # a lock at this pin reads (and caches) every file's
    pins = {"identifiers:pin": object()}
    name_sites._LAST_LOADED.clear()
    name_sites._LAST_LOADED.update(pins)  # type: ignore[arg-type]
    read: list[str] = []
    real = SourceTree.read_many
    monkeypatch.setattr(SourceTree, "read_many", lambda self, paths: read.extend(paths) or real(self, paths))
    cached = baseline()
    assert not cached._search.in_place
    assert cached.find_text(NAMES) == expected
    assert not [path for path in read if path not in {s.path for sites in expected.values() for s in sites}]
    assert name_sites._LAST_LOADED == pins
