"""return-drift for an output buffer: the provider's original writes its result into a parameter
and returns nothing, and the consumer's replacement returns the result instead, leaving the
buffer unwritten where it runs (vllm-ascend 0.24.0rc1's forward of vLLM's `Qwen3NextAttention`,
which at vLLM 0.25.1 returns its result from the `else` of `if vllm_version_is("0.24.0")`)."""

from __future__ import annotations

import ast
import textwrap

import pytest
from test_version_gates import HELPER, PROVIDER

from atompin.analysis.output_buffers import filled_outputs, output_names, unwritten_returns

ATTN = """
class Attention:
    def forward(self, positions, output, hidden):
        output[:] = self.proj(hidden)

class Layer:
    def forward(self, positions, hidden):
        out = hidden.new_empty(hidden.shape)
        self.attn.forward(positions, out, hidden)
        return out
"""
PROVIDER_AT = {**PROVIDER, "pv/attn.py": ATTN}
BASELINE = {**PROVIDER_AT, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}

REPLACED = """
    from plug.utils import pv_version_is
    from pv.attn import Attention

    class MyAttention:
        def forward(self, positions, output, hidden):
            x = self.proj(hidden)
            if pv_version_is("0.25.0"):
                output[:] = x
            else:
                return x

    Attention.forward = MyAttention.forward
"""


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/utils.py": HELPER, "plug/mod.py": source}


def drift(found) -> list[tuple[str, list[str]]]:
    return [(f.severity.value, [str(s) for s in f.sites]) for f in found.findings if f.rule.value == "return-drift"]


def test_a_replacement_returning_what_the_original_writes_into_a_buffer_is_an_error_where_it_runs(run_check):
    found = run_check(PROVIDER_AT, consumer(REPLACED), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    assert drift(found) == [("error", ["plug/mod.py:12", "plug/mod.py:10"])]
    [finding] = [f for f in found.findings if f.rule.value == "return-drift"]
    assert "leaves `output` unwritten" in finding.message and "pv.attn:Attention.forward" in finding.message
    # At 0.25.0 the gate holds: the replacement writes the buffer.
    assert drift(run_check(BASELINE, consumer(REPLACED), version="0.25.0")) == []
    # With no baseline to tell whether the consumer works with that path, a warning.
    assert drift(run_check(PROVIDER_AT, consumer(REPLACED), version="0.25.1")) == [("warning", ["plug/mod.py:12", "plug/mod.py:10"])]


@pytest.mark.parametrize(
    "change",
    [
        ("                return x", "                output[:] = x\n                return x"),  # writes it too
        ("                return x", "                fill(output, x)\n                return x"),  # hands it on
        ("                return x", "                return output"),  # gives the buffer back
        ("output", "buf"),  # not named as an output
        ('if pv_version_is("0.25.0"):', "if self.eager:"),  # which way it goes is not known
    ],
)
def test_a_replacement_that_may_fill_the_buffer_is_not_judged(run_check, change):
    source = REPLACED.replace(*change)
    provider = {k: v.replace(*change) if change[0] == "output" else v for k, v in PROVIDER_AT.items()}
    found = run_check(provider, consumer(source), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    assert drift(found) == []


def test_an_original_that_returns_its_result_has_no_buffer_to_lose(run_check):
    provider = {**PROVIDER_AT, "pv/attn.py": ATTN.replace("        output[:] = self.proj(hidden)\n", "        output[:] = self.proj(hidden)\n        return output\n")}
    assert drift(run_check(provider, consumer(REPLACED), version="0.25.1")) == []


def test_the_same_return_at_the_baseline_is_a_warning(run_check):
    source = REPLACED.replace('pv_version_is("0.25.0")', 'pv_version_is("0.24.0")')  # the else ran there too
    found = run_check(PROVIDER_AT, consumer(source), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    assert [severity for severity, _ in drift(found)] == ["warning"]


def function(source: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_output_names_and_what_an_original_fills():
    names = ["output", "out", "core_attn_out", "output_tensor", "scheduler_output", "output_size", "out_ptr", "layout"]
    assert output_names(names) == ["output", "out", "core_attn_out", "output_tensor"]
    fills = function("def f(x, out, output, q_out):\n    out.copy_(x)\n    g(x, output=output)\n    q_out.shape\n")
    assert filled_outputs(fills, ["out", "output", "q_out"]) == ("out", "output")
    gives = function("def f(x, out):\n    out[:] = x\n    return out\n")
    assert filled_outputs(gives, ["out"]) == ()


def test_returns_with_the_ifs_they_sit_in_and_the_buffers_untouched_on_their_way():
    source = """
        def forward(self, x, output):
            n = output.shape[0]
            if a:
                fill(output, x)
                return x
            elif b:
                return x
            for i in x:
                return i
            return x
    """

    def found(text: str) -> list[tuple[int, list[tuple[int, bool]], tuple[str, ...]]]:
        returns = unwritten_returns(function(text), ["output"])
        return [(r.lineno, [(i.test.lineno, side) for i, side in ifs], names) for r, ifs, names in returns]

    # The `elif`'s return: the buffer is handed on only in the other branch. Not the first return
    # (after the hand-over), nor the one in a loop, nor the last (the hand-over may come before it).
    assert found(source) == [(8, [(4, False), (7, True)], ("output",))]
    # Reading its shape or testing it for None is no write.
    assert found("def f(self, x, output):\n    if output is None or len(output) > output.size(0):\n        pass\n    return x\n") == [(4, [], ("output",))]
