"""A consumer helper handing its `**` parameter on to a provider call: the keywords its callers
pass are what the provider call passes (vllm-omni 0.31's `_start_api_server_process_manager(*,
cleanup_timeout, **manager_kwargs)` calls `APIServerProcessManager.__init__(manager,
**manager_kwargs)`; its caller passes `input_addresses=`, which vLLM 0.32 renamed)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from atompin.analysis.keyword_tables import passed_on_unchanged

PROVIDER = {
    "pv/__init__.py": "",
    "pv/utils.py": """
        class Manager:
            def __init__(self, target, input_listeners, output_listeners=None):
                self.target = target
    """,
}
# The release the consumer was written against: the addresses, not the listeners.
BASELINE = {**PROVIDER, "pv/utils.py": PROVIDER["pv/utils.py"].replace("_listeners", "_addresses")}

HANDED_ON = """
    from pv.utils import Manager

    def start(*, timeout: float, **manager_kwargs):
        manager = Manager.__new__(Manager)
        Manager.__init__(manager, **manager_kwargs)
        return manager

    def run(addresses):
        return start(timeout=1.0, target=print, input_addresses=addresses)
"""


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/serve.py": source}


def arity(found) -> list[tuple[str, str, str]]:
    return sorted(
        (f.severity.value, str(f.sites[0]), f.message) for f in found.findings if f.rule.value == "arity-drift"
    )


def test_the_keywords_a_caller_hands_on_through_double_star_are_judged_at_the_provider_call(run_check):
    [(severity, site, message)] = arity(run_check(PROVIDER, consumer(HANDED_ON), baseline=BASELINE))
    assert (severity, site) == ("error", "plug/serve.py:5")
    assert "passes input_addresses=, which the signature does not take" in message
    # Only what lands in `**manager_kwargs` (not the helper's own `timeout`), named with its caller.
    assert "(1 positional, target=, input_addresses=)" in message
    assert "hands on the keywords of the call at plug/serve.py:9" in message


def test_keywords_the_provider_still_takes_pass(run_check):
    source = HANDED_ON.replace("input_addresses=addresses", "input_listeners=addresses")
    assert arity(run_check(PROVIDER, consumer(source), baseline=BASELINE)) == []


def test_a_plain_call_of_the_provider_callable_is_judged_as_before(run_check):
    source = HANDED_ON.replace("Manager.__init__(manager, **manager_kwargs)", "Manager(**manager_kwargs)")
    [(severity, site, _)] = arity(run_check(PROVIDER, consumer(source), baseline=BASELINE))
    assert (severity, site) == ("error", "plug/serve.py:5")


@pytest.mark.parametrize(
    "change",
    [
        # The helper changes the dict before handing it on: what it holds is not the caller's.
        ("        manager = Manager", '        manager_kwargs.pop("input_addresses", None)\n        manager = Manager'),
        ("        manager = Manager", '        manager_kwargs["input_listeners"] = 1\n        manager = Manager'),
        ("        manager = Manager", "        manager_kwargs = {}\n        manager = Manager"),
        ("        manager = Manager", "        extra(manager_kwargs)\n        manager = Manager"),
        # The caller's own `**`: the keywords are not known.
        ("timeout=1.0, target=print, input_addresses=addresses", "timeout=1.0, **options"),
        # A nested function sees the dict: when it runs is not known.
        (
            "        manager = Manager",
            "        def more():\n            manager_kwargs.clear()\n        manager = Manager",
        ),
    ],
)
def test_a_dict_the_helper_may_change_says_nothing(run_check, change):
    source = HANDED_ON.replace(*change)
    assert source != HANDED_ON
    assert [f for f in arity(run_check(PROVIDER, consumer(source), baseline=BASELINE)) if f[0] == "error"] == []


def handed_on(source: str) -> str | None:
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return passed_on_unchanged(function)


def test_a_double_star_parameter_only_read_and_unpacked_is_handed_on():
    assert (
        handed_on("def f(a, **kw):\n    if 'x' in kw and kw.get('y'):\n        g(a, **kw)\n    return kw['z']\n")
        == "kw"
    )


@pytest.mark.parametrize(
    "source",
    [
        "def f(a, **kw):\n    return g(a)\n",  # never unpacked: nothing handed on
        "def f(a, *args):\n    return g(*args)\n",  # no `**` parameter
        "def f(**kw):\n    kw.update(x=1)\n    return g(**kw)\n",
        "def f(**kw):\n    del kw['x']\n    return g(**kw)\n",
        "def f(**kw):\n    h(kw)\n    return g(**kw)\n",
        "def f(**kw):\n    return g(**kw, **{'x': 1}) or (lambda: kw)\n",
    ],
)
def test_a_double_star_parameter_used_otherwise_is_not(source):
    assert handed_on(source) is None
