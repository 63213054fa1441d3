"""What a provider function's parameter can hold, read from what its callers pass
(`atompin.analysis.argument_sources`): only what is read exactly says "cannot"."""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.argument_sources import ArgumentQuestions, ArgumentSources

# The asker cares for what `self.kept` holds in class `Holder`, and for the module-level name `Ours`.
ASK = ArgumentQuestions(
    attribute=lambda path, cls, name: cls == "Holder" and name == "kept",
    name=lambda path, name: name == "Ours",
)

HELPER = """
def helper(backend, spec=None):
    return backend.sizes(spec)
"""


def may_hold(callers: str, helper: str = HELPER, line: int = 3) -> bool:
    files = {"pv/helper.py": textwrap.dedent(helper), "pv/callers.py": textwrap.dedent(callers)}
    sources = ArgumentSources(
        lambda path: files[path].encode(), lambda name: [p for p, text in files.items() if name in text]
    )
    return sources.may_hold("pv/helper.py", line, "sizes", ASK)


@pytest.mark.parametrize(
    "callers, held",
    [
        # Read exactly, none of them ours: a constant, a name the asker rules out, `self.x` elsewhere.
        ("from pv.helper import helper\n\nhelper(None)\nhelper(Theirs, spec=1)\n", False),
        (
            "from pv.helper import helper\n\nclass Layer:\n    def spec(self):\n        return helper(self.backend)\n",
            False,
        ),
        # One of them ours.
        ("from pv.helper import helper\n\nhelper(Theirs)\nhelper(Ours)\n", True),
        (
            "from pv.helper import helper\n\nclass Holder:\n    def spec(self):\n        return helper(self.kept)\n",
            True,
        ),
        # By keyword.
        ("from pv.helper import helper\n\nhelper(spec=1, backend=Ours)\n", True),
        # Not read exactly: a local, a call, `*args`, `**kwargs`, the function handed on by name.
        ("from pv.helper import helper\n\ndef f():\n    b = make()\n    return helper(b)\n", True),
        ("from pv.helper import helper\n\nhelper(make())\n", True),
        ("from pv.helper import helper\n\nhelper(*backends)\n", True),
        ("from pv.helper import helper\n\nhelper(**options)\n", True),
        ("from functools import partial\nfrom pv.helper import helper\n\nrun = partial(helper, Theirs)\n", True),
        # A method's parameter: its callers go through instances, not followed.
        (
            "from pv.helper import helper\n\nclass Layer:\n    def spec(self, backend):\n        return helper(backend)\n",
            True,
        ),
    ],
)
def test_what_a_caller_passes(callers: str, held: bool):
    assert may_hold(callers) is held


def test_a_parameter_of_a_module_level_caller_is_followed_to_its_callers():
    # vLLM's composites: a method of a class made inside `make(general, causal)` hands `general` on.
    callers = """
    from pv.helper import helper

    def make(general, causal):
        class Composite:
            @classmethod
            def sizes(cls, spec=None):
                return helper(general, spec)
        return Composite

    Both = make(Theirs, Theirs)
    """
    assert may_hold(callers) is False
    assert may_hold(callers.replace("make(Theirs, Theirs)", "make(Ours, Theirs)")) is True
    # Bound again inside before the call: a local, not the parameter.
    rebound = callers.replace(
        "return helper(general, spec)", "general = pick()\n                return helper(general, spec)"
    )
    assert may_hold(rebound) is True


def test_a_function_nobody_calls_or_a_receiver_that_is_no_parameter_may_hold_anything():
    assert may_hold("x = 1\n") is True  # never called by the provider: called by whom, with what?
    local = "def helper(spec=None):\n    backend = choose()\n    return backend.sizes(spec)\n"
    assert may_hold("from pv.helper import helper\n\nhelper(None)\n", helper=local, line=4) is True
    in_method = "class C:\n    def helper(self, backend):\n        return backend.sizes(None)\n"
    assert may_hold("C().helper(None)\n", helper=in_method, line=4) is True
