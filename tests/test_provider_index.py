"""The provider index and resolver: re-exports, __all__, star imports, lazy exports,
inheritance, namespace packages, unknown-never-missing, laziness and the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache
from atompin.analysis.callsites import CallerSearch
from atompin.analysis.indexer import index_module
from atompin.analysis.mro import c3_linearize
from atompin.analysis.provider import ProviderIndex, TargetKind
from atompin.analysis.signature import ParamKind
from atompin.model import Rule, Status
from atompin.sources.tree import FolderTree, ModuleKind
from atompin.testing import write_files

FILES = {
    "pv/__init__.py": """
        from .api import *
        from .engine.llm import LLM as LLMAlias
        from pv.engine import llm
        import pv.engine.llm as llm_mod
        __all__ = ["LLMAlias"]
        __all__ += ["helper"]
    """,
    "pv/lazy/__init__.py": """
        MODULE_ATTRS = {"Lazy": "..engine.llm:LLM", "lazy_mod": "pv.engine.llm"}
        def __getattr__(name):
            if name in MODULE_ATTRS:
                return MODULE_ATTRS[name]
            raise AttributeError(name)
    """,
    "pv/api.py": """
        __all__ = ["helper", "Exported"]
        def helper(a, /, b, *args, c=1, **kw):
            return a
        def _private():
            pass
        def not_exported():
            pass
        Exported = helper
    """,
    "pv/engine/__init__.py": "",
    "pv/engine/llm.py": """
        from abc import ABC
        from typing import TYPE_CHECKING, Generic, TypeVar
        import torch
        if TYPE_CHECKING:
            from pv.engine.types import OnlyTyping
        T = TypeVar("T")
        class Base(ABC, Generic[T]):
            flag: bool = False
            def generate(self, prompts):
                self.counter = 0
            @classmethod
            def from_config(cls, config):
                return cls()
            @staticmethod
            def util(x):
                return x
            @property
            def name(self):
                return "base"
        class LLM(Base[int]):
            class Inner:
                deep = 1
        class Module(torch.nn.Module):
            def forward(self, x):
                return x
        a, (b, c) = 1, (2, 3)
        REGISTRY = LLM()
        Alias = LLM
        try:
            from pv._C import fast_op
        except ImportError:
            fast_op = None
    """,
    "pv/_C.cpython-312-x86_64-linux-gnu.so": "",
    "pv/nspkg/leaf.py": "VALUE = 1\n",
    "pv/broken.py": "def broken(:\n",
    "pv/dyn.py": "def __getattr__(name):\n    return name\n",
}


@pytest.fixture
def index(tmp_path: Path) -> ProviderIndex:
    return ProviderIndex(FolderTree(write_files(tmp_path / "p", FILES)), "pv")


@pytest.mark.parametrize(
    "symbol",
    [
        "pv:helper",  # star import, listed in the star module's __all__
        "pv:Exported",
        "pv:LLMAlias",  # re-export with an alias
        "pv:llm",  # `from pv.engine import llm`: a submodule
        "pv:llm_mod.LLM",
        "pv.lazy:Lazy",  # literal lazy-export table used by __getattr__ ("module:attr")
        "pv.lazy:lazy_mod",  # ... and a module entry
        "pv.engine.llm:LLM.generate",  # inherited
        "pv.engine.llm:LLM.counter",  # instance attribute assigned in an inherited method
        "pv.engine.llm:LLM.flag",  # annotated class attribute
        "pv.engine.llm:LLM.Inner.deep",  # nested class
        "pv.engine.llm:LLM.register",  # ABCMeta provides it
        "pv.engine.llm:REGISTRY.from_config",  # instance: members of its class
        "pv.engine.llm:Alias.util",  # alias of a class
        "pv.engine.llm:a",
        "pv.engine.llm:c",  # tuple targets
        "pv.engine.llm:fast_op",  # bound in a try even though its source is compiled
        "pv.nspkg.leaf:VALUE",  # namespace package
        "pv.engine:llm",
    ],
)
def test_found(index: ProviderIndex, symbol: str):
    assert index.resolve_symbol(symbol).status is Status.FOUND, index.resolve_symbol(symbol).reason


@pytest.mark.parametrize(
    "symbol",
    [
        "pv:not_exported",  # star import honours __all__
        "pv:_private",
        "pv.engine.llm:OnlyTyping",  # TYPE_CHECKING only
        "pv.engine.llm:LLM.missing",
        "pv.engine.llm:Base.Inner",
        "pv.engine.gone",
        "pv.nspkg.leaf:OTHER",
    ],
)
def test_missing(index: ProviderIndex, symbol: str):
    assert index.resolve_symbol(symbol).status is Status.MISSING


@pytest.mark.parametrize(
    ("symbol", "rule"),
    [
        ("pv.broken:anything", Rule.UNPARSEABLE),
        ("pv.dyn:whatever", Rule.DYNAMIC_TARGET),
        ("pv._C:fast_op", Rule.DYNAMIC_TARGET),
        ("pv.engine.llm:Module.not_in_provider", Rule.DYNAMIC_TARGET),  # may come from torch
        ("pv.lazy:NotInTable", Rule.DYNAMIC_TARGET),  # __getattr__ serves the rest
    ],
)
def test_unknown_never_missing(index: ProviderIndex, symbol: str, rule: Rule):
    res = index.resolve_symbol(symbol)
    assert (res.status, res.rule) == (Status.UNKNOWN, rule)


def test_signatures_and_kinds(index: ProviderIndex):
    helper = index.resolve_symbol("pv:helper").target
    assert helper is not None and helper.kind is TargetKind.FUNCTION
    assert helper.signature is not None
    assert [(p.name, p.kind, p.has_default) for p in helper.signature.params] == [
        ("a", ParamKind.POSITIONAL_ONLY, False),
        ("b", ParamKind.POSITIONAL_OR_KEYWORD, False),
        ("args", ParamKind.VAR_POSITIONAL, False),
        ("c", ParamKind.KEYWORD_ONLY, True),
        ("kw", ParamKind.VAR_KEYWORD, False),
    ]
    assert helper.signature.render() == "(a, /, b, *args, c=…, **kw)"
    method = index.resolve_symbol("pv.engine.llm:LLM.from_config").target
    assert method is not None and method.signature is not None and method.signature.is_classmethod
    assert str(method.owner) == "pv.engine.llm:Base"
    assert index.resolve_symbol("pv.engine.llm:LLM.util").target.signature.is_staticmethod  # type: ignore[union-attr]
    assert index.resolve_symbol("pv.engine.llm:LLM.name").target.signature.is_property  # type: ignore[union-attr]


def test_lazy_only_reached_modules_are_parsed(index: ProviderIndex):
    index.resolve_symbol("pv.nspkg.leaf:VALUE")
    assert index.parsed == 1
    index.resolve_symbol("pv.engine.llm:LLM.generate")
    assert index.parsed == 2  # pv/engine/__init__.py has no content to parse? it does: it is a file
    assert "pv.broken" not in index._modules and "pv.api" not in index._modules


def test_an_index_that_may_not_parse_reads_only_what_the_cache_holds(tmp_path: Path):
    """A guess made while another process indexes: a module no cache holds is unknown (never
    missing), nothing is parsed or written; what the cache holds resolves as it would anyway."""
    tree = FolderTree(write_files(tmp_path / "p", FILES))
    cache = AnalysisCache()
    guess = ProviderIndex(tree, "pv", cache, parses=False)
    res = guess.resolve_symbol("pv.engine.llm:LLM.generate")
    assert res.status is Status.UNKNOWN and "not indexed yet" in res.reason
    assert guess.parsed == 0 and cache._entries == {}
    ProviderIndex(tree, "pv", cache).warm(["pv.engine.llm:LLM"])  # indexed, as a second process would
    res = ProviderIndex(tree, "pv", cache, parses=False).resolve_symbol("pv.engine.llm:LLM.generate")
    assert res.status is Status.FOUND and res.target is not None and res.target.signature is not None


def test_warming_indexes_classes_down_their_bases_and_the_modules_named(index: ProviderIndex):
    # `from pv.engine import llm` names a module: what is read next is in it, so it is indexed ahead;
    # naming a package indexes its __init__ only.
    index.warm(["pv.engine:llm"])
    assert "pv.engine.llm" in index._modules and "pv.api" not in index._modules
    index.warm(["pv.engine.llm:LLM"])
    assert index.parsed == 2  # pv/engine/__init__.py, then pv/engine/llm.py (whose bases were looked up)


def test_module_kinds(tmp_path: Path):
    tree = FolderTree(write_files(tmp_path / "p", FILES))
    assert tree.find_module("pv").kind is ModuleKind.PACKAGE  # type: ignore[union-attr]
    assert tree.find_module("pv.api").kind is ModuleKind.MODULE  # type: ignore[union-attr]
    assert tree.find_module("pv.nspkg").kind is ModuleKind.NAMESPACE  # type: ignore[union-attr]
    assert tree.find_module("pv._C").kind is ModuleKind.COMPILED  # type: ignore[union-attr]
    assert tree.find_module("pv.none") is None
    assert tree.top_level_packages() == ["pv"]


def test_cache_makes_a_second_run_parse_nothing(tmp_path: Path):
    tree = FolderTree(write_files(tmp_path / "p", FILES))
    cache = SqliteAnalysisCache(tmp_path / "cache")
    cold = ProviderIndex(tree, "pv", cache)
    assert cold.resolve_symbol("pv.engine.llm:LLM.generate").found
    assert cold.parsed > 0
    cache.flush()
    warm = ProviderIndex(tree, "pv", SqliteAnalysisCache(tmp_path / "cache"))
    assert warm.resolve_symbol("pv.engine.llm:LLM.generate").found
    assert warm.parsed == 0
    assert warm.resolve_symbol("pv.engine.llm:LLM.from_config").target.signature.is_classmethod  # type: ignore[union-attr]


def test_changed_file_is_parsed_again(tmp_path: Path):
    root = write_files(tmp_path / "p", FILES)
    cache = SqliteAnalysisCache(tmp_path / "cache")
    ProviderIndex(FolderTree(root), "pv", cache).resolve_symbol("pv.api:helper")
    cache.flush()
    (root / "pv/api.py").write_text("def other():\n    pass\n")
    warm = ProviderIndex(FolderTree(root), "pv", SqliteAnalysisCache(tmp_path / "cache"))
    assert warm.resolve_symbol("pv.api:helper").status is Status.MISSING
    assert warm.parsed == 1


def test_corrupt_cache_is_rebuilt(tmp_path: Path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache/index.sqlite").write_bytes(b"this is not a database" * 100)
    tree = FolderTree(write_files(tmp_path / "p", FILES))
    index = ProviderIndex(tree, "pv", SqliteAnalysisCache(tmp_path / "cache"))
    assert index.resolve_symbol("pv.api:helper").found


def test_unparseable_module_indexes_with_error():
    info = index_module(b"def broken(:\n", "pv.broken", False)
    assert info.error.startswith("line 1")


def test_all_dynamic_falls_back_to_public_names(tmp_path: Path):
    files = {
        "pv/__init__.py": "from .a import *\n",
        "pv/a.py": "import os\n__all__ = os.listdir('.')\ndef public():\n    pass\n",
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path / "p", files)), "pv")
    assert index.resolve_symbol("pv:public").found


def test_c3_linearization_diamond():
    bases = {"D": ["B", "C"], "B": ["A"], "C": ["A"], "A": []}
    assert c3_linearize("D", lambda n: bases[n]) == ["D", "B", "C", "A"]


def test_c3_inconsistent_hierarchy_falls_back():
    bases = {"X": ["A", "B"], "Y": ["B", "A"], "Z": ["X", "Y"], "A": [], "B": []}
    order = c3_linearize("Z", lambda n: bases[n])
    assert order[0] == "Z" and set(order) == {"X", "Y", "Z", "A", "B"}


def test_c3_cycle_does_not_hang():
    bases = {"A": ["B"], "B": ["A"]}
    assert c3_linearize("A", lambda n: bases[n]) == ["A", "B"]


def test_normalize_moves_modules_left_of_the_colon(index: ProviderIndex):
    assert index.normalize("pv", ["engine", "llm", "LLM", "generate"]) == "pv.engine.llm:LLM.generate"


def test_class_getattr_serves_instances_not_the_class(tmp_path: Path):
    files = {
        "pv/__init__.py": "",
        "pv/m.py": "class Platform:\n    def __getattr__(self, key):\n        return None\nplatform = Platform()\n",
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path / "p", files)), "pv")
    assert index.resolve_symbol("pv.m:Platform.marker").status is Status.MISSING
    res = index.resolve_symbol("pv.m:platform.anything")
    assert (res.status, res.rule) == (Status.UNKNOWN, Rule.DYNAMIC_TARGET)


def test_a_definition_at_module_level_rebinds_an_imported_name(tmp_path: Path):
    """`from m import A` then `class A(A):` at module level: the name is the new class (it runs
    last). A definition in a branch is an alternative: the first one stays (a ladder)."""
    write_files(
        tmp_path,
        {
            "pv/__init__.py": "",
            "pv/base.py": "class Layer:\n    def __init__(self, config):\n        pass\n",
            "pv/eagle.py": """
                from pv.base import Layer

                class Layer(Layer):
                    def __init__(self, config, layer_idx=0):
                        super().__init__(config)
            """,
            "pv/ladder.py": """
                try:
                    from pv.base import Layer
                except ImportError:
                    class Layer:
                        pass
            """,
        },
    )
    index = ProviderIndex(FolderTree(tmp_path), "pv")
    eagle = index.resolve_symbol("pv.eagle:Layer").target
    assert eagle is not None and eagle.symbol == "pv.eagle:Layer" and eagle.kind is TargetKind.CLASS
    init = index.resolve_symbol("pv.eagle:Layer.__init__").target
    assert init is not None and [p.name for p in init.signature.params] == ["self", "config", "layer_idx"]
    ladder = index.resolve_symbol("pv.ladder:Layer").target
    assert ladder is not None and ladder.symbol == "pv.base:Layer"


def test_a_calling_module_the_caller_search_parsed_is_not_parsed_again(tmp_path: Path):
    files = {
        "pv/__init__.py": "",
        "pv/base.py": "class Base:\n    def step(self, x):\n        return x\n",
        "pv/mixer.py": "from pv.base import Base\n\n\nclass Mixer(Base):\n    def run(self):\n        return self.step(1)\n",
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path / "p", files)), "pv", AnalysisCache())
    target = index.resolve_symbol("pv.base:Base.step").target
    assert target is not None
    parsed = index.parsed
    calls = CallerSearch(index).calls(target, "step")
    assert [(c.site.path, c.function) for c in calls] == [("pv/mixer.py", "pv.mixer:Mixer.run")]
    # `self.step` is resolved in pv.mixer, indexed from the tree the search parsed: not parsed again
    assert index.parsed == parsed
    mixer = index.module("pv.mixer")
    assert mixer is not None and set(mixer.bindings) == {"Base", "Mixer"}


@pytest.mark.parametrize(
    ("getattr_source", "status"),
    [
        # How `__getattr__` makes a module name of a table entry decides where the entry points.
        ('importlib.import_module(f"{__name__}.{_MOVED[name]}")', Status.FOUND),
        ('importlib.import_module("pv.moved." + _MOVED[name])', Status.FOUND),
        ('importlib.import_module(f"pv.moved.{_MOVED.get(name)}")', Status.FOUND),
        # Entries read two ways, or with text after them: nothing is assumed of them (unknown, never missing).
        ('importlib.import_module(f"{_MOVED[name]}_impl")', Status.UNKNOWN),
        (
            'importlib.import_module(_MOVED[name]) or importlib.import_module(f"pv.moved.{_MOVED[name]}")',
            Status.UNKNOWN,
        ),
        ('importlib.import_module(f"{PREFIX}.{_MOVED[name]}")', Status.UNKNOWN),
    ],
)
def test_lazy_table_entries_under_a_written_prefix(tmp_path: Path, getattr_source: str, status: Status):
    files = {
        "pv/__init__.py": "",
        "pv/moved/__init__.py": f"""
            import importlib
            PREFIX = "pv.moved"
            _MOVED = {{"old": "new.place"}}
            def __getattr__(name):
                if name in _MOVED:
                    return {getattr_source}
                raise AttributeError(name)
        """,
        "pv/moved/new/__init__.py": "",
        "pv/moved/new/place.py": "def f():\n    pass\n",
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path, files)), "pv")
    res = index.resolve_symbol("pv.moved:old.f")
    assert res.status is status, res.reason


def test_a_star_import_copies_what_a_module_binds_not_what_its_getattr_serves(tmp_path: Path):
    # aiter's `from .ops.quant import *` comes before the modules defining most of `aiter.*`;
    # quant's `__getattr__` serves two names of its own, and a star import never asks it.
    files = {
        "pv/__init__.py": "from .quant import *\nfrom .gemm_op import *\nfrom .listed import *\n",
        "pv/quant.py": "def quant(x):\n    pass\ndef __getattr__(name):\n    raise AttributeError(name)\n",
        "pv/gemm_op.py": "def gemm(a, b):\n    pass\n",
        # With `__all__` naming it, a star import does get the name through `__getattr__`.
        "pv/listed.py": '__all__ = ["served"]\ndef __getattr__(name):\n    return name\n',
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path, files)), "pv")
    gemm = index.resolve_symbol("pv:gemm")
    assert gemm.status is Status.FOUND and gemm.target is not None and gemm.target.symbol == "pv.gemm_op:gemm"
    assert index.resolve_symbol("pv:quant").status is Status.FOUND
    served = index.resolve_symbol("pv:served")
    assert (served.status, served.rule) == (Status.UNKNOWN, Rule.DYNAMIC_TARGET)
    assert index.resolve_symbol("pv:nowhere").status is Status.MISSING
    # Asked of the module itself, `__getattr__` may serve anything.
    assert index.resolve_symbol("pv.quant:gemm").status is Status.UNKNOWN


def test_a_lazy_table_of_submodules_serves_the_attribute_of_the_asked_name(tmp_path: Path):
    # aiter's mega_moe package and vLLM's transformers_utils.configs: the table maps a name to the
    # module defining it, and `__getattr__` returns `getattr(that module, name)`.
    files = {
        "pv/__init__.py": "",
        "pv/lazy2/__init__.py": """
            import importlib
            _LAZY = {"Thing": "impl", "Gone": "impl"}
            __all__ = list(_LAZY)
            def __getattr__(name):
                sub = _LAZY.get(name)
                if sub is None:
                    raise AttributeError(name)
                return getattr(importlib.import_module(f"{__name__}.{sub}"), name)
        """,
        "pv/lazy2/impl.py": "class Thing:\n    def run(self, x):\n        pass\n",
    }
    index = ProviderIndex(FolderTree(write_files(tmp_path, files)), "pv")
    thing = index.resolve_symbol("pv.lazy2:Thing.run")
    assert thing.status is Status.FOUND and thing.target is not None
    assert thing.target.symbol == "pv.lazy2.impl:Thing.run"
    gone = index.resolve_symbol("pv.lazy2:Gone")
    assert gone.status is Status.MISSING and "points at pv.lazy2.impl:Gone" in gone.reason


def _paths_given(monkeypatch: pytest.MonkeyPatch, owner: type, method: str, position: int) -> list[str]:
    """The paths every later call of `owner.method` is given (its argument at `position`), in order."""
    given: list[str] = []
    real = getattr(owner, method)

    def spy(self: object, *args: object) -> object:
        given.extend(args[position])  # type: ignore[call-overload]
        return real(self, *args)

    monkeypatch.setattr(owner, method, spy)
    return given


def _searched_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files `CallerSearch` searches from now on (looks for calls in, by their identifiers)."""
    from atompin.analysis.name_sites import NameSearch

    return _paths_given(monkeypatch, NameSearch, "files_calling", 1)


def _grepped_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose text is searched from now on (`SourceTree.files_containing`)."""
    from atompin.sources.tree import SourceTree

    return _paths_given(monkeypatch, SourceTree, "files_containing", 0)


_STEP_FILES = {
    "pv/__init__.py": "",
    "pv/base.py": "class Base:\n    def step(self, x):\n        return x\n",
    "pv/mixer.py": "from pv.base import Base\n\n\nclass Mixer(Base):\n    def run(self):\n        return self.step(1)\n",
    "pv/other.py": "X = 1\n",
    "pv/quiet.py": "Y = 2\n",
}


def _step_calls(root: Path, cache: AnalysisCache) -> list[tuple[str, int, str]]:
    index = ProviderIndex(FolderTree(root), "pv", cache)
    target = index.resolve_symbol("pv.base:Base.step").target
    assert target is not None
    return [(c.site.path, c.site.line, c.function) for c in CallerSearch(index).calls(target, "step")]


def test_a_search_at_another_commit_searches_only_the_files_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calls of a name found at one commit are kept with each file's stamp: at the next one
    (a bump, a bisect step), only the files changed since are searched, and a file that made a
    call and did not change is read again (not searched); the calls found are a cold search's."""
    old = write_files(tmp_path / "old", _STEP_FILES)
    changed = {
        **_STEP_FILES,
        "pv/other.py": "from pv.mixer import Mixer\n\n\ndef go(mixer: Mixer):\n    mixer.step(2)\n",
    }
    new = write_files(tmp_path / "new", changed)
    for path in _STEP_FILES:  # the same stamps where the content did not change (a git tree: the same blob)
        os.utime(new / path, ns=(os.stat(old / path).st_mtime_ns,) * 2)
    cache = AnalysisCache()
    assert _step_calls(old, cache) == [("pv/mixer.py", 6, "pv.mixer:Mixer.run")]
    searched = _searched_paths(monkeypatch)
    warm = _step_calls(new, cache)
    assert searched == ["pv/other.py"]
    assert (
        warm
        == _step_calls(new, AnalysisCache())
        == [
            ("pv/mixer.py", 6, "pv.mixer:Mixer.run"),
            ("pv/other.py", 5, "pv.other:go"),
        ]
    )


def test_a_file_moved_unchanged_is_read_by_its_new_path(tmp_path: Path) -> None:
    """The calls a file makes are kept by its path and content: a file moved unchanged reads its
    relative imports from its new package."""
    files = {
        "pv/__init__.py": "",
        "pv/a/__init__.py": "",
        "pv/a/ops.py": "def conv(x):\n    return x\n",
        "pv/a/use.py": "from .ops import conv\n\n\ndef go():\n    return conv(1)\n",
        "pv/b/__init__.py": "",
        "pv/b/ops.py": "def conv(x, y):\n    return x\n",
    }
    moved = {**files, "pv/b/use.py": files["pv/a/use.py"]}
    del moved["pv/a/use.py"]
    cache = AnalysisCache()
    for tree_files, expected in ((files, "pv.a.ops:conv"), (moved, "pv.b.ops:conv")):
        index = ProviderIndex(FolderTree(write_files(tmp_path / expected, tree_files)), "pv", cache)
        target = index.resolve_symbol(expected).target
        assert target is not None
        calls = CallerSearch(index).calls(target, "conv")
        assert [c.function for c in calls] == [expected.replace("ops:conv", "use:go")]


def test_with_the_name_search_the_caller_search_reads_only_files_that_write_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The identifiers say which files write `step(`: no file's text is searched, only those are
    read, and every call they make is found."""
    from atompin.analysis.name_sites import NameSearch
    from atompin.sources.tree import SourceTree

    files = {
        **_STEP_FILES,
        "pv/other.py": "from pv.mixer import Mixer\n\n\ndef go(mixer: Mixer):\n    mixer.step(2)\n",
        "pv/mention.py": "# step(1) is what a mixer does\nSTEP = 'step'\n",
    }
    root = write_files(tmp_path / "p", files)
    expected = [("pv/mixer.py", 6, "pv.mixer:Mixer.run"), ("pv/other.py", 5, "pv.other:go")]
    assert _step_calls(root, AnalysisCache()) == expected
    searched = _grepped_paths(monkeypatch)
    read = _paths_given(monkeypatch, SourceTree, "read_many", 0)
    index = ProviderIndex(FolderTree(root), "pv", AnalysisCache())
    names = NameSearch(index.tree, "pv", index.cache, in_place=False)
    names.load()
    read.clear()
    target = index.resolve_symbol("pv.base:Base.step").target
    assert target is not None
    calls = CallerSearch(index, names).calls(target, "step")
    assert [(c.site.path, c.site.line, c.function) for c in calls] == expected
    assert searched == []
    # pv/base.py writes `step(` in its definition, pv/mention.py in a comment: read, and found to
    # make no call; pv/__init__.py and pv/quiet.py are not read
    assert read == ["pv/base.py", "pv/mention.py", "pv/mixer.py", "pv/other.py"]


def test_searching_in_place_the_caller_search_reads_only_files_that_can_write_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searching a folder in place (git's grep), nothing is read ahead; the package is searched
    once for a line that can call `step`, only those files are read, and every call is found."""
    from atompin.analysis import name_sites
    from atompin.analysis.name_sites import NameSearch
    from atompin.sources.tree import SourceTree

    files = {
        **_STEP_FILES,
        "pv/other.py": "from pv.mixer import Mixer\n\n\ndef go(mixer: Mixer):\n    mixer.step(2)\n",
        "pv/mention.py": "# step(1) is what a mixer does\nSTEP = 'step'\n",
        # the parenthesis on the next line
        "pv/late.py": "from pv.mixer import Mixer\n\n\ndef go(mixer: Mixer):\n    return (mixer.step\n        (3))\n",
        "pv/steps.py": "def stepper():\n    return 'step', steps(1), 2step(4)\n",  # no call of `step`
        # enough files for git's grep to search them (fewer are read here)
        **{f"pv/filler_{i}.py": f"X = {i}\n" for i in range(64)},
    }
    root = write_files(tmp_path / "p", files)
    expected = [
        ("pv/late.py", 5, "pv.late:go"),
        ("pv/mixer.py", 6, "pv.mixer:Mixer.run"),
        ("pv/other.py", 5, "pv.other:go"),
    ]
    assert _step_calls(root, AnalysisCache()) == expected
    searched = _paths_given(monkeypatch, FolderTree, "files_matching", 0)
    read = _paths_given(monkeypatch, SourceTree, "read_many", 0)
    index = ProviderIndex(FolderTree(root), "pv", AnalysisCache())
    name_sites._LAST_LOADED.clear()  # as a new process: the identifiers read above are not at hand
    names = NameSearch(index.tree, "pv", index.cache)
    names.search_in_place_unless_read()
    assert names.in_place
    names.load()
    assert read == []  # nothing is read ahead
    target = index.resolve_symbol("pv.base:Base.step").target
    assert target is not None
    calls = CallerSearch(index, names).calls(target, "step")
    assert [(c.site.path, c.site.line, c.function) for c in calls] == expected
    assert sorted(searched) == sorted(files)  # one search of the package
    assert set(read) == {"pv/base.py", "pv/mention.py", "pv/mixer.py", "pv/other.py", "pv/late.py"}
