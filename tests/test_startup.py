"""Where the plugin stops when the provider loads it (`startup`): the first error that raises on
the code the entry points run, in the order it runs. At vLLM 0.34 ATOM's `register_model` calls
`apply_vllm_spec_decode_patch()`, whose unguarded import of `vllm.v1.spec_decode.llm_base_proposer`
raises: what the plugin would do after it is behind it."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace

import atompin.analysis.engine as engine
from atompin.analysis.cache import AnalysisCache
from atompin.analysis.code_outline import OutlineReader
from atompin.analysis.relevant import imported_modules
from atompin.analysis.results import check_trees
from atompin.analysis.startup import MAX_DEPTH, MAX_STEPS, Imports, StartupStop, StartupWalk, startup_stop, stopping
from atompin.model import Finding, Rule, Severity, Site
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, one_of

RAISES = "no module pv.gone; the import raises ImportError"


def error(path: str, *lines: int, rule: Rule = Rule.UNRESOLVED_IMPORT, message: str = RAISES) -> Finding:
    return Finding(rule, Severity.ERROR, f"pv.gone:x{lines[0]}", tuple(Site(path, line) for line in lines), message)


def raising(findings: list[Finding]) -> set[tuple[str, str, Site]]:
    """Every site of these findings raising where it runs, as the checks that made them would say."""
    return {(f.rule.value, f.symbol, site) for f in findings for site in f.sites}


def stop(
    modules: dict[str, str],
    findings: list[Finding],
    entry: list[tuple[str, str]] | None = None,
    stops: set[tuple[str, str, Site]] | None = None,
) -> str:
    """The stop told for `modules` (name -> source; a name ending in `/` is a package), as
    "path:line | chain | unless", or "" for none; `stops`: every site of `findings` by default."""
    trees: dict[str, tuple[str, ast.Module]] = {}
    for name, source in modules.items():
        package = name.endswith("/")
        module = name.rstrip("/")
        path = module.replace(".", "/") + ("/__init__.py" if package else ".py")
        trees[module] = (path, ast.parse(textwrap.dedent(source)))
    points = entry if entry is not None else [("pv.general_plugins", "plug.register:register")]
    found = startup_stop(
        points, outlines_of(trees), imports_of(trees), findings, raising(findings) if stops is None else stops
    )
    if found is None:
        return ""
    told, finding = found
    assert told.site in finding.sites
    where = f" | where {told.when}" if told.when else ""
    first = f" | raised first where {' or '.join(told.raised)}" if told.raised else ""
    return f"{told.site} | {' → '.join(told.chain)} | {', '.join(told.unless)}{where}{first}"


def outlines_of(trees: dict[str, tuple[str, ast.Module]], cache: AnalysisCache | None = None) -> OutlineReader:
    """The outlines of in-memory modules, as the engine reads them (a module's content id: its text)."""

    def locate(module: str) -> tuple[str, str] | None:
        return (trees[module][0], ast.dump(trees[module][1])) if module in trees else None

    return OutlineReader(locate, lambda module: trees[module][1] if module in trees else None, cache or AnalysisCache())


def imports_of(trees: dict[str, tuple[str, ast.Module]]) -> Imports:
    """The `Imports` of in-memory modules, read as atompin reads them: from their text."""

    def imports(module: str) -> tuple[str, frozenset[str]] | None:
        if module not in trees:
            return None
        path, tree = trees[module]
        return path, imported_modules(path, module, path.endswith("__init__.py"), ast.unparse(tree).encode())

    return imports


PLUG = {
    "plug/": "",
    "plug.register": """
        import logging

        from plug import install


        def register():
            if DISABLED:
                return
            logging.info("patching")
            install.apply()
            install.later()
    """,
    "plug.install": """
        def apply():
            _first()
            from plug.kv import patch_kv
            patch_kv()


        def _first():
            x = 1


        def later():
            from pv.gone import late
    """,
    "plug.kv": """
        import pv


        def patch_kv():
            from pv.gone import thing
            pv.thing = thing
    """,
}
PLUG = {name: textwrap.dedent(source) for name, source in PLUG.items()}


def test_the_first_error_the_start_up_code_meets_is_told_with_the_way_there():
    found = stop(PLUG, [error("plug/kv.py", 6), error("plug/install.py", 13)])
    assert found == (
        "plug/kv.py:6 | entry point pv.general_plugins plug.register:register → apply() at plug/register.py:11 "
        "→ patch_kv() at plug/install.py:5 | `DISABLED` (plug/register.py:8)"
    )
    # An import that raises while it runs its module is on the way.
    importing = {**PLUG, "plug.kv": "import pv.gone\n" + PLUG["plug.kv"]}
    assert stop(importing, [error("plug/kv.py", 1)]) == (
        "plug/kv.py:1 | entry point pv.general_plugins plug.register:register → apply() at plug/register.py:11 "
        "→ import of plug.kv at plug/install.py:4 | `DISABLED` (plug/register.py:8)"
    )
    # Only the later one: it is reached after apply() returns, where the early exit no longer matters inside.
    assert stop(PLUG, [error("plug/install.py", 13)]).startswith("plug/install.py:13 | ")
    # An error nothing at start-up reaches is not told.
    assert stop(PLUG, [error("plug/other.py", 3)]) == ""


def test_what_may_not_run_is_not_followed_and_an_error_in_it_leaves_the_order_unknown():
    def replaced(new: str) -> dict[str, str]:
        return {**PLUG, "plug.register": PLUG["plug.register"].replace("    install.apply()\n", new)}

    # A call under `if X:`, a test the walk cannot decide, is followed where X holds: the error it
    # meets (`later` holds one) is told "where" X holds (vllm-rbln patches vLLM under `if
    # envs.VLLM_RBLN_USE_VLLM_MODEL:`)...
    assert stop(replaced("    if X:\n        install.later()\n"), [error("plug/install.py", 13)]) == (
        "plug/install.py:13 | entry point pv.general_plugins plug.register:register → later() at "
        "plug/register.py:12 | `DISABLED` (plug/register.py:8) | where `X` (plug/register.py:11)"
    )
    # ...and so is a module it imports holding one outside its functions (vllm-ascend's
    # `adapt_patch` imports its patches under `if is_global_patch:`). One inside a function does not
    # run on import: the branch cannot stop, and the walk goes on past it.
    imported = replaced("    if X:\n        import plug.kv\n")
    assert stop(imported, [error("plug/kv.py", 6), error("plug/install.py", 13)]).startswith("plug/install.py:13")
    kv_top = {**imported, "plug.kv": "import pv.gone\n"}
    assert stop(kv_top, [error("plug/kv.py", 1), error("plug/install.py", 13)]) == (
        "plug/kv.py:1 | entry point pv.general_plugins plug.register:register → import of plug.kv at "
        "plug/register.py:12 | `DISABLED` (plug/register.py:8) | where `X` (plug/register.py:11)"
    )
    # Where the branch meets no error after all, or meets a second such test on the way, which error
    # comes first is not known, and nothing is told.
    maybe = {
        **replaced("    if X:\n        install.maybe()\n"),
        "plug.install": PLUG["plug.install"] + "\n\ndef maybe():\n    if Y:\n        later()\n",
    }
    assert stop(maybe, [error("plug/install.py", 13)]) == ""
    after = replaced("    if X:\n        install.maybe()\n    install.later()\n")
    after["plug.install"] = PLUG["plug.install"] + "\n\ndef maybe(flag=False):\n    if flag:\n        later()\n"
    assert stop(after, [error("plug/install.py", 13)]) == ""
    # Code there that reaches no error changes nothing: the later error is reached, and told
    # (`apply` calls `_first` and `patch_kv`, which reach none of it; `logging` is not the consumer's).
    for harmless in ("    if X:\n        install.apply()\n", "    if X:\n        logging.info(X)\n"):
        assert stop(replaced(harmless), [error("plug/install.py", 13)]).startswith("plug/install.py:13 | ")
    # A call of a consumer function in an argument is not followed either: the same.
    assert stop(replaced("    print(install.later())\n"), [error("plug/install.py", 13)]) == ""
    assert stop(replaced("    print(install.apply())\n"), [error("plug/install.py", 13)]).startswith(
        "plug/install.py:13"
    )
    # Nor is a call of a class: its `__init__` may reach an error.
    made = {
        **replaced("    print(install.Maker())\n"),
        "plug.install": PLUG["plug.install"] + "\n\nclass Maker:\n    def __init__(self):\n        later()\n",
    }
    assert stop(made, [error("plug/install.py", 13)]) == ""
    # `if TYPE_CHECKING:` and `if __name__ == "__main__":` never run when the plugin is loaded.
    for never in ("TYPE_CHECKING", '__name__ == "__main__"'):
        assert stop(replaced(f"    if {never}:\n        install.later()\n"), [error("plug/install.py", 13)]) != ""
    # An error written under an `if` itself may come first: nothing is told.
    inline = {
        **PLUG,
        "plug.register": PLUG["plug.register"].replace(
            "    install.apply()\n", "    for name in X:\n        from pv.gone import other\n"
        ),
    }
    line = textwrap.dedent(inline["plug.register"]).splitlines().index("        from pv.gone import other") + 1
    assert stop(inline, [error("plug/register.py", line), error("plug/install.py", 13)]) == ""
    # A handler runs only when something raised: the same.
    handler = {
        "plug/": "",
        "plug.register": "def register():\n    try:\n        a()\n    except ImportError:\n        import pv.gone\n",
    }
    assert stop(handler, [error("plug/register.py", 5)]) == ""
    # A try's body runs.
    body = {
        "plug/": "",
        "plug.register": "def register():\n    try:\n        import pv.gone\n    finally:\n        pass\n",
    }
    assert stop(body, [error("plug/register.py", 3)]).startswith("plug/register.py:3 | ")


def test_module_code_runs_on_import_and_functions_only_when_called():
    modules = {
        "plug/": "from plug.base import helper\n",
        "plug.base": "import pv\n\n\ndef helper():\n    import pv.gone\n\n\nclass C:\n    import pv.gone as g\n",
        "plug.register": "def register():\n    return 1\n",
    }
    # The package's `__init__` runs before the entry point's module; a class body runs, a def's does not.
    assert stop(modules, [error("plug/base.py", 5), error("plug/base.py", 9)]) == (
        "plug/base.py:9 | entry point pv.general_plugins plug.register:register → import of plug.base at "
        "plug/__init__.py:1 | "
    )
    # A helper re-exported by the package, called as `plug.helper()` after `import plug`, runs.
    calls = {**modules, "plug.register": "import plug\n\n\ndef register():\n    plug.helper()\n"}
    assert stop(calls, [error("plug/base.py", 5)]).startswith("plug/base.py:5 | ")
    # Modules importing each other run once each.
    cycle = {"plug/": "", "plug.a": "import plug.b\n", "plug.b": "import plug.a\nimport pv.gone\n"}
    assert stop(cycle, [error("plug/b.py", 2)], [("pv.platform_plugins", "plug.a:f")]).startswith("plug/b.py:2 |")


def test_a_method_called_on_a_consumer_class_runs_and_a_constructor_is_not_followed():
    """vllm-omni registers its connectors with `OmniConnectorFactory.register_connector(...)` at the
    top of a module: a method called on a consumer class runs its body. It used to be passed over,
    so an error after it was told first even where the method raised before it."""
    method = "class Reg:\n    @classmethod\n    def add(cls, name):\n        from pv.gone import x\n\n\n"

    def registering(classes: str, call: str) -> dict[str, str]:
        return {"plug/": "", "plug.register": classes + f"def register():\n    {call}\n    from pv.gone import later\n"}

    local = registering(method, "Reg.add('a')")
    assert stop(local, [error("plug/register.py", 4), error("plug/register.py", 9)]) == (
        "plug/register.py:4 | entry point pv.general_plugins plug.register:register → Reg.add() at "
        "plug/register.py:8 | "
    )
    # Of a class imported from a consumer module, as well.
    imported = {
        "plug/": "",
        "plug.reg": method,
        "plug.register": "from plug.reg import Reg\n\ndef register():\n    Reg.add('a')\n    from pv.gone import later\n",
    }
    assert stop(imported, [error("plug/reg.py", 4), error("plug/register.py", 5)]).startswith(
        "plug/reg.py:4 | entry point pv.general_plugins plug.register:register → Reg.add() at plug/register.py:4"
    )
    # Which parameter a positional argument sets is not known (a classmethod's first is the class):
    # `if flag:` in it is not decided, and is followed only where it holds.
    flag = method.replace("(cls, name)", "(cls, flag=False)").replace(
        "        from", "        if flag:\n            from"
    )
    flagged = registering(flag, "Reg.add(True)")
    assert stop(flagged, [error("plug/register.py", 5), error("plug/register.py", 10)]) == (
        "plug/register.py:5 | entry point pv.general_plugins plug.register:register → Reg.add() at "
        "plug/register.py:9 |  | where `flag` (plug/register.py:4)"
    )
    # A class made is not followed into its `__init__`: one that may reach an error leaves the order unknown.
    made = "class Reg:\n    def __init__(self):\n        from pv.gone import x\n\n\ndef register():\n    Reg()\n"
    made += "    from pv.gone import later\n"
    assert (
        stop({"plug/": "", "plug.register": made}, [error("plug/register.py", 3), error("plug/register.py", 8)]) == ""
    )
    # So is one imported through a module that imports it in turn.
    through = {
        "plug/": "",
        "plug.base": made.split("\n\n\ndef register")[0] + "\n",
        "plug.again": "from plug.base import Reg\n",
        "plug.register": "from plug.again import Reg\n\ndef register():\n    Reg()\n    from pv.gone import later\n",
    }
    assert stop(through, [error("plug/base.py", 3), error("plug/register.py", 5)]) == ""
    # Another class's method of the same name runs too (each method is run once, not each name).
    two = (
        "class A:\n    def add(self):\n        return 1\n\n\nclass B:\n    def add(self):\n        import pv.gone\n\n\n"
    )
    two += "def register():\n    A.add(None)\n    B.add(None)\n"
    assert stop({"plug/": "", "plug.register": two}, [error("plug/register.py", 8)]).startswith(
        "plug/register.py:8 | entry point pv.general_plugins plug.register:register → B.add() at plug/register.py:13"
    )


def test_an_import_under_a_test_of_a_module_whose_package_runs_now_leaves_the_order_known():
    """vllm-ascend's `patch/platform/__init__.py` imports its mamba patch under `if not is_310p():`
    (and the 310P one under its `else`), then, unguarded, a patch whose import vLLM 0.27.1 broke:
    importing the submodule does not run its package again, so neither branch can reach that."""
    modules = {
        "plug/": "",
        "plug.patches/": "import plug.patches.a\nif HW:\n    import plug.patches.b\nelse:\n    import plug.patches.c\n"
        "import plug.patches.d\n",
        "plug.patches.a": "x = 1\n",
        "plug.patches.b": "import plug.patches.a\n",
        "plug.patches.c": "y = 1\n",
        "plug.patches.d": "import pv.gone\n",
        "plug.register": "def register():\n    import plug.patches\n",
    }
    assert stop(modules, [error("plug/patches/d.py", 1)]) == (
        "plug/patches/d.py:1 | entry point pv.general_plugins plug.register:register → import of plug.patches at "
        "plug/register.py:2 → import of plug.patches.d at plug/patches/__init__.py:6 | "
    )
    # A branch importing a module not run yet that may reach it: which comes first is not known.
    reaching = {**modules, "plug.patches.c": "import plug.patches.d\n"}
    assert stop(reaching, [error("plug/patches/d.py", 1)]) == ""


def test_the_entry_points_run_in_the_order_given():
    modules = {
        "plug/": "",
        "plug.platform": "def pick():\n    import pv.gone\n",
        "plug.general": "def register():\n    import pv.gone\n",
    }
    both = [error("plug/platform.py", 2), error("plug/general.py", 2)]
    points = [("pv.platform_plugins", "plug.platform:pick"), ("pv.general_plugins", "plug.general:register")]
    assert stop(modules, both, points).startswith("plug/platform.py:2 | entry point pv.platform_plugins")
    assert stop(modules, both, points[::-1]).startswith("plug/general.py:2 | entry point pv.general_plugins")


def test_only_errors_that_raise_where_they_run_stop_it():
    # What the checks say raises, at those sites only: an installer returning where a ladder fails
    # raises nothing ("patches are never installed"), nor does a site of the same finding not said to.
    kv, install = error("plug/kv.py", 6), error("plug/install.py", 13)
    assert stop(PLUG, [kv, install], stops=raising([install])).startswith("plug/install.py:13 |")
    assert stopping([kv, install], raising([kv]))[1] == {"plug/kv.py": {6}}
    both = error("plug/kv.py", 6, 7)
    assert stopping([both], {(both.rule.value, both.symbol, Site("plug/kv.py", 7))})[1] == {"plug/kv.py": {7}}
    # Nor a warning, nor an accepted error.
    warning = replace(kv, severity=Severity.WARNING)
    accepted = replace(kv, accepted="known")
    assert stopping([warning, accepted], raising([kv])) == ([], {})
    assert stop(PLUG, [warning]) == ""


def test_the_walk_is_bounded():
    # Deep: a chain of imports longer than the walk follows.
    deep = {"plug/": "", **{f"plug.m{i}": f"import plug.m{i + 1}\n" for i in range(MAX_DEPTH + 5)}}
    deep[f"plug.m{MAX_DEPTH + 5}"] = "import pv.gone\n"
    assert stop(deep, [error(f"plug/m{MAX_DEPTH + 5}.py", 1)], [("pv.general_plugins", "plug.m0:f")]) == ""
    shallow = {
        "plug/": "",
        **{f"plug.m{i}": f"import plug.m{i + 1}\n" for i in range(5)},
        "plug.m5": "import pv.gone\n",
    }
    assert stop(shallow, [error("plug/m5.py", 1)], [("pv.general_plugins", "plug.m0:f")]).startswith("plug/m5.py:1 |")

    # Wide: more modules than it runs (each imports one of its own whose function holds an error:
    # read, as code run on import might call it).
    def wide(n: int) -> dict[str, str]:
        modules = {"plug/": "", "plug.top": "".join(f"import plug.m{i}\n" for i in range(n)) + "import pv.gone\n"}
        modules.update({f"plug.m{i}": f"import plug.fails{i}\n" for i in range(n)})
        modules.update({f"plug.fails{i}": "def f():\n    import pv.gone\n" for i in range(n)})
        return modules

    def failing(n: int) -> list[Finding]:
        return [error(f"plug/fails{i}.py", 2) for i in range(n)]

    point = [("pv.general_plugins", "plug.top:f")]
    many = MAX_STEPS // 2 + 1  # two modules run for each
    assert stop(wide(many), [error("plug/top.py", many + 1), *failing(many)], point) == ""
    assert stop(wide(9), [error("plug/top.py", 10), *failing(9)], point).startswith("plug/top.py:10 |")
    # One module imported by each, run once: importing it again runs nothing, and the others are not read.
    shared = {"plug/": "", "plug.top": "".join(f"import plug.m{i}\n" for i in range(MAX_STEPS + 1))}
    shared["plug.top"] += "import pv.gone\n"
    shared.update({f"plug.m{i}": "import plug.fails0\n" for i in range(MAX_STEPS + 1)})
    shared["plug.fails0"] = "def f():\n    import pv.gone\n"
    assert stop(shared, [error("plug/top.py", MAX_STEPS + 2), *failing(1)], point).startswith(
        f"plug/top.py:{MAX_STEPS + 2} |"
    )
    # A module whose imports reach no error is not even read: as many as there are.
    quiet = {"plug/": "", "plug.top": "".join(f"import plug.m{i}\n" for i in range(MAX_STEPS + 1)) + "import pv.gone\n"}
    quiet.update({f"plug.m{i}": "x = 1\n" for i in range(MAX_STEPS + 1)})
    assert stop(quiet, [error("plug/top.py", MAX_STEPS + 2)], point).startswith(f"plug/top.py:{MAX_STEPS + 2} |")


PYPROJECT = """
    [project]
    name = "plug"
    dependencies = ["pv>=1"]

    [project.entry-points."pv.general_plugins"]
    plug = "plug.register:register"
"""


def test_the_check_tells_it_in_the_error_s_message():
    consumer = {
        "pyproject.toml": PYPROJECT,
        "plug/register.py": "def register():\n    from plug.patches import install\n    install()\n",
        "plug/patches.py": "def install():\n    from pv.worker import gone_helper\n    return gone_helper\n",
    }
    result = check(consumer, {"pv/worker.py": "def helper():\n    return 1\n"})
    [finding] = [f for f in result.findings if f.rule is Rule.UNRESOLVED_IMPORT]
    assert finding.message.endswith(
        "the import raises ImportError; it raises at start-up (plug/patches.py:2), in every process that loads the "
        "plugin: entry point pv.general_plugins plug.register:register → install() at plug/register.py:3; what the "
        "plugin would do after it, and the errors there, are behind it"
    )
    # Called only where a test the walk cannot decide holds: told so.
    tested = {
        **consumer,
        "plug/register.py": consumer["plug/register.py"].replace("    install()", "    if MODE:\n        install()"),
    }
    [finding] = [f for f in check(tested, {"pv/worker.py": "def helper():\n    return 1\n"}).findings]
    assert "it raises at start-up (plug/patches.py:2), in every process that loads the plugin where `MODE` " in (
        finding.message
    )
    assert "(plug/register.py:3) holds: entry point pv.general_plugins plug.register:register → install() at" in (
        finding.message
    )
    # Not called at start-up: told nothing.
    idle = {**consumer, "plug/register.py": "def register():\n    from plug.patches import install\n"}
    [finding] = [f for f in check(idle, {"pv/worker.py": "def helper():\n    return 1\n"}).findings]
    assert finding.message.endswith("the import raises ImportError")


def test_each_console_script_is_a_start_up_of_its_own():
    """vllm-omni's `vllm-omni` command imports its server's modules, one of which imports what vLLM
    0.30 removed: the command stops there, which the plugin's own start-up never reaches."""
    provider = {"pv/worker.py": "def helper():\n    return 1\n"}
    consumer = {
        "pyproject.toml": PYPROJECT + '\n    [project.scripts]\n    plug-serve = "plug.cli.main:main"\n'
        '    tool = "other.main:main"\n',
        "plug/register.py": "def register():\n    return None\n",
        "plug/cli/__init__.py": "from plug.cli import serve\n",
        "plug/cli/serve.py": "from pv.worker import gone_serve\n",
        "plug/cli/main.py": "import sys\n\ndef main():\n    run()\n\ndef run():\n    from pv.worker import gone_run\n",
    }
    result = check(consumer, provider)
    serve, run = (one_of(result, f"pv.worker:gone_{name}") for name in ("serve", "run"))
    assert serve.message.endswith(
        "the import raises ImportError; it raises when the command `plug-serve` starts (plug/cli/serve.py:1): "
        "entry point console_scripts plug.cli.main:main → import of plug.cli.serve at plug/cli/__init__.py:1; "
        "what the command would do after it, and the errors there, are behind it"
    )
    assert run.message.endswith("the import raises ImportError")  # behind the first: told nothing
    # The command's own function, where its modules import what is there.
    fixed = {**consumer, "plug/cli/serve.py": "from pv.worker import helper\n"}
    run = one_of(check(fixed, provider), "pv.worker:gone_run")
    assert "it raises when the command `plug-serve` starts (plug/cli/main.py:7): entry point console_scripts " in (
        run.message
    )
    assert "main() " not in run.message and "run() at plug/cli/main.py:4" in run.message
    # The plugin's start-up meeting it first, another way, says so as well; a script of another
    # package is no command of its.
    plugin = {**consumer, "plug/register.py": "def register():\n    from plug.cli import serve\n"}
    serve = one_of(check(plugin, provider), "pv.worker:gone_serve")
    assert "; it raises at start-up (plug/cli/serve.py:1), in every process that loads the plugin" in serve.message
    assert "; it raises when the command `plug-serve` starts (plug/cli/serve.py:1)" in serve.message
    assert "`tool`" not in serve.message
    # The same way (both import the package, whose `__init__` imports it): said once, then briefly.
    package = {**consumer, "plug/__init__.py": "from plug.cli import serve\n"}
    serve = one_of(check(package, provider), "pv.worker:gone_serve")
    assert serve.message.endswith(
        "it raises at start-up (plug/cli/serve.py:1), in every process that loads the plugin: entry point "
        "pv.general_plugins plug.register:register → import of plug.cli at plug/__init__.py:1 → import of "
        "plug.cli.serve at plug/cli/__init__.py:1; what the plugin "
        "would do after it, and the errors there, are behind it; the command `plug-serve` meets it first the same "
        "way, from entry point console_scripts plug.cli.main:main"
    )


def test_a_check_of_a_consumer_that_did_not_change_walks_it_without_parsing(monkeypatch):
    """A bump of the provider: the consumer's outlines (`code_outline`) and imports come from the cache."""
    consumer = MemoryTree(
        dedent_files(
            {
                "plug/__init__.py": "",
                "pyproject.toml": PYPROJECT,
                "plug/register.py": "def register():\n    from plug.patches import install\n    install()\n",
                "plug/patches.py": "def install():\n    from pv.worker import gone_helper\n    return gone_helper\n",
            }
        ),
        "consumer",
    )
    parsed: list[str] = []
    real = engine.parse_limited
    monkeypatch.setattr(engine, "parse_limited", lambda data: (parsed.append(data.decode()), real(data))[1])
    read: list[str] = []  # the modules whose imports are read from their bytes
    real_imports = engine.imported_modules
    monkeypatch.setattr(
        engine, "imported_modules", lambda path, *rest: (read.append(path), real_imports(path, *rest))[1]
    )
    cache = AnalysisCache()
    told = []
    for version in ("1", "2"):
        provider = MemoryTree({"pv/__init__.py": "", "pv/worker.py": f"def helper():\n    return {version}\n"}, version)
        result = check_trees(consumer, provider, "pv", "plug", cache)
        told += [f.message for f in result.findings if "it raises at start-up (plug/patches.py:2)" in f.message]
        if version == "1":
            assert len(parsed) == 2 and read  # the modules on the way, once each
            parsed.clear()
            read.clear()
    assert len(told) == 2 and parsed == [] and read == []


def test_the_start_ups_walked_together_parse_each_module_once(monkeypatch):
    """The plugin's entry points and a console script walked at once read the modules once:
    both reach `plug/patches.py` through `plug/register.py`, the command by another of its
    functions (a part of the module the plugin's walk did not read)."""
    scripts = PYPROJECT + '\n    [project.scripts]\n    plug-cli = "plug.register:main"\n'
    consumer = MemoryTree(
        dedent_files(
            {
                "plug/__init__.py": "",
                "pyproject.toml": scripts,
                "plug/register.py": (
                    "def register():\n    from plug.patches import install\n    install()\n\n\n"
                    "def main():\n    register()\n"
                ),
                "plug/patches.py": "def install():\n    from pv.worker import gone_helper\n    return gone_helper\n",
            }
        ),
        "consumer",
    )
    parsed: list[str] = []
    real = engine.parse_limited
    monkeypatch.setattr(engine, "parse_limited", lambda data: (parsed.append(data.decode()), real(data))[1])
    provider = MemoryTree({"pv/__init__.py": "", "pv/worker.py": "def helper():\n    return 1\n"}, "provider")
    [finding] = check_trees(consumer, provider, "pv", "plug", AnalysisCache()).findings
    assert "it raises at start-up (plug/patches.py:2)" in finding.message
    assert "it raises when the command `plug-cli` starts (plug/patches.py:2)" in finding.message
    assert len(parsed) == 2  # plug/register.py and plug/patches.py, once each


def test_a_check_reads_the_consumer_s_entry_points_once(monkeypatch):
    """For the reach's roots and for the start-up walk alike."""
    import atompin.analysis.reach as reach

    read: list[str] = []
    real = reach._pyproject
    monkeypatch.setattr(reach, "_pyproject", lambda text, add: (read.append(text), real(text, add))[1])
    consumer = {
        "pyproject.toml": PYPROJECT,
        "plug/register.py": "def register():\n    from pv.worker import gone_helper\n",
    }
    [finding] = check(consumer, {"pv/worker.py": "def helper():\n    return 1\n"}).findings
    assert "it raises at start-up (plug/register.py:2)" in finding.message
    assert len(read) == 2  # one check per kind of provider tree (`check`), once each


def test_the_checks_say_which_sites_raise():
    """The checks that make an error say where its code raises: a read of a patch target that is
    gone does, an installer returning where its import ladder fails does not (its patches are
    never made, and start-up goes on)."""
    provider = {"pv/worker.py": "def helper():\n    return 1\n"}
    read = "def install():\n    import pv.worker as w\n    original = w.gone_helper\n    w.gone_helper = original\n"
    consumer = {
        "pyproject.toml": PYPROJECT,
        "plug/register.py": "def register():\n    from plug.patches import install\n    install()\n",
        "plug/patches.py": read,
    }
    [finding] = [f for f in check(consumer, provider).findings if f.severity.value == "error"]
    assert finding.rule is Rule.MISSING_PATCH_TARGET
    assert "; it raises at start-up (plug/patches.py:3), in every process that loads the plugin" in finding.message
    ladder = (
        "def install():\n    try:\n        from pv.moved import helper\n    except ImportError:\n        return\n"
        "    import pv.worker as w\n    w.helper = helper\n"
    )
    errors = [
        f for f in check({**consumer, "plug/patches.py": ladder}, provider).findings if f.severity.value == "error"
    ]
    assert errors and all("never installed" in f.message and "start-up" not in f.message for f in errors)
    # A handler that exits stops the process as a raise does: the later import is never reached.
    exits = (
        "import sys\n\n\ndef install():\n    try:\n        from pv.moved import helper\n    except ImportError:\n"
        "        sys.exit(1)\n    from pv.worker import gone_helper\n"
    )
    told = [f for f in check({**consumer, "plug/patches.py": exits}, provider).findings if "start-up" in f.message]
    assert [(f.symbol, "(plug/patches.py:6)" in f.message) for f in told] == [("pv.moved:helper", True)]


def test_an_exit_by_raise_is_said_to_come_first_and_in_a_try_body_leaves_the_rest_unknown():
    # `if bad: raise` stops the start-up with the consumer's own error where the test holds, and
    # lets the rest run where it fails (arctic-inference refuses a vLLM it was not written for).
    raises = {"plug/": "", "plug.register": "if BAD:\n    raise ValueError\nimport pv.gone\n"}
    assert stop(raises, [error("plug/register.py", 3)]) == (
        "plug/register.py:3 | entry point pv.general_plugins plug.register:register |  | "
        "raised first where `BAD` (plug/register.py:1)"
    )
    # A raise leaves the function and its callers: said also after the function returned, and
    # for the next entry point.
    nested = {
        "plug/": "",
        "plug.register": "def check():\n    if OLD:\n        raise RuntimeError\n"
        "def register():\n    check()\ndef other():\n    import pv.gone\n",
    }
    points = [("g", "plug.register:register"), ("g", "plug.register:other")]
    assert stop(nested, [error("plug/register.py", 7)], points) == (
        "plug/register.py:7 | entry point g plug.register:other |  | raised first where `OLD` (plug/register.py:2)"
    )
    # A test of what the caller passed checks the argument, not the environment: not said
    # (ATOM's `_set_framework_backbone("vllm")` raises only for a framework it does not know).
    argument = {
        "plug/": "",
        "plug.register": "def check(name):\n    if name not in KNOWN:\n        raise ValueError\n"
        "def register():\n    check('pv')\n    import pv.gone\n",
    }
    assert stop(argument, [error("plug/register.py", 6)]) == (
        "plug/register.py:6 | entry point pv.general_plugins plug.register:register | "
    )
    told = StartupStop(
        Site("plug/p.py", 2), ("entry point g plug.r:r",), ("`OFF` (plug/r.py:2)",), raised=("`OLD` (plug/r.py:4)",)
    )
    assert told.telling().startswith(
        "it raises at start-up (plug/p.py:2), in every process that loads the plugin, unless `OFF` (plug/r.py:2); "
        "where `OLD` (plug/r.py:4) holds, the plugin raises its own error there first: entry point g plug.r:r;"
    )
    # In a try body a handler may catch it (vllm-omni raises ImportError to skip a patch): what
    # follows in the body may not run, and code after the try does either way.
    caught = "try:\n    if SKIP:\n        raise ImportError\n    import pv.gone\nexcept ImportError:\n    pass\n"
    assert stop({"plug/": "", "plug.register": caught}, [error("plug/register.py", 4)]) == ""
    after = {"plug/": "", "plug.register": caught.replace("    import pv.gone\n", "") + "import pv.gone\n"}
    assert stop(after, [error("plug/register.py", 6)]) == (
        "plug/register.py:6 | entry point pv.general_plugins plug.register:register | "
    )


def test_a_return_in_a_with_or_try_body_ends_the_function_there():
    # What follows it runs only where something raised before it (a handler caught it): not on
    # the walked path, so an error there is not where the plugin stops.
    returns = (
        "def register():\n"
        "    try:\n"
        "        import plug.fast\n"
        "        return\n"
        "    except ImportError:\n"
        "        pass\n"
        "    import pv.gone\n"
    )
    modules = {"plug/": "", "plug.fast": "x = 1\n", "plug.register": returns}
    assert stop(modules, [error("plug/register.py", 7)]) == ""
    within = {**modules, "plug.register": "def register():\n    with LOCK:\n        return\n    import pv.gone\n"}
    assert stop(within, [error("plug/register.py", 4)]) == ""
    # A `finally` runs after the return; the caller's code runs on after the call.
    final = {
        **modules,
        "plug.register": "def register():\n    try:\n        return\n    finally:\n        import pv.gone\n",
    }
    assert stop(final, [error("plug/register.py", 5)]).startswith("plug/register.py:5 | ")
    caller = {
        **modules,
        "plug.register": "def register():\n    setup()\n    import pv.gone\n\ndef setup():\n    with LOCK:\n        return\n",
    }
    assert stop(caller, [error("plug/register.py", 3)]).startswith("plug/register.py:3 | ")


def test_the_else_of_a_try_whose_body_may_raise_on_a_test_is_not_followed():
    # `else` runs only where the body ran to its end, which `if SKIP: raise` leaves unknown; a
    # `try` without handlers passes it on to the one that catches it.
    body = "try:\n    if SKIP:\n        raise ImportError\nexcept ImportError:\n    pass\nelse:\n    import pv.gone\n"
    assert stop({"plug/": "", "plug.register": body}, [error("plug/register.py", 7)]) == ""
    nested = (
        "try:\n"
        "    try:\n"
        "        if SKIP:\n"
        "            raise ImportError\n"
        "    finally:\n"
        "        pass\n"
        "    import pv.gone\n"
        "except ImportError:\n"
        "    pass\n"
        "import pv.other_gone\n"
    )
    found = stop({"plug/": "", "plug.register": nested}, [error("plug/register.py", 7), error("plug/register.py", 10)])
    assert found == ""  # line 7 runs only where SKIP is false: which error comes first is not known
    found = stop({"plug/": "", "plug.register": nested}, [error("plug/register.py", 10)])
    assert found.startswith("plug/register.py:10 | ")  # after the handler, the code runs on either way


def test_a_flag_the_call_passes_decides_the_branch_it_guards():
    # vllm-ascend's entry point calls `adapt_patch(is_global_patch=True)`, which imports its
    # global patches under `if is_global_patch:` and its worker patches otherwise.
    utils = (
        "def adapt_patch(is_global_patch=False):\n"
        "    if is_global_patch:\n"
        "        from plug.patch import platform\n"
        "    else:\n"
        "        from plug.patch import worker\n"
    )

    def modules(call: str, utils: str = utils) -> dict[str, str]:
        return {
            "plug/": "",
            "plug.utils": utils,
            "plug.patch/": "",
            "plug.patch.platform": "import pv.gone\n",
            "plug.patch.worker": "import pv.other_gone\n",
            "plug.register": f"def register():\n    from plug.utils import adapt_patch\n    {call}\n",
        }

    errors = [error("plug/patch/platform.py", 1), error("plug/patch/worker.py", 1)]
    told = stop(modules("adapt_patch(is_global_patch=True)"), errors)
    assert told == (
        "plug/patch/platform.py:1 | entry point pv.general_plugins plug.register:register → adapt_patch() at "
        "plug/register.py:3 → import of plug.patch.platform at plug/utils.py:3 | "
    )
    assert stop(modules("adapt_patch(True)"), errors).startswith("plug/patch/platform.py:1 | ")
    assert stop(modules("adapt_patch()"), errors).startswith("plug/patch/worker.py:1 | ")  # its default
    assert stop(modules("adapt_patch(None)"), errors).startswith("plug/patch/worker.py:1 | ")
    # Not known: a value that is no constant, one passed through `**`, a parameter the function
    # binds again. The branch is followed where the test holds, and told so.
    where = " | where `is_global_patch` (plug/utils.py:{})"
    for unknown in ("adapt_patch(GLOBAL)", "adapt_patch(**{'is_global_patch': True})"):
        told = stop(modules(unknown), errors)
        assert told.startswith("plug/patch/platform.py:1 | ") and told.endswith(where.format(2))
    rebinds = utils.replace(
        "    if is_global_patch:", "    is_global_patch = not is_global_patch\n    if is_global_patch:"
    )
    told = stop(modules("adapt_patch(True)", rebinds), errors)
    assert told.startswith("plug/patch/platform.py:1 | ") and told.endswith(where.format(3))
    # `if not flag: return`, with the flag set: the function runs on, and no "unless" is said.
    exits = "def adapt_patch(is_global_patch=False):\n    if not is_global_patch:\n        return\n    import pv.gone\n"
    found = stop({**modules("adapt_patch(is_global_patch=True)", exits)}, [error("plug/utils.py", 4)])
    assert found.startswith("plug/utils.py:4 | ") and found.endswith(" | ")
    assert stop({**modules("adapt_patch()", exits)}, [error("plug/utils.py", 4)]) == ""


def test_walked_early_and_told_at_the_end():
    """The walk is made while the contact rules' process works, with the errors known then; the
    steps after only make errors warnings. An error it met that is one no longer is walked past."""
    trees = {
        name.rstrip("/"): (
            name.rstrip("/").replace(".", "/") + ("/__init__.py" if name.endswith("/") else ".py"),
            ast.parse(src),
        )
        for name, src in PLUG.items()
    }
    points = [("pv.general_plugins", "plug.register:register")]
    first, later = error("plug/kv.py", 6), error("plug/install.py", 13)
    walk = StartupWalk(points, lambda: (outlines_of(trees), imports_of(trees)), [first, later], raising([first, later]))
    told = walk.tell([first, later])
    assert told[0].message.startswith(RAISES + "; it raises at start-up (plug/kv.py:6)") and told[1] is later
    demoted = replace(first, severity=Severity.WARNING)
    told = walk.tell([demoted, later])
    assert told[0] is demoted and "it raises at start-up (plug/install.py:13)" in told[1].message
    # An error in code not followed leaves the order unknown; once a warning, the walk goes past it.
    looping = PLUG["plug.register"].replace(
        "    install.apply()\n", "    for name in X:\n        from pv.gone import other\n"
    )
    line = looping.splitlines().index("        from pv.gone import other") + 1
    trees["plug.register"] = ("plug/register.py", ast.parse(looping))
    unknown = error("plug/register.py", line)
    walk = StartupWalk(
        points, lambda: (outlines_of(trees), imports_of(trees)), [unknown, later], raising([unknown, later])
    )
    assert walk.tell([unknown, later]) == [unknown, later]
    told = walk.tell([replace(unknown, severity=Severity.WARNING), later])
    assert "it raises at start-up (plug/install.py:13)" in told[1].message


def test_a_module_is_read_when_a_package_its_imports_import_first_holds_an_error():
    # `import plug.sub.leaf` runs `plug/sub/__init__.py` first (tpu-inference's quantization
    # package imports its nvfp4 module there): `plug.mid` may reach its error, and is read.
    modules = {
        "plug/": "",
        "plug.top": "import plug.mid\nimport pv.gone\n",
        "plug.mid": "import plug.sub.leaf\n",
        "plug.sub/": "import pv.gone\n",
        "plug.sub.leaf": "x = 1\n",
    }
    found = stop(
        modules, [error("plug/sub/__init__.py", 1), error("plug/top.py", 2)], [("pv.general_plugins", "plug.top:f")]
    )
    assert found.startswith(
        "plug/sub/__init__.py:1 | entry point pv.general_plugins plug.top:f → import of plug.mid at "
    )


def test_a_long_early_exit_test_is_quoted_short():
    long_test = " and ".join(f"flag_{i}" for i in range(40))
    modules = {
        "plug/": "",
        "plug.register": f"def register():\n    if {long_test}:\n        return\n    import pv.gone\n",
    }
    unless = stop(modules, [error("plug/register.py", 4)]).split(" | ")[2]
    assert unless.startswith("`flag_0 and flag_1") and "…` (plug/register.py:2)" in unless and len(unless) < 110


def test_a_stop_where_a_test_holds_is_told_so_for_the_plugin_and_for_a_command():
    when = "`MODE` (plug/register.py:3)"
    plugin = StartupStop(Site("plug/p.py", 2), ("entry point g plug.r:r",), (), "", when)
    assert plugin.telling().startswith(
        "it raises at start-up (plug/p.py:2), in every process that loads the plugin where `MODE` "
        "(plug/register.py:3) holds: entry point g plug.r:r;"
    )
    command = replace(plugin, chain=("entry point console_scripts plug.cli:main",), command="plug-serve")
    assert command.telling().startswith(
        "it raises when the command `plug-serve` starts (plug/p.py:2), where `MODE` (plug/register.py:3) holds: "
    )
    # Met the same way as the plugin's stop, where the same test holds: said briefly; not where none is.
    same = replace(command, chain=("entry point console_scripts plug.cli:main", *plugin.chain[1:]))
    assert same.telling((plugin,)).startswith("the command `plug-serve` meets it first the same way")
    assert replace(same, when="").telling((plugin,)).startswith("it raises when the command")


def test_a_refusal_of_the_provider_s_version_is_the_first_stop_and_what_follows_is_behind_it():
    """arctic-inference 0.3 raises at start-up unless vLLM is the release its patches are written
    for, or a flag skips the check: at another release that raise is an error (`gate-flip`), the
    start-up's first stop, and an import gone that the patches meet after it is behind it."""
    consumer = {
        "pyproject.toml": PYPROJECT,
        "plug/register.py": (
            "import os\nimport pv\n\n\ndef register():\n"
            '    if not os.environ.get("SKIP") and pv.__version__ != "1.0":\n'
            '        raise RuntimeError("written for pv 1.0")\n'
            "    from plug.patches import install\n    install()\n"
        ),
        "plug/patches.py": "def install():\n    from pv.worker import gone_helper\n    return gone_helper\n",
    }
    worker = {"pv/worker.py": "def helper():\n    return 1\n", "pv/__init__.py": ""}
    written_for = {**worker, "pv/worker.py": "def gone_helper():\n    return 1\n"}
    c = MemoryTree(dedent_files({"plug/__init__.py": "", **consumer}), "consumer")
    p, b = MemoryTree(dedent_files(worker), "provider"), MemoryTree(dedent_files(written_for), "baseline")
    result = check_trees(
        c, p, "pv", "plug", baseline=b, baseline_label="1.0", provider_version="2.0", baseline_version="1.0"
    )
    [flip] = [f for f in result.findings if f.rule is Rule.GATE_FLIP]
    assert flip.severity is Severity.ERROR and [str(s) for s in flip.sites] == [
        "plug/register.py:6",
        "plug/register.py:7",
    ]
    assert "the consumer raises at plug/register.py:7 (it refuses this provider version), unless " in flip.message
    assert "; it raises at start-up (plug/register.py:7), in every process that loads the plugin where " in flip.message
    [gone] = [f for f in result.findings if f.rule is Rule.UNRESOLVED_IMPORT]
    assert gone.message.endswith("the import raises ImportError")  # behind the refusal
    # At the release it was written for, nothing is said.
    at_pin = check_trees(
        c, b, "pv", "plug", baseline=b, baseline_label="1.0", provider_version="1.0", baseline_version="1.0"
    )
    assert at_pin.findings == ()
