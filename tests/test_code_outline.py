"""A consumer module's outline (`code_outline`): what the start-up walk reads of its code, kept
by content so that a walk of a consumer that did not change (a bump of the provider) parses
nothing, and reading a function's body only when a walk asks for it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.code_outline import (
    CALL,
    CLASS,
    DEF,
    FROM,
    HANDLER,
    IF,
    IMPORT,
    LOOP,
    NEVER,
    STATEMENT,
    TRY,
    WITH,
    OutlineReader,
    outline,
)
from atompin.analysis.startup import startup_stop
from atompin.model import Finding, Rule, Severity, Site
from tests.test_startup import PLUG, imports_of

MODULE = textwrap.dedent(
    """\
    from . import sibling
    import a.b as ab
    if TYPE_CHECKING:
        import typing_only
    if DISABLED:
        return_value = 1
    if OFF:
        raise SystemExit
    with lock():
        apply(make(), key=helper.build())
    try:
        import optional
    except ImportError:
        fallback()
    for each in items:
        sibling.patch(each)

    def run():
        import inner
        return inner.go()

    class Patched(Base):
        x = compute()

        def __init__(self):
            start()
    """
)


def outlined(source: str = MODULE, module: str = "plug.mod", package: bool = False):
    return outline(ast.parse(source), module, package)


def test_each_statement_becomes_the_step_the_walk_reads():
    steps = outlined().steps
    assert [step.kind for step in steps] == [FROM, IMPORT, NEVER, IF, IF, WITH, TRY, LOOP, DEF, CLASS]
    relative, aliased, never, exits, raises, with_, try_, loop, run, patched = steps
    assert (relative.source, relative.names, relative.reaches) == (
        "plug",
        (("sibling", ""),),
        ((IMPORT, "plug"), (IMPORT, "plug.sibling")),
    )
    assert aliased.names == (("a.b", "ab"),)
    assert never.reaches == ((IMPORT, "typing_only"),)  # what it holds, should it follow a `raise`
    # Its body ends with no return: the walk runs on after it (its test is kept for a message).
    assert (exits.ends, exits.test) == ("", "DISABLED")
    assert (raises.ends, raises.start, raises.end) == ("raise", 7, 8)
    (call,) = with_.body
    assert (call.kind, call.callee) == (STATEMENT, "apply")
    assert call.arguments == ((CALL, "make"), (CALL, "helper.build"))  # in order, the keyword's too
    assert [step.kind for step in try_.body] == [IMPORT] and [h.kind for h in try_.handlers] == [HANDLER]
    assert try_.handlers[0].reaches == ((CALL, "fallback"),)
    assert loop.reaches == ((CALL, "sibling.patch"),)
    # A function's and a class's code is read only when a walk asks (`OutlineReader`).
    assert (run.name, run.start, run.end, run.reaches, run.body) == ("run", 18, 20, (), ())
    assert (patched.kind, patched.name) == (CLASS, "Patched")


def test_an_early_exit_keeps_its_test_as_a_message_quotes_it():
    (step,) = outlined("if not is_rocm() and os.environ.get('X'):\n    return\n").steps
    assert (step.ends, step.test) == ("return", "not is_rocm() and os.environ.get('X')")
    (long,) = outlined(f"if {' and '.join(f'flag_{i}' for i in range(40))}:\n    return\n").steps
    assert len(long.test) == 80 and long.test.endswith("…")
    # An `else` runs where the test fails: no early exit.
    (both,) = outlined("if x:\n    return\nelse:\n    y()\n").steps
    assert both.ends == ""


def test_what_a_call_passes_and_a_function_takes_is_kept_where_it_is_a_flag():
    source = (
        "def f(a, b=True, *rest, c=None, d=1):\n"
        "    if not b:\n"
        "        g()\n"
        "    if b and c:\n"
        "        pass\n"
        "f(1, False, c=None, d=x)\n"
        "f(*args)\n"
    )
    (f, call, starred) = outlined(source).steps
    assert (f.params, f.defaults) == (("a", "b"), (("b", "True"), ("c", "None")))
    assert call.passed == (("0", ""), ("1", "False"), ("c", "None"), ("d", ""))
    assert starred.passed == (("*", ""),)
    tests = Trees({"plug.mod": source}).reader(AnalysisCache()).body("plug.mod", f)
    assert (tests[0].switch, tests[0].negated, [s.kind for s in tests[0].body]) == ("b", True, [STATEMENT])
    # Not a name: not decided, whatever is known; its branch is kept (`startup` follows one where
    # its test holds), and its test.
    assert (tests[1].switch, tests[1].test, [s.kind for s in tests[1].body]) == ("", "b and c", [STATEMENT])


def test_the_names_a_function_binds_again_are_read_when_asked():
    source = "def f(flag, other):\n    import flag\n    for other in x:\n        pass\n    return flag\n"
    reader = Trees({"plug.mod": source}).reader(AnalysisCache())
    (f,) = (reader.outline("plug.mod") or ("", None))[1].steps  # type: ignore[union-attr]
    assert reader.rebound("plug.mod", f) == ("flag", "other")  # an import binds a name too; `x` is only read


def test_relative_imports_are_read_against_the_module_or_the_package():
    (step,) = outlined("from .sub import f\n", "plug.pkg", package=True).steps
    assert step.source == "plug.pkg.sub"
    (step,) = outlined("from ..up import f\n", "plug.pkg.mod").steps
    assert step.source == "plug.up"


class Trees:
    """In-memory modules, counting how often one is parsed."""

    def __init__(self, modules: dict[str, str]) -> None:
        self.sources = {name.rstrip("/"): (self.path(name), textwrap.dedent(src)) for name, src in modules.items()}
        self.parsed: list[str] = []

    @staticmethod
    def path(name: str) -> str:
        return name.rstrip("/").replace(".", "/") + ("/__init__.py" if name.endswith("/") else ".py")

    def locate(self, module: str) -> tuple[str, str] | None:
        found = self.sources.get(module)
        return (found[0], str(hash(found[1]))) if found else None

    def parse(self, module: str) -> ast.Module | None:
        self.parsed.append(module)
        return ast.parse(self.sources[module][1]) if module in self.sources else None

    def reader(self, cache: AnalysisCache) -> OutlineReader:
        return OutlineReader(self.locate, self.parse, cache)


def test_a_body_is_read_when_asked_and_kept_with_the_outline():
    trees, cache = Trees({"plug.mod": MODULE}), AnalysisCache()
    reader = trees.reader(cache)
    path, kept = reader.outline("plug.mod") or ("", None)
    assert path == "plug/mod.py" and kept is not None and trees.parsed == ["plug.mod"]
    run, patched = kept.steps[-2:]
    assert [step.kind for step in reader.body("plug.mod", run)] == [IMPORT, STATEMENT]
    assert reader.reaches("plug.mod", run) == ((IMPORT, "inner"), (CALL, "inner.go"))
    init = next(step for step in reader.body("plug.mod", patched) if step.kind == DEF)
    assert reader.reaches("plug.mod", init) == ((CALL, "start"),)
    reader.keep()
    # Another run reads the outline, with what was read of it, from the cache: nothing is parsed.
    trees.parsed.clear()
    again = trees.reader(cache)
    _, cached = again.outline("plug.mod") or ("", None)
    assert cached == kept and again.reaches("plug.mod", run) == ((IMPORT, "inner"), (CALL, "inner.go"))
    assert trees.parsed == []
    # A part no run read yet is read then: the file is parsed once, and the part kept.
    assert again.reaches("plug.mod", patched) == ((CALL, "compute"), (CALL, "start"))  # bases are no calls
    assert trees.parsed == ["plug.mod"]
    again.keep()
    trees.parsed.clear()
    third = trees.reader(cache)
    assert third.reaches("plug.mod", (third.outline("plug.mod") or ("", kept))[1].steps[-1]) != ()
    assert trees.parsed == []


def test_a_changed_file_is_outlined_again():
    trees, cache = Trees({"plug.mod": "import a\n"}), AnalysisCache()
    trees.reader(cache).outline("plug.mod")
    trees.reader(cache).keep()  # nothing read: nothing kept
    reader = trees.reader(cache)
    reader.outline("plug.mod")
    reader.keep()
    trees.sources["plug.mod"] = ("plug/mod.py", "import b\n")
    trees.parsed.clear()
    (step,) = (trees.reader(cache).outline("plug.mod") or ("", None))[1].steps  # type: ignore[union-attr]
    assert step.names == (("b", ""),) and trees.parsed == ["plug.mod"]


def test_a_module_that_does_not_parse_has_no_outline():
    trees = Trees({"plug.bad": "def (:\n"})
    trees.parse = lambda module: None  # type: ignore[method-assign]  # as the engine's parse answers it
    assert trees.reader(AnalysisCache()).outline("plug.bad") is None
    assert trees.reader(AnalysisCache()).outline("plug.absent") is None


@pytest.mark.parametrize("first", ["plug/kv.py", "plug/install.py"])
def test_the_walk_from_kept_outlines_parses_nothing_and_meets_the_same_stop(first: str):
    trees, cache = Trees(PLUG), AnalysisCache()
    line = 6 if first == "plug/kv.py" else 13
    findings = [Finding(Rule.UNRESOLVED_IMPORT, Severity.ERROR, "pv.gone:x", (Site(first, line),), "no module pv.gone")]
    stops = {(f.rule.value, f.symbol, site) for f in findings for site in f.sites}
    entry = [("pv.general_plugins", "plug.register:register")]
    imports = imports_of({name: (path, ast.parse(src)) for name, (path, src) in trees.sources.items()})
    cold = startup_stop(entry, trees.reader(cache), imports, findings, stops)
    assert cold is not None and cold[0].site == Site(first, line) and trees.parsed
    trees.parsed.clear()
    warm = startup_stop(entry, trees.reader(cache), imports, findings, stops)
    assert warm == cold and trees.parsed == []
