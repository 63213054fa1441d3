"""The `__new__` a `typing.NamedTuple` class gets from its fields: a consumer call of a provider
named tuple is judged like any other call. vLLM 0.32 renamed `ExecuteModelState`'s `dp_sync`
field to `dp_sync_state` and added `num_spec_tokens_to_schedule`, which vllm-omni 0.31's model
runner does not pass: a TypeError on every step."""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.indexer import index_module
from tests.test_contact import check, found

STATE = """
    from typing import NamedTuple

    class ExecuteModelState(NamedTuple):
        batch: list
        hidden: int
        dp_sync_state: int
        num_spec_tokens: int
        stats: dict | None = None
"""
STATE_BEFORE = STATE.replace("        dp_sync_state: int\n        num_spec_tokens: int\n", "        dp_sync: int\n")
CONSUMER = """
    from pv.state import ExecuteModelState

    def step(batch, hidden, sync):
        return ExecuteModelState(batch=batch, hidden=hidden, dp_sync=sync, stats=None)
"""


def fields_of(source: str, name: str) -> tuple[str, ...] | None:
    info = index_module(textwrap.dedent(source).encode(), "m", False).classes[name]
    return info.fields if info.namedtuple else None


def test_a_named_tuple_s_fields_are_read_in_order_with_defaults():
    assert fields_of(STATE, "ExecuteModelState") == ("batch", "hidden", "dp_sync_state", "num_spec_tokens", "stats=")
    assert fields_of("import typing\n\nclass P(typing.NamedTuple):\n    a: int\n    b: int = 0\n", "P") == ("a", "b=")


@pytest.mark.parametrize(
    "source",
    [
        "class NamedTuple:\n    pass\n\nclass P(NamedTuple):\n    a: int\n",  # not typing's
        "from typing import NamedTuple\n\nclass P(NamedTuple):\n    if True:\n        a: int\n",
    ],
)
def test_what_cannot_be_read_for_sure_is_unknown(source: str):
    assert fields_of(source, "P") is None


def test_a_call_passing_a_field_the_named_tuple_dropped_is_an_error():
    result = check({"plug/run.py": CONSUMER}, {"pv/state.py": STATE}, baseline={"pv/state.py": STATE_BEFORE})
    assert found(result, "arity-drift") == [("error", "pv.state:ExecuteModelState", "plug/run.py:4")]
    [finding] = [f for f in result.findings if f.rule.value == "arity-drift"]
    assert "dp_sync=" in finding.message
    assert "ExecuteModelState.__new__(cls, batch, hidden, dp_sync_state, num_spec_tokens, stats=…)" in finding.message
    # The call that fits the fields is not reported; nor is one of a class defining its own `__new__`.
    fits = CONSUMER.replace("dp_sync=sync", "dp_sync_state=sync, num_spec_tokens=0")
    result = check({"plug/run.py": fits}, {"pv/state.py": STATE}, baseline={"pv/state.py": STATE_BEFORE})
    assert found(result, "arity-drift") == []
    own = STATE + "\n        def __new__(cls, *args, **kwargs):\n            return super().__new__(cls)\n"
    result = check({"plug/run.py": CONSUMER}, {"pv/state.py": own}, baseline={"pv/state.py": STATE_BEFORE})
    assert found(result, "arity-drift") == []


def test_positional_arguments_past_the_fields_are_an_error():
    source = CONSUMER.replace("batch=batch, hidden=hidden, dp_sync=sync, stats=None", "batch, hidden, sync, 0, None, 1")
    result = check({"plug/run.py": source}, {"pv/state.py": STATE})
    assert found(result, "arity-drift") == [("error", "pv.state:ExecuteModelState", "plug/run.py:4")]
