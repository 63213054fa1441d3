"""Where a parameter is known None (`nullness`), and the provider calls that run only there.

Modelled on vllm-omni 0.24 at vLLM 0.26: vLLM's `RequestState.make_request_output` returns early
through a 3-argument `self._new_request_output(...)` when `pooling_output is not None`, then
makes a 5-argument call (the 5th, `ec_transfer_params`, new in 0.26). vllm-omni's override of
`_new_request_output` takes 4, but its override of `make_request_output` hands on to vLLM's only
when `pooling_output is not None`: the 5-argument call never runs for its objects.
"""

from __future__ import annotations

import ast
import textwrap

from atompin.analysis.nullness import known_none
from tests.test_contact import check, found


def _known(source: str) -> list[tuple[int, int, str, bool]]:
    [function] = ast.parse(textwrap.dedent(source)).body
    assert isinstance(function, ast.FunctionDef)
    return [(k.first, k.last, k.name, k.none) for k in known_none(function)]


def test_an_early_return_leaves_the_parameter_none_to_the_end_of_the_block():
    assert _known(
        """
        def f(self, p, q):
            if p is not None:
                return 1
            a = 2
            return a
        """
    ) == [(4, 4, "p", False), (5, 6, "p", True)]


def test_an_if_body_and_its_else():
    assert _known(
        """
        def f(p):
            if p is None:
                a = 1
            else:
                a = 2
            return a
        """
    ) == [(4, 4, "p", True), (6, 6, "p", False)]


def test_an_and_holds_in_the_body_only():
    assert _known(
        """
        def f(self, p, q):
            if self.x is None and p is not None:
                return 1
            return 2
        """
    ) == [(4, 4, "p", False)]


def test_a_parameter_bound_again_or_shadowed_is_not_known():
    assert (
        _known(
            """
            def f(p, q):
                if p is not None:
                    return 1
                if q is None:
                    return 2
                p = 3
                g = lambda q: q
                return p
            """
        )
        == []
    )


def test_a_body_that_does_not_exit_tells_nothing_after_it():
    assert _known(
        """
        def f(p):
            if p is not None:
                print(p)
            return p
        """
    ) == [(4, 4, "p", False)]


BEFORE = {
    "pv/output.py": """
        class RequestState:
            def make_request_output(self, new_token_ids, pooling_output, finish_reason, kv=None):
                finished = finish_reason is not None
                if pooling_output is not None:
                    return self._new_request_output(1, [pooling_output], finished)
                return self._new_request_output(1, new_token_ids, finished, kv)

            def _new_request_output(self, request_id, outputs, finished, kv=None):
                return outputs
    """,
}
AFTER = {
    "pv/output.py": """
        class RequestState:
            def make_request_output(self, new_token_ids, pooling_output, finish_reason, kv=None, ec=None):
                finished = finish_reason is not None
                if pooling_output is not None:
                    return self._new_request_output(1, [pooling_output], finished)
                return self._new_request_output(1, new_token_ids, finished, kv, ec)

            def _new_request_output(self, request_id, outputs, finished, kv=None, ec=None):
                return outputs
    """,
}
CONSUMER = {
    "plug/output.py": """
        from pv.output import RequestState

        class MyState(RequestState):
            def make_request_output(self, new_token_ids, pooling_output, finish_reason, kv=None):
                if self.detokenizer is None and pooling_output is not None:
                    return super().make_request_output(new_token_ids, pooling_output, finish_reason, kv)
                return self._new_request_output(1, new_token_ids, False, kv)

            def _new_request_output(self, request_id, outputs, finished, kv=None):
                return outputs
    """,
}
SYMBOL = "plug.output:MyState._new_request_output"


def _severities(consumer: dict[str, str]) -> list[str]:
    result = check(consumer, AFTER, baseline=BEFORE)
    return [severity for severity, symbol, _ in found(result, "override-drift") if symbol == SYMBOL]


def test_a_provider_call_made_only_where_the_override_hands_on_nothing_is_not_made():
    [finding] = [f for f in check(CONSUMER, AFTER, baseline=BEFORE).findings if f.symbol == SYMBOL]
    # What is left is the override being narrower, which no call that runs for it shows.
    assert finding.severity.value == "warning" and "no provider call passes the new ones" in finding.message


def test_a_super_call_that_may_pass_none_still_reaches_the_call():
    text = CONSUMER["plug/output.py"]
    # Handed on under no test of it.
    unguarded = text.replace("if self.detokenizer is None and pooling_output is not None:", "if self.detokenizer:")
    assert _severities({"plug/output.py": unguarded}) == ["error"]
    # Handed on where it is None.
    inverted = text.replace("pooling_output is not None:", "pooling_output is None:")
    assert _severities({"plug/output.py": inverted}) == ["error"]
    # Handed on twice, once not tested.
    twice = text.replace(
        "return self._new_request_output(1, new_token_ids, False, kv)",
        "return super().make_request_output(new_token_ids, None, finish_reason, kv)",
    )
    assert _severities({"plug/output.py": twice}) == ["error"]
    # Passed by keyword, tested: the call still does not run.
    keyword = text.replace(
        "super().make_request_output(new_token_ids, pooling_output, finish_reason, kv)",
        "super().make_request_output(new_token_ids, finish_reason=finish_reason, pooling_output=pooling_output)",
    )
    assert _severities({"plug/output.py": keyword}) == ["warning"]
