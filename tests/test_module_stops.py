"""A consumer module that raises at import where a gate or a test of the provider's names holds:
what follows the raise, and for a package's `__init__` every module under the package, never
runs there (sglang's in-tree kernels, which need an aiter whose `_to_ptr_global` takes `dtype`)."""

from __future__ import annotations

from conftest import brief

PROVIDER = {
    "pv/__init__.py": "from pv.version import __version__\n",
    "pv/version.py": '__version__ = "2.0.0"\n',
    "pv/utils.py": "def to_ptr(v):\n    return v\n",
}

PACKAGE_GATE = """
    import inspect

    from pv import utils as _u

    if "dtype" not in inspect.signature(_u.to_ptr).parameters:
        raise ImportError("needs a pv whose to_ptr takes dtype")

    from plug.kernels.decode import decode
"""

KERNEL = """
    from pv.utils import to_ptr

    def decode(v):
        return to_ptr(v, dtype="i32")
"""


def consumer(init: str = PACKAGE_GATE, kernel: str = KERNEL) -> dict[str, str]:
    return {
        "plug/__init__.py": "",
        "plug/kernels/__init__.py": init,
        "plug/kernels/decode.py": kernel,
    }


def test_a_package_whose_init_raises_here_imports_none_of_its_modules(run_check):
    [finding] = run_check(PROVIDER, consumer()).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert (
        "never runs at this provider: importing plug.kernels raises at plug/kernels/__init__.py:6, where its "
        "test `'dtype' not in inspect.signature(_u.to_ptr).parameters` holds" in finding.message
    )
    # Where the provider's function takes the parameter, the package imports, and the call is judged.
    taking = {**PROVIDER, "pv/utils.py": "def to_ptr(v, dtype=None, align=1):\n    return v\n"}
    bad = consumer(kernel=KERNEL.replace('dtype="i32"', 'dtype="i32", alignment=16'))
    assert brief(run_check(taking, bad)) == [("arity-drift", "error", "pv.utils:to_ptr", ["plug/kernels/decode.py:4"])]


def test_what_comes_before_the_raise_still_runs(run_check):
    # What comes before the raise still runs, and is judged.
    init = (
        PACKAGE_GATE.replace(
            "from pv import utils as _u\n", "from pv import utils as _u\n\n    _u.to_ptr(1, width=4)\n"
        )
        + "\n    _u.to_ptr(2, depth=8)\n"
    )
    found = sorted((f.severity.value, [str(s) for s in f.sites]) for f in run_check(PROVIDER, consumer(init)).findings)
    # (The call after the raise in the same file runs under the test failing: not judged here at all.)
    assert found == [("error", ["plug/kernels/__init__.py:5"]), ("warning", ["plug/kernels/decode.py:4"])]


def test_a_version_gate_stops_a_module_below_the_release_it_names(run_check):
    init = """
        from packaging.version import Version

        import pv

        if Version(pv.__version__) < Version("3.0"):
            raise ImportError("needs pv 3")

        from plug.kernels.decode import decode
    """
    [finding] = run_check(PROVIDER, consumer(init), version="2.0.0").findings
    assert finding.severity.value == "warning" and "importing plug.kernels raises at" in finding.message
    [finding] = run_check(PROVIDER, consumer(init), version="3.1.0").findings
    assert finding.severity.value == "error"


def test_a_test_not_of_the_provider_stops_nothing(run_check):
    init = PACKAGE_GATE.replace(
        'if "dtype" not in inspect.signature(_u.to_ptr).parameters:', 'if os.environ.get("PLUG_OFF"):'
    ).replace("import inspect\n", "import os\n")
    [finding] = run_check(PROVIDER, consumer(init)).findings
    assert finding.severity.value == "error"
    # Nor does a raise inside a function, which runs only when it is called.
    in_function = PACKAGE_GATE.replace('    if "dtype" not in', '    def check():\n        if "dtype" not in').replace(
        '        raise ImportError("needs', '            raise ImportError("needs'
    )
    [finding] = run_check(PROVIDER, consumer(in_function)).findings
    assert finding.severity.value == "error"


def test_a_stop_hides_the_rest_of_its_file_and_its_package_only():
    # Rules that do not read the conditions a use sits under (a class's overrides) meet the stop here.
    from atompin.analysis.module_stops import demote_stopped
    from atompin.analysis.usage import Condition, ConditionKind, ModuleStop
    from atompin.model import Finding, Rule, Severity, Site

    test = Condition(ConditionKind.GATE, Site("plug/kernels/__init__.py", 5), "pv_old()")
    stop = ModuleStop(Site("plug/kernels/__init__.py", 6), "plug.kernels", True, (test,))

    def error(*sites: Site) -> Finding:
        return Finding(Rule.OVERRIDE_DRIFT, Severity.ERROR, "pv:Base.step", sites, "cannot take flag=")

    def module_of(path: str) -> str:
        return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")

    found = demote_stopped(
        [
            error(Site("plug/kernels/__init__.py", 12)),  # past the raise
            error(Site("plug/kernels/__init__.py", 3)),  # before it
            error(Site("plug/kernels/deep/decode.py", 4)),  # under the package
            error(Site("plug/kernels_extra.py", 4)),  # a sibling whose name starts the same
            error(Site("plug/kernels/decode.py", 4), Site("plug/other.py", 9)),  # one site elsewhere
        ],
        [stop],
        module_of,
    )
    assert [f.severity.value for f in found] == ["warning", "error", "warning", "error", "error"]
    assert found[0].message.endswith(
        "(never runs at this provider: importing plug.kernels raises at plug/kernels/__init__.py:6, where its "
        "test `pv_old()` holds)"
    )
    # A plain module's stop hides only the rest of its own file.
    plain = ModuleStop(Site("plug/kernels.py", 6), "plug.kernels", False, (test,))
    found = demote_stopped([error(Site("plug/kernels.py", 9)), error(Site("plug/kernels/x.py", 1))], [plain], module_of)
    assert [f.severity.value for f in found] == ["warning", "error"]
