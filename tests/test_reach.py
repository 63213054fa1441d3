"""Reachability from the plugin's entry points: errors in consumer modules nothing reaches are warnings."""

from __future__ import annotations

import sys

import pytest

from atompin.analysis.reach import named_entry_points, provider_strings
from atompin.sources.git import GitTree
from atompin.sources.tree import FolderTree, MemoryTree
from atompin.testing import dedent_files, git_repo

PROVIDER = {"pv/__init__.py": '__version__ = "0.2.0"\n', "pv/utils.py": "def helper():\n    pass\n"}

PYPROJECT = """
    [project]
    name = "plug"

    [project.entry-points."pv.general_plugins"]
    plug = "plug.register:register"
"""

BROKEN = "from pv.utils import gone\n"


def plugin(**modules: str) -> dict[str, str]:
    files = {"pyproject.toml": PYPROJECT, "plug/__init__.py": ""}
    files["plug/register.py"] = """
        import plug.live

        def register():
            from plug import lazy
            return "plug.worker.Worker"
    """
    files.update({f"plug/{name}.py": text for name, text in modules.items()})
    return files


def severities(result) -> dict[str, str]:
    """Severity of each finding, by the module its one site is in."""
    return {f.sites[0].path: f.severity.value for f in result.findings}


def only_finding(run_check, files: dict[str, str], version: str):
    """The one finding of a check of `files` at provider `version`."""
    [finding] = run_check(PROVIDER, files, version=version).findings
    return finding


def broken(name: str) -> str:
    return f"from pv.utils import {name}\n"


def test_errors_only_in_unreached_modules_are_warnings(run_check):
    files = plugin(live=broken("a"), lazy=broken("b"), worker=broken("c"), dead=broken("d"))
    result = run_check(PROVIDER, files)
    # Reached: at module level, inside a function, by a dotted path handed over as a string.
    assert severities(result) == {
        "plug/live.py": "error",
        "plug/lazy.py": "error",
        "plug/worker.py": "error",
        "plug/dead.py": "warning",
    }
    [dead] = [f for f in result.findings if f.severity.value == "warning"]
    assert "in plug.dead, not reached from the plugin's entry points (pv.general_plugins)" in dead.message
    # One finding with a site in a reached module stays an error.
    shared = run_check(PROVIDER, plugin(live=BROKEN, dead=BROKEN))
    assert [(f.severity.value, len(f.sites)) for f in shared.findings] == [("error", 2)]


def test_a_module_imported_only_under_a_false_version_gate(run_check):
    files = plugin(
        live="""
            import pv

            if pv.__version__ < "0.1":
                import plug.old
        """,
        old=BROKEN,
    )
    blocked = only_finding(run_check, files, "0.2.0")
    assert blocked.severity.value == "warning"
    assert "imported only under `pv.__version__ < '0.1'` at plug/live.py:4, which cannot run" in blocked.message
    assert only_finding(run_check, files, "0.0.9").severity.value == "error"


def test_a_platform_a_plugin_declines_past_an_early_return_is_not_reached(run_check):
    """pace-vllm's shape: `register()` returns None on a provider outside the range it supports, so
    the platform it names (and the worker that names) never load there; the test is false past
    the early return, and the message says so."""
    files = plugin(platform=BROKEN)
    files["plug/register.py"] = """
        import pv
        from packaging.version import Version

        def _supported():
            return Version(pv.__version__) <= Version("0.1")

        def register():
            if not _supported():
                return None
            return "plug.platform.Platform"
    """
    blocked = only_finding(run_check, files, "0.2.0")
    assert blocked.severity.value == "warning"
    assert "imported only under `not _supported()` being false at plug/register.py:10" in blocked.message
    assert only_finding(run_check, files, "0.0.9").severity.value == "error"
    # The helper answering True and False under the test, as pace-vllm's does.
    branches = {
        **files,
        "plug/register.py": files["plug/register.py"].replace(
            '            return Version(pv.__version__) <= Version("0.1")\n',
            '            if Version(pv.__version__) <= Version("0.1"):\n                return True\n            return False\n',
        ),
    }
    assert "return True" in branches["plug/register.py"]
    assert only_finding(run_check, branches, "0.2.0").severity.value == "warning"
    assert only_finding(run_check, branches, "0.0.9").severity.value == "error"
    # True also on another path that is no version test: not a gate, the platform may load.
    runtime = {
        **branches,
        "plug/register.py": branches["plug/register.py"]
        .replace(
            "            return False\n",
            '            if os.environ.get("PLUG_FORCE"):\n                return True\n            return False\n',
        )
        .replace("        import pv\n", "        import os\n        import pv\n"),
    }
    assert only_finding(run_check, runtime, "0.2.0").severity.value == "error"
    # True only under a plain test as well, the answer blocking the platform: where the gate holds
    # the platform still loads unless the environment says otherwise, so its error stays one.
    inverted = {
        **files,
        "plug/register.py": """
            import os
            import pv
            from packaging.version import Version

            def _unsupported():
                if os.environ.get("PLUG_STRICT"):
                    if Version(pv.__version__) > Version("0.1"):
                        return True
                return False

            def register():
                if _unsupported():
                    return None
                return "plug.platform.Platform"
        """,
    }
    assert only_finding(run_check, inverted, "0.2.0").severity.value == "error"
    assert only_finding(run_check, inverted, "0.0.9").severity.value == "error"


PACE_REGISTER = """
    _RANGE = ">=0.1.0,<=0.1.9"

    def _check():
        try:
            import pv
        except ImportError as exc:
            return False, "(not installed)", f"{exc}"
        current = getattr(pv, "__version__", None) or "(unknown)"
        try:
            from packaging.specifiers import SpecifierSet
            from packaging.version import InvalidVersion, Version
        except ImportError as exc:
            return False, current, f"{exc}"
        try:
            version = Version(current)
        except InvalidVersion as exc:
            return False, current, f"{exc}"
        if SpecifierSet(_RANGE).contains(version, prereleases=True):
            return True, current, ""
        return False, current, "outside the supported range"

    def register():
        supported, current, reason = _check()
        if not supported:
            return None
        return "plug.platform.Platform"
"""


def test_a_platform_past_a_supported_range_check_is_not_reached_outside_it(run_check):
    """pace-vllm's own check: a helper answers (supported, version, reason), testing the running
    version against a PEP 440 range; `register()` returns None outside it."""
    files = {**plugin(platform=BROKEN), "plug/register.py": PACE_REGISTER}
    blocked = only_finding(run_check, files, "0.2.0")
    assert blocked.severity.value == "warning"
    assert "imported only under `not supported` being false" in blocked.message
    assert only_finding(run_check, files, "0.1.5").severity.value == "error"
    # Its answer depends on more than the range (an exception handler answers False too): the
    # range test itself is what flips between the two releases.
    flip = run_check(PROVIDER, files, version="0.2.0", baseline=PROVIDER, baseline_version="0.1.5").findings
    flips = {f.symbol for f in flip if f.rule.value == "gate-flip"}
    assert flips == {"SpecifierSet(_RANGE).contains(version, prereleases=True)"}


def test_a_module_imported_only_under_a_flag_a_version_gate_sets(run_check):
    # vllm-ascend's shape: a module flag set to opposite literals in the two branches of a gate,
    # then an import under the flag (in another module).
    files = plugin(
        flags="""
            import pv

            if pv.__version__ == "0.2.0":
                NEW_RUNNER = False
            else:
                NEW_RUNNER = True
        """,
        live="""
            from plug.flags import NEW_RUNNER

            if NEW_RUNNER:
                import plug.old
        """,
        old=BROKEN,
    )
    blocked = only_finding(run_check, files, "0.2.0")
    assert blocked.severity.value == "warning"
    assert "imported only under `NEW_RUNNER (= not pv.__version__ == '0.2.0')` at plug/live.py:4" in blocked.message
    assert only_finding(run_check, files, "0.3.0").severity.value == "error"
    # Set some other way in a branch as well: not a flag, the import may run.
    mixed = {**files, "plug/flags.py": files["plug/flags.py"].replace("NEW_RUNNER = True", "NEW_RUNNER = pv.probe()")}
    assert only_finding(run_check, mixed, "0.2.0").severity.value == "error"


def test_a_module_a_private_helper_names_for_the_version_passed_to_it(run_check):
    # vllm-beam-search's shape: a helper is passed the provider's version tuple and returns the
    # name of the module vendored for that release, which the caller imports by that name.
    files = plugin(
        live="""
            from importlib import import_module
            import pv

            def _select(version_tuple, flag):
                release = version_tuple[:3]
                if release == (0, 2, 0):
                    return ".v020"
                if flag and release == (0, 3, 0):
                    return ".v030"
                raise RuntimeError("unsupported")

            def load():
                return import_module(_select(pv.__version_tuple__, True), package=__package__)
        """,
        v020="",
        v030=BROKEN,
    )
    provider = {**PROVIDER, "pv/__init__.py": '__version__ = "0.2.0"\n__version_tuple__ = (0, 2, 0)\n'}
    [blocked] = run_check(provider, files, version="0.2.0").findings
    assert blocked.severity.value == "warning"
    assert "imported only under `flag and release == (0, 3, 0)` at plug/live.py:9, which cannot run" in blocked.message
    [live] = run_check(provider, files, version="0.3.0").findings
    assert live.severity.value == "error"
    # Also passed elsewhere (not only called with the version): the helper's gates stay open.
    passed = {
        **files,
        "plug/live.py": files["plug/live.py"].replace("def load", "CHOOSER = _select\n            def load"),
    }
    assert [f.severity.value for f in run_check(provider, passed, version="0.2.0").findings] == ["error"]
    # Imported by another module, whose calls are not looked at: the same.
    imported = {**files, "plug/other.py": "from plug.live import _select\n"}
    assert [f.severity.value for f in run_check(provider, imported, version="0.2.0").findings] == ["error"]


def test_a_computed_module_name_reaches_what_its_literal_prefix_names(run_check):
    files = plugin(
        live="""
            from importlib import import_module

            def backend(name):
                return import_module(f"plug.backends.{name}")
        """,
        **{
            "backends/__init__": "",
            "backends/npu": broken("a"),
            "backends/old/__init__": "",
            "backends/old/v0": broken("c"),
            "other": broken("b"),
        },
    )
    # The name's one computed part ends it: a module right below the prefix (and what that
    # imports), not one further down (xinference's `import_module(f"xinference.model.{kind}")` does
    # not import its legacy V0 scheduler, three levels below).
    assert severities(run_check(PROVIDER, files)) == {
        "plug/backends/npu.py": "error",
        "plug/backends/old/v0.py": "warning",
        "plug/other.py": "warning",
    }
    # What it spells further down (`f"plug.backends.{name}.v0"`, or "plug.backends." + name + ".v0").
    for spelled in ('f"plug.backends.{name}.v0"', '"plug.backends." + name + ".v0"'):
        deeper = files["plug/live.py"].replace('f"plug.backends.{name}"', spelled)
        found = severities(run_check(PROVIDER, {**files, "plug/live.py": deeper}))
        assert (found["plug/backends/old/v0.py"], found["plug/backends/npu.py"]) == ("error", "warning")


def test_a_package_importing_its_own_modules_by_iterating_its_path_reaches_those_alone(run_check):
    # xinference's `vllm/patches/__init__.py`: `for info in pkgutil.iter_modules(__path__):
    # importlib.import_module(f".{info.name}", __name__)`.
    files = plugin(
        live="import plug.patches\n",
        **{
            "patches/__init__": """
                import importlib
                import pkgutil

                for info in pkgutil.iter_modules(__path__):
                    importlib.import_module(f".{info.name}", __name__)
            """,
            "patches/one": broken("a"),
            "patches/old/__init__": "",
            "patches/old/deep": broken("c"),
            "other": broken("b"),
        },
    )
    assert severities(run_check(PROVIDER, files)) == {
        "plug/patches/one.py": "error",
        "plug/patches/old/deep.py": "warning",
        "plug/other.py": "warning",
    }
    # Walking the packages below: every module there; over another path: any module at all.
    walked = files["plug/patches/__init__.py"].replace("iter_modules", "walk_packages")
    found = severities(run_check(PROVIDER, {**files, "plug/patches/__init__.py": walked}))
    assert (found["plug/patches/old/deep.py"], found["plug/other.py"]) == ("error", "warning")
    elsewhere = files["plug/patches/__init__.py"].replace("(__path__)", "(paths)")
    assert set(severities(run_check(PROVIDER, {**files, "plug/patches/__init__.py": elsewhere})).values()) == {"error"}
    # Over another package's path, importing its modules (xinference's vendored mmcv walks
    # `torchvision.models.__path__`): none of the consumer's.
    other = """
        import pkgutil
        from importlib import import_module

        import torchvision.models

        for _, name, _ in pkgutil.walk_packages(torchvision.models.__path__):
            import_module(f"torchvision.models.{name}")
    """
    found = severities(run_check(PROVIDER, {**files, "plug/patches/__init__.py": other}))
    assert set(found.values()) == {"warning"}
    # A helper listing the folder it is handed, called with the package's own and, for each
    # subpackage, a folder below it (xinference's `import_submodules(__path__[0], __name__, ...)`).
    helper = """
        import importlib
        import os
        import pkgutil

        def import_submodules(package_path, package_name):
            for _, name, is_pkg in pkgutil.iter_modules([package_path]):
                importlib.import_module(f"{package_name}.{name}")
                if is_pkg:
                    below = os.path.join(package_path, name)
                    import_submodules(below, f"{package_name}.{name}")

        __path__ = [os.path.dirname(os.path.abspath(__file__))]
        import_submodules(__path__[0], __name__)
    """
    found = severities(run_check(PROVIDER, {**files, "plug/patches/__init__.py": helper}))
    assert (found["plug/patches/old/deep.py"], found["plug/other.py"]) == ("error", "warning")
    # Handed another folder as well: any module.
    more = helper.replace("__name__)\n", "__name__)\n        import_submodules(os.environ['PLUGINS'], 'plugins')\n")
    found = severities(run_check(PROVIDER, {**files, "plug/patches/__init__.py": more}))
    assert found["plug/other.py"] == "error"


def test_a_folder_of_the_consumer_put_on_the_import_path_reaches_every_module_below_it(run_check):
    """xinference puts its `thirdparty` folder on `sys.path` and imports `confuciustts.cli.inference`
    by that name: what the module doing it imports by a name the folder serves is reached from it."""
    loader = """
        import importlib
        import os
        import sys
        from pathlib import Path

        _VENDORED = os.path.abspath(os.path.join(os.path.dirname(__file__), "vendor/src"))

        def load_a():
            sys.path.insert(0, _VENDORED)
            return importlib.import_module("tool.run")
    """
    # A module the scan does not read (it names neither the provider nor a computed import).
    second = """
        import sys
        from pathlib import Path

        def load_b():
            folder = str(Path(__file__).resolve().parents[0] / "other")
            sys.path.append(folder)
            import thing
    """
    files = plugin(
        live=loader + "\n        import plug.second\n",
        second=second,
        **{
            "vendor/__init__": "",
            "vendor/src/tool/__init__": "",
            "vendor/src/tool/run": broken("a"),
            "other/thing": broken("b"),
            "other/unused": broken("d"),  # below the folder, and imported by no name
            "vendor/src/tool/cli": broken("e"),  # beside the module imported (its package's CLI)
            "elsewhere": broken("c"),
        },
    )
    assert severities(run_check(PROVIDER, files)) == {
        "plug/vendor/src/tool/run.py": "error",
        "plug/other/thing.py": "error",
        "plug/other/unused.py": "warning",
        "plug/vendor/src/tool/cli.py": "warning",
        "plug/elsewhere.py": "warning",
    }
    # The same from a file the scan reads (it names the provider) as from one it does not.
    scanned = {
        **files,
        "plug/live.py": files["plug/live.py"].replace("import sys\n", "import sys\n        import pv\n"),
    }
    assert "\nimport pv\n" in dedent_files(scanned)["plug/live.py"]
    assert severities(run_check(PROVIDER, scanned)) == severities(run_check(PROVIDER, files))
    # A folder not computed from the file's own place: nothing known, nothing reached.
    unknown = files["plug/second.py"].replace("sys.path.append(folder)", "sys.path.append(os.environ['DIR'])")
    assert severities(run_check(PROVIDER, {**files, "plug/second.py": unknown}))["plug/other/thing.py"] == "warning"


def test_a_module_path_spelled_by_an_f_string_reaches_every_module_below_its_literal_start(run_check):
    # vllm-omni registers its models with the provider's registry by
    # f"vllm_omni.model_executor.models.{folder}.{name}:{cls}", read from a table of its own.
    files = plugin(
        live="""
            from pv.utils import helper

            _MODELS = {"Npu": ("npu", "NpuModel")}

            def register(registry):
                for arch, (name, cls) in _MODELS.items():
                    registry.register_model(arch, f"plug.models.{name}:{cls}")
        """,
        **{"models/__init__": "", "models/npu": broken("a"), "other": broken("b")},
    )
    assert severities(run_check(PROVIDER, files)) == {"plug/models/npu.py": "error", "plug/other.py": "warning"}
    # An f-string that is no module path (a message) reaches nothing.
    message = files["plug/live.py"].replace('f"plug.models.{name}:{cls}"', 'f"plug.models {name} is {cls}"')
    assert severities(run_check(PROVIDER, {**files, "plug/live.py": message}))["plug/models/npu.py"] == "warning"


def test_a_consumer_module_the_provider_names_by_its_dotted_path_is_reached(run_check):
    # vLLM's own platform resolver returns "tpu_inference.platforms.tpu_platform.TpuPlatform":
    # tpu-inference declares only a `vllm.general_plugins` entry point.
    files = plugin(platform=broken("a"), other=broken("b"))
    resolver = 'def tpu_platform_plugin():\n    return "plug.platform.TpuPlatform"\n'
    assert severities(run_check({**PROVIDER, "pv/platforms.py": resolver}, files)) == {
        "plug/platform.py": "error",
        "plug/other.py": "warning",
    }
    assert severities(run_check(PROVIDER, files))["plug/platform.py"] == "warning"


def test_the_provider_strings_naming_consumer_modules_are_found_alike_in_a_folder_and_a_commit(tmp_path):
    """In a folder they are looked for with `git grep -P` in place; in a commit with `git grep -F`
    there (a pattern would read every blob into this process): the same names either way."""
    import git

    files = {f"pv/mod{i}.py": "X = 1\n" for i in range(70)}  # enough files for git grep to run
    files["pv/platforms.py"] = 'PLATFORMS = ["plug.platform.Tpu", \'plug.other:Cls\', "plugged.no", "plug"]\n'
    files["pv/__init__.py"] = ""
    expected = ["plug.other:Cls", "plug.platform.Tpu"]
    assert provider_strings(MemoryTree(dedent_files(files), "pv"), "pv", ["plug"]) == expected
    path = git_repo(tmp_path / "pv", [("v1", files)])
    assert provider_strings(FolderTree(path), "pv", ["plug"]) == expected
    repo = git.Repo(path)
    assert provider_strings(GitTree(repo, repo.head.commit.hexsha, "pv"), "pv", ["plug"]) == expected


def test_the_roots_are_read_from_the_consumer_tree_alone_and_only_for_a_plugin_scanned_whole():
    """Known before the scan (so the provider's strings are read with its identifiers only for a
    consumer whose reach is judged): a package not scanned whole has none; a consumer registering
    no entry point of the provider's is a library, whose roots the scan's imports give."""
    from atompin.analysis.reach import reach_roots

    tree = MemoryTree(dedent_files(plugin(live="", lazy="", __main__="")), "plug")
    roots = reach_roots(tree, ["plug"], "pv")
    assert roots is not None
    assert (roots.tops, roots.groups, roots.roots) == (
        ["plug"],
        ["pv.general_plugins"],
        ["plug.register", "plug.__main__"],
    )
    assert reach_roots(tree, ["plug.live"], "pv") is None
    library = reach_roots(tree, ["plug"], "other")
    assert library is not None and (library.groups, library.roots) == ([], [])
    no_entry_points = {k: v for k, v in plugin().items() if k != "pyproject.toml"}
    library = reach_roots(MemoryTree(dedent_files(no_entry_points), "plug"), ["plug"], "pv")
    assert library is not None and (library.tops, library.groups, library.roots) == (["plug"], [], [])


def library(**modules: str) -> dict[str, str]:
    """A consumer registering no entry point (an RL framework, a library): its modules."""
    return {"plug/__init__.py": "", **{f"plug/{name}.py": text for name, text in modules.items()}}


def test_a_library_module_imported_only_under_a_false_version_gate(run_check):
    """ROLL keeps a patch package per vLLM release (`roll/third_party/vllm/vllm_0_8_4`), imported
    only under `if Version("0.8.4") == Version(vllm.__version__):`: elsewhere it never runs, and
    its errors are warnings. A module nothing imports may be imported from outside: judged."""
    gated = """
        from packaging.version import Version
        import pv

        if Version("0.1.0") == Version(pv.__version__):
            import plug.old_patch
            EXECUTOR = "plug.old_exec.Executor"
        else:
            EXECUTOR = "plug.new_exec.Executor"
    """
    files = library(
        setup=gated,
        old_patch=broken("a"),
        old_exec=broken("b"),
        new_exec=broken("c"),
        tool=broken("d"),
        both=broken("e"),
    )
    files["plug/more.py"] = "import plug.both\n"
    files["plug/setup.py"] += "    import plug.both\n"
    assert severities(run_check(PROVIDER, files, version="0.2.0")) == {
        "plug/old_patch.py": "warning",  # imported only under the gate
        "plug/old_exec.py": "warning",  # named only under it
        "plug/new_exec.py": "error",
        "plug/tool.py": "error",  # nothing imports it: a user may
        "plug/both.py": "error",  # imported under the gate and elsewhere
    }
    blocked = next(
        f for f in run_check(PROVIDER, files, version="0.2.0").findings if f.sites[0].path == "plug/old_patch.py"
    )
    assert "imported only under `Version('0.1.0') == Version(pv.__version__)` at plug/setup.py:5" in blocked.message
    at_0_1 = severities(run_check(PROVIDER, files, version="0.1.0"))
    assert at_0_1["plug/old_patch.py"] == at_0_1["plug/old_exec.py"] == "error"
    # Part of a package, the rest of which may import it: not judged.
    sub = {f"outer/{k}": v for k, v in files.items()} | {"outer/__init__.py": ""}
    assert (
        "warning" not in severities(run_check(PROVIDER, sub, consumer_package="outer.plug", version="0.2.0")).values()
    )


def test_a_library_s_test_modules_are_no_roots(run_check):
    """xinference ships pytest modules in its package (`xavier/test/test_legacy_cache_salt.py`
    imports its V0 scheduler, which imports vLLM's `vllm.core`, after skipping on vLLM >= 0.11):
    nothing of the library imports them, and no user does. What only they import is a warning."""
    files = library(setup=broken("a"), legacy=broken("b"), legacy_helper=broken("c"), shared=broken("d"))
    files["plug/legacy.py"] += "import plug.legacy_helper\n"
    files["plug/setup.py"] += "import plug.shared\n"
    files["plug/test/__init__.py"] = ""
    files["plug/test/conftest.py"] = broken("e")
    files["plug/test/test_legacy.py"] = "import plug.legacy\nimport plug.shared\n" + broken("f")
    files["plug/tests_of_mine.py"] = broken("g")  # not a test module: a user may import it
    result = run_check(PROVIDER, files, version="0.2.0")
    assert severities(result) == {
        "plug/setup.py": "error",
        "plug/legacy.py": "warning",
        "plug/legacy_helper.py": "warning",
        "plug/shared.py": "error",  # the library imports it too
        "plug/test/conftest.py": "warning",
        "plug/test/test_legacy.py": "warning",
        "plug/tests_of_mine.py": "error",
    }
    legacy = next(f for f in result.findings if f.sites[0].path == "plug/legacy.py")
    assert "imported only by the package's test modules (plug.test.test_legacy)" in legacy.message
    test = next(f for f in result.findings if f.sites[0].path == "plug/test/test_legacy.py")
    assert "a test module" in test.message


def test_the_provider_strings_are_searched_again_only_in_the_files_that_changed(monkeypatch):
    """A bump changes a few of the provider's files: the search of the last commit is kept by
    each file's stamp, and only the files that changed are read again."""
    from atompin.analysis.cache import AnalysisCache

    searched: list[list[str]] = []
    real = MemoryTree.files_containing
    monkeypatch.setattr(MemoryTree, "files_containing", lambda self, p, w: searched.append(list(p)) or real(self, p, w))
    files = {"pv/__init__.py": "", "pv/a.py": 'A = "plug.a.Cls"\n', "pv/b.py": "B = 1\n", "pv/c.py": "C = 2\n"}
    cache = AnalysisCache()
    assert provider_strings(MemoryTree(dedent_files(files), "pv"), "pv", ["plug"], cache) == ["plug.a.Cls"]
    assert searched == [sorted(files)]
    bumped = {**files, "pv/c.py": 'C = "plug.c"\n'}
    assert provider_strings(MemoryTree(dedent_files(bumped), "pv"), "pv", ["plug"], cache) == ["plug.a.Cls", "plug.c"]
    assert searched[1:] == [["pv/c.py"]]
    # Nothing changed: nothing is searched; a file gone takes its names with it.
    assert provider_strings(MemoryTree(dedent_files(bumped), "pv"), "pv", ["plug"], cache) == ["plug.a.Cls", "plug.c"]
    assert len(searched) == 2
    gone = {k: v for k, v in bumped.items() if k != "pv/a.py"}
    assert provider_strings(MemoryTree(dedent_files(gone), "pv"), "pv", ["plug"], cache) == ["plug.c"]


def test_the_provider_strings_recorded_while_its_identifiers_are_read_are_not_searched_again(monkeypatch):
    """A commit's identifiers are read from every blob (the name search): the names each file
    writes under the consumer's tops are recorded then, and the strings search takes them instead
    of reading every blob a second time. A file read without them is still searched."""
    from atompin.analysis import name_sites
    from atompin.analysis.cache import AnalysisCache
    from atompin.analysis.reach import strings_reader

    def read(cache: AnalysisCache, tops: list[str]) -> None:
        name_sites._LAST_LOADED.clear()  # as in a new process: every file is read
        search = name_sites.NameSearch(tree, "pv", cache)
        search.also_read = strings_reader(tree, tops)
        search.load()

    searched: list[list[str]] = []
    real = MemoryTree.files_containing
    monkeypatch.setattr(MemoryTree, "files_containing", lambda self, p, w: searched.append(list(p)) or real(self, p, w))
    files = {
        "pv/__init__.py": "",
        "pv/a.py": 'A = ["plug.a.Cls", \'plug.b:f\', "plugged.x", "other.plug.y"]\n',
        "pv/b.py": "B = plug.c  # not a string\n",
        "pv/c.py": "C = 2\n",
    }
    tree = MemoryTree(dedent_files(files), "pv")
    cache = AnalysisCache()
    read(cache, ["plug"])
    assert provider_strings(tree, "pv", ["plug"], cache) == ["plug.a.Cls", "plug.b:f"]
    assert searched == []
    # Recorded for other tops: searched as before, with the same answer.
    other = AnalysisCache()
    read(other, ["plugged"])
    assert provider_strings(tree, "pv", ["plug"], other) == ["plug.a.Cls", "plug.b:f"]
    assert searched == [sorted(files)]
    # A file whose record is missing (a share of the reading lost with its process) is searched.
    lost = AnalysisCache()
    read(lost, ["plug"])
    for key in [key for key in lost._entries if key.endswith(f"pv/a.py:{tree.stamp('pv/a.py')}")]:
        del lost._entries[key]
    assert provider_strings(tree, "pv", ["plug"], lost) == ["plug.a.Cls", "plug.b:f"]
    assert searched[1:] == [["pv/a.py"]]


HOOK = """
    import builtins
    import importlib

    _import = builtins.__import__

    def _hooked(name, *args, **kwargs):
        served = {"pv.sampler": "plug.sampler", "pv.utils": "plug.own_utils"}
        if name in served:
            importlib.import_module(served[name])
        return _import(name, *args, **kwargs)

    builtins.__import__ = _hooked
"""


def test_a_module_an_import_hook_serves_in_place_of_a_provider_module(run_check):
    # vllm-kunlun's hook maps provider module names to its own modules: one is imported only when
    # the provider's is, so only when the provider has it or a reached module imports it.
    files = plugin(live=HOOK, sampler=broken("a"), own_utils=broken("b"))
    result = run_check(PROVIDER, files)
    assert severities(result) == {"plug/sampler.py": "warning", "plug/own_utils.py": "error"}
    [hooked] = [f for f in result.findings if f.severity.value == "warning"]
    assert (
        "(in plug.sampler, served only by an import hook in place of pv.sampler (its map at plug/live.py:7), "
        "a module this provider does not have and that no module the plugin's entry points reach imports)"
    ) in hooked.message
    # A reached module imports it (the hook serves the import): reached, also from a submodule's import.
    for importer in ("import pv.sampler\n", "from pv.sampler import fast\n", "from pv import sampler\n"):
        imported = {**files, "plug/lazy.py": importer}
        assert severities(run_check(PROVIDER, imported))["plug/sampler.py"] == "error", importer
    # Only an unreached module imports it: still not reached.
    unreached = {**files, "plug/dead.py": "import pv.sampler\n"}
    assert severities(run_check(PROVIDER, unreached))["plug/sampler.py"] == "warning"
    # The provider has it (it may import it itself): reached.
    provider = {**PROVIDER, "pv/sampler.py": "def fast():\n    pass\n"}
    assert severities(run_check(provider, files))["plug/sampler.py"] == "error"


def test_no_demotion_without_plugin_entry_points_or_for_part_of_a_package(run_check):
    files = plugin(dead=BROKEN)
    scripts = {**files, "pyproject.toml": '[project]\nname = "plug"\n[project.scripts]\nplug = "plug.register:main"\n'}
    assert run_check(PROVIDER, scripts).findings[0].severity.value == "error"
    sub = {f"outer/{k}" if k.startswith("plug/") else k: v for k, v in files.items()}
    sub["outer/__init__.py"] = ""
    assert run_check(PROVIDER, sub, consumer_package="outer.plug").findings[0].severity.value == "error"


def entry_points(tree: MemoryTree) -> dict[str, list[str]]:
    """group -> ["module:attr", ...]: what `named_entry_points` reads, without the names."""
    return {group: [value for _, value in items] for group, items in named_entry_points(tree).items()}


@pytest.mark.parametrize("mark", ["", "\ufeff"], ids=["plain", "byte-order-mark"])
def test_entry_points_from_wheel_metadata_setup_cfg_and_setup_py(mark: str):
    tree = MemoryTree(
        {
            "plug-1.0.dist-info/entry_points.txt": mark + "[pv.platform_plugins]\nplug = plug:register\n",
            "setup.cfg": mark + "[options.entry_points]\nconsole_scripts =\n    plug-cli = plug.cli:main\n",
            "setup.py": mark
            + "from setuptools import setup\nsetup(entry_points={'pv.general_plugins': ['x = plug.x:go']})\n",
        }
    )
    assert entry_points(tree) == {
        "pv.platform_plugins": ["plug:register"],
        "console_scripts": ["plug.cli:main"],
        "pv.general_plugins": ["plug.x:go"],
    }
    # With their names: a console script's is its command.
    assert named_entry_points(tree) == {
        "pv.platform_plugins": [("plug", "plug:register")],
        "console_scripts": [("plug-cli", "plug.cli:main")],
        "pv.general_plugins": [("x", "plug.x:go")],
    }


GUI_PLUGIN = """\
[project]
name = "plug"
[project.entry-points."pv.platform_plugins"]
plug = "plug.register:register"
[project.gui-scripts]
plug-gui = "plug.gui:main"
"""


@pytest.mark.parametrize("standard_library", [True, False])
def test_entry_points_from_pyproject_with_or_without_the_standard_librarys_toml_reader(monkeypatch, standard_library):
    if not standard_library:  # Python 3.10 has no tomllib: tomlkit reads it
        monkeypatch.setitem(sys.modules, "tomllib", None)
    assert entry_points(MemoryTree({"pyproject.toml": GUI_PLUGIN})) == {
        "pv.platform_plugins": ["plug.register:register"],
        "console_scripts": [],
        "console_gui-scripts": ["plug.gui:main"],
    }
    assert named_entry_points(MemoryTree({"pyproject.toml": GUI_PLUGIN}))["console_gui-scripts"] == [
        ("plug-gui", "plug.gui:main")
    ]
    assert entry_points(MemoryTree({"pyproject.toml": "\ufeff" + GUI_PLUGIN}))["pv.platform_plugins"] == [
        "plug.register:register"
    ]
    assert entry_points(MemoryTree({"pyproject.toml": "[project\nname = 1"})) == {}


def test_a_module_path_kept_in_a_constant_is_named_where_the_constant_is_read(run_check):
    """xinference registers its vendored NaviDC-OCR model by `MODEL_CLASS = "...qwen2_5_vl:..."`,
    which its `_get_model_class()` returns only below vLLM 0.23: the module is named where the
    constant is read, under what holds there, not where it is bound."""
    registration = """
        from importlib.metadata import version

        from packaging.version import Version

        OLD_MODEL = "plug.old_model:Model"
        NEW_MODEL = "plug.new_model:Model"

        def _model_class():
            if Version(version("pv")) >= Version("0.2.0"):
                return NEW_MODEL
            return OLD_MODEL

        def register(registry):
            registry.register_model("Arch", _model_class())
    """
    files = plugin(live=registration, old_model=broken("a"), new_model=broken("b"))
    found = severities(run_check(PROVIDER, files, version="0.2.0"))
    assert (found["plug/old_model.py"], found["plug/new_model.py"]) == ("warning", "error")
    found = severities(run_check(PROVIDER, files, version="0.1.0"))
    assert found["plug/old_model.py"] == "error"
    # As xinference writes it: the reader imported under another name, in a try whose handler lets
    # the function go on only where the version cannot be read (never where it is checked).
    guarded = registration.replace("import version\n", "import PackageNotFoundError, version as pv_version\n")
    guarded = guarded.replace(
        "from packaging.version import Version", "from packaging.version import InvalidVersion, Version"
    )
    guarded = guarded.replace(
        """            if Version(version("pv")) >= Version("0.2.0"):
                return NEW_MODEL
""",
        """            try:
                if Version(pv_version("pv")) >= Version("0.2.0"):
                    return NEW_MODEL
            except (PackageNotFoundError, InvalidVersion):
                pass
""",
    )
    assert "pv_version(" in guarded and "except (" in guarded
    found = severities(run_check(PROVIDER, {**files, "plug/live.py": guarded}, version="0.2.0"))
    assert (found["plug/old_model.py"], found["plug/new_model.py"]) == ("warning", "error")
    # Read by another module too (imported there): named where it is bound, as before.
    files["plug/other.py"] = "from plug.live import OLD_MODEL\n"
    assert severities(run_check(PROVIDER, files, version="0.2.0"))["plug/old_model.py"] == "error"


# vllm-ascend 0.24.0rc1 imports its V2 runner's patches only where vLLM is not 0.24.0; one of them
# installs a replacement that cannot take the call vLLM's sampler makes. At 0.25.1 the patch runs
# for the first time: that 0.24.0 made the same call says nothing, the patch was not there.
SAMPLER = {
    **PROVIDER,
    "pv/sampler.py": """
        def topk(logits, k, extra=None):
            return logits

        def sample(logits):
            return topk(logits, 1, extra=2)
    """,
}


def test_a_patch_in_a_module_a_gate_kept_from_loading_at_the_baseline_is_judged_as_new(run_check):
    files = plugin(
        live="""
            import pv

            if pv.__version__ != "0.1.0":
                import plug.v2
        """,
        v2="""
            import pv.sampler

            def topk(logits, k):
                return logits

            pv.sampler.topk = topk
        """,
    )
    baseline = {**SAMPLER, "pv/__init__.py": '__version__ = "0.1.0"\n'}
    result = run_check(SAMPLER, files, version="0.2.0", baseline=baseline, baseline_version="0.1.0")
    [finding] = [f for f in result.findings if f.rule.value == "arity-drift"]
    assert finding.severity.value == "error" and "at the baseline too" not in finding.message
    # Loaded at the baseline too, the same call there is the consumer's known state: a warning.
    always = {**files, "plug/live.py": "import plug.v2\n"}
    result = run_check(SAMPLER, always, version="0.2.0", baseline=baseline, baseline_version="0.1.0")
    [finding] = [f for f in result.findings if f.rule.value == "arity-drift"]
    assert finding.severity.value == "warning" and "at the baseline too" in finding.message


PATCHING = "import pv.utils\n\ndef mine():\n    pass\n\nif hasattr(pv.utils, 'gone'):\n    pv.utils.gone = mine\n"


@pytest.mark.parametrize(
    "module, rule, excuse",
    [
        (BROKEN, "unresolved-import", "at the baseline too"),  # an import of a name the baseline lacked too
        (PATCHING, "missing-patch-target", "the same at the baseline"),  # a patch of one
    ],
)
def test_missing_at_the_baseline_too_excuses_nothing_in_a_module_it_did_not_load(run_check, module, rule, excuse):
    files = plugin(live='import pv\n\nif pv.__version__ != "0.1.0":\n    import plug.v2\n', v2=module)
    baseline = {**PROVIDER, "pv/__init__.py": '__version__ = "0.1.0"\n'}
    for live, severity, excused in ((files["plug/live.py"], "error", False), ("import plug.v2\n", "warning", True)):
        result = run_check(
            PROVIDER, {**files, "plug/live.py": live}, version="0.2.0", baseline=baseline, baseline_version="0.1.0"
        )
        [finding] = [f for f in result.findings if f.rule.value == rule]
        assert (finding.severity.value, excuse in finding.message) == (severity, excused)
