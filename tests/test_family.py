"""A class's family read from the provider's text (`ClassGraph`), and the caller search of a
special method (`__init__`) that parses only the family's files, finding what a search of
every file finds."""

from __future__ import annotations

from conftest import dedent_files

from atompin.analysis import callsites
from atompin.analysis.cache import AnalysisCache
from atompin.analysis.callsites import CallerSearch, of_class, searched_as
from atompin.analysis.family import ClassGraph
from atompin.analysis.provider import ClassRef, ProviderIndex
from atompin.sources.tree import MemoryTree

PROVIDER = {
    "pv/__init__.py": "",
    "pv/base.py": """
        class Root:
            def __init__(self, a):
                self.a = a

        class Handler(Root):
            def __init__(self, a, b):
                super().__init__(a)

            def rebuild(self):
                self.__init__(1, 2)
    """,
    "pv/sub.py": """
        from pv.base import Handler as _Base

        class Fast(
            _Base,
            metaclass=type,
        ):
            def __init__(self, a, b):
                super().__init__(a, b)
    """,
    "pv/deeper.py": """
        from typing import Generic, TypeVar

        from pv import sub

        T = TypeVar("T")

        class Fastest(sub.Fast, Generic[T]):
            def __init__(self):
                super().__init__(1, b=2)
    """,
    "pv/instances.py": """
        from pv.base import Handler

        DEFAULT = Handler(1, 2)
        Alias = Handler

        class FromAlias(Alias):
            def __init__(self):
                super().__init__(3, 4)
    """,
    "pv/other.py": """
        class Unrelated:
            def __init__(self, x):
                super().__init__()

        class Child(Unrelated):
            def __init__(self):
                super().__init__(5)
    """,
}


def tree() -> MemoryTree:
    return MemoryTree(dedent_files(PROVIDER), "provider")


def test_the_family_holds_subclasses_to_a_fixpoint_instances_aliases_and_the_bases_files():
    graph = ClassGraph.read(tree(), tree().python_files("pv"))
    family = graph.family(frozenset({"Handler"}))
    # `_Base` is an import alias: Fast names Handler's alias, whose last name is read.
    assert family.names == {"Handler", "DEFAULT", "Alias", "FromAlias"}
    assert family.files == {"pv/base.py"}  # Handler's own file and Root's
    fast = graph.family(frozenset({"Fast"}))
    assert fast.names == {"Fast", "Fastest"}  # through `sub.Fast`, past `Generic[T]`
    assert fast.files == {"pv/sub.py"}  # its base `_Base` is no class statement's name


def test_a_file_is_of_the_family_when_it_writes_a_name_of_it_or_defines_a_base():
    family = ClassGraph.read(tree(), tree().python_files("pv")).family(frozenset({"Handler"}))
    text = dict(tree().read_many(tree().python_files("pv")))
    holding = {path for path, data in text.items() if family.holds(path, data)}
    assert holding == {"pv/base.py", "pv/sub.py", "pv/instances.py"}
    assert not family.holds("pv/x.py", b"HandlerX = MyHandler()  # not the name itself\n")


def test_a_special_methods_calls_through_a_class_are_searched_in_its_family_only(monkeypatch):
    handler = ClassRef("pv.base", "Handler")
    wanted = searched_as("__init__", handler)
    assert wanted == of_class("__init__", frozenset({"Handler"}))
    assert searched_as("rebuild", handler) == "rebuild"  # a plain method: every call of the name
    assert searched_as("__init__", None) == "__init__"
    index = ProviderIndex(tree(), "pv")
    target = index.resolve("pv.base", ("Handler", "__init__")).target
    assert target is not None
    scoped = CallerSearch(index)
    found = [str(call.site) for call in scoped.calls(target, "__init__", handler)]
    assert found == ["pv/base.py:10", "pv/instances.py:8", "pv/sub.py:8"]
    # pv/other.py and pv/deeper.py call `__init__` too, but are no files of Handler's family.
    assert set(scoped._raw[wanted]) == {"pv/base.py", "pv/instances.py", "pv/sub.py"}
    # Searching every file that calls the name finds the same calls.
    monkeypatch.setattr(callsites, "searched_as", lambda name, owner: name)
    everything = CallerSearch(ProviderIndex(tree(), "pv"))
    assert [str(call.site) for call in everything.calls(target, "__init__", handler)] == found
    assert {"pv/other.py", "pv/deeper.py"} <= set(everything._raw["__init__"])


def test_a_family_search_at_another_commit_reads_unchanged_files_that_joined_the_family():
    # x.py does not change, but at the second commit its base derives from the patched class:
    # an earlier search that skipped it (not of the family then) must not be trusted for it.
    first = {
        "pv/__init__.py": "",
        "pv/base.py": "class Handler:\n    def __init__(self, a, b):\n        pass\n",
        "pv/mid.py": "class Mid:\n    def __init__(self, a, b):\n        pass\n",
        "pv/x.py": "from pv.mid import Mid\n\nclass Z(Mid):\n    def __init__(self):\n        super().__init__(1, 2)\n",
    }
    second = {**first, "pv/mid.py": "from pv.base import Handler\n\nclass Mid(Handler):\n    pass\n"}
    cache = AnalysisCache()
    handler = ClassRef("pv.base", "Handler")
    for files, expected in ((first, []), (second, ["pv/x.py:5"])):
        index = ProviderIndex(MemoryTree(files, "provider"), "pv", cache)
        target = index.resolve("pv.base", ("Handler", "__init__")).target
        assert target is not None
        search = CallerSearch(index)
        assert [str(call.site) for call in search.calls(target, "__init__", handler)] == expected
