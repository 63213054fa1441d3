"""Version gates: code that branches on the provider's version, evaluated against its known version.

Each form has the branch that cannot run at the pin (skipped, like TYPE_CHECKING code) and the
branch that can (checked: a break there is still an error).
"""

from __future__ import annotations

import pytest
from conftest import brief

from atompin.analysis import gates
from atompin.analysis.gates import Gate, GateOp, VersionForm

PROVIDER = {
    "pv/__init__.py": "from pv.version import __version__, __version_tuple__\n",
    "pv/version.py": '__version__ = "0.25.1"\n__version_tuple__ = (0, 25, 1)\n',
    "pv/layers/__init__.py": "",
    "pv/layers/new_attn.py": "def decode(x):\n    return x\n",
}

# The helper vllm-ascend uses: an exact version, with an environment override.
HELPER = """
    import os
    from packaging.version import Version

    def pv_version_is(target):
        if os.environ.get("PV_VERSION") is not None:
            version = os.environ["PV_VERSION"]
        else:
            import pv
            version = pv.__version__
        return Version(version) == Version(target)
"""


def consumer(source: str, **more: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/utils.py": HELPER, "plug/mod.py": source, **more}


LADDER = """
    from plug.utils import pv_version_is

    if pv_version_is("0.25.0"):
        from pv.layers.old_attn import decode
    else:
        from pv.layers.new_attn import decode
"""


def test_an_exact_version_gate_skips_the_branch_that_cannot_run(run_check):
    # At 0.25.1 the 0.25.0 branch is dead: its import of a module gone since is not a finding.
    assert run_check(PROVIDER, consumer(LADDER), version="0.25.1").findings == ()
    # At 0.25.0 that branch is the live one, and it is checked.
    at_025 = run_check(PROVIDER, consumer(LADDER), version="0.25.0")
    assert brief(at_025) == [("unresolved-import", "error", "pv.layers.old_attn:decode", ["plug/mod.py:4"])]


GATED_DEFS = """
    from plug.utils import pv_version_is
    from pv.layers.new_attn import decode

    if pv_version_is("0.25.0"):
        def run(x):
            return decode(x, 2)
    else:
        def run(x):
            return decode(x)

    class Runner:
        if pv_version_is("0.25.0"):
            def step(self, x):
                return decode(x, 2)
"""


def test_a_function_defined_in_a_dead_branch_is_not_checked_either(run_check):
    # vllm-ascend defines its V2 runner's methods for vLLM main in the other branch of
    # `if vllm_version_is("0.27.1"):` (in a class body): at 0.27.1 their bodies never run.
    assert run_check(PROVIDER, consumer(GATED_DEFS), version="0.25.1").findings == ()
    # Where the branch is live, the bodies are checked: the calls pass one argument too many.
    at_025 = run_check(PROVIDER, consumer(GATED_DEFS), version="0.25.0")
    assert [(f.rule.value, f.severity.value) for f in at_025.findings] == [("arity-drift", "error")]
    assert {str(site) for f in at_025.findings for site in f.sites} == {"plug/mod.py:6", "plug/mod.py:14"}


PER_RELEASE_REPLACEMENT = """
    import pv.layers.new_attn
    from plug.utils import pv_version_is

    if pv_version_is("0.25.0"):
        def decode(x, scale):
            return x
    else:
        def decode(x):
            return x

    pv.layers.new_attn.decode = decode
"""


def test_a_replacement_defined_once_per_release_is_judged_by_the_definition_that_runs(run_check):
    # vllm-ascend defines `get_kv_cache_coordinator` once per vLLM release under version gates:
    # the patch installs the definition of the release checked, not the first one written.
    assert run_check(PROVIDER, consumer(PER_RELEASE_REPLACEMENT), version="0.25.1").findings == ()
    at_025 = run_check(PROVIDER, consumer(PER_RELEASE_REPLACEMENT), version="0.25.0")
    [finding] = at_025.findings  # the 0.25.0 definition needs a `scale` the original's callers never pass
    assert finding.rule.value == "arity-drift" and "scale" in finding.message


# The same replacement chosen by a `hasattr` test of the provider, and by its negation.
_BY_FEATURE = PER_RELEASE_REPLACEMENT.replace("    from plug.utils import pv_version_is\n", "")
PER_FEATURE_REPLACEMENT = {
    "hasattr": _BY_FEATURE.replace('pv_version_is("0.25.0")', 'hasattr(pv.layers.new_attn, "decode_v2")'),
    "not hasattr": _BY_FEATURE.replace('pv_version_is("0.25.0")', 'not hasattr(pv.layers.new_attn, "decode_v2")')
    .replace("def decode(x, scale):", "def decode(TMP):")
    .replace("def decode(x):", "def decode(x, scale):")
    .replace("def decode(TMP):", "def decode(x):"),
}
assert all("decode_v2" in source for source in PER_FEATURE_REPLACEMENT.values())


@pytest.mark.parametrize("test", sorted(PER_FEATURE_REPLACEMENT))
def test_a_replacement_defined_once_per_provider_feature_is_judged_by_the_definition_made(run_check, test):
    # The same, chosen by a `hasattr` test: where the provider lacks the name tested, the other
    # branch's definition is the one installed (it was judged by the first written, and the
    # negated test made the check fail on an attribute error).
    source = PER_FEATURE_REPLACEMENT[test]
    assert run_check(PROVIDER, consumer(source)).findings == ()
    newer = {**PROVIDER, "pv/layers/new_attn.py": PROVIDER["pv/layers/new_attn.py"] + "decode_v2 = decode\n"}
    [finding] = run_check(newer, consumer(source)).findings
    assert finding.rule.value == "arity-drift" and "scale" in finding.message


def test_the_live_branch_of_a_gate_is_still_checked(run_check):
    broken = LADDER.replace("new_attn import decode", "new_attn import gone")
    assert brief(run_check(PROVIDER, consumer(broken), version="0.25.1")) == [
        ("unresolved-import", "error", "pv.layers.new_attn:gone", ["plug/mod.py:6"])
    ]


def test_a_name_bound_in_both_branches_keeps_both_ways(run_check):
    src = LADDER + "\n    def run(x):\n        return decode(x)\n"
    assert run_check(PROVIDER, consumer(src), version="0.25.1").findings == ()


@pytest.mark.parametrize(
    "test",
    [
        'not pv_version_is("0.25.1")',
        'Version(pv.__version__) < Version("0.25")',
        'Version(importlib.metadata.version("pv")) < Version("0.25")',
        "pv.__version_tuple__ < (0, 25)",
        "pv.version.__version_tuple__[:2] == (0, 24)",
        'pv.__version__.startswith("0.24")',
        'pv.__version__ in ("0.24.0", "0.24.1")',
        'FLAG and os.environ.get("X")',
    ],
)
def test_gate_forms_evaluated_statically(run_check, test):
    src = f"""
        import importlib.metadata
        import os
        import pv
        import pv.version
        from packaging.version import Version
        from plug.utils import pv_version_is

        FLAG = not pv_version_is("0.25.1")

        if {test}:
            from pv.layers.gone import thing
    """
    assert run_check(PROVIDER, consumer(src), version="0.25.1").findings == ()
    [finding] = run_check(PROVIDER, consumer(src), version="0.24.0").findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")


def test_a_conditional_expression_and_an_assert_are_gates(run_check):
    src = """
        import pv
        from plug.utils import pv_version_is

        decode = pv.layers.old_attn.decode if pv_version_is("0.25.0") else pv.layers.new_attn.decode

        assert pv.__version_tuple__ < (0, 26), "delete this module at 0.26"
        from pv.layers.new_attn import gone
    """
    at_0251 = run_check(PROVIDER, consumer(src), version="0.25.1")
    assert brief(at_0251) == [("unresolved-import", "error", "pv.layers.new_attn:gone", ["plug/mod.py:7"])]
    # At 0.26.0 the assert fails: importing the module raises, and what follows it never runs.
    provider = {**PROVIDER, "pv/layers/old_attn.py": "def decode(x):\n    return x\n"}
    [tripwire] = run_check(provider, consumer(src), version="0.26.0").findings
    assert (tripwire.rule.value, tripwire.severity.value, tripwire.symbol, str(tripwire.sites[0])) == (
        "version-assert",
        "error",
        "pv.__version_tuple__ < (0, 26)",
        "plug/mod.py:6",
    )
    assert "importing plug.mod raises AssertionError" in tripwire.message


def test_a_tripwire_on_the_installed_distributions_version(run_check):
    src = """
        from importlib.metadata import version
        from packaging.version import Version

        assert Version(version("pv")) < Version("0.31.0"), "drop this patch at 0.31"
    """
    assert run_check(PROVIDER, consumer(src), version="0.30.1").findings == ()
    assert [f.rule.value for f in run_check(PROVIDER, consumer(src), version="0.31.0").findings] == ["version-assert"]
    # An assert inside a function runs only when it is called: not a tripwire at import.
    inside = "import pv\n\ndef check():\n    assert pv.__version_tuple__ < (0, 26)\n"
    assert run_check(PROVIDER, consumer(inside), version="0.26.0").findings == ()


def test_an_undecidable_gate_makes_errors_under_it_warnings_that_name_it(run_check):
    src = """
        import pv

        if pv.__version__.split(".")[1] == "24":
            from pv.layers.gone import thing
    """
    [finding] = run_check(PROVIDER, consumer(src), version="0.25.1").findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "warning")
    assert "under the version gate `pv.__version__.split('.')[1] == '24'` at plug/mod.py:3" in finding.message
    # Without a provider version no gate can be decided: the same holds for every form.
    [unknown] = run_check(PROVIDER, consumer(LADDER)).findings
    assert unknown.severity.value == "warning" and "no provider version known" in unknown.message


def test_a_runtime_condition_beside_a_gate_is_not_an_undecided_gate(run_check):
    src = """
        import os
        from plug.utils import pv_version_is

        if os.environ.get("USE_OLD") and not pv_version_is("0.24.0"):
            from pv.layers.gone import thing
    """
    # The version part holds at 0.25.1; the rest is ordinary runtime state: an error as ever.
    [finding] = run_check(PROVIDER, consumer(src), version="0.25.1").findings
    assert finding.severity.value == "error"


def test_a_flag_imported_from_another_module_and_an_early_return(run_check):
    flags = {"plug/flags.py": 'from plug.utils import pv_version_is\nNEW_LAYOUT = not pv_version_is("0.25.0")\n'}
    src = """
        from plug.flags import NEW_LAYOUT

        def install():
            if NEW_LAYOUT:
                return
            from pv.layers.old_attn import decode
            return decode
    """
    assert run_check(PROVIDER, consumer(src, **flags), version="0.25.1").findings == ()
    assert [f.severity.value for f in run_check(PROVIDER, consumer(src, **flags), version="0.25.0").findings] == [
        "error"
    ]


def test_an_exit_under_a_gate_ends_the_block_like_a_return(run_check):
    src = """
        import sys
        from plug.utils import pv_version_is

        def install():
            if not pv_version_is("0.25.0"):
                print("needs 0.25.0")
                sys.exit(1)
            from pv.layers.old_attn import decode
            return decode
    """
    # The rest of the function runs only at 0.25.0, where the old module is gone: an error there only.
    assert run_check(PROVIDER, consumer(src), version="0.25.1").findings == ()
    assert [f.severity.value for f in run_check(PROVIDER, consumer(src), version="0.25.0").findings] == ["error"]


def test_instance_state_reset_under_a_gate_in_init(run_check):
    """`if self.use_v2 and gate: self.use_v2 = False` in __init__: `if self.use_v2:` elsewhere runs only
    when the gate does not hold."""
    src = """
        import os
        from plug.utils import pv_version_is

        class Worker:
            def __init__(self):
                self.use_v2 = bool(os.environ.get("USE_V2"))
                if self.use_v2 and pv_version_is("0.25.1"):
                    self.use_v2 = False

            def load(self):
                if self.use_v2:
                    from pv.layers.v2 import Runner
                    return Runner
    """
    assert run_check(PROVIDER, consumer(src), version="0.25.1").findings == ()
    assert [f.severity.value for f in run_check(PROVIDER, consumer(src), version="0.25.0").findings] == ["error"]
    # Assigned anywhere else in the class, the attribute says nothing about the gate.
    elsewhere = src + "\n            def enable(self):\n                self.use_v2 = True\n"
    assert [f.severity.value for f in run_check(PROVIDER, consumer(elsewhere), version="0.25.1").findings] == ["error"]


def test_gates_are_listed_with_their_values_and_a_flip_is_reported(run_check):
    result = run_check(PROVIDER, consumer(LADDER), version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    [reading] = result.gates
    assert (str(reading.site), reading.text, reading.value, reading.baseline) == (
        "plug/mod.py:3",
        "pv_version_is('0.25.0')",
        "false",
        "true",
    )
    flips = [f for f in result.findings if f.rule.value == "gate-flip"]
    assert brief(result)[0][:2] == ("gate-flip", "warning") and len(flips) == 1
    assert "true at the baseline (0.25.0) and false at 0.25.1" in flips[0].message
    same = run_check(PROVIDER, consumer(LADDER), version="0.25.1", baseline=PROVIDER, baseline_version="0.25.1")
    assert [f for f in same.findings if f.rule.value == "gate-flip"] == []


def test_one_flip_of_one_test_is_one_finding_with_every_place_it_is_tested(run_check):
    """trl tests its `_HAS_STATEFUL_TRAINER_ENGINE` flag at 15 places: 2 gate-flips (`if` and `if not`)."""
    source = """
        from plug.utils import pv_version_is

        OLD = pv_version_is("0.25.0")

        def a():
            if OLD:
                return 1

        def b():
            if not OLD:
                return 2
            if OLD:
                return 3
    """
    result = run_check(PROVIDER, consumer(source), version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    flips = [(f.symbol, [str(s) for s in f.sites]) for f in result.findings if f.rule.value == "gate-flip"]
    assert flips == [
        ("OLD (= pv_version_is('0.25.0'))", ["plug/mod.py:6", "plug/mod.py:12"]),
        ("not OLD", ["plug/mod.py:10"]),
    ]


# arctic-inference 0.3: the one vLLM its patches are written for, kept in a constant a helper
# returns, compared in another helper beside a test of it for None; the plugin raises elsewhere.
PINNED = {
    "plug/__init__.py": "",
    "plug/utils.py": """
        VLLM_PATCH_VERSION = "0.25.0"

        def get_compatible_version():
            return VLLM_PATCH_VERSION

        def plugin_version_compatible() -> bool:
            import pv
            want = get_compatible_version()
            return want is not None and pv.__version__ == want
    """,
    "plug/plugin.py": """
        from plug.utils import plugin_version_compatible

        def plugin():
            if not plugin_version_compatible():
                raise RuntimeError("patches written for another release")
    """,
}


def test_a_version_kept_in_a_helpers_constant_is_a_gate(run_check):
    result = run_check(PROVIDER, PINNED, version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    [flip] = [f for f in result.findings if f.rule.value == "gate-flip"]
    # The test guards a raise that now runs: the consumer refuses this release, an error.
    assert flip.severity.value == "error" and [str(s) for s in flip.sites] == ["plug/plugin.py:4", "plug/plugin.py:5"]
    assert flip.message == (
        "`not plugin_version_compatible()` is false at the baseline (0.25.0) and true at 0.25.1: the consumer "
        "raises at plug/plugin.py:5 (it refuses this provider version)"
    )
    # Beside runtime state the whole test is undecided at the pin; its version part still flips.
    skippable = {
        **PINNED,
        "plug/plugin.py": PINNED["plug/plugin.py"]
        .replace("def plugin():", "def plugin(skip=False):")
        .replace("if not plugin_version_compatible():", "if not skip and not plugin_version_compatible():"),
    }
    result = run_check(PROVIDER, skippable, version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    [flip] = [f for f in result.findings if f.rule.value == "gate-flip"]
    # The runtime part is an opt-out (`not skip`): it raises unless that is set, an error.
    assert flip.severity.value == "error" and flip.message == (
        "`not plugin_version_compatible()` is false at the baseline (0.25.0) and true at 0.25.1, in `not skip "
        "and (not plugin_version_compatible())`: the consumer raises at plug/plugin.py:5 (it refuses this "
        "provider version), unless `skip` is set"
    )
    # Any other runtime part may or may not hold: a warning, that says where it raises.
    strict = {**skippable, "plug/plugin.py": skippable["plug/plugin.py"].replace("not skip and", "skip and")}
    result = run_check(PROVIDER, strict, version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    [flip] = [f for f in result.findings if f.rule.value == "gate-flip"]
    assert flip.severity.value == "warning" and flip.message.endswith(
        ": where `skip` holds, the consumer raises at plug/plugin.py:5 (it refuses this provider version)"
    )
    # A test that guards no raise flips as before: a warning.
    returns = {**skippable, "plug/plugin.py": skippable["plug/plugin.py"].replace("raise RuntimeError(", "return (")}
    result = run_check(PROVIDER, returns, version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    [flip] = [f for f in result.findings if f.rule.value == "gate-flip"]
    assert flip.severity.value == "warning" and "which runtime state decides too" in flip.message
    same = run_check(PROVIDER, skippable, version="0.25.0", baseline=PROVIDER, baseline_version="0.25.0")
    assert [f for f in same.findings if f.rule.value == "gate-flip"] == []
    # A constant that may be None tells nothing for certain: the gate is not decided.
    maybe = {**PINNED, "plug/utils.py": PINNED["plug/utils.py"].replace("return VLLM_PATCH_VERSION", "return None")}
    result = run_check(PROVIDER, maybe, version="0.25.1", baseline=PROVIDER, baseline_version="0.25.0")
    assert [f for f in result.findings if f.rule.value == "gate-flip"] == []


def test_evaluate_is_three_valued_and_compares_like_python():
    test = Gate(GateOp.TEST, "t", ">=", "0.26", VersionForm.VERSION)
    runtime = Gate(GateOp.RUNTIME, "x")
    assert gates.evaluate(Gate(GateOp.ALL, parts=(runtime, test)), "0.25.0") is False
    assert gates.evaluate(Gate(GateOp.ANY, parts=(runtime, test)), "0.26.0") is True
    assert gates.evaluate(Gate(GateOp.ALL, parts=(runtime, test)), "0.26.0") is None
    assert not gates.undecided_by_version(Gate(GateOp.ALL, parts=(runtime, test)), "0.26.0")
    assert gates.undecided_by_version(test, None)
    # A version string compares as a string, a tuple as a tuple, a Version as PEP 440.
    assert gates.evaluate(Gate(GateOp.TEST, "", ">=", "0.26", VersionForm.TEXT), "0.9.0") is True
    assert gates.evaluate(Gate(GateOp.TEST, "", "<", "0.26", VersionForm.TUPLE), "0.26.0") is False
    assert gates.evaluate(Gate(GateOp.TEST, "", "==", "0.25.0", VersionForm.VERSION), "0.25.0.post1") is False


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_a_gate_helper_is_read_whatever_its_file_s_line_endings(run_check, newline):
    # A helper's text is looked at before its body is walked for "version": the lines it spans
    # must be cut right (or not cut at all) whatever ends them.
    import textwrap

    files = {
        "plug/utils.py": textwrap.dedent(HELPER).lstrip("\n").replace("\n", newline),
        "plug/mod.py": textwrap.dedent(LADDER).lstrip("\n").replace("\n", newline),
    }
    assert run_check(PROVIDER, consumer("", **files), version="0.25.1").findings == ()
    at_025 = run_check(PROVIDER, consumer("", **files), version="0.25.0")
    assert brief(at_025) == [("unresolved-import", "error", "pv.layers.old_attn:decode", ["plug/mod.py:4"])]


@pytest.mark.parametrize(
    "test",
    [
        'SpecifierSet(">=0.25.0,<0.26").contains(Version(pv.__version__))',
        "Version(pv.__version__) in SpecifierSet(SUPPORTED)",
        "SpecifierSet(SUPPORTED).contains(Version(pv.__version__), prereleases=True)",
        "not Version(pv.__version__) not in SpecifierSet(SUPPORTED)",
    ],
)
def test_a_supported_range_written_as_a_specifier_set_is_a_gate(run_check, test: str):
    """pace-vllm declares the vLLM releases it supports as a PEP 440 specifier set and tests the
    running version against it."""
    source = f"""
        import pv
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        SUPPORTED = ">=0.25.0,<0.26"

        if {test}:
            from pv.layers.new_attn import decode
        else:
            from pv.layers.old_attn import decode
    """
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()
    at_026 = run_check(PROVIDER, consumer(source), version="0.26.0")
    assert [f.symbol for f in at_026.findings] == ["pv.layers.old_attn:decode"]


def test_a_specifier_set_gate_keeps_prereleases_out_when_asked(run_check):
    source = """
        import pv
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        if SpecifierSet(">=0.26.0rc1").contains(Version(pv.__version__), prereleases=False):
            from pv.layers.new_attn import decode
        else:
            from pv.layers.old_attn import decode
    """
    result = run_check(PROVIDER, consumer(source), version="0.26.0rc2")
    assert [f.symbol for f in result.findings] == ["pv.layers.old_attn:decode"]


def test_a_specifier_set_gate_with_prereleases_none_is_the_default(run_check):
    source = """
        import pv
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        if SpecifierSet(">=0.26.0").contains(Version(pv.__version__){keyword}):
            from pv.layers.new_attn import decode
        else:
            from pv.layers.old_attn import decode
    """
    default = run_check(PROVIDER, consumer(source.format(keyword="")), version="0.27.0")
    explicit = run_check(PROVIDER, consumer(source.format(keyword=", prereleases=None")), version="0.27.0")
    assert default.findings == explicit.findings == ()


def test_a_specifier_set_gate_is_decided_as_packaging_decides_it():
    version = gates.ProviderVersion(VersionForm.VERSION)
    strict = gates.contained(version, gates.VersionSpecifier(">=0.32.0rc1"), "t")
    loose = gates.contained(version, gates.VersionSpecifier(">=0.32.0rc1"), "t", prereleases=True)
    assert gates.evaluate(strict, "0.32.0rc2.dev283") is True  # the set names a pre-release itself
    assert gates.evaluate(gates.contained(version, gates.VersionSpecifier(">=0.31,<0.32"), "t"), "0.32.0") is False
    assert gates.evaluate(loose, "0.32.0rc2.dev283") is True
    assert gates.specifier("not a specifier") is None
    assert (
        gates.contained(gates.ProviderVersion(VersionForm.TUPLE), gates.VersionSpecifier(">=1"), "t").op
        is GateOp.OPAQUE
    )
    assert isinstance(strict, Gate)


# vllm-ascend 0.29's helper: the public part of the version (a "+empty" build is its release),
# asked through another module's helper (`if not pp_utils.use_legacy_spec_pp():`).
# How vllm-ascend's helpers read the version: an environment override first.
_READ_VERSION = """
        if os.environ.get("PV_VERSION") is not None:
            version = os.environ["PV_VERSION"]
        else:
            import pv
            version = pv.__version__"""
PUBLIC_HELPER = f"""
    import functools
    import os
    from packaging.version import InvalidVersion, Version

    @functools.cache
    def pv_version_is(target):{_READ_VERSION}
        try:
            parsed = Version(version)
            return Version(parsed.public) == Version(target)
        except InvalidVersion:
            raise ValueError("not a version")
"""
PP_UTILS = """
    import pv
    from plug.utils import pv_version_is

    def use_legacy():
        return pv_version_is("0.25.1")
"""
PUBLIC_GATED = """
    from plug import pp_utils

    if not pp_utils.use_legacy():
        from pv.layers.old_attn import decode
"""


@pytest.mark.parametrize("version", ["0.25.1", "0.25.1+empty"])
def test_the_public_part_of_the_version_through_another_modules_helper(run_check, version):
    files = {"plug/__init__.py": "", "plug/utils.py": PUBLIC_HELPER, "plug/pp_utils.py": PP_UTILS}
    files["plug/mod.py"] = PUBLIC_GATED
    assert run_check(PROVIDER, files, version=version).findings == ()
    # At another release the branch runs, and its import of a module that is gone is an error.
    assert brief(run_check(PROVIDER, files, version="0.26.0")) == [
        ("unresolved-import", "error", "pv.layers.old_attn:decode", ["plug/mod.py:4"])
    ]
    # Without `.public`, a local segment makes the versions differ, as at run time.
    files["plug/utils.py"] = PUBLIC_HELPER.replace("Version(parsed.public)", "parsed")
    assert len(run_check(PROVIDER, files, version="0.25.1+empty").findings) == 1


def test_a_release_selector_that_only_answers_false_makes_its_branch_dead(run_check):
    """vllm-ascend 0.30 retires a workaround by making its selector `return False`; the code behind
    it (`bypass = support is not None and use_legacy()`, then `if bypass:`) never runs."""
    selector = '''
        import pv

        def use_legacy() -> bool:
            """Whether the legacy transport is needed: no longer."""
            return False
    '''
    gated = """
        import os
        from plug.selector import use_legacy

        def install():
            bypass = os.environ.get("PP") is not None and use_legacy()
            if bypass:
                from pv.layers.old_attn import decode
    """
    files = {"plug/__init__.py": "", "plug/selector.py": selector, "plug/mod.py": gated}
    assert run_check(PROVIDER, files, version="0.25.1").findings == ()
    # A selector that decides anything else, or a method answering a default, is not a fixed answer.
    for other in (
        selector.replace("return False", "return os.environ.get('LEGACY') == '1'").replace(
            "def", "import os\n        def", 1
        ),
        "import pv\n\nclass Base:\n    def use_legacy(self):\n        return False\n\nuse_legacy = Base().use_legacy\n",
    ):
        files["plug/selector.py"] = other
        assert [f.rule for f in run_check(PROVIDER, files, version="0.25.1").findings] == ["unresolved-import"]


def test_what_follows_a_version_gate_in_an_and_runs_only_where_it_holds(run_check):
    """vllm-ascend 0.29: `elif vllm_version_is("0.29.0") and self.uses_xdrope_dim > 0:` reads a
    member vLLM 0.30 dropped; at 0.30 the read never runs. Past an `or`, only where it fails."""
    runner = "class Runner:\n    def __init__(self):\n        self.{} = 0\n"
    before = {**PROVIDER, "pv/layers/base.py": runner.format("xdims")}
    after = {**PROVIDER, "pv/layers/base.py": runner.format("dims")}
    source = """
        from plug.utils import pv_version_is
        from pv.layers.base import Runner

        class MyRunner(Runner):
            def step(self):
                if pv_version_is("0.25.0") and self.xdims > 0:
                    return 1
                return 0
    """
    either = source.replace('pv_version_is("0.25.0") and', 'pv_version_is("0.25.1") or')
    for gated in (source, either):
        assert run_check(after, consumer(gated), version="0.25.1", baseline=before).findings == ()
        # Where the gate lets the read run, it is reported.
        found = run_check(after, consumer(gated), version="0.25.0", baseline=before).findings
        assert [f.rule for f in found] == ["missing-member"]


# vllm-ascend 0.28's helpers: an override read first (`envs.VLLM_VERSION or vllm.__version__`),
# the local segment cut by hand, and a second test whose answer is another helper's.
HELPER_028 = f"""
    import os
    from packaging.version import InvalidVersion, Version

    def _empty_device_matches(target):
        return os.environ.get("EMPTY") == target

    def pv_version_is(target):{_READ_VERSION}
        try:
            version = version.split("+")[0]
            parsed = Version(version)
            if parsed == Version(target):
                return True
            if parsed.release[:2] == (0, 1) and parsed.dev is not None:
                return _empty_device_matches(target)
            return False
        except InvalidVersion:
            raise ValueError("not a version")
"""
PP_UTILS_028 = """
    import os
    import pv
    from packaging.version import Version
    from plug.utils import pv_version_is

    def use_legacy():
        version = Version(os.environ.get("PV_VERSION") or pv.__version__)
        return version.release[:2] in ((0, 25), (0, 26)) or pv_version_is("0.25.1")
"""


@pytest.mark.parametrize("version", ["0.25.1", "0.25.1+empty"])
def test_helpers_with_an_override_a_hand_cut_local_segment_and_a_runtime_answer(run_check, version):
    files = {"plug/__init__.py": "", "plug/utils.py": HELPER_028, "plug/pp_utils.py": PP_UTILS_028}
    files["plug/mod.py"] = PUBLIC_GATED
    assert run_check(PROVIDER, files, version=version).findings == ()
    assert len(run_check(PROVIDER, files, version="0.27.0").findings) == 1
    direct = {
        **files,
        "plug/mod.py": 'from plug.utils import pv_version_is\n\nif not pv_version_is("0.25.1"):\n'
        "    from pv.layers.old_attn import decode\n",
    }
    assert run_check(PROVIDER, direct, version=version).findings == ()
    # At a release the helper does not name, its runtime answer leaves the branch undecided: checked.
    assert len(run_check(PROVIDER, direct, version="0.27.0").findings) == 1


def test_a_selector_defined_per_release_or_per_import_is_no_fixed_answer(run_check):
    """Each definition answers for the releases it is made at: neither branch is dead everywhere."""
    per_release = """
        import pv
        from plug.utils import pv_version_is

        if pv_version_is("0.25.0"):
            def use_new():
                return False
        else:
            def use_new():
                return True
    """
    per_import = """
        import pv
        try:
            from pv.layers.new_attn import decode
            def use_new():
                return True
        except ImportError:
            def use_new():
                return False
    """
    gated = """
        from plug.selector import use_new

        def install():
            if use_new():
                from pv.layers.gone_new import decode
            else:
                from pv.layers.gone_old import decode
    """
    for selector in (per_release, per_import):
        files = consumer(gated, **{"plug/selector.py": selector})
        assert {f.symbol for f in run_check(PROVIDER, files, version="0.25.1").findings} == {
            "pv.layers.gone_new:decode",
            "pv.layers.gone_old:decode",
        }
    # A fixed answer is not listed among the version gates.
    fixed = consumer(gated, **{"plug/selector.py": "import pv\n\ndef use_new():\n    return False\n"})
    result = run_check(PROVIDER, fixed, version="0.25.1")
    assert [f.symbol for f in result.findings] == ["pv.layers.gone_old:decode"] and result.gates == ()


def test_a_fixed_answer_negated_or_combined_is_not_a_version_gate(run_check):
    """ATOM's `assert not tbo_overlap_enabled()` (the helper only says `return False`) was listed
    as a version gate, "true at ?": its value is the same at every version, however negated or
    combined with another fixed answer, and only a part that varies makes a gate."""
    gated = """
        from plug.selector import use_new, use_old

        def install():
            if not use_new():
                from pv.layers.gone_old import decode
            if use_new() or not use_old():
                from pv.layers.gone_new import decode
    """
    selector = "import pv\n\ndef use_new():\n    return False\n\ndef use_old():\n    return True\n"
    result = run_check(PROVIDER, consumer(gated, **{"plug/selector.py": selector}), version="0.25.1")
    assert [f.symbol for f in result.findings] == ["pv.layers.gone_old:decode"] and result.gates == ()
    # Beside a part that varies, the gate is listed.
    versioned = gated.replace("if not use_new():", "if not use_new() and pv.__version__ == '0.25.1':")
    versioned = versioned.replace("from plug.selector", "import pv\n        from plug.selector")
    result = run_check(PROVIDER, consumer(versioned, **{"plug/selector.py": selector}), version="0.25.1")
    assert [(g.text, g.value) for g in result.gates] == [("not use_new() and pv.__version__ == '0.25.1'", "true")]


def test_a_replacement_installed_only_under_a_gate_runs_only_where_it_holds(run_check):
    """vllm-ascend 0.28: `_ascend_pool_bytes_per_block` calls helpers vLLM 0.28 lacks, and is
    installed only `if not vllm_version_is("0.28.0"):`; at 0.28.0 its body never runs."""
    source = """
        import pv.layers.new_attn as attn
        from plug.utils import pv_version_is

        def _decode(x):
            return attn.decode_v2(x)

        if not pv_version_is("0.25.1"):
            attn.decode = _decode
    """
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()
    assert {f.rule.value for f in run_check(PROVIDER, consumer(source), version="0.26.0").findings} == {
        "unresolved-import"
    }
    # A comment naming it is no other use.
    commented = source.replace("        if not pv_", "        # _decode: the newer releases' decode.\n        if not pv_")
    assert run_check(PROVIDER, consumer(commented), version="0.25.1").findings == ()
    # Installed elsewhere too (or named by another module): its body may run.
    also = source + "\n        def install():\n            attn.decode = _decode\n"
    assert [f.rule.value for f in run_check(PROVIDER, consumer(also), version="0.25.1").findings] == [
        "unresolved-import"
    ]


ONCE_PAST_A_GATE = """
    import pv.layers.new_attn as attn
    from plug.utils import pv_version_is

    def _decode_main(x):
        return attn.decode_v2(x)

    def _decode(x):
        if pv_version_is("0.25.1") or x is None:
            return x
        return _decode_main(x)

    attn.decode = _decode
"""
# The call hands the helper a provider module: the helper is read again for it, under the same gate.
HANDED_PAST_A_GATE = ONCE_PAST_A_GATE.replace("_decode_main(x)", "_decode_main(attn, x)").replace(
    "def _decode_main(attn, x):\n        return attn.decode_v2(x)",
    "def _decode_main(mod, x):\n        return mod.decode_v2(x)",
)


@pytest.mark.parametrize("source", [ONCE_PAST_A_GATE, HANDED_PAST_A_GATE], ids=["plain", "handed"])
def test_a_helper_called_once_after_a_gate_that_returns_runs_only_where_the_gate_fails(run_check, source: str):
    """vllm-ascend 0.28's `_ascend_get_kv_cache_config_from_groups` returns early
    `if vllm_version_is("0.28.0") or ...:`; the planner it calls after builds specs only newer
    vLLM takes."""
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()
    assert {f.rule.value for f in run_check(PROVIDER, consumer(source), version="0.26.0").findings} == {
        "unresolved-import"
    }
    # Called from a second place too: its body may run anywhere.
    twice = source + "\n    def other(x):\n        return _decode_main(x)\n"
    if source is ONCE_PAST_A_GATE:
        assert [f.rule.value for f in run_check(PROVIDER, consumer(twice), version="0.25.1").findings] == [
            "unresolved-import"
        ]


# trl's helpers (the transformers family's): whether a package is there and its version, as a
# pair when asked with a literal flag; `is_pv_available(min_version=...)` answers False where the
# version is older, and whether the package is there (it is, wherever it is checked) otherwise.
AVAILABLE = """
    import importlib.metadata
    import importlib.util
    from packaging.version import Version

    PACKAGE_DISTRIBUTION_MAPPING = importlib.metadata.packages_distributions()

    def _is_package_available(pkg_name, return_version=False):
        spec = importlib.util.find_spec(pkg_name)
        package_exists = spec is not None
        package_version = "N/A"
        if package_exists and return_version:
            try:
                distribution_name = PACKAGE_DISTRIBUTION_MAPPING[pkg_name][0]
                package_version = importlib.metadata.version(distribution_name)
            except (importlib.metadata.PackageNotFoundError, KeyError):
                package = importlib.import_module(pkg_name)
                package_version = getattr(package, "__version__", "N/A")
        if return_version:
            return package_exists, package_version
        else:
            return package_exists

    def is_pv_available(min_version=None):
        _pv_available, _pv_version = _is_package_available("pv", return_version=True)
        if _pv_available:
            if min_version is not None and Version(_pv_version) < Version(min_version):
                return False
        return _pv_available
"""

AVAILABLE_LADDER = """
    from plug.import_utils import is_pv_available

    HAS_NEW = is_pv_available(min_version="0.25.0")
    if HAS_NEW:
        from pv.layers.new_attn import decode
    elif is_pv_available():
        from pv.layers.old_attn import decode
"""


def test_a_package_available_helper_with_a_minimum_version_is_a_gate(run_check):
    """trl 1.16 imports vLLM's stateful weight-transfer helpers `if is_vllm_available(min_version="0.28.0"):`
    and the static ones they replaced in the `elif`: at 0.31 the `elif` never runs."""
    files = {"plug/__init__.py": "", "plug/import_utils.py": AVAILABLE, "plug/mod.py": AVAILABLE_LADDER}
    result = run_check(PROVIDER, files, version="0.25.1")
    assert result.findings == ()
    assert [(g.text, g.value) for g in result.gates if g.site.path == "plug/mod.py"] == [
        ("HAS_NEW (= is_pv_available(min_version='0.25.0'))", "true")
    ]
    # Older than the minimum: the `if` never runs, the `elif` does (and its import is missing here).
    older = run_check(PROVIDER, files, version="0.24.0")
    assert [(f.rule.value, f.severity.value, f.symbol) for f in older.findings] == [
        ("unresolved-import", "error", "pv.layers.old_attn:decode")
    ]


def test_a_helper_answering_false_under_a_runtime_test_too_decides_only_where_the_version_passes(run_check):
    """A `return False` that something other than the version decides as well (here the
    environment) runs only where its version test holds: past the minimum the helper answers
    True; below it, the answer is the environment's, and the `elif` may run."""
    helper = AVAILABLE.replace(
        "        if _pv_available:\n            if min_version",
        '        if _pv_available and os.environ.get("PV_STRICT"):\n            if min_version',
    ).replace("    import importlib.metadata\n", "    import os\n    import importlib.metadata\n", 1)
    files = {"plug/__init__.py": "", "plug/import_utils.py": helper, "plug/mod.py": AVAILABLE_LADDER}
    assert run_check(PROVIDER, files, version="0.25.1").findings == ()
    older = run_check(PROVIDER, files, version="0.24.0")
    assert [(f.severity.value, f.symbol) for f in older.findings] == [("error", "pv.layers.old_attn:decode")]
    # A `return False` under no version test at all: the helper is no gate, both branches may run.
    plain = helper.replace('_pv_available and os.environ.get("PV_STRICT")', 'os.environ.get("PV_STRICT")').replace(
        "            if min_version is not None and Version(_pv_version) < Version(min_version):\n                return False\n",
        "            return False\n",
    )
    files["plug/import_utils.py"] = plain
    result = run_check(PROVIDER, files, version="0.25.1")
    assert [(f.severity.value, f.symbol) for f in result.findings] == [("error", "pv.layers.old_attn:decode")]


def test_a_helper_whose_true_answers_sit_under_a_selector_answering_false_answers_false(run_check):
    """A helper's `return True` under a release selector that only answers False never runs: the
    helper answers False at every version, and the branch it opens is dead."""
    selector = """
        import pv

        def use_legacy() -> bool:
            return False

        def needs_old_attn():
            legacy_version = use_legacy()
            if legacy_version:
                return True
            return False
    """
    gated = """
        from plug.selector import needs_old_attn

        if needs_old_attn():
            from pv.layers.old_attn import decode
    """
    files = {"plug/__init__.py": "", "plug/selector.py": selector, "plug/mod.py": gated}
    assert run_check(PROVIDER, files, version="0.25.1").findings == ()


# Trinity-RFT 0.6's helper: the provider's version, parsed, with a fallback for a build whose
# version does not parse.
PARSED_OR_FALLBACK = """
    import pv
    from packaging.version import InvalidVersion
    from packaging.version import parse as parse_version

    def get_pv_version():
        try:
            pv_version = parse_version(pv.__version__)
        except InvalidVersion:
            pv_version = parse_version("0.8.5")
        return pv_version
"""


@pytest.mark.parametrize("caught", ["InvalidVersion", "(InvalidVersion, ValueError)", "packaging.version.InvalidVersion"])
def test_a_version_helper_with_a_fallback_for_an_unparsable_version_is_the_version(run_check, caught):
    """A handler of `InvalidVersion` around the parse of the provider's version runs only for a
    build whose version does not parse: at a release atompin checks, the helper answers its version."""
    gated = """
        from packaging.version import parse as parse_version
        from plug.versions import get_pv_version

        def log():
            if get_pv_version() < parse_version("0.25.0"):
                from pv.layers.old_attn import decode
            else:
                from pv.layers.new_attn import decode
            return decode
    """
    helper = PARSED_OR_FALLBACK.replace("except InvalidVersion", f"except {caught}")
    if caught.startswith("packaging."):
        helper = helper.replace("    import pv\n", "    import pv\n    import packaging.version\n")
    files = {"plug/__init__.py": "", "plug/versions.py": helper, "plug/mod.py": gated}
    result = run_check(PROVIDER, files, version="0.25.1")
    assert result.findings == ()
    assert [(g.text, g.value) for g in result.gates] == [
        ("get_pv_version() < parse_version('0.25.0')", "false")
    ]
    assert brief(run_check(PROVIDER, files, version="0.24.0")) == [
        ("unresolved-import", "error", "pv.layers.old_attn:decode", ["plug/mod.py:6"])
    ]


def test_a_fallback_for_another_failure_than_an_unparsable_version_keeps_the_helper_unknown(run_check):
    """A handler of any other exception may run at a release: the helper is no gate then, and
    both branches are read (here the missing module's import is an error)."""
    gated = """
        from packaging.version import parse as parse_version
        from plug.versions import get_pv_version

        def log():
            if get_pv_version() < parse_version("0.25.0"):
                from pv.layers.old_attn import decode
            else:
                from pv.layers.new_attn import decode
            return decode
    """
    helper = PARSED_OR_FALLBACK.replace("except InvalidVersion", "except Exception")
    files = {"plug/__init__.py": "", "plug/versions.py": helper, "plug/mod.py": gated}
    result = run_check(PROVIDER, files, version="0.25.1")
    assert [(f.rule.value, f.symbol) for f in result.findings] == [("unresolved-import", "pv.layers.old_attn:decode")]


def test_a_version_bound_beside_a_guarded_import_of_the_provider_itself(run_check):
    """xinference: `try: import vllm; VLLM_VERSION = version.parse(vllm.__version__)` / `except
    ImportError: VLLM_VERSION = None`. The handler runs only where the provider is not installed,
    never where it is checked: the name is the provider's version, and its gates are decided."""
    source = """
        from packaging import version

        try:
            import pv
            INSTALLED = True
            PV_VERSION = version.parse(pv.__version__)
        except ImportError:
            INSTALLED = False
            PV_VERSION = None

        def load(flag):
            if flag and PV_VERSION < version.parse("0.11.0"):
                from pv.layers.old_attn import decode
    """
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()
    assert [f.rule.value for f in run_check(PROVIDER, consumer(source), version="0.10.0").findings] == ["unresolved-import"]
    # A module of the provider imported there may be missing at a release: then the handler runs.
    submodule = source.replace("import pv\n", "import pv\n            import pv.layers.new_attn\n")
    assert len(run_check(PROVIDER, consumer(submodule), version="0.25.1").findings) == 1


def test_a_method_of_the_class_s_own_answering_true_past_a_release_else_at_run_time(run_check):
    """xinference's `VLLMModel._is_vllm_v1()`: `if VLLM_VERSION is not None and VLLM_VERSION >
    version.parse("0.11.0"): return True`, else an environment variable's answer. `if not
    self._is_vllm_v1():` cannot run past 0.11.0; before, it may."""
    source = """
        import os

        import pv
        from packaging import version

        PV_VERSION = version.parse(pv.__version__)

        class Model:
            def _is_v1(self):
                if PV_VERSION is not None and PV_VERSION > version.parse("0.11.0"):
                    return True
                return os.environ.get("V1") == "1"

            def load(self):
                if not self._is_v1():
                    from pv.layers.old_attn import decode
    """
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()
    assert len(run_check(PROVIDER, consumer(source), version="0.10.0").findings) == 1
    # Another class of the consumer defines a method of that name (a subclass may override it): unknown.
    other = source + """
        class Other:
            def _is_v1(self):
                return False
    """
    assert len(run_check(PROVIDER, consumer(other), version="0.25.1").findings) == 1


# vllm-ascend 0.24.0rc1: `if vllm_version_is("0.24.0"): spec.blocks(budget=...) else: spec.blocks(
# tokens=...)`, the `else` written for vLLM's main. At 0.25.1, which kept 0.24's signature, the
# `else` runs for the first time: that it did not fit at the baseline says nothing, it never ran there.
GATE_FLIPPED = """
    from plug.utils import pv_version_is
    from pv.layers.spec import Spec

    def build(spec: Spec):
        if pv_version_is("0.25.0"):
            spec.blocks(budget=1)
        else:
            spec.blocks(tokens=1)

    def direct():
        from pv.layers.spec import make
        if pv_version_is("0.25.0"):
            return make(budget=1)
        return make(tokens=1)
"""
SPEC = "class Spec:\n    def blocks(self, budget):\n        return budget\n\ndef make(budget):\n    return budget\n"


def test_a_call_in_a_branch_a_gate_kept_from_running_at_the_baseline_is_an_error_where_it_runs(run_check):
    provider = {**PROVIDER, "pv/layers/spec.py": SPEC}
    before = {**provider, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}
    found = run_check(provider, consumer(GATE_FLIPPED), version="0.25.1", baseline=before, baseline_version="0.25.0")
    errors = sorted((f.rule.value, f.symbol, str(f.sites[0])) for f in found.findings if f.severity.value == "error")
    assert errors == [
        ("arity-drift", "pv.layers.spec:Spec.blocks", "plug/mod.py:8"),
        ("arity-drift", "pv.layers.spec:make", "plug/mod.py:14"),
    ]
    # Where the branch ran at the baseline too, not fitting there is a path not taken: a warning.
    ungated = GATE_FLIPPED.replace('pv_version_is("0.25.0")', 'os.environ.get("BUDGET")').replace("    from plug", "    import os\n    from plug", 1)
    found = run_check(provider, consumer(ungated), version="0.25.1", baseline=before, baseline_version="0.25.0")
    assert {f.severity.value for f in found.findings if f.rule.value == "arity-drift"} == {"warning"}


def test_an_import_a_gate_kept_from_running_at_the_baseline_is_not_excused_by_missing_there_too(run_check):
    source = """
        from plug.utils import pv_version_is

        if pv_version_is("0.25.0"):
            pass
        else:
            from pv.layers.spec import gone
    """
    provider = {**PROVIDER, "pv/layers/spec.py": SPEC}
    before = {**provider, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}
    found = run_check(provider, consumer(source), version="0.25.1", baseline=before, baseline_version="0.25.0")
    [finding] = [f for f in found.findings if f.rule.value == "unresolved-import"]
    assert finding.severity.value == "error" and "at the baseline too" not in finding.message


SAMPLER = """
def gumbel_sample(logits, pos, {kw}=False):
    return logits

def run(logits, pos):
    return gumbel_sample(logits, pos, {kw}=True)
"""
# vllm-ascend 0.28.0rc1 binds `categorical_sample` to its legacy function where
# `vllm_version_is("0.28.0")`, to one taking vLLM main's new parameter elsewhere, and patches
# vLLM's `gumbel_sample` with whichever it is.
PER_RELEASE_ALIAS = """
    from plug.utils import pv_version_is
    import pv.sampler

    def _legacy(logits, pos, drafting=False):
        return logits

    if pv_version_is("0.25.1"):
        sample = _legacy
    else:
        def _main(logits, pos, is_drafting):
            return logits
        sample = _main

    pv.sampler.gumbel_sample = sample
"""


def test_a_name_bound_to_one_function_per_release_patches_with_the_one_bound_there(run_check):
    at_0251 = {**PROVIDER, "pv/sampler.py": SAMPLER.format(kw="drafting")}
    assert [f for f in run_check(at_0251, consumer(PER_RELEASE_ALIAS), version="0.25.1").findings if f.rule.value == "arity-drift"] == []
    main = {**at_0251, "pv/version.py": '__version__ = "0.26.0"\n__version_tuple__ = (0, 26, 0)\n'}
    main["pv/sampler.py"] = SAMPLER.format(kw="is_drafting")
    found = run_check(main, consumer(PER_RELEASE_ALIAS), version="0.26.0")
    assert [f.severity.value for f in found.findings if f.rule.value == "arity-drift"] == ["warning"]  # (narrower)
    # The function bound where the gate fails is what runs at 0.26.0: the legacy one would not fit.
    legacy_everywhere = PER_RELEASE_ALIAS.replace("        sample = _main\n", "        sample = _legacy\n")
    found = run_check(main, consumer(legacy_everywhere), version="0.26.0")
    assert [f.severity.value for f in found.findings if f.rule.value == "arity-drift"] == ["error"]
