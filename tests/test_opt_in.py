"""Provider code that runs only when a setting new since the baseline is turned on (`opt_in`).

vLLM 0.31 calls `backend.supports_device_cpu_query_lens_mismatch()` only from a helper that
`maybe_create_adaptive_verification_manager` calls after `if not enable_adaptive_verification:
return None`; `SpeculativeConfig.enable_adaptive_verification` is `False` unless set, and 0.27.1
had no such word. ATOM's backends, written against 0.27.1, lack the method: a warning."""

from __future__ import annotations

import ast
import textwrap

import pytest

from atompin.analysis.opt_in import enclosing_scopes, settings_at, settings_tested
from tests.test_contact import ROLE_B, STAND_IN, check

NEW_METHOD = """
            @classmethod
            def supports_mismatch(cls):
                return True
"""
VERIFY = """\
def unsupported_backend(groups):
    for backend in groups:
        if not backend.supports_mismatch():
            return backend
    return None


def maybe_create_manager(*, enable_adaptive, groups):
    if not enable_adaptive:
        return None
    return unsupported_backend(groups)
"""
CONFIG = """\
from dataclasses import dataclass


@dataclass
class SpecConfig:
    method: str = "ngram"
    enable_adaptive: bool = False
"""
MODEL_RUNNER = """\
from pv.verify import maybe_create_manager


class ModelRunner:
    def __init__(self, spec, groups):
        self.manager = maybe_create_manager(enable_adaptive=getattr(spec, "enable_adaptive", False), groups=groups)
"""
OLD_UNCALLED = "def old_uncalled(cls):\n                return None\n"
PIN = {
    **ROLE_B,
    "pv/backend.py": ROLE_B["pv/backend.py"].replace(OLD_UNCALLED, OLD_UNCALLED + NEW_METHOD, 1),
    "pv/verify.py": VERIFY,
    "pv/config.py": CONFIG,
    "pv/model_runner.py": MODEL_RUNNER,
}
SYMBOL = "plug.backend:MyBackend.supports_mismatch"


def drift(consumer: dict[str, str] = STAND_IN, pin: dict[str, str] = PIN, baseline: dict[str, str] = ROLE_B) -> str:
    """The severity protocol-drift gives the stand-in's lack of `supports_mismatch`, and its message."""
    result = check(consumer, pin, baseline=baseline)
    told = [f for f in result.findings if f.rule.value == "protocol-drift" and "supports_mismatch" in f.message]
    assert len(told) == 1, told
    return f"{told[0].severity.value}: {told[0].message}"


def test_a_call_only_a_new_setting_off_by_default_reaches_is_a_warning():
    assert OLD_UNCALLED in ROLE_B["pv/backend.py"]
    told = drift()
    assert told.startswith("warning: ")
    assert (
        "supports_mismatch (new since 1.0; runs only when enable_adaptive is set, which is new since 1.0 and off by "
        "default (pv/verify.py:9)): the provider calls .supports_mismatch at pv/verify.py:3"
    ) in told


def test_without_the_gate_the_lack_is_an_error():
    ungated = VERIFY.replace("    if not enable_adaptive:\n        return None\n", "")
    assert ungated != VERIFY
    assert drift(pin={**PIN, "pv/verify.py": ungated}).startswith("error: ")


@pytest.mark.parametrize(
    "change",
    [
        "default on",
        "known at the baseline",
        "the consumer writes it",
        "another caller",
        "a test of a call",
        "no field",
        "a field without a default",
        "only itself calls it",
        "a caller nothing calls",
    ],
)
def test_a_setting_the_consumer_may_run_with_keeps_the_error(change: str):
    pin, baseline, consumer = dict(PIN), dict(ROLE_B), dict(STAND_IN)
    if change == "default on":
        pin["pv/config.py"] = CONFIG.replace("enable_adaptive: bool = False", "enable_adaptive: bool = True")
    elif change == "known at the baseline":  # the consumer was written where it could be set
        baseline["pv/config.py"] = CONFIG
    elif change == "the consumer writes it":  # it may turn it on
        consumer["plug/config.py"] = 'SPEC = {"enable_adaptive": True}\n'
    elif change == "another caller":  # a path without the test
        pin["pv/other.py"] = (
            "from pv.verify import unsupported_backend\n\n\ndef run(g):\n    return unsupported_backend(g)\n"
        )
    elif change == "a test of a call":  # read as nothing
        pin["pv/verify.py"] = VERIFY.replace("if not enable_adaptive:", "if not enable_adaptive():")
    elif change == "no field":  # nothing says it is off unless set
        pin["pv/config.py"] = CONFIG.replace("    enable_adaptive: bool = False\n", "")
    elif change == "a field without a default":
        pin["pv/config.py"] = CONFIG + "\n\n@dataclass\nclass Other:\n    enable_adaptive: bool\n"
    elif change == "only itself calls it":  # no caller holds the test
        pin["pv/verify.py"] = VERIFY.replace("return unsupported_backend(groups)", "return None").replace(
            "    return None\n\n\ndef maybe", "    return unsupported_backend(groups[1:])\n\n\ndef maybe"
        )
        assert pin["pv/verify.py"].count("unsupported_backend(") == 2
    elif change == "a caller nothing calls":  # another way in, by a function no provider code calls
        pin["pv/verify.py"] = VERIFY + "\n\ndef check_all(groups):\n    return unsupported_backend(groups)\n"
        # Its one "call" is of the file's own name for something else.
        pin["pv/other.py"] = "from outside.lib import check_all\n\n\ndef run(g):\n    return check_all(g)\n"
    assert drift(consumer, pin, baseline).startswith("error: ")


@pytest.mark.parametrize(
    "verify",
    [
        # The test around the call in its own function, the setting read off a config.
        "def maybe_check(groups, spec):\n"
        "    if spec.enable_adaptive and groups:\n"
        "        for backend in groups:\n"
        "            backend.supports_mismatch()\n",
        # Its else: the branch runs only when the setting is.
        "def maybe_check(groups, spec):\n"
        "    if not spec.enable_adaptive:\n"
        "        pass\n"
        "    else:\n"
        "        groups[0].supports_mismatch()\n",
        # An `or` of negations before a `raise`; a `continue` in a loop.
        "def maybe_check(groups, spec):\n"
        "    for backend in groups:\n"
        "        if spec is None or not spec.enable_adaptive:\n"
        "            continue\n"
        "        backend.supports_mismatch()\n",
        # An assert.
        "def maybe_check(groups, spec):\n    assert spec.enable_adaptive\n    groups[0].supports_mismatch()\n",
    ],
)
def test_the_forms_of_the_test_read(verify: str):
    pin = {**PIN, "pv/verify.py": verify + "\n\ndef unsupported_backend(g):\n    return g\n"}
    told = drift(pin=pin)
    assert told.startswith("warning: ") and "runs only when enable_adaptive is set" in told


def test_a_setting_none_unless_set_tested_against_none():
    config = CONFIG.replace("enable_adaptive: bool = False", "hisparse_config: dict | None = None")
    verify = VERIFY.replace("*, enable_adaptive, groups", "*, config, groups").replace(
        "if not enable_adaptive:", "if config.hisparse_config is None:"
    )
    told = drift(pin={**PIN, "pv/config.py": config, "pv/verify.py": verify})
    assert "runs only when hisparse_config is set, which is new since 1.0 and off by default (pv/verify.py:9)" in told


def _held(source: str, marker: str) -> list[str]:
    text = textwrap.dedent(source)
    line = next(i for i, each in enumerate(text.splitlines(), 1) if marker in each)
    tree = ast.parse(text)
    function = enclosing_scopes(tree, line)[-1]
    assert isinstance(function, ast.FunctionDef)
    return [name for name, _ in settings_at(function, line)]


def test_settings_at_a_line():
    source = """
        def f(a, b, c):
            if not a.on:
                return
            if b.x is not None and c:
                with ctx():
                    SITE_ONE
            else:
                SITE_TWO
            while True:
                if a.more:
                    break
                SITE_THREE
    """
    assert _held(source, "SITE_ONE") == ["on", "x", "c"]
    assert _held(source, "SITE_TWO") == ["on"]  # the else of an `and`: no one of them is known false
    assert _held(source, "SITE_THREE") == ["on"]  # `if a.more: break` leaves only when it is set
    assert _held("def f(a):\n    if a.on:\n        return\n    SITE\n", "SITE") == []
    # A test on a line after the site says nothing of it; nor does one that both branches leave.
    assert _held("def f(a):\n    SITE\n    if not a.on:\n        return\n", "SITE") == []
    both = "def f(a):\n    if not a.on:\n        return 1\n    else:\n        return 2\n    SITE\n"
    assert _held(both, "SITE") == []


def test_settings_tested():
    def tested(text: str, truth: bool) -> list[str]:
        return [name for name, _ in settings_tested(ast.parse(text, mode="eval").body, truth)]

    assert tested("x.a", True) == ["a"] and tested("x.a", False) == []
    assert tested("not x.a", False) == ["a"]
    assert tested("x.a is not None", True) == ["a"] and tested("x.a is None", False) == ["a"]
    assert tested("x.a is None", True) == []
    assert tested("a and not b and c.d", True) == ["a", "d"]
    assert tested("a or b", True) == [] and tested("a or not b", False) == ["b"]
    assert tested("x.a == 1", True) == [] and tested("f()", True) == [] and tested("x.a is True", True) == []
