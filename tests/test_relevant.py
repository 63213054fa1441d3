"""Only consumer files that can reach the provider are scanned up front; the findings are
the same as a scan of every file."""

from __future__ import annotations

import pytest
from conftest import brief

from atompin.analysis import engine
from atompin.analysis.relevant import names_the_provider_in_code, relevant_files
from atompin.analysis.results import check_trees
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files

PROVIDER = {
    "pv/__init__.py": "",
    "pv/core.py": """
        class Engine:
            def step(self, batch):
                return batch
    """,
}

# A provider class re-exported through two consumer modules and patched from a third that
# never names the provider; plus files that cannot matter.
CONSUMER = {
    "plug/__init__.py": "",
    "plug/base.py": """
        from pv.core import Engine
    """,
    "plug/reexport.py": """
        from plug.base import Engine as BaseEngine
    """,
    "plug/patcher.py": """
        from plug import reexport
        from plug.docstring_only import poke

        def install():
            reexport.BaseEngine.stepp = lambda self, batch: batch
            reexport.BaseEngine.gone_method(1)
        poke(reexport.BaseEngine)
    """,
    "plug/pkg/__init__.py": """
        from pv.core import Engine as Exported
    """,
    "plug/pkg/relative.py": """
        from .. import pkg
        from . import Exported
        Exported.missing_attr
    """,
    "plug/named.py": """
        BACKEND = "plug.backend_impl.Backend"
        SCRIPT = "tools/run_me.py"
        import pv
    """,
    "plug/backend_impl.py": """
        class Backend:
            pass
    """,
    # Names consumer modules in strings but never the provider: not read, its strings are edges.
    "plug/registry.py": """
        BACKENDS = {"main": "plug.backend_impl:Backend", "alt": 'plug.unrelated.Helper'}
        NOT_OURS = ["plugin.x", "os.path", "plug-in"]
    """,
    "plug/run_me.py": "",
    "plug/dynamic.py": """
        import importlib
        mod = importlib.import_module("plug." + "base")
    """,
    # Names the provider only in comments: cannot reach it. A `#` after a quote may be in a string.
    "plug/commented.py": """
        # pv.core.Engine is patched in plug/patcher.py
        X = 1  # see pv.core
    """,
    "plug/hash_in_string.py": """
        TAG = "#"; import pv.core
        pv.core.Engine.gone_after_hash
    """,
    # A comment that names the provider and a version computes nothing: importers are not read.
    "plug/version_comment.py": """
        # needs pv version 2 or later
        def engine():
            from pv.core import Engine
            return Engine
    """,
    "plug/version_comment_user.py": """
        from plug.version_comment import engine
    """,
    "plug/unrelated.py": """
        def helper(x):
            return x + 1
    """,
    # Name the provider only in prose, or as a part of a consumer module's dotted name: cannot
    # reach it. A provider object a scanned file hands such a file is read there all the same.
    "plug/docstring_only.py": '''
        """Helpers for pv.core.Engine (named here in prose only)."""
        import plug.adapters.pv
        from .adapters.pv import ADAPTED
        MODULE = "plug.adapters.pv"


        def poke(engine):
            """Pokes a pv engine."""
            engine.gone_in_prose_helper(1)
    ''',
    "plug/adapters/__init__.py": "",
    "plug/adapters/pv.py": """
        ADAPTED = True
    """,
    # Name it where code can: a one-line string, an f-string's braces, an attribute of an object.
    "plug/string_path.py": """
        PATCHED = "pv.core.Engine.step"
    """,
    "plug/fstring.py": '''
        import sys
        MESSAGE = f"""{sys.modules['pv']}"""
    ''',
    "plug/attribute.py": """
        def core(context):
            return context.pv.core
    """,
    "plug/broken.py": "def (:\n",
    # Names the provider only inside a function: it hands nothing on, so its importers are not read
    # (their imports still count for what the entry point reaches: the error stays an error).
    "pyproject.toml": """
        [project]
        name = "plug"
        [project.entry-points."pv.general_plugins"]
        plug = "plug.entry:register"
    """,
    "plug/entry.py": """
        def register():
            from plug import lazy_user
            lazy_user.go()
    """,
    "plug/lazy_user.py": """
        from plug.lazy import install

        def go():
            install()
    """,
    "plug/lazy.py": """
        def install(
            force=False,
        ):
            from pv.core import Engine
            Engine.gone_in_lazy(1)
    """,
    # Computes a provider version in a function: what imports it may be gated by it.
    "plug/versioned.py": """
        def at_least(v):
            from pv import __version__
            return __version__ >= v
    """,
    "plug/gated.py": """
        from plug.versioned import at_least

        USE_NEW = at_least("1.0")
    """,
    # Binds a provider object at module level, inside a block: its importers are read.
    "plug/tried.py": """
        import sys

        if sys.platform != "win32":
            from pv.core import Engine
    """,
    "plug/tried_user.py": """
        def go():
            from plug.tried import Engine
            Engine.gone_via_try()
    """,
    # A package above a module that hands provider objects on, with the path below it spelled out.
    "plug/through_package.py": """
        import plug as p
        p.pkg.relative.Exported
    """,
    "plug/same_word.py": """
        import plug

        def relative(x):
            return x
    """,
}


def _files(files: dict[str, str]) -> list[tuple[str, str, bytes]]:
    tree = MemoryTree(dedent_files(files))
    return [(path, tree.module_name(path)[0], tree.read(path)) for path in sorted(tree.files) if path.endswith(".py")]


def test_the_files_that_can_matter_are_found_from_their_bytes():
    relevant, edges = relevant_files(_files(CONSUMER), "pv", ["plug"])
    assert relevant == {
        "plug/base.py",  # names the provider
        "plug/reexport.py",  # imports an included module
        "plug/patcher.py",  # imports a module that re-exports a provider object
        "plug/pkg/__init__.py",
        "plug/pkg/relative.py",  # relative import below an included package
        "plug/named.py",
        "plug/run_me.py",  # a file name in a string of an included file
        "plug/dynamic.py",  # computes an import
        "plug/hash_in_string.py",  # names the provider after a `#` that is in a string
        "plug/version_comment.py",  # not plug/version_comment_user.py: see above
        "plug/lazy.py",  # names the provider (inside a function: plug/lazy_user.py is not read)
        "plug/versioned.py",
        "plug/gated.py",  # imports a module that computes a provider version
        "plug/tried.py",
        "plug/tried_user.py",  # imports a module that binds a provider object at module level
        "plug/through_package.py",  # spells a path below a package it imports
        "plug/string_path.py",
        "plug/fstring.py",
        "plug/attribute.py",
        # not plug/docstring_only.py: it names the provider in docstrings and as a part of the
        # consumer's own plug.adapters.pv only (nor that module, which never names it)
        # not plug/same_word.py: it imports the package above plug.pkg.relative but never spells the
        # path below it; nor plug/commented.py; nor plug/entry.py or plug/lazy_user.py (see above); nor plug/backend_impl.py,
        # named by dotted path (a class handed over so is read when the scan finishes)
    }
    # What a file that is not read names: its imports, and consumer modules in its strings.
    assert edges["plug/registry.py"] == [("plug.backend_impl", 1), ("plug.unrelated.Helper", 1)]
    assert edges["plug/lazy_user.py"] == [("plug.lazy", 1), ("plug.lazy.install", 1)]


def test_every_name_of_a_from_import_is_read_also_after_an_alias():
    from atompin.analysis.relevant import _File, _imports

    for source in (b"from plug import thing as t, core\n", b"from plug import (\n    thing as t,\n    core,\n)\n"):
        f = _File("plug/user.py", "plug.user", False, source)
        f.imports = _imports(f)
        assert f.module_names() == {"plug", "plug.thing", "plug.core"}


@pytest.mark.parametrize("consumer_package", ["plug", None])
def test_findings_are_those_of_a_scan_of_every_file(monkeypatch: pytest.MonkeyPatch, consumer_package: str | None):
    provider = MemoryTree(dedent_files(PROVIDER), "provider")
    consumer = MemoryTree(dedent_files(CONSUMER), "consumer")
    filtered = check_trees(consumer, provider, "pv", consumer_package)
    assert {f.symbol for f in filtered.findings} >= {
        "pv.core:Engine.gone_method",
        "pv.core:Engine.missing_attr",
        "pv.core:Engine.gone_via_try",
        "pv.core:Engine.gone_after_hash",
        "pv.core:Engine.gone_in_prose_helper",  # in a file not scanned, handed a provider object
    }
    if consumer_package:  # reached from the entry point through two files that are not read
        lazy = [f for f in filtered.findings if f.symbol == "pv.core:Engine.gone_in_lazy"]
        assert [f.severity.value for f in lazy] == ["error"]
    monkeypatch.setattr(engine, "relevant_files", lambda files, provider, tops: ({f[0] for f in files}, {}))
    everything = check_trees(consumer, provider, "pv", consumer_package)
    unparseable = [f for f in brief(everything) if f[0] == "unparseable"]
    assert unparseable == [("unparseable", "warning", "plug/broken.py", ["plug/broken.py:1"])]
    # The one difference: a file that cannot reach the provider is not parsed, so not reported.
    assert brief(filtered) == [f for f in brief(everything) if f[0] != "unparseable"]
    assert filtered.summary == everything.summary.__class__(
        **{**everything.summary.__dict__, "findings_by_rule": filtered.summary.findings_by_rule}
    )


def test_a_module_named_by_a_string_of_a_file_not_read_is_reached_from_the_entry_point():
    # The entry module never names the provider (it is not read): its string still reaches
    # plug.model, so the error there stays an error instead of becoming an unreached warning.
    consumer = {
        "pyproject.toml": """
            [project]
            name = "plug"
            [project.entry-points."pv.general_plugins"]
            plug = "plug.entry:register"
        """,
        "plug/__init__.py": "",
        "plug/entry.py": """
            MODELS = {"engine": "plug.model:Model"}

            def register():
                return MODELS
        """,
        "plug/model.py": """
            from pv.core import Engine

            class Model:
                kind = Engine.gone_from_model
        """,
        "plug/elsewhere.py": """
            from pv.core import Engine
            Engine.gone_elsewhere
        """,
    }
    provider = MemoryTree(dedent_files(PROVIDER), "provider")
    result = check_trees(MemoryTree(dedent_files(consumer), "consumer"), provider, "pv", "plug")
    severity = {f.symbol: f.severity.value for f in result.findings}
    assert severity["pv.core:Engine.gone_from_model"] == "error"
    assert severity["pv.core:Engine.gone_elsewhere"] == "warning"  # nothing reaches it


def test_the_provider_names_a_second_process_resolves_come_from_import_statements():
    from atompin.analysis.relevant import provider_names

    source = (
        b"from pv.a import B, c as d\nimport pv.x.y as z, os\nfrom . import pv\nfrom .pv import q\n"
        b"import pv\nfrom pvx import r\nfrom pv import (\n    e,\n    f as g,\n)\n"
    )
    assert provider_names([source, b"import os\n"], "pv") == {
        "pv", "pv.a", "pv.a:B", "pv.a:c", "pv.x.y", "pv:e", "pv:f"
    }  # fmt: skip


TRICKY_IMPORTS = b'''\
from important import thing  # "import" twice on a line
import os, sys as system; from pv import a
x = """
from pv.fake import (
from pv.inside import b
)"""
    from . import sibling
from pv.multi import (
    c,
    d as e,
)
print("import is not a statement here")
\timport pv.tabbed
# import pv.commented
from\tpv.spaced\timport\tf
import pv.last'''


@pytest.mark.parametrize("name", ["_FROM", "_IMPORT"])
def test_import_statements_are_what_the_patterns_find_everywhere(name: str):
    """The import patterns are tried only at lines holding `import`: the same matches as trying
    them at every byte (on a tricky sample, and on every file of atompin)."""
    from pathlib import Path

    import atompin
    from atompin.analysis import relevant

    pattern = getattr(relevant, name)
    sources = [TRICKY_IMPORTS, TRICKY_IMPORTS + b"\n", b"", b"import", b"x = 1\n"]
    sources += [p.read_bytes() for p in sorted(Path(atompin.__file__).parent.rglob("*.py"))]
    for source in sources:
        expected = [(m.span(), m.groups()) for m in pattern.finditer(source)]
        assert [(m.span(), m.groups()) for m in relevant._statements(pattern, source)] == expected
    assert len(list(relevant._statements(pattern, TRICKY_IMPORTS))) >= 3


@pytest.mark.parametrize(
    ("source", "hands_on"),
    [
        (b"def f():\n    import pv\nOLD = pv.VERSION < (1, 2)\n", True),  # any case of "version"
        (b"def f():\n    import pv\nOLD = Version(pv.__version__)\n", True),
        (b"def f():\n    import pv\nVERSION = 3\nX = pv.thing\n", False),  # not on one line
        (b"def f():\n    import pv\nX = pvx.version\n", False),  # another word
    ],
)
def test_a_module_hands_on_a_provider_version_it_computes_on_one_line(source: bytes, hands_on: bool):
    from atompin.analysis.relevant import _File, _hands_on_provider, _imports

    f = _File("plug/v.py", "plug.v", False, source)
    f.imports = _imports(f)
    assert _hands_on_provider(f, "pv") is hands_on


def test_a_module_loaded_for_a_handed_class_is_read_before_its_tree_is_freed():
    """A class named by dotted path in a module outside the scan is read (with what its methods
    call) when the scan finishes; then that module's syntax tree is freed: nothing reads it again."""
    from atompin.analysis.scanner import ConsumerScanner

    sources = {
        "plug/backend.py": b"class Base:\n    def get_name(self):\n        return 'x'\n\n"
        b"class MyBackend(Base):\n    def get_name(self):\n        return super().get_name()\n",
    }

    def load(module: str) -> tuple[str, bool, bytes] | None:
        path = module.replace(".", "/") + ".py"
        return (path, False, sources[path]) if path in sources else None

    scanner = ConsumerScanner("pv", ("plug",), load)
    platform = b"import pv\n\ndef get_attn_backend_cls():\n    return 'plug.backend.MyBackend'\n"
    usage = scanner.scan([("plug/platform.py", "plug.platform", False, platform)])
    [handed] = [c for c in usage.contact.classes if c.name == "plug.backend.MyBackend"]
    assert handed.muted and [(m.name, m.calls_super) for m in handed.methods] == [("get_name", True)]
    assert [h.target for h in usage.contact.handovers] == ["plug.backend.MyBackend"]
    assert "plug.backend" not in scanner._trees
    loaded = [fn for name, fn in scanner._functions.items() if name.startswith("plug.backend.")]
    assert loaded and all(fn.node.body == [] for fn in loaded)
    assert all(fn.node.body for name, fn in scanner._functions.items() if name.startswith("plug.platform."))


@pytest.mark.parametrize(
    ("source", "names"),
    [
        (b"import pv\n", True),
        (b"# pv\n", False),
        (b'"""pv docs"""\nx = 1\n', False),
        (b"'''pv docs'''\n", False),
        (b'"""Docs."""\nimport pv\n', True),
        (b"x = 'pv.core'\n", True),  # a one-line string may be a module path
        (b'x = f"""{pv}"""\n', True),  # an f-string's braces are code
        (b"import plug.adapters.pv\n", False),  # the consumer's own package
        (b"y = plug.adapters.pv.thing\n", False),
        (b"from .pv import x\n", False),  # relative imports are the consumer's
        (b"from ..adapters.pv import x\n", False),
        (b"import plug\ny = plug.pv.core\n", True),  # not a module of the consumer: plug may bind pv
        (b"x = other.pv\n", True),  # an attribute of another object may hold the provider
        (b"x = f().pv\n", True),
        (b"from importlib import import_module\nm = import_module(name)\n", True),
    ],
)
def test_a_file_names_the_provider_where_code_can(source: bytes, names: bool):
    modules = {"plug", "plug.adapters", "plug.adapters.pv"}
    assert names_the_provider_in_code(source, "pv", modules) is names
