"""A dict a function fills for a call's `**`: the keywords the call passes, each where it is added
(`keyword_tables`), judged like keywords written out (vllm-ascend 0.24.0rc1's
`get_kv_cache_coordinator(**orig_kwargs)`, whose `max_in_flight_tokens` key, added in the `else` of
a version gate, vLLM 0.25.1 does not take)."""

from __future__ import annotations

import ast
import textwrap

import pytest
from test_version_gates import HELPER, PROVIDER

from atompin.analysis.keyword_tables import keyword_adds, keyword_variants

PROVIDER_AT = {**PROVIDER, "pv/layers/coord.py": "def make(config, budget, block=16):\n    return config\n"}
BASELINE = {**PROVIDER_AT, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}

# Written for 0.25.0 and for the provider's main branch, which renamed `budget` to `tokens`.
FILLED = """
    from plug.utils import pv_version_is
    from pv.layers.coord import make

    def build(config, n):
        kwargs = dict(config=config)
        if pv_version_is("0.25.0"):
            kwargs["budget"] = n
        else:
            kwargs["tokens"] = n
        kwargs.update(block=32)
        return make(**kwargs)
"""


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/utils.py": HELPER, "plug/mod.py": source}


def arity(found) -> list[tuple[str, str, str]]:
    return sorted((f.severity.value, str(f.sites[0]), f.message) for f in found.findings if f.rule.value == "arity-drift")


def test_a_key_added_where_a_gate_fails_is_passed_where_the_provider_runs_that_branch(run_check):
    found = run_check(PROVIDER_AT, consumer(FILLED), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    [(severity, site, message)] = arity(found)
    assert (severity, site) == ("error", "plug/mod.py:11")
    assert "passes tokens=, which the signature does not take" in message
    assert "(0 positional, config=, block=, tokens=)" in message


def test_the_branch_that_runs_at_the_provider_passes_what_it_takes(run_check):
    # At 0.25.0 the gate holds: `budget=` is passed, which it takes; `tokens=` is not.
    assert arity(run_check(BASELINE, consumer(FILLED), version="0.25.0")) == []


@pytest.mark.parametrize(
    "change",
    [
        ('kwargs.update(block=32)', 'kwargs.pop("config")'),  # changed otherwise: keys unknown
        ('kwargs.update(block=32)', 'extra(kwargs)'),  # passed on: it may add any key
        ('kwargs["tokens"] = n', 'kwargs[name] = n'),  # a key not written out
        ('kwargs = dict(config=config)', 'kwargs = dict(base, config=config)'),  # a copy of another dict
        ('        return make(**kwargs)', '        out = make(**kwargs)\n        kwargs["late"] = 1\n        return out'),
        ('if pv_version_is("0.25.0"):', 'if n > 2:'),  # added under the consumer's own test
        ('if pv_version_is("0.25.0"):', 'for _ in range(n):\n            kwargs["x"] = 1\n        if pv_version_is("0.25.0"):'),
    ],
)
def test_a_dict_that_may_hold_other_keys_says_nothing_of_them(run_check, change):
    source = FILLED.replace(*change)
    assert source != FILLED
    found = run_check(PROVIDER_AT, consumer(source), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    assert [f for f in found.findings if f.rule.value == "arity-drift" and f.severity.value == "error"] == []


def test_a_key_added_under_a_gate_a_method_call_passes(run_check):
    provider = {**PROVIDER, "pv/layers/spec.py": "class Spec:\n    def blocks(self, budget):\n        return budget\n"}
    before = {**provider, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}
    source = """
        from plug.utils import pv_version_is
        from pv.layers.spec import Spec

        def build(spec: Spec, n):
            kw = {}
            if not pv_version_is("0.25.0"):
                kw["tokens"] = n
            else:
                kw["budget"] = n
            return spec.blocks(**kw)
    """
    found = run_check(provider, consumer(source), version="0.25.1", baseline=before, baseline_version="0.25.0")
    assert [(s, site) for s, site, _ in arity(found)] == [("error", "plug/mod.py:10")]


def adds(source: str, name: str = "kw") -> list[tuple[str, list[tuple[int, bool]]]] | None:
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    call = next(
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and any(k.arg is None and getattr(k.value, "id", "") == name for k in n.keywords)
    )
    found = keyword_adds(function, name, call)
    return None if found is None else [(a.key, [(i.test.lineno, side) for i, side in a.ifs]) for a in found]


def test_keys_are_read_with_the_ifs_they_are_added_under():
    source = """
        def f(n):
            kw = {"a": 1}
            with lock:
                kw["b"] = 2
            if g(1):
                kw.update({"c": 3}, d=4)
            elif g(2):
                kw["e"] = 5
            return call(**kw)
    """
    assert adds(source) == [("a", []), ("b", []), ("c", [(6, True)]), ("d", [(6, True)]), ("e", [(6, False), (8, True)])]


def test_a_key_added_in_the_other_branch_of_the_call_s_if_never_reaches_it():
    source = """
        def f(n):
            kw = dict(a=1)
            if g(1):
                kw["b"] = 2
            else:
                kw["c"] = 3
                call(**kw)
    """
    assert adds(source) == [("a", []), ("c", [])]


@pytest.mark.parametrize(
    "body",
    [
        "kw = dict(a=1)\nkw2 = kw\ncall(**kw)",  # aliased
        "kw = dict(a=1)\ndef inner():\n    kw['b'] = 1\ncall(**kw)",  # a nested scope changes it
        "kw = dict(a=1)\ntry:\n    kw['b'] = 1\nexcept E:\n    pass\ncall(**kw)",  # in a try
        "kw = dict(a=1)\nkw = dict(b=1)\ncall(**kw)",  # assigned twice
        "kw['b'] = 1\nkw = dict(a=1)\ncall(**kw)",  # added before it is made
        "kw = dict(a=1, **more)\ncall(**kw)",
        "kw = {'a': 1, k: 2}\ncall(**kw)",
        "if g(1):\n    kw = dict(a=1)\ncall(**kw)",  # made only under a test
    ],
)
def test_a_dict_that_may_change_otherwise_has_no_known_keys(body):
    source = "def f(n):\n" + textwrap.indent(body, "    ") + "\n"
    assert adds(source) is None


def test_variants_list_every_outcome_of_the_tests_with_the_keys_each_passes():
    # Conditions as (test, outcome): the key `b` where test t holds, `c` where it fails.
    ways = keyword_variants(
        ["a"], [("b", (("t", True),)), ("c", (("t", False),))], lambda c: c, lambda t, v: (t, v)
    )
    assert ways == [(("a", "b"), (("t", True),)), (("a", "c"), (("t", False),))]
    many = [(f"k{i}", ((f"t{i}", True),)) for i in range(4)]
    assert keyword_variants([], many, lambda c: c, lambda t, v: (t, v)) is None


def test_a_key_added_where_the_class_takes_it_by_its_signature(run_check):
    # vllm-omni 0.28 passes `scheduler_block_size` to vLLM's `KVCacheManager` only where
    # `inspect.signature(KVCacheManager).parameters` has it: the class's `__init__`'s.
    source = """
        import inspect
        from pv.layers.coord import Manager

        def build(config, n):
            kwargs = dict(model_len=n)
            params = inspect.signature(Manager).parameters
            if "block" in params:
                kwargs["block"] = n
            if "budget" in params:
                kwargs["budget"] = n
            return Manager(config, **kwargs)
    """
    for init in ("config, model_len, block", "config, model_len, budget=0", "config, model_len"):
        manager = f"class Manager:\n    def __init__(self, {init}):\n        pass\n"
        provider = {**PROVIDER, "pv/layers/coord.py": manager}
        assert arity(run_check(provider, consumer(source), version="0.25.1")) == [], init
    # What it cannot take it is still told: `block` is required and never passed.
    manager = "class Manager:\n    def __init__(self, config, model_len, size):\n        pass\n"
    found = run_check({**PROVIDER, "pv/layers/coord.py": manager}, consumer(source), version="0.25.1")
    assert [m.split(":")[0] for _, _, m in arity(found)] == ["the call does not pass the required size (its positional arguments bind to config)"]
