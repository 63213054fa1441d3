"""The contact surface: overrides, stand-ins, return shapes, receiver calls and stale copies.

Each kind has a provider with two releases (A, what the consumer was written against,
and B, the bump), a consumer that breaks at B, and a variant that fits, which must
give no finding.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin.analysis.arity import CallShape, keyword_dicts, shape_of
from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.results import check_trees
from atompin.analysis.syntax import redefined
from atompin.cli import app
from atompin.model import CheckResult, Finding
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files, write_files

runner = CliRunner()


class SearchedInPlace(MemoryTree):
    """A memory tree whose name searches read the identifiers of only the files with a line that
    can write a name (`NameSearch.in_place`), as a folder's are: every other tree reads them all."""

    @property
    def searches_in_place(self) -> bool:
        return True


def check(consumer: dict[str, str], provider: dict[str, str], baseline: dict[str, str] | None = None) -> CheckResult:
    """The check of `consumer` against `provider` (at `baseline` before); it finds the same with
    the provider's identifiers all read and read only for the files searched in place."""
    results = []
    for kind in (MemoryTree, SearchedInPlace):
        c = MemoryTree(dedent_files({"plug/__init__.py": "", **consumer}), "consumer")
        p = kind(dedent_files({"pv/__init__.py": "", **provider}), "provider")
        b = kind(dedent_files({"pv/__init__.py": "", **baseline}), "baseline") if baseline is not None else None
        results.append(check_trees(c, p, "pv", "plug", baseline=b, baseline_label="1.0" if b is not None else ""))
    result, in_place = results
    assert not [f for f in result.findings if f.rule.value == "unparseable"]  # a test's own typo
    assert in_place.findings == result.findings
    return result


def found(result: CheckResult, rule: str) -> list[tuple[str, str, str]]:
    """(severity, symbol, first site) of each finding of `rule`."""
    return [(f.severity.value, f.symbol, str(f.sites[0])) for f in result.findings if f.rule.value == rule]


def severities(consumer: dict[str, str], provider: dict[str, str], baseline: dict[str, str], rule: str) -> list[str]:
    """The severity of each finding of `rule` (`check`, `found`)."""
    return [severity for severity, _, _ in found(check(consumer, provider, baseline=baseline), rule)]


def one_of(result: CheckResult, symbol: str) -> Finding:
    [finding] = [f for f in result.findings if f.symbol == symbol]
    return finding


def one(result: CheckResult, rule: str) -> Finding:
    [finding] = [f for f in result.findings if f.rule.value == rule]
    return finding


# -- override-drift ------------------------------------------------------------------


PREFILL_A = {
    "pv/prefill.py": """
        class PrefillBackend:
            def run(self, q, k, v, return_lse):
                raise NotImplementedError
    """,
    "pv/impl.py": """
        def forward(layer, q, k, v):
            return layer.prefill_backend.run(q=q, k=k, v=v, return_lse=False)
    """,
}
PREFILL_B = {
    "pv/prefill.py": """
        class PrefillBackend:
            def run(self, q, k, v, return_lse, out=None, output_scale=None):
                raise NotImplementedError
    """,
    "pv/impl.py": """
        def forward(layer, q, k, v, out):
            return layer.prefill_backend.run(q=q, k=k, v=v, return_lse=False, out=out, output_scale=None)
    """,
}


def _prefill_consumer(signature: str) -> dict[str, str]:
    return {
        "plug/backend.py": f"""
            from pv.prefill import PrefillBackend

            class MyPrefill(PrefillBackend):
                def run({signature}):
                    return q
        """
    }


def test_override_called_with_a_new_keyword_is_an_error_that_says_what_is_new():
    consumer = _prefill_consumer("self, q, k, v, return_lse")
    assert found(check(consumer, PREFILL_A), "override-drift") == []
    result = check(consumer, PREFILL_B, baseline=PREFILL_A)
    assert found(result, "override-drift") == [("error", "plug.backend:MyPrefill.run", "plug/backend.py:4")]
    message = one(result, "override-drift").message
    assert "pv/impl.py:2" in message and "out=, output_scale=" in message
    assert "out, output_scale new since 1.0" in message
    assert found(result, "shadow-drift") == []  # implementing a stub is not copying it


@pytest.mark.parametrize(
    "passing",
    [
        "kwargs = dict(q=q, k=k, v=v, return_lse=False, out=out)\n    return layer.prefill_backend.run(**kwargs)",
        'kwargs = {"q": q, "k": k, "v": v, "return_lse": False, "out": out}\n'
        "    return layer.prefill_backend.run(**kwargs)",
        "return layer.prefill_backend.run(**dict(q=q, k=k, v=v, return_lse=False, out=out))",
    ],
)
def test_keywords_a_call_passes_through_a_dict_written_whole_are_read(passing: str):
    """vLLM's flashinfer warm-up builds `dummy_run_kwargs = dict(..., randomize_inputs=True)` and
    calls `runner._dummy_run(**dummy_run_kwargs)`: arctic-inference's override cannot take it."""
    provider = {**PREFILL_B, "pv/impl.py": f"def forward(layer, q, k, v, out):\n    {passing}\n"}
    result = check(_prefill_consumer("self, q, k, v, return_lse"), provider, baseline=PREFILL_A)
    assert found(result, "override-drift") == [("error", "plug.backend:MyPrefill.run", "plug/backend.py:4")]
    assert "run(..., out=)" in one(result, "override-drift").message
    # A dict changed after it is made, or bound twice, may pass anything: not read.
    for changed in ("kwargs.update(x=1)\n    ", "kwargs = {}\n    "):
        unknown = {**PREFILL_B, "pv/impl.py": provider["pv/impl.py"].replace("    return", f"    {changed}return")}
        if "kwargs" not in passing:
            continue
        result = check(_prefill_consumer("self, q, k, v, return_lse"), unknown, baseline=PREFILL_A)
        assert found(result, "override-drift") == [("warning", "plug.backend:MyPrefill.run", "plug/backend.py:4")]


def test_a_provider_class_s_own_call_through_a_dict_written_whole_is_judged_too():
    """The provider class's own `self.m(**kwargs)`, `kwargs` a dict written whole: the keywords
    it passes bind to the override or not, as written out."""
    provider = {
        "pv/worker.py": """
            class Worker:
                def run(self, n, randomize=False):
                    return n

                def warm_up(self):
                    kwargs = dict(n=1, randomize=True)
                    return self.run(**kwargs)
        """
    }
    consumer = {
        "plug/worker.py": """
            from pv.worker import Worker

            class MyWorker(Worker):
                def run(self, n):
                    return n
        """
    }
    result = check(consumer, provider)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert (finding.severity.value, str(finding.sites[0])) == ("warning", "plug/worker.py:4")
    assert "pv.worker:Worker.warm_up (pv/worker.py:7) calls self.run(0 positional, n=, randomize=)" in finding.message


def test_keyword_dicts_are_the_locals_bound_once_to_a_dict_and_only_spread():
    tree = ast.parse(
        "def f(a, given):\n"
        "    once = dict(x=1, y=2)\n    lit = {'z': 3}\n    twice = dict(x=1)\n    twice = dict(y=2)\n"
        "    read = dict(x=1)\n    print(read)\n    built = dict(x=1, **a)\n    given = dict(w=1)\n"
        "    g(**once, **lit, **twice, **read, **built, **given)\n"
    )
    assert keyword_dicts(tree.body[0]) == {"once": ("x", "y"), "lit": ("z",)}  # type: ignore[arg-type]
    [call] = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "g"]
    assert shape_of(call, {"once": ("x", "y")}) == CallShape(0, ("x", "y"), starstar=True)


def test_an_override_still_requiring_a_parameter_its_base_dropped():
    """tpu-inference 0.32's MLA layer overrides `process_weights_after_loading(self, act_dtype)`;
    vLLM 0.34's base takes nothing, and its loader calls the hook with no argument."""
    before = {
        "pv/layer.py": "class Layer:\n    def process(self, dtype):\n        return dtype\n",
        "pv/load.py": "def load(m):\n    m.process(1)\n",
    }
    after = {
        "pv/layer.py": "class Layer:\n    def process(self):\n        return 1\n",
        "pv/load.py": "def load(m):\n    m.process()\n",
    }
    consumer = {
        "plug/layer.py": """
            from pv.layer import Layer

            class Mine(Layer):
                def process(self, dtype):
                    return dtype
        """
    }
    assert found(check(consumer, before, baseline=before), "override-drift") == []
    result = check(consumer, after, baseline=before)
    assert found(result, "override-drift") == [("error", "plug.layer:Mine.process", "plug/layer.py:4")]
    assert one(result, "override-drift").message.startswith(
        "the provider calls .process(0 positional) at pv/load.py:2, without dtype, which the base no longer takes "
        "(it did at 1.0) and the override still requires: TypeError"
    )
    # Called through `hook = getattr(m, "process", None)` (vLLM 0.34's loader): the same.
    hooked = {**after, "pv/load.py": "def load(m):\n    hook = getattr(m, 'process', None)\n    hook()\n"}
    result = check(consumer, hooked, baseline=before)
    assert found(result, "override-drift") == [("error", "plug.layer:Mine.process", "plug/layer.py:4")]
    assert one(result, "override-drift").message.startswith("the provider calls .process(0 positional) at pv/load.py:3")
    # Another provider class defines the name: the object may be its; a warning that names the call.
    other = {**hooked, "pv/quant.py": "class Method:\n    def process(self, layer):\n        return layer\n"}
    result = check(consumer, other, baseline=before)
    assert found(result, "override-drift") == [("warning", "plug.layer:Mine.process", "plug/layer.py:4")]
    assert (
        "(one is made at pv/load.py:3, on an object whose class is not known" in one(result, "override-drift").message
    )
    # A call by the method's name on such an object is weaker evidence (a LoRA layer's
    # `self.base_layer.forward(x)`): not told.
    named = {**other, "pv/load.py": "def load(m):\n    m.process()\n"}
    result = check(consumer, named, baseline=before)
    assert found(result, "override-drift") == [("warning", "plug.layer:Mine.process", "plug/layer.py:4")]
    assert "(none is found by the method's name, nor through `getattr`)" in one(result, "override-drift").message
    # No such call found: a warning. A default in the override takes the call: nothing.
    uncalled = {**after, "pv/load.py": "def load(m):\n    return m\n"}
    result = check(consumer, uncalled, baseline=before)
    assert found(result, "override-drift") == [("warning", "plug.layer:Mine.process", "plug/layer.py:4")]
    assert "(none is found by the method's name, nor through `getattr`)" in one(result, "override-drift").message
    defaulted = {"plug/layer.py": consumer["plug/layer.py"].replace("(self, dtype)", "(self, dtype=None)")}
    assert found(check(defaulted, after, baseline=before), "override-drift") == []


# vllm-gaudi's MLA forward_impl: vLLM 0.27 adds a keyword to a call that already passed keywords the
# override could not take at 0.26. That call failed at the baseline too, so the consumer does not run it.
PREFILL_OUT = {
    "pv/prefill.py": PREFILL_B["pv/prefill.py"].replace(", output_scale=None", ""),
    "pv/impl.py": PREFILL_B["pv/impl.py"].replace(", output_scale=None", ""),
}


@pytest.mark.parametrize("baseline_passes_out", [True, False])
def test_a_call_that_already_failed_at_the_baseline_is_a_warning(baseline_passes_out: bool):
    consumer = _prefill_consumer("self, q, k, v, return_lse")
    baseline = {
        **PREFILL_OUT,
        "pv/impl.py": PREFILL_OUT["pv/impl.py"] if baseline_passes_out else PREFILL_A["pv/impl.py"],
    }
    result = check(consumer, PREFILL_B, baseline=baseline)
    [(severity, symbol, _)] = found(result, "override-drift")
    assert symbol == "plug.backend:MyPrefill.run"
    if baseline_passes_out:  # out= was passed there and the override could not take it: the call failed
        assert severity == "warning"
        assert (
            "together with out=, which the override could not take at 1.0 either"
            in one(result, "override-drift").message
        )
    else:  # out= is new at this call: it is reached now
        assert severity == "error"


@pytest.mark.parametrize(
    "signature", ["self, q, k, v, return_lse, out=None, output_scale=None", "self, q, k, v, return_lse, **kwargs"]
)
def test_an_override_that_takes_the_new_keywords_fits(signature: str):
    assert found(check(_prefill_consumer(signature), PREFILL_B, baseline=PREFILL_A), "override-drift") == []


def test_an_override_narrower_than_its_base_that_nothing_calls_that_way_is_a_warning():
    provider = {
        "pv/prefill.py": """
            class PrefillBackend:
                def run(self, q, k, v, return_lse, out=None):
                    raise NotImplementedError
        """,
        "pv/impl.py": """
            def forward(layer, q, k, v):
                return layer.prefill_backend.run(q, k, v, False)
        """,
    }
    result = check(_prefill_consumer("self, q, k, v, return_lse"), provider)
    assert found(result, "override-drift") == [("warning", "plug.backend:MyPrefill.run", "plug/backend.py:4")]
    assert "narrower" in one(result, "override-drift").message


def test_an_override_as_narrow_at_the_baseline_is_info_and_a_new_narrowing_a_warning():
    """The consumer works at the baseline, where its override could not take `out=` either: what
    the bump changes is nothing (info). A parameter the base gained since is new (a warning)."""
    narrow = {
        "pv/prefill.py": """
            class PrefillBackend:
                def run(self, q, k, v, return_lse, out=None):
                    raise NotImplementedError
        """,
    }
    consumer = _prefill_consumer("self, q, k, v, return_lse")
    result = check(consumer, narrow, baseline=narrow)
    assert found(result, "override-drift") == [("info", "plug.backend:MyPrefill.run", "plug/backend.py:4")]
    assert "cannot take out= (unchanged since 1.0)" in one(result, "override-drift").message
    wide = {"pv/prefill.py": narrow["pv/prefill.py"].replace(", out=None", "")}
    result = check(consumer, narrow, baseline=wide)
    assert found(result, "override-drift") == [("warning", "plug.backend:MyPrefill.run", "plug/backend.py:4")]
    assert "cannot take out= (out new since 1.0)" in one(result, "override-drift").message


def _engines(made_by: str) -> dict[str, str]:
    """A client protocol whose `sleep` gained `reset`, and a front end that calls `.sleep(reset=)` on
    `self.engine`, which it sets to `made_by` (a real shape: vLLM 0.34's LLM and its LLMEngine)."""
    return {
        "pv/client.py": """
            class Client:
                def sleep(self, level=0, mode="abort", reset=False):
                    raise NotImplementedError
        """,
        "pv/engine.py": """
            class Engine:
                @classmethod
                def from_args(cls):
                    return cls()

                def sleep(self, level=0, mode="abort", reset=False):
                    return None
        """,
        "pv/front.py": f"""
            from pv.client import Client
            from pv.engine import Engine

            class Front:
                def __init__(self, make):
                    self.engine = {made_by}

                def sleep(self, level, mode, reset):
                    self.engine.sleep(level=level, mode=mode, reset=reset)
        """,
    }


MY_CLIENT = {
    "plug/client.py": """
        from pv.client import Client

        class MyClient(Client):
            def sleep(self, ids=None, level=0, mode="abort"):
                return ids
    """
}
CLIENT_BEFORE = {"pv/client.py": "class Client:\n    def sleep(self, level=0, mode='abort'):\n        pass\n"}


PROPOSER_A = {
    "pv/proposer.py": """
        class Proposer:
            def propose(self, hidden, metadata):
                return hidden
    """,
    "pv/runner.py": """
        class Runner:
            def propose_draft(self, hidden, metadata):
                return self.drafter.propose(hidden=hidden, metadata=metadata)
    """,
}
PROPOSER_B = {
    "pv/proposer.py": PROPOSER_A["pv/proposer.py"].replace("metadata):", "metadata, num_tokens=1):"),
    "pv/runner.py": PROPOSER_A["pv/runner.py"].replace("metadata=metadata)", "metadata=metadata, num_tokens=3)"),
}
MY_PROPOSER = """
    from pv.proposer import Proposer

    class MyProposer(Proposer):
        def propose(self, hidden, metadata):
            return hidden
"""
MY_RUNNER = """
    from pv.runner import Runner

    class MyRunner(Runner):
        def propose_draft(self, hidden, metadata):
            return self.drafter.propose(hidden, metadata)
"""


def test_a_provider_call_inside_a_method_the_consumer_took_over_is_no_error():
    # vllm-ascend's shape at vLLM 0.24: the GPU runner's propose_draft_token_ids passes the new
    # keyword; the NPU runner overrides that method without calling it and holds the NPU proposer.
    alone = check({"plug/proposer.py": MY_PROPOSER}, PROPOSER_B, baseline=PROPOSER_A)
    assert found(alone, "override-drift") == [("error", "plug.proposer:MyProposer.propose", "plug/proposer.py:4")]
    taken = check({"plug/proposer.py": MY_PROPOSER, "plug/runner.py": MY_RUNNER}, PROPOSER_B, baseline=PROPOSER_A)
    [finding] = [f for f in taken.findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert "inside Runner.propose_draft, which plug.runner:MyRunner overrides without calling it" in finding.message
    # A subclass of the consumer's runner that hands on with super() reaches the consumer's override.
    chained = MY_RUNNER + (
        "\n    class SubRunner(MyRunner):\n        def propose_draft(self, hidden, metadata):\n"
        "            return super().propose_draft(hidden, metadata)\n"
    )
    result = check({"plug/proposer.py": MY_PROPOSER, "plug/runner.py": chained}, PROPOSER_B, baseline=PROPOSER_A)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["warning"]
    # Another consumer subclass that keeps the provider's method still runs the call: the error stands
    # (vllm-omni's XPU worker, beside its GPU workers that override `determine_available_memory`).
    other = MY_RUNNER + "\n    class OtherRunner(Runner):\n        pass\n"
    kept = check({"plug/proposer.py": MY_PROPOSER, "plug/runner.py": other}, PROPOSER_B, baseline=PROPOSER_A)
    assert [sev for sev, _, _ in found(kept, "override-drift")] == ["error"]
    # Calling the provider's version keeps the call: the error stands.
    calling = MY_RUNNER.replace(
        "return self.drafter.propose(hidden, metadata)", "return super().propose_draft(hidden, metadata)"
    )
    kept = check({"plug/proposer.py": MY_PROPOSER, "plug/runner.py": calling}, PROPOSER_B, baseline=PROPOSER_A)
    assert [sev for sev, _, _ in found(kept, "override-drift")] == ["error"]


OFFLOADER_A = {
    "pv/offloader.py": """
        class BaseOffloader:
            supports_tower_offload: bool = False

            def wrap_modules(self, modules):
                return modules

        class UVAOffloader(BaseOffloader):
            supports_tower_offload = True

        def get_offloader():
            return BaseOffloader()
    """,
}
OFFLOADER_B = {
    "pv/offloader.py": OFFLOADER_A["pv/offloader.py"].replace("modules):", "modules, prefix=''):"),
    "pv/towers.py": """
        from pv.offloader import get_offloader

        def mark_tower(children):
            offloader = get_offloader()
            if offloader.supports_tower_offload:
                for name in children:
                    offloader.wrap_modules([name], prefix=name)
    """,
}
MY_OFFLOADER = """
    from pv.offloader import BaseOffloader

    class MyOffloader(BaseOffloader):
        def wrap_modules(self, modules):
            return modules
"""


@pytest.mark.parametrize(
    ("change", "severity"),
    [
        ("", "warning"),  # the class inherits the base's False: never called there
        ("        supports_tower_offload = True\n", "error"),  # the consumer's class turns it on
        ("        def __init__(self):\n            self.supports_tower_offload = True\n", "error"),  # on the instance
    ],
)
def test_a_provider_call_under_a_flag_the_overriding_class_has_false_is_no_error(change: str, severity: str) -> None:
    """vLLM 0.29 calls `offloader.wrap_modules(..., prefix=)` only `if offloader.supports_tower_offload:`,
    which the base offloader sets False and only the UVA offloader True; vllm-ascend's offloader
    derives from the base and its override takes no `prefix`."""
    consumer = {"plug/offload.py": MY_OFFLOADER + change}
    result = check(consumer, OFFLOADER_B, baseline=OFFLOADER_A)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert finding.severity.value == severity
    if severity == "warning":
        assert (
            "at pv/towers.py:7 only when offloader.supports_tower_offload is true, and "
            "plug.offload:MyOffloader has supports_tower_offload False (set in pv.offloader:BaseOffloader's body"
        ) in finding.message
    # A flag set True in the provider's class that the consumer's derives from: the call reaches it.
    on = check({"plug/offload.py": MY_OFFLOADER.replace("BaseOffloader", "UVAOffloader")}, OFFLOADER_B, OFFLOADER_A)
    assert [sev for sev, _, _ in found(on, "override-drift")] == ["error"]


# The base offloader's module with the flag set otherwise than in a class body: a dataclass field
# (the constructor sets it), or False in a subclass's body but set on the instance by its base.
FIELD_FLAG = OFFLOADER_B["pv/offloader.py"].replace("class BaseOffloader:", "@dataclass\n        class BaseOffloader:")
INSTANCE_FLAG = """
    class BaseOffloader:
        def __init__(self, tower):
            self.supports_tower_offload = tower

        def wrap_modules(self, modules, prefix=''):
            return modules

    class QuietOffloader(BaseOffloader):
        supports_tower_offload = False

    def get_offloader():
        return QuietOffloader(True)
"""


@pytest.mark.parametrize(
    ("offloader", "consumer_more"),
    [
        # A subclass of the consumer's offloader mixes in the one offloader that has the flag True.
        (None, "from pv.offloader import UVAOffloader\n\nclass MyUVA(MyOffloader, UVAOffloader):\n    pass\n"),
        ("from dataclasses import dataclass\n" + textwrap.dedent(FIELD_FLAG), ""),
        (INSTANCE_FLAG, ""),
    ],
)
def test_a_flag_that_may_be_true_for_the_overrides_classes_excuses_nothing(
    offloader: str | None, consumer_more: str
) -> None:
    provider = {**OFFLOADER_B, "pv/offloader.py": offloader} if offloader is not None else OFFLOADER_B
    consumer_text = MY_OFFLOADER + textwrap.indent(consumer_more, "    ")
    if offloader is INSTANCE_FLAG:
        consumer_text = consumer_text.replace("BaseOffloader", "QuietOffloader")
    result = check({"plug/offload.py": consumer_text}, provider, baseline=OFFLOADER_A)
    assert "error" in [sev for sev, _, _ in found(result, "override-drift")], result.findings


def test_only_a_test_of_the_calls_own_receiver_excuses_it() -> None:
    """The flag must be the receiver's: another object's flag, the `else` branch, an `or`, or a
    function defined under the test (run when called) say nothing of the call."""
    for towers in (
        "if other.supports_tower_offload:\n        offloader.wrap_modules([], prefix='x')",
        "if offloader.supports_tower_offload:\n        pass\n    else:\n        offloader.wrap_modules([], prefix='x')",
        "if offloader.supports_tower_offload or force:\n        offloader.wrap_modules([], prefix='x')",
        "if offloader.supports_tower_offload:\n        def later():\n"
        "            offloader.wrap_modules([], prefix='x')\n        return later",
    ):
        provider = {
            **OFFLOADER_B,
            "pv/towers.py": (
                "from pv.offloader import get_offloader\n\n"
                "def mark_tower(other, force):\n    offloader = get_offloader()\n    " + towers + "\n"
            ),
        }
        result = check({"plug/offload.py": MY_OFFLOADER}, provider, baseline=OFFLOADER_A)
        assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"], towers
    # Both tested with `and`: the call runs only when the flag is true.
    provider = {
        **OFFLOADER_B,
        "pv/towers.py": OFFLOADER_B["pv/towers.py"].replace(
            "if offloader.supports_tower_offload:", "if children and offloader.supports_tower_offload:"
        ),
    }
    result = check({"plug/offload.py": MY_OFFLOADER}, provider, baseline=OFFLOADER_A)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["warning"]


PROPOSERS = (
    MY_PROPOSER
    + """
    class OtherProposer(Proposer):
        def propose(self, hidden, metadata, num_tokens=1):
            return hidden

    class SubProposer(MyProposer):
        pass
"""
)


def _keeping(stores: str, kept: str = "OtherProposer") -> str:
    """A consumer runner that runs the provider's `propose_draft` (on `self.drafter`) and keeps in
    `drafter` what `stores` says, with `drafter_cls` set to `kept` (vllm-omni's workers and their
    `model_runner_cls`)."""
    return f"""
        from pv.runner import Runner
        from plug.proposer import MyProposer, OtherProposer, SubProposer

        def make():
            return MyProposer()

        class XpuRunner(Runner):
            drafter_cls = {kept}

            def __init__(self, v2):
                {stores.replace(chr(10), chr(10) + " " * 16)}
    """


@pytest.mark.parametrize(
    ("stores", "kept", "severity"),
    [
        ("self.drafter = self.drafter_cls()", "OtherProposer", "warning"),
        (
            "if v2:\n    self.drafter = OtherProposer()\nelse:\n    self.drafter = self.drafter_cls()",
            "OtherProposer",
            "warning",
        ),
        ("self.drafter = self.drafter_cls", "OtherProposer", "warning"),
        # the override's class, or a subclass inheriting the override, is kept: the call reaches it
        ("self.drafter = self.drafter_cls()", "MyProposer", "error"),
        ("self.drafter = SubProposer()", "OtherProposer", "error"),
        # something the scan cannot tell is kept too: judged as before
        ("if v2:\n    self.drafter = make()\nelse:\n    self.drafter = self.drafter_cls()", "OtherProposer", "error"),
        ("self.drafter = OtherProposer() if v2 else self.drafter_cls()", "OtherProposer", "error"),
        ("setattr(self, 'drafter', self.drafter_cls())", "OtherProposer", "error"),
        ("pass", "OtherProposer", "error"),
    ],
)
def test_a_provider_call_on_an_attribute_where_the_consumer_keeps_other_classes_is_a_warning(
    stores: str, kept: str, severity: str
):
    # vllm-omni at vLLM 0.31: the XPU workers run vLLM's `determine_available_memory`, which calls
    # `self.model_runner.profile_run(randomize_inputs=)`, and keep XPU runners there; the NPU
    # runner's narrower `profile_run` is held only by workers that never run it.
    consumer = {"plug/proposer.py": PROPOSERS, "plug/runner.py": _keeping(stores, kept)}
    result = check(consumer, PROPOSER_B, baseline=PROPOSER_A)
    assert found(result, "override-drift") == [(severity, "plug.proposer:MyProposer.propose", "plug/proposer.py:4")]
    if severity == "warning":
        assert (
            "on self.drafter of Runner; the consumer classes that run Runner.propose_draft "
            "(plug.runner:XpuRunner) keep other classes there (plug.proposer:OtherProposer)"
            in one(result, "override-drift").message
        )


# vLLM 0.29's scheduler calls `NewRequestData.from_request(..., uses_mrope=...)` on its own class
# by name: vllm-omni's `OmniNewRequestData.from_request` override is never looked up there.
NEW_DATA_A = """
    class NewData:
        @classmethod
        def from_request(cls, request, blocks):
            return cls()
"""
NEW_DATA_B = NEW_DATA_A.replace("request, blocks)", "request, blocks, uses_mrope=False)")
SCHEDULE = """
    from pv import output
    from pv.output import NewData

    def schedule(request, old):
        if old:
            return output.NewData.from_request(request, [], uses_mrope=True)
        return NewData.from_request(request, [], uses_mrope=True)
"""
MY_DATA = """
    from pv.output import NewData

    class MyData(NewData):
        @classmethod
        def from_request(cls, request, blocks):
            return cls()
"""


@pytest.mark.parametrize(
    ("patch", "severity"),
    [
        ("", "warning"),
        ("\n\ndef install():\n    sched.NewData = MyData\n", "error"),
        # vllm-omni sets `module.Request = OmniRequest` on every vLLM module in `sys.modules`.
        ("\n\ndef install(modules):\n    for module in modules:\n        module.NewData = MyData\n", "error"),
    ],
)
def test_a_provider_call_on_its_own_class_by_name_does_not_reach_an_override(patch: str, severity: str):
    consumer = {"plug/data.py": "from pv import sched\n" + textwrap.dedent(MY_DATA) + patch}
    a = {"pv/output.py": NEW_DATA_A, "pv/sched.py": SCHEDULE.replace(", uses_mrope=True", "")}
    b = {"pv/output.py": NEW_DATA_B, "pv/sched.py": SCHEDULE}
    result = check(consumer, b, baseline=a)
    assert found(result, "override-drift") == [(severity, "plug.data:MyData.from_request", "plug/data.py:7")]
    if severity == "warning":
        message = one(result, "override-drift").message
        assert "at pv/sched.py:6 on output.NewData, a provider class named as written" in message


def test_a_receiver_the_calling_function_binds_is_no_class_named_as_written():
    # `def schedule(request, NewData)`: whatever the caller hands over, perhaps the consumer's class.
    consumer = {"plug/data.py": MY_DATA}
    a = {"pv/output.py": NEW_DATA_A, "pv/sched.py": SCHEDULE.replace(", uses_mrope=True", "")}
    handed = SCHEDULE.replace("def schedule(request, old):", "def schedule(request, old, NewData, output):")
    b = {"pv/output.py": NEW_DATA_B, "pv/sched.py": handed}
    result = check(consumer, b, baseline=a)
    assert found(result, "override-drift") == [("error", "plug.data:MyData.from_request", "plug/data.py:5")]


def test_a_mixin_that_keeps_something_else_in_the_attribute_leaves_the_error():
    # vllm-omni's workers mix in `OmniWorkerMixin`, a class with no base: what it stores counts too.
    runner = _keeping("self.drafter = self.drafter_cls()").replace(
        "class XpuRunner(Runner):", "class XpuRunner(Mixin, Runner):"
    )
    runner = runner.replace(
        "        def make():",
        "        class Mixin:\n            def reset(self):\n                self.drafter = make()\n\n        def make():",
    )
    result = check({"plug/proposer.py": PROPOSERS, "plug/runner.py": runner}, PROPOSER_B, baseline=PROPOSER_A)
    assert found(result, "override-drift") == [("error", "plug.proposer:MyProposer.propose", "plug/proposer.py:4")]


def test_an_override_that_only_raises_takes_no_call_and_is_not_judged():
    stub = MY_PROPOSER.replace("return hidden", 'raise NotImplementedError("handled by the NPU runner")')
    assert found(check({"plug/proposer.py": stub}, PROPOSER_B, baseline=PROPOSER_A), "override-drift") == []
    # A body that does anything else is judged.
    logged = MY_PROPOSER.replace("return hidden", 'print("no")\n            raise NotImplementedError')
    assert [
        sev
        for sev, _, _ in found(check({"plug/proposer.py": logged}, PROPOSER_B, baseline=PROPOSER_A), "override-drift")
    ] == ["error"]


def test_what_the_provider_made_is_judged_for_every_class_a_mixin_override_runs_in():
    """The mixin's override runs in a client class and in an engine class; the front end's engine,
    made by Engine's factory, may be the consumer's engine class: the call reaches the override."""
    mixed = {
        "plug/client.py": """
            from pv.client import Client
            from pv.engine import Engine

            class SleepMixin:
                def sleep(self, ids=None, level=0, mode="abort"):
                    return ids

            class AClient(SleepMixin, Client):
                pass

            class BEngine(SleepMixin, Engine):
                pass
        """
    }
    result = check(mixed, _engines("Engine.from_args()"), baseline=CLIENT_BEFORE)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"]
    # Only the client class runs it: the engine the front end holds never reaches it.
    alone = {"plug/client.py": mixed["plug/client.py"].split("            class BEngine")[0]}
    result = check(alone, _engines("Engine.from_args()"), baseline=CLIENT_BEFORE)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["warning"]


def test_a_call_on_what_the_provider_made_of_another_class_does_not_reach_an_override():
    # `self.engine` is only ever an Engine (or exactly a Client): the override is never called there.
    for made_by in ("Engine.from_args()", "Engine()", "Client()"):
        result = check(MY_CLIENT, _engines(made_by), baseline=CLIENT_BEFORE)
        assert [sev for sev, _, _ in found(result, "override-drift")] == ["warning"], made_by
    # What the client class's factory makes, or of unknown origin: the call may reach it.
    twice = "Engine.from_args()\n                    self.engine = make()"  # set two ways in the class
    for made_by in ("Client.create()", "make()", "make", twice):
        result = check(MY_CLIENT, _engines(made_by), baseline=CLIENT_BEFORE)
        assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"], made_by
    # A consumer class deriving from the front end that sets `engine` itself may store something
    # else: not decided. One that does not (vllm-omni's engine core procs and vLLM's executor)
    # keeps what the provider makes.
    front = (
        "from pv.front import Front\n\nclass Mixin:\n    def reset(self):\n        {}\n\nclass MyFront({}):\n    {}\n"
    )
    for mixin, body, severity in (
        ("", "pass", "warning"),
        ("", "def __init__(self, make):\n        self.engine = make()", "error"),
        ("", "engine = None", "error"),
        ("Mixin, ", "pass", "error"),  # what its mixin stores counts too
    ):
        reset = "self.engine = None" if mixin else "pass"
        mine = {**MY_CLIENT, "plug/front.py": front.format(reset, mixin + "Front", body)}
        result = check(mine, _engines("Engine.from_args()"), baseline=CLIENT_BEFORE)
        assert [sev for sev, _, _ in found(result, "override-drift")] == [severity], (mixin, body)
    # So is one that replaces the class the provider constructs.
    patched = {
        **MY_CLIENT,
        "plug/patch.py": "import pv.front\nfrom plug.client import MyClient\n\npv.front.Engine = MyClient\n",
    }
    result = check(patched, _engines("Engine()"), baseline=CLIENT_BEFORE)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"]
    # And one that replaces a method of the class holding it (that method may store something else).
    init = "import pv.front\n\ndef init(self, make):\n    self.engine = make()\n\npv.front.Front.__init__ = init\n"
    result = check({**MY_CLIENT, "plug/patch.py": init}, _engines("Engine()"), baseline=CLIENT_BEFORE)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"]
    # What a factory class makes is the class its return annotation names (vLLM's
    # `KVConnectorFactory.create_connector(...) -> KVConnectorBase`); a type variable: unknown.
    for returns, severity in (("Engine", "warning"), ('"Engine"', "warning"), ("Client", "error"), ("T", "error")):
        factory = _engines("EngineFactory.create()")
        factory["pv/engine.py"] = textwrap.dedent(factory["pv/engine.py"]) + (
            "\nfrom typing import TypeVar\nfrom pv.client import Client\n\nT = TypeVar('T')\n\n"
            f"class EngineFactory:\n    @classmethod\n    def create(cls) -> {returns}:\n        return Engine()\n"
        )
        factory["pv/front.py"] = factory["pv/front.py"].replace(
            "from pv.engine import Engine", "from pv.engine import Engine, EngineFactory"
        )
        result = check(MY_CLIENT, factory, baseline=CLIENT_BEFORE)
        assert [sev for sev, _, _ in found(result, "override-drift")] == [severity], returns
    # An instance of a class handed in as `type[Engine]` (vLLM's EngineCore and its executor class):
    # an Engine or a subclass. Handed in as `type[Client]`, it may be the override's class.
    for cls, severity in (("Engine", "warning"), ("Client", "error")):
        handed = _engines("make()")
        handed["pv/front.py"] = handed["pv/front.py"].replace("make):", f"make: type[{cls}]):")
        result = check(MY_CLIENT, handed, baseline=CLIENT_BEFORE)
        assert [sev for sev, _, _ in found(result, "override-drift")] == [severity], cls
    # Through a local bound once to `self.engine` (vLLM's AsyncLLM output handler): the same.
    local = _engines("Engine()")
    local["pv/front.py"] = local["pv/front.py"].replace(
        "self.engine.sleep(", "engine = self.engine\n                    engine.sleep("
    )
    assert [sev for sev, _, _ in found(check(MY_CLIENT, local, baseline=CLIENT_BEFORE), "override-drift")] == [
        "warning"
    ]
    # Also from a closure of the method that binds the local (the handler runs as a task).
    closure = _engines("Engine()")
    closure["pv/front.py"] = closure["pv/front.py"].replace(
        "self.engine.sleep(level=level, mode=mode, reset=reset)",
        "engine = self.engine\n\n                    def handler():\n"
        "                        engine.sleep(level=level, mode=mode, reset=reset)\n\n"
        "                    return handler",
    )
    assert [sev for sev, _, _ in found(check(MY_CLIENT, closure, baseline=CLIENT_BEFORE), "override-drift")] == [
        "warning"
    ]


CLONE_A = {
    "pv/prefill.py": """
        class PrefillBackend:
            def __init__(self, num_heads, scale):
                self.num_heads, self.scale = num_heads, scale
    """
}


def _clone_b(rebuild: str) -> dict[str, str]:
    return {
        "pv/prefill.py": f"""
            class PrefillBackend:
                def __init__(self, num_heads, scale):
                    self.num_heads, self.scale = num_heads, scale

                def clone(self):
                    return {rebuild}(num_heads=self.num_heads, scale=self.scale)

                @classmethod
                def make(cls, n):
                    return cls(num_heads=n, scale=1.0)
        """
    }


@pytest.mark.parametrize("rebuild", ["self.__class__", "type(self)"])
def test_an_init_override_broken_by_a_generic_rebuild_is_an_error(rebuild: str):
    consumer = {
        "plug/backend.py": """
            from pv.prefill import PrefillBackend

            class MyPrefill(PrefillBackend):
                def __init__(self, layer, num_heads, scale):
                    super().__init__(num_heads=num_heads, scale=scale)
                    self.layer = layer
        """
    }
    assert found(check(consumer, CLONE_A), "override-drift") == []
    result = check(consumer, _clone_b(rebuild), baseline=CLONE_A)
    assert found(result, "override-drift") == [("error", "plug.backend:MyPrefill.__init__", "plug/backend.py:4")]
    message = one(result, "override-drift").message
    assert "does not pass the required layer" in message
    assert "clone is new since 1.0" in message or "make is new since 1.0" in message


def test_an_init_override_that_takes_the_rebuild_fits():
    consumer = {
        "plug/backend.py": """
            from pv.prefill import PrefillBackend

            class MyPrefill(PrefillBackend):
                def __init__(self, num_heads, scale, layer=None):
                    super().__init__(num_heads=num_heads, scale=scale)
                    self.layer = layer
        """
    }
    assert found(check(consumer, _clone_b("self.__class__"), baseline=CLONE_A), "override-drift") == []


def test_a_provider_self_call_the_override_cannot_take_is_an_error_also_through_a_consumer_class_between():
    provider = {
        "pv/builder.py": """
            class Builder:
                def build(self, prefix_len, metadata, fast=False):
                    return metadata

                def build_for_capture(self, metadata):
                    return self.build(0, metadata, fast=True)
        """
    }
    consumer = {
        "plug/base.py": """
            from pv.builder import Builder

            class Between(Builder):
                def build(self, prefix_len, metadata):
                    return metadata
        """,
        "plug/mine.py": """
            from plug.base import Between

            class Mine(Between):
                pass
        """,
    }
    before = {
        "pv/builder.py": """
            class Builder:
                def build(self, prefix_len, metadata):
                    return metadata

                def build_for_capture(self, metadata):
                    return self.build(0, metadata)
        """
    }
    result = check(consumer, provider, baseline=before)
    assert found(result, "override-drift") == [("error", "plug.base:Between.build", "plug/base.py:4")]
    assert "build_for_capture" in one(result, "override-drift").message
    # Without a baseline nothing tells whether the call is new: a warning that says so.
    alone = check(consumer, provider)
    assert found(alone, "override-drift") == [("warning", "plug.base:Between.build", "plug/base.py:4")]
    assert "no baseline tells whether this changed" in one(alone, "override-drift").message
    # When the consumer also overrides the calling method without handing on, the call never runs.
    consumer["plug/base.py"] = """
        from pv.builder import Builder

        class Between(Builder):
            def build(self, prefix_len, metadata):
                return metadata

            def build_for_capture(self, metadata):
                return metadata
    """
    assert [f for f in found(check(consumer, provider), "override-drift") if f[0] == "error"] == []


def test_a_provider_call_on_a_path_the_consumer_replaced_does_not_count():
    provider = {
        "pv/attn.py": """
            class Attention:
                def forward(self, x):
                    return self._attend(x)

                def _attend(self, x):
                    return self.forward_mqa(x, x, x, x)

                def forward_mqa(self, q, kv, positions, output):
                    return q

                def step(self, x):
                    return self.forward_mqa(x, x, x, x)
        """
    }
    consumer = {
        "plug/attn.py": """
            import pv.attn
            from pv.attn import Attention

            class MyAttention(Attention):
                def forward(self, x):
                    return self.forward_mqa(x, x, x, x, topk_indices=None)

                def forward_mqa(self, q, kv, positions, output, *, topk_indices):
                    return q

            def my_step(self, x):
                return x

            pv.attn.Attention.step = my_step
        """
    }
    # forward is taken over (so the private _attend never runs) and step is patched: no caller is left.
    assert [f for f in found(check(consumer, provider), "override-drift") if f[0] == "error"] == []
    consumer["plug/attn.py"] = consumer["plug/attn.py"].replace("pv.attn.Attention.step = my_step", "")
    # step is new since the baseline, and nothing takes it over: its call is an error.
    before = {"pv/attn.py": provider["pv/attn.py"].split("                def step(self, x):")[0]}
    assert [f[0] for f in found(check(consumer, provider, baseline=before), "override-drift")] == ["error"]


def test_a_private_provider_method_the_consumer_calls_on_itself_runs():
    """vllm-omni's MiniMax processor takes over `_cached_apply_hf_processor` and calls vLLM's
    private `_apply_hf_processor` itself, which at vLLM 0.34 calls `self._apply_hf_processor_main`
    with `hf_kwargs=`: its override, still taking `hf_processor_mm_kwargs`, fails there."""
    provider = """
        class Processor:
            def apply(self, inputs):
                return self._cached_apply(inputs)

            def _cached_apply(self, inputs):
                return self._main(items=inputs, {kwargs}={{}})

            def _apply(self, inputs):
                return self._main(items=inputs, {kwargs}={{}})

            def _main(self, items, {kwargs}):
                return items
    """
    consumer = {
        "plug/proc.py": """
            from pv.proc import Processor

            class MyProcessor(Processor):
                def _cached_apply(self, inputs):
                    return self._apply(inputs)

                def _main(self, items, hf_processor_mm_kwargs):
                    return items

            def make():
                return MyProcessor()
        """
    }
    before = {"pv/proc.py": provider.format(kwargs="hf_processor_mm_kwargs")}
    result = check(consumer, {"pv/proc.py": provider.format(kwargs="hf_kwargs")}, baseline=before)
    assert found(result, "override-drift") == [("error", "plug.proc:MyProcessor._main", "plug/proc.py:7")]
    assert "pv.proc:Processor._apply" in one(result, "override-drift").message
    # Nothing calls `_apply` when the consumer's own code does not either: it never runs.
    consumer["plug/proc.py"] = consumer["plug/proc.py"].replace("return self._apply(inputs)", "return inputs")
    result = check(consumer, {"pv/proc.py": provider.format(kwargs="hf_kwargs")}, baseline=before)
    assert [f for f in found(result, "override-drift") if f[0] == "error"] == []


# vLLM 0.25's weight-transfer engines gained `update_weights`, which calls `self.receive_weights(info)`;
# vllm-ascend's engines take `receive_weights(info, load_weights)`, and its own NPUWorker (named as the
# platform's worker class, beside vLLM's GPU Worker) calls them that way: only the GPU Worker calls
# `engine.update_weights`.
ENGINE_BEFORE = {
    "pv/__init__.py": "",
    "pv/engine.py": """
        class Engine:
            def receive_weights(self, info):
                raise NotImplementedError
    """,
    "pv/worker_base.py": """
        class WorkerBase:
            def load_model(self):
                ...
    """,
    "pv/gpu_worker.py": """
        from pv.worker_base import WorkerBase

        class Worker(WorkerBase):
            def update_weights(self, info):
                self.engine.receive_weights(info)
    """,
}
ENGINE_AFTER = {
    **ENGINE_BEFORE,
    "pv/engine.py": """
        class Engine:
            def update_weights(self, info):
                self.receive_weights(self.parse(info))

            def parse(self, info):
                return info

            def receive_weights(self, info):
                raise NotImplementedError
    """,
    "pv/gpu_worker.py": """
        from pv.worker_base import WorkerBase

        class Worker(WorkerBase):
            def update_weights(self, info):
                self.engine.update_weights(info)
    """,
    "pv/api.py": """
        async def update_weights(client, body):
            await client.update_weights(request=body)
    """,
}
ENGINE_CONSUMER = {
    "plug/__init__.py": "",
    "plug/engine.py": """
        from pv.engine import Engine

        class MyEngine(Engine):
            def receive_weights(self, info, load_weights):
                load_weights(info)
    """,
    "plug/worker.py": """
        from pv.worker_base import WorkerBase

        class MyWorker(WorkerBase):
            def update_weights(self, info):
                self.engine.receive_weights(info, load_weights=self.model.load_weights)
    """,
    "plug/platform.py": """
        WORKER = "plug.worker.MyWorker"
    """,
}


def test_a_new_provider_method_called_only_in_a_class_the_consumer_stands_in_for_is_a_warning():
    [finding] = [
        f
        for f in check(ENGINE_CONSUMER, ENGINE_AFTER, baseline=ENGINE_BEFORE).findings
        if f.rule.value == "override-drift"
    ]
    severity, message = finding.severity.value, finding.message
    assert severity == "warning" and "Engine.update_weights is new since" in message
    assert "inside Worker.update_weights, which plug.worker:MyWorker, handed to the provider" in message
    # Not handed over (so the provider's own Worker may be the one that runs): an error.
    alone = {k: v for k, v in ENGINE_CONSUMER.items() if k != "plug/platform.py"}
    assert [f[0] for f in found(check(alone, ENGINE_AFTER, baseline=ENGINE_BEFORE), "override-drift")] == ["error"]
    # A stand-in that does not implement the calling method itself: the provider's may run: an error.
    other = {**ENGINE_CONSUMER, "plug/worker.py": ENGINE_CONSUMER["plug/worker.py"].replace("update_weights", "reload")}
    assert [f[0] for f in found(check(other, ENGINE_AFTER, baseline=ENGINE_BEFORE), "override-drift")] == ["error"]
    # A call of the new method elsewhere (a module-level function): an error.
    elsewhere = {
        **ENGINE_AFTER,
        "pv/api.py": """
            def reload(engine, info):
                engine.update_weights(info)
        """,
    }
    assert [f[0] for f in found(check(ENGINE_CONSUMER, elsewhere, baseline=ENGINE_BEFORE), "override-drift")] == [
        "error"
    ]
    # vLLM 0.28's IPC engine calls its sync client's `update_weights`, on an attribute it types
    # with the client's class: not an engine's method, the warning holds.
    client = {
        **ENGINE_AFTER,
        "pv/ipc.py": """
            from pv.engine import Engine

            class SyncClient:
                def update_weights(self, payload):
                    return payload

            class IPCEngine(Engine):
                def __init__(self, client: SyncClient):
                    self.client = client

                def send(self, info):
                    self.client.update_weights(info)
        """,
    }
    assert [f[0] for f in found(check(ENGINE_CONSUMER, client, baseline=ENGINE_BEFORE), "override-drift")] == [
        "warning"
    ]
    untyped = {**client, "pv/ipc.py": client["pv/ipc.py"].replace("client: SyncClient", "client")}
    assert [f[0] for f in found(check(ENGINE_CONSUMER, untyped, baseline=ENGINE_BEFORE), "override-drift")] == ["error"]


def test_a_provider_call_inside_a_class_the_consumer_stands_in_for_does_not_reach_the_override():
    """(b) as (a) above: vLLM 0.29's GPU Worker calls `self.model_runner.initialize_kv_cache(...,
    kv_cache_allocation_context=)` in `initialize_from_config`, which vllm-ascend's NPUWorker, named
    as its platform's worker class, implements itself; its runner's override takes no such keyword."""
    before = {
        **ENGINE_BEFORE,
        "pv/gpu_worker.py": """
            from pv.worker_base import WorkerBase

            class Worker(WorkerBase):
                def update_weights(self, info):
                    self.engine.receive_weights(info)
        """,
    }
    after = {
        **before,
        "pv/engine.py": ENGINE_BEFORE["pv/engine.py"].replace("(self, info)", "(self, info, ctx=None)"),
        "pv/gpu_worker.py": before["pv/gpu_worker.py"].replace("receive_weights(info)", "receive_weights(info, ctx=1)"),
    }
    [finding] = [f for f in check(ENGINE_CONSUMER, after, baseline=before).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert (
        "passes them at pv/gpu_worker.py:5, inside Worker.update_weights, which plug.worker:MyWorker, handed to "
        "the provider in that class's place, implements itself"
    ) in finding.message
    # Not handed over: the provider's own Worker may be the one that runs the call.
    alone = {k: v for k, v in ENGINE_CONSUMER.items() if k != "plug/platform.py"}
    assert [f[0] for f in found(check(alone, after, baseline=before), "override-drift")] == ["error"]


MIXED_A = {
    "pv/base.py": """
        class ConnectorWorker:
            def compute_ids(self, blocks, ratio):
                return blocks
    """,
    "pv/pull.py": """
        from pv.base import ConnectorWorker

        class PullWorker(ConnectorWorker):
            def read(self, blocks):
                return self.compute_ids(blocks=blocks, ratio=1)
    """,
}
MIXED_B = {
    "pv/base.py": MIXED_A["pv/base.py"].replace("ratio):", "ratio, pairs):"),
    "pv/pull.py": MIXED_A["pv/pull.py"].replace("ratio=1)", "ratio=1, pairs=())"),
}
MIXED_CONSUMER = {
    "plug/transfer.py": """
        from pv.base import ConnectorWorker

        class TransferMixin:
            worker_cls = ConnectorWorker

            def compute_ids(self, blocks, ratio):
                return blocks
    """,
    "plug/workers.py": """
        from pv.base import ConnectorWorker
        from pv.pull import PullWorker
        from plug.transfer import TransferMixin

        class MyWorkerBase(TransferMixin, ConnectorWorker):
            pass

        class PullingWorker(MyWorkerBase, PullWorker):
            pass
    """,
}


def test_a_mixin_override_is_judged_against_the_provider_classes_each_subclass_mixes_it_with():
    """vllm-rbln's NIXL transfer mixin overrides `_compute_desc_ids`; its worker base mixes it with
    vLLM's base connector worker (which calls it nowhere), and its pull worker with vLLM's pull
    worker, whose `_read_blocks` passes the new `pairs=`: the call is judged for the pull worker.
    (The worker base's name sorts first, as in vllm-rbln: the first class met is not the one.)"""
    [finding] = [
        f for f in check(MIXED_CONSUMER, MIXED_B, baseline=MIXED_A).findings if f.rule.value == "override-drift"
    ]
    assert (finding.severity.value, finding.symbol) == ("error", "plug.transfer:TransferMixin.compute_ids")
    assert "pv.pull:PullWorker.read (pv/pull.py:5) calls self.compute_ids(" in finding.message
    # The pull worker widens the method itself (the base keeps the old one): its call is judged
    # against the pull worker's signature, which it fits, not the base's.
    widened = {
        **MIXED_A,
        "pv/pull.py": MIXED_B["pv/pull.py"].replace(
            "class PullWorker(ConnectorWorker):",
            "class PullWorker(ConnectorWorker):\n            def compute_ids(self, blocks, ratio, pairs=()):\n"
            "                return blocks\n",
        ),
    }
    result = check(MIXED_CONSUMER, widened, baseline=MIXED_A)
    assert [sev for sev, _, _ in found(result, "override-drift")] == ["error"]
    # Without a subclass mixing in the pull worker, nothing calls it that way: only narrower (a warning).
    alone = {**MIXED_CONSUMER, "plug/workers.py": MIXED_CONSUMER["plug/workers.py"].split("class PullingWorker")[0]}
    assert [f[0] for f in found(check(alone, MIXED_B, baseline=MIXED_A), "override-drift")] == ["warning"]


def test_a_mixin_override_returning_another_shape_is_judged_against_every_subclass():
    """return-drift likewise: the provider calls the method on itself in the pull worker only."""
    provider = {
        "pv/base.py": "class ConnectorWorker:\n    def shape(self):\n        return 1, 2\n",
        "pv/pull.py": (
            "from pv.base import ConnectorWorker\n\nclass PullWorker(ConnectorWorker):\n"
            "    def read(self):\n        rows, cols = self.shape()\n        return rows\n"
        ),
    }
    consumer = {
        **MIXED_CONSUMER,
        "plug/transfer.py": MIXED_CONSUMER["plug/transfer.py"].replace(
            "def compute_ids(self, blocks, ratio):\n                return blocks",
            "def shape(self):\n                return 1, 2, 3",
        ),
    }
    [finding] = [f for f in check(consumer, provider).findings if f.rule.value == "return-drift"]
    assert "pv.pull:PullWorker.read calls it on the object" in finding.message


# -- protocol-drift --------------------------------------------------------------------

ROLE_A = {
    "pv/backend.py": """
        from abc import ABC, abstractmethod

        class AttentionBackend(ABC):
            @staticmethod
            @abstractmethod
            def get_name():
                ...

            @staticmethod
            @abstractmethod
            def get_impl_cls():
                ...

            @classmethod
            def get_builder_cls(cls):
                return None

            @classmethod
            def old_uncalled(cls):
                return None
    """,
    "pv/runner.py": """
        def get_kv_cache_spec(layers):
            return {n: l.get_attn_backend().get_name() for n, l in layers.items()}
    """,
}
ROLE_B = {
    "pv/backend.py": """
        from abc import ABC, abstractmethod

        class AttentionBackend(ABC):
            @staticmethod
            @abstractmethod
            def get_name():
                ...

            @staticmethod
            @abstractmethod
            def get_impl_cls():
                ...

            @classmethod
            def get_builder_cls(cls):
                return None

            @classmethod
            def old_uncalled(cls):
                return None

            @classmethod
            @abstractmethod
            def get_kv_cache_shape(cls):
                ...

            @classmethod
            def indexes_kv_by_block_stride(cls):
                return False

        class FlashBackend(AttentionBackend):
            @staticmethod
            def get_name():
                return "FLASH"

            @staticmethod
            def get_impl_cls():
                return None

            @classmethod
            def get_kv_cache_shape(cls):
                return (2,)
    """,
    "pv/runner.py": """
        def get_kv_cache_spec(layers):
            out = {}
            for name, layer in layers.items():
                backend = layer.get_attn_backend()
                out[name] = (backend.get_name(), backend.indexes_kv_by_block_stride(), backend.get_kv_cache_shape())
            return out
    """,
}
MY_BACKEND = """\
class MyBackend:
    @staticmethod
    def get_name():
        return "MINE"

    @staticmethod
    def get_impl_cls():
        return None

    @classmethod
    def get_builder_cls(cls):
        return None
"""
STAND_IN = {
    "plug/backend.py": MY_BACKEND,
    "plug/platform.py": """
        def get_attn_backend_cls():
            return "plug.backend.MyBackend"
    """,
}


def test_a_handed_over_stand_in_missing_a_new_abstract_and_a_new_called_hook():
    assert found(check(STAND_IN, ROLE_A), "protocol-drift") == []
    result = check(STAND_IN, ROLE_B, baseline=ROLE_A)
    assert found(result, "protocol-drift") == [
        ("error", "plug.backend:MyBackend.get_kv_cache_shape", "plug/backend.py:1"),
        ("error", "plug.backend:MyBackend.indexes_kv_by_block_stride", "plug/backend.py:1"),
    ]
    messages = " ".join(f.message for f in result.findings)
    assert "stands in for pv.backend:AttentionBackend" in messages  # the root, not its subclass that ties
    assert "new since 1.0" in messages and "abstract in pv.backend:AttentionBackend" in messages
    assert "pv/runner.py:5" in messages
    assert "old_uncalled" not in messages  # the provider never calls it: not reported


def test_an_abstract_method_a_stand_in_lacked_at_the_baseline_too_is_no_error():
    # vllm-mlx 0.6's attention backend never had vLLM's abstract `get_builder_cls`, at 0.26 or at
    # 0.34: a bump between the two changes nothing there. Without a baseline, an error.
    assert ("error", "plug.backend:MyBackend.get_kv_cache_shape", "plug/backend.py:1") in found(
        check(STAND_IN, ROLE_B), "protocol-drift"
    )
    result = check(STAND_IN, ROLE_B, baseline=ROLE_B)
    assert [f for f in found(result, "protocol-drift") if f[0] == "error"] == []
    # Lacked there and called there the same way: nothing the bump changed (info).
    [info] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert (
        info.severity.value == "info" and "as it did at 1.0, where the provider used them the same way" in info.message
    )
    assert "get_kv_cache_shape (abstract in pv.backend:AttentionBackend): the provider calls" in info.message


def test_a_member_a_stand_in_lacked_at_the_baseline_that_the_provider_calls_more_now_is_a_warning():
    """The same abstract methods at the baseline, but the provider called `indexes_kv_by_block_stride`
    there in no file: that call is new, and may reach the stand-in (a warning); the one it called
    there the same way is told apart."""
    runner = ROLE_B["pv/runner.py"]
    baseline = {**ROLE_B, "pv/runner.py": runner.replace("backend.indexes_kv_by_block_stride(), ", "")}
    result = check(STAND_IN, ROLE_B, baseline=baseline)
    [warning] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert warning.severity.value == "warning"
    assert (
        "lacks 1 member(s) the provider uses by name: indexes_kv_by_block_stride: the provider calls" in warning.message
    )
    assert warning.message.endswith("; and 1 more it lacked at 1.0 too, used there the same way")


# vLLM 0.34's GPU worker gains a `discard(tags)` method, and its own code calls `discard` on the
# set it keeps in `self._incomplete_weight_updates: set[bool] = set()`: a set's method, not a call
# on a worker. vllm-mlx 0.6's MLXWorker, a stand-in for the worker, lacks `discard`.
SET_KEEPING = """
            @classmethod
            def discard(cls, tags):
                return None

            def __init__(self):
                self._pending: set[str] = set()
                self._seen = set()

            def forget(self, tag):
                self._pending.discard(tag)
                self._seen.discard(tag)
"""


@pytest.mark.parametrize("also_called", [False, True])
def test_a_new_method_called_only_on_a_set_an_attribute_holds_is_no_error(also_called: bool):
    old_uncalled = "def old_uncalled(cls):\n                return None\n"
    assert ROLE_B["pv/backend.py"].count(old_uncalled) == 1
    more = SET_KEEPING + (
        "\n            def drop(self, other, tag):\n                other.discard(tag)\n" if also_called else ""
    )
    role = {**ROLE_B, "pv/backend.py": ROLE_B["pv/backend.py"].replace(old_uncalled, old_uncalled + more)}
    discard = [f for f in found(check(STAND_IN, role, baseline=ROLE_A), "protocol-drift") if f[1].endswith(".discard")]
    # A call on another object the class was handed may be on the stand-in: an error then.
    assert discard == ([("error", "plug.backend:MyBackend.discard", "plug/backend.py:1")] if also_called else [])


# vLLM 0.27's `checkpoint_prepare`, new on its GPU worker, is also a method of its communicators
# and of FlashInfer's workspaces, which `checkpoint_prepare_fi_ar_workspaces` calls: a call by that
# name, in a file that never names the worker, is no call on a class standing in for the worker.
WORKSPACES = """
    class Workspace:
        def indexes_kv_by_block_stride(self):
            return True

    def sweep(workspaces):
        return [w.indexes_kv_by_block_stride() for w in workspaces]
"""


def test_a_new_method_other_provider_classes_define_counts_where_the_calling_file_names_the_role():
    shared = {**ROLE_B, "pv/workspace.py": WORKSPACES}
    result = check(STAND_IN, shared, baseline=ROLE_A)
    assert found(result, "protocol-drift") == [
        ("warning", "plug.backend:MyBackend", "plug/backend.py:1"),
        ("error", "plug.backend:MyBackend.get_kv_cache_shape", "plug/backend.py:1"),
    ]
    assert "indexes_kv_by_block_stride (new since 1.0)" in one_of(result, "plug.backend:MyBackend").message
    # The runner names the role: its call may be on the stand-in, whatever else defines the name.
    runner = "from pv.backend import AttentionBackend\n" + textwrap.dedent(ROLE_B["pv/runner.py"])
    result = check(STAND_IN, {**shared, "pv/runner.py": runner}, baseline=ROLE_A)
    assert [symbol for severity, symbol, _ in found(result, "protocol-drift") if severity == "error"] == [
        "plug.backend:MyBackend.get_kv_cache_shape",
        "plug.backend:MyBackend.indexes_kv_by_block_stride",
    ]
    assert "pv/runner.py:7" in one_of(result, "plug.backend:MyBackend.indexes_kv_by_block_stride").message
    # A comment or a docstring naming it is no use of the role.
    for prose in ("# see AttentionBackend\n", '"""Backends are AttentionBackend subclasses."""\n'):
        runner = prose + textwrap.dedent(ROLE_B["pv/runner.py"])
        result = check(STAND_IN, {**shared, "pv/runner.py": runner}, baseline=ROLE_A)
        assert "plug.backend:MyBackend.indexes_kv_by_block_stride" not in [
            s for _, s, _ in found(result, "protocol-drift")
        ]


# A base imported in a ladder whose handler defines a stand-in of its own for running without the
# provider (vllm-musa's `except ImportError: class Platform: pass`): where the plugin runs, the
# provider is installed and its class is the base, so the subclass inherits what it lacks.
SUBCLASS = MY_BACKEND.replace("class MyBackend:", "class MyBackend(AttentionBackend):")
LADDER_STUB = """\
try:
    from pv.backend import AttentionBackend
except ImportError:
    class AttentionBackend:
        pass


"""
ONLY_STUB = """\
class AttentionBackend:
    pass


"""


def test_a_new_method_called_only_on_the_role_class_by_name_is_a_warning():
    # `AttentionBackend.indexes_kv_by_block_stride()` runs the role's own method, not the stand-in's.
    runner = "from pv.backend import AttentionBackend\n" + textwrap.dedent(ROLE_B["pv/runner.py"]).replace(
        "backend.indexes_kv_by_block_stride()", "AttentionBackend.indexes_kv_by_block_stride()"
    )
    result = check(STAND_IN, {**ROLE_B, "pv/runner.py": runner}, baseline=ROLE_A)
    assert found(result, "protocol-drift") == [
        ("warning", "plug.backend:MyBackend", "plug/backend.py:1"),
        ("error", "plug.backend:MyBackend.get_kv_cache_shape", "plug/backend.py:1"),
    ]


def test_a_class_deriving_from_a_provider_class_a_ladder_stubs_out_is_no_stand_in():
    result = check({**STAND_IN, "plug/backend.py": LADDER_STUB + SUBCLASS}, ROLE_B, baseline=ROLE_A)
    assert found(result, "protocol-drift") == []
    assert not [f for f in result.findings if f.symbol.startswith("plug.backend:MyBackend")]
    # Without the provider's import the stub is all there is: the class stands in, as before.
    alone = check({**STAND_IN, "plug/backend.py": ONLY_STUB + SUBCLASS}, ROLE_B, baseline=ROLE_A)
    assert [symbol for _, symbol, _ in found(alone, "protocol-drift")] == [
        "plug.backend:MyBackend.get_kv_cache_shape",
        "plug.backend:MyBackend.indexes_kv_by_block_stride",
    ]


# The stand-in stored on a consumer layer (a real shape: ATOM's MLA backends at vLLM 0.34,
# whose only call of a new hook is on the class an enum names, `requested.get_class()`).
HELD = {
    "plug/backend.py": MY_BACKEND + "\n    @classmethod\n    def create(cls):\n        return cls()\n",
    "plug/layer.py": """
        from pv.layer import AttentionLayer
        from plug.backend import MyBackend

        class MyLayer(AttentionLayer):
            attn_backend = MyBackend
    """,
}
LAYER = """
    class AttentionLayer:
        def get_attn_backend(self):
            return self.attn_backend
"""


def _hook_called(receiver: str) -> dict[str, str]:
    """ROLE_A with `indexes_kv_by_block_stride` added and called only where `receiver` is."""
    provider = dict(ROLE_B)
    provider["pv/layer.py"] = LAYER
    provider["pv/runner.py"] = f"""
        def pick(requested, layer, registry):
            backend = registry.lookup(requested)
            return {receiver}.indexes_kv_by_block_stride()
    """
    return provider


def test_a_stand_in_held_by_a_layer_is_not_what_another_method_returns():
    baseline = {**ROLE_A, "pv/layer.py": LAYER}
    # Only a class some other method returns: the stand-in is not seen there; a warning at most.
    for receiver in ("requested.get_class()", "backend"):
        result = check(HELD, _hook_called(receiver), baseline=baseline)
        errors = [sym for sev, sym, _ in found(result, "protocol-drift") if sev == "error"]
        assert errors == [], receiver
        assert "indexes_kv_by_block_stride (new since 1.0)" in one_of(result, "plug.backend:MyBackend").message
    # A local bound to another method's result and to something else as well: it may be the stand-in.
    rebound = _hook_called("backend")
    rebound["pv/runner.py"] = rebound["pv/runner.py"].replace(
        "return backend.", "if layer:\n                backend = layer.attn_backend\n            return backend."
    )
    assert "error" in {sev for sev, _, _ in found(check(HELD, rebound, baseline=baseline), "protocol-drift")}
    # What the holder's own method returns, or a receiver of unknown origin: the error stands.
    # Its own factory's result (`create`) is one too.
    for receiver in ("layer.get_attn_backend()", "layer.attn_backend", "requested", "registry.pick().create()"):
        result = check(HELD, _hook_called(receiver), baseline=baseline)
        assert ("error", "plug.backend:MyBackend.indexes_kv_by_block_stride", "plug/backend.py:1") in found(
            result, "protocol-drift"
        ), receiver


# A stand-in the consumer keeps in an attribute of its own on a provider subclass, while the
# provider calls the new hook only on what its factory made (a real shape: Dynamo's metrics
# publisher at vLLM 0.29, kept in `_publisher`; vLLM calls `self.kv_event_publisher`).
PUBLISHER_A = {
    "pv/events.py": """
        class EventPublisher:
            def publish(self, batch):
                raise NotImplementedError

            def shutdown(self):
                raise NotImplementedError


        class ZmqPublisher(EventPublisher):
            def publish(self, batch):
                pass

            def shutdown(self):
                pass


        class PublisherFactory:
            @classmethod
            def create(cls, config):
                return ZmqPublisher()
    """,
    "pv/sched.py": """
        from pv.events import PublisherFactory

        class Scheduler:
            def __init__(self, config):
                self.publisher = PublisherFactory.create(config)

            def step(self, batch):
                self.publisher.publish(batch)
    """,
}
PUBLISHER_B = dict(PUBLISHER_A)
PUBLISHER_B["pv/events.py"] = PUBLISHER_A["pv/events.py"].replace(
    "        def shutdown(self):\n                raise NotImplementedError\n",
    "        def shutdown(self):\n                raise NotImplementedError\n\n"
    "            def get_config(self):\n                return None\n",
    1,
)
PUBLISHER_B["pv/sched.py"] = PUBLISHER_A["pv/sched.py"].replace(
    "self.publisher.publish(batch)\n",
    "self.publisher.publish(batch)\n\n"
    "            def config(self):\n                publisher = self.publisher\n                return publisher.get_config()\n",
)
MY_PUBLISHER = """
    from pv.sched import Scheduler

    class MetricsPublisher:
        def publish(self, batch):
            pass

        def shutdown(self):
            pass

    class MyScheduler(Scheduler):
        def __init__(self, config):
            super().__init__(config)
            self.{attribute} = MetricsPublisher()
"""


def test_a_stand_in_kept_apart_is_not_what_the_provider_factory_made():
    assert "get_config" in PUBLISHER_B["pv/events.py"] and "get_config" not in PUBLISHER_A["pv/events.py"]
    # Kept in a member nothing of the provider names and the consumer only sets: not handed over.
    private = {"plug/sched.py": MY_PUBLISHER.replace("{attribute}", "_metrics")}
    assert found(check(private, PUBLISHER_B, baseline=PUBLISHER_A), "protocol-drift") == []
    # Handed on by the consumer from there (`return self._metrics`): it may reach the provider, but
    # not where the provider's factory-made publisher is called.
    kept_apart = {
        "plug/sched.py": private["plug/sched.py"] + "\n        def metrics(self):\n            return self._metrics\n"
    }
    result = check(kept_apart, PUBLISHER_B, baseline=PUBLISHER_A)
    assert [sev for sev, _, _ in found(result, "protocol-drift")] == ["warning"]
    assert "get_config (new since 1.0)" in one_of(result, "plug.sched:MetricsPublisher").message
    # Kept where the provider calls the hook: the error stands.
    in_place = {"plug/sched.py": MY_PUBLISHER.replace("{attribute}", "publisher")}
    assert found(check(in_place, PUBLISHER_B, baseline=PUBLISHER_A), "protocol-drift") == [
        ("error", "plug.sched:MetricsPublisher.get_config", "plug/sched.py:3")
    ]
    # A subclass of the holder that sets that attribute itself, by a way no handover records: it may hold it.
    copied = {
        "plug/sched.py": MY_PUBLISHER.replace("{attribute}", "_metrics")
        .replace("self._metrics = MetricsPublisher()", "self.publisher = self.publisher_cls()")
        .replace(
            "class MyScheduler(Scheduler):", "class MyScheduler(Scheduler):\n        publisher_cls = MetricsPublisher\n"
        )
    }
    assert [sev for sev, _, _ in found(check(copied, PUBLISHER_B, baseline=PUBLISHER_A), "protocol-drift")] == ["error"]
    # The consumer replaces the factory: it may make the stand-in, so the error stands too.
    patched = dict(kept_apart)
    patched["plug/patch.py"] = """
        from pv.events import PublisherFactory
        from plug.sched import MetricsPublisher

        PublisherFactory.create = classmethod(lambda cls, config: MetricsPublisher())
    """
    errors = [sev for sev, _, _ in found(check(patched, PUBLISHER_B, baseline=PUBLISHER_A), "protocol-drift")]
    assert "error" in errors


# vllm-metal keeps its runner in `model_runner` of a worker deriving from vLLM's `WorkerBase`; vLLM
# 0.34's GPU `Worker` (another subclass) calls the new `reset_lora_state()` on its own `self.model_runner`.
HELD_RUNNER_A = {
    "pv/runner.py": """
        class GPURunner:
            def execute(self, batch):
                return batch

            def get_model(self):
                return None

            def load(self):
                pass
    """,
    "pv/worker.py": """
        class WorkerBase:
            def __init__(self):
                self.runner = None

            def model(self):
                return self.runner.get_model()


        class GPUWorker(WorkerBase):
            def step(self, batch):
                return self.runner.execute(batch)
    """,
}
HELD_RUNNER_B = {
    "pv/runner.py": HELD_RUNNER_A["pv/runner.py"] + "\n            def reset_lora(self):\n                pass\n",
    "pv/worker.py": HELD_RUNNER_A["pv/worker.py"]
    + "\n            def update(self):\n                self.runner.reset_lora()\n",
}
MY_HELD_RUNNER = """
    from pv.worker import {base}

    class MyRunner:
        def execute(self, batch):
            return batch

        def get_model(self):
            return None

        def load(self):
            pass

    class MyWorker({base}):
        def __init__(self):
            super().__init__()
            self.runner = MyRunner()
"""


def test_a_call_on_self_x_of_a_provider_class_no_holder_derives_from_is_not_on_the_stand_in():
    assert (
        "def reset_lora" in HELD_RUNNER_B["pv/runner.py"]
        and "self.runner.reset_lora()" in HELD_RUNNER_B["pv/worker.py"]
    )
    assert "def update" in HELD_RUNNER_B["pv/worker.py"].split("class GPUWorker")[1]
    # Kept by a sibling of the class making the call: that call's `self.runner` is never it.
    sibling = {"plug/worker.py": MY_HELD_RUNNER.format(base="WorkerBase")}
    result = check(sibling, HELD_RUNNER_B, baseline=HELD_RUNNER_A)
    assert [sev for sev, _, _ in found(result, "protocol-drift")] == ["warning"]
    assert "reset_lora (new since 1.0)" in one_of(result, "plug.worker:MyRunner").message
    # Nor is a runner the provider makes by a function of its own (vLLM 0.34's weight-cache warm-up
    # calls `runner.load_model(model=...)` on `runner = build_warmup_runner(...)`).
    warm = {
        **HELD_RUNNER_B,
        "pv/warm.py": """
        def build():
            from pv.runner import GPURunner  # (`.runner` in a module path is no read of the member)

            return GPURunner()

        def warm():
            runner = build()
            runner.reset_lora()
    """,
    }
    result = check(sibling, warm, baseline=HELD_RUNNER_A)
    assert [sev for sev, _, _ in found(result, "protocol-drift")] == ["warning"]
    # A function handing out what a worker keeps there may return it (vLLM's `get_ep_all2all_manager()`
    # returns `ep_group.device_communicator.all2all_manager`, where vllm-ascend keeps its manager).
    accessor = {
        **warm,
        "pv/warm.py": warm["pv/warm.py"]
        .replace("def build():", "def build(\n            which=None,\n        ) -> GPURunner:")
        .replace("return GPURunner()", "return current(which).runner"),
    }
    assert found(check(sibling, accessor, baseline=HELD_RUNNER_A), "protocol-drift") == [
        ("error", "plug.worker:MyRunner.reset_lora", "plug/worker.py:3")
    ]
    # Kept by a subclass of it: the error stands.
    below = {"plug/worker.py": MY_HELD_RUNNER.format(base="GPUWorker")}
    assert found(check(below, HELD_RUNNER_B, baseline=HELD_RUNNER_A), "protocol-drift") == [
        ("error", "plug.worker:MyRunner.reset_lora", "plug/worker.py:3")
    ]


# The methods the provider's connector and the consumer's stand-in for it both define.
OFFLOAD_METHODS = """\
def start(self):
    pass

def build_meta(self, output):
    return output

def finish(self, request):
    return request"""
CONNECTOR_A = {
    "pv/connector.py": """
        class ConnectorBase:
            def start(self):
                pass


        class OffloadConnector(ConnectorBase):
"""
    + textwrap.indent(OFFLOAD_METHODS, " " * 12)
    + "\n",
    "pv/sched.py": """
        def step(connectors):
            for c in connectors:
                c.build_meta(None)
    """,
}
CONNECTOR_B = {
    "pv/connector.py": CONNECTOR_A["pv/connector.py"].replace(
        "class ConnectorBase:\n            def start(self):\n                pass\n",
        "class ConnectorBase:\n            def start(self):\n                pass\n\n"
        "            def has_work(self):\n                return False\n",
    ),
    "pv/sched.py": CONNECTOR_A["pv/sched.py"].replace("c.build_meta(None)", "c.build_meta(None)\n        c.has_work()"),
}
MY_CONNECTOR = (
    """
    from pv.connector import ConnectorBase

    class OffloadManager:
"""
    + textwrap.indent(OFFLOAD_METHODS, " " * 8)
    + """

    class MyConnector(ConnectorBase):
        def __init__(self):
            self.manager = OffloadManager()

        def scheduler_side(self):
            return self.manager
"""
)


def test_a_stand_in_kept_by_holders_that_have_the_method_is_their_delegate():
    # vllm-ascend's shape at vLLM 0.24: its offload scheduler mirrors vLLM's offload connector and is
    # kept by its own connector, which inherits the new `has_pending_push_work` from the base.
    assert "has_work" in CONNECTOR_B["pv/connector.py"] and "c.has_work()" in CONNECTOR_B["pv/sched.py"]
    result = check({"plug/conn.py": MY_CONNECTOR}, CONNECTOR_B, baseline=CONNECTOR_A)
    assert [sev for sev, _, _ in found(result, "protocol-drift")] == ["warning"]
    assert "has_work (new since 1.0; its holders have it)" in one_of(result, "plug.conn:OffloadManager").message
    # Kept by a class that does not have the method: the error stands.
    other = {
        "plug/conn.py": MY_CONNECTOR.replace(
            "from pv.connector import ConnectorBase", "from pv.base import Plain"
        ).replace("class MyConnector(ConnectorBase):", "class MyConnector(Plain):")
    }
    provider = {**CONNECTOR_B, "pv/base.py": "class Plain:\n    pass\n"}
    result = check(other, provider, baseline={**CONNECTOR_A, "pv/base.py": "class Plain:\n    pass\n"})
    assert found(result, "protocol-drift") == [("error", "plug.conn:OffloadManager.has_work", "plug/conn.py:3")]


def test_a_stand_in_with_the_new_hooks_fits():
    fitting = dict(STAND_IN)
    fitting["plug/backend.py"] = (
        MY_BACKEND
        + """
    @classmethod
    def get_kv_cache_shape(cls):
        return (1,)

    @classmethod
    def indexes_kv_by_block_stride(cls):
        return False
"""
    )
    assert found(check(fitting, ROLE_B, baseline=ROLE_A), "protocol-drift") == []


def test_without_a_baseline_only_the_abstract_hook_is_an_error():
    result = check(STAND_IN, ROLE_B)
    assert sorted((s, sym) for s, sym, _ in found(result, "protocol-drift")) == [
        ("error", "plug.backend:MyBackend.get_kv_cache_shape"),
        ("warning", "plug.backend:MyBackend"),
    ]
    [warning] = [f for f in result.findings if f.rule.value == "protocol-drift" and f.severity.value == "warning"]
    assert "indexes_kv_by_block_stride: the provider calls" in warning.message


def _shaped_stand_in() -> tuple[dict[str, str], dict[str, str]]:
    """A consumer class shaped like the role but not seen handed over, and the role (at the pin)
    defining the method it adds. Its module reaches the provider (a shape-only stand-in is looked
    for where the consumer uses it)."""
    shaped = {
        "plug/backend.py": "import pv.backend  # noqa: F401\n"
        + MY_BACKEND
        + """
    @classmethod
    def get_supported_head_sizes(cls):
        return [64]
"""
    }
    role_b = dict(ROLE_B)
    role_b["pv/backend.py"] = role_b["pv/backend.py"].replace(
        "def old_uncalled(cls):",
        "def get_supported_head_sizes(cls):\n                return []\n\n            @classmethod\n            def old_uncalled(cls):",
    )
    return shaped, role_b


def test_a_stand_in_seen_only_by_its_shape_gives_warnings():
    shaped, role_b = _shaped_stand_in()
    result = check(shaped, role_b, baseline=ROLE_A)
    assert {s for s, _, _ in found(result, "protocol-drift")} == {"warning"}
    assert "guess from its shape" in one(result, "protocol-drift").message
    # A mixin of the consumer's provider-derived classes is never an object of its own
    # (vllm-gguf-plugin's `_GGUFParamLoadMixin`, mixed only into vLLM parameter subclasses).
    mixin = {
        "plug/backend.py": shaped["plug/backend.py"]
        + "\n\nclass Mixed(MyBackend, pv.backend.AttentionBackend):\n    pass\n"
        + "\n\nfrom extlib import Parameter\n\n\nclass Outside(MyBackend, Parameter):\n    pass\n"
    }
    assert found(check(mixin, role_b, baseline=ROLE_A), "protocol-drift") == []
    # Also mixed into a class of its own without a provider base: it may stand in by itself.
    alone = {
        "plug/backend.py": mixin["plug/backend.py"]
        + "\n\nfrom abc import ABC\n\n\nclass Plain(MyBackend, ABC):\n    pass\n"
    }
    assert "warning" in {s for s, _, _ in found(check(alone, role_b, baseline=ROLE_A), "protocol-drift")}


def test_a_comment_or_docstring_naming_a_member_is_no_evidence_the_provider_uses_it():
    # vLLM 0.33's envs.py: "# AttentionBackend.supported_kv_cache_layouts()." was cited as the
    # first place the provider calls it. Here one member is also named in a comment, another
    # only in a docstring.
    shaped, role_b = _shaped_stand_in()
    with_prose = dict(role_b)
    with_prose["pv/a_envs.py"] = (  # before pv/runner.py, which calls the first of them
        "# Read by AttentionBackend.get_kv_cache_shape() at start-up.\n"
        '"""See backend.old_uncalled() for the sizes."""\n'
        "SIZES = None\n"
    )
    cited = [f.message for f in check(shaped, with_prose, baseline=ROLE_A).findings if f.rule.value == "protocol-drift"]
    assert cited == [
        f.message for f in check(shaped, role_b, baseline=ROLE_A).findings if f.rule.value == "protocol-drift"
    ]
    assert cited and all("a_envs" not in message and "old_uncalled" not in message for message in cited)


def test_a_hook_the_provider_tests_for_with_hasattr_is_not_reported():
    guarded = dict(ROLE_B)
    guarded["pv/runner.py"] = """
        def get_kv_cache_spec(layers):
            out = {}
            for name, layer in layers.items():
                backend = layer.get_attn_backend()
                if hasattr(backend, "indexes_kv_by_block_stride"):
                    out[name] = backend.indexes_kv_by_block_stride()
            return out
    """
    assert found(check(STAND_IN, guarded, baseline=ROLE_A), "protocol-drift") == []


def test_a_delegate_stored_on_a_subclass_of_the_role_is_not_a_stand_in():
    provider = {
        "pv/connector.py": """
            from abc import ABC, abstractmethod

            class Connector(ABC):
                @abstractmethod
                def start_load(self): ...

                @abstractmethod
                def wait_for_save(self): ...

                @abstractmethod
                def build_meta(self): ...
        """,
        "pv/engine.py": "def step(connector):\n    connector.build_meta()\n",
    }
    consumer = {
        "plug/connector.py": """
            from pv.connector import Connector

            class Worker:
                def start_load(self): ...

                def wait_for_save(self): ...

            class MyConnector(Connector):
                def __init__(self):
                    self.worker = Worker()

                def start_load(self):
                    self.worker.start_load()

                def wait_for_save(self):
                    self.worker.wait_for_save()

                def build_meta(self):
                    return None
        """
    }
    assert found(check(consumer, provider), "protocol-drift") == []


def test_a_tie_between_unrelated_classes_is_skipped():
    provider = {
        "pv/a.py": "class A:\n    def one(self): ...\n    def two(self): ...\n    def three(self): ...\n",
        "pv/b.py": "class B:\n    def one(self): ...\n    def two(self): ...\n    def three(self): ...\n",
        "pv/use.py": "def f(x):\n    return x.four()\n",
    }
    provider["pv/a.py"] += "    def four(self): ...\n"
    provider["pv/b.py"] += "    def four(self): ...\n"
    consumer = {
        "plug/thing.py": "class Thing:\n    def one(self): ...\n    def two(self): ...\n    def three(self): ...\n",
        "plug/reg.py": "PATH = 'plug.thing.Thing'\n",
    }
    assert found(check(consumer, provider), "protocol-drift") == []


# -- return-drift ------------------------------------------------------------------------

KV_A = {
    "pv/kv.py": """
        class KVCacheManager:
            def get_computed_blocks(self, request) -> tuple[list, int]:
                return [], 0

            def schedule(self, request):
                blocks, n = self.get_computed_blocks(request)
                return n

        def split(x):
            return x, x, x
    """
}
KV_B = {
    "pv/kv.py": """
        class KVCacheManager:
            def get_computed_blocks(self, request) -> tuple[list, int, int]:
                return [], 0, 0

            def schedule(self, request):
                blocks, n, boundary = self.get_computed_blocks(request)
                return n

        def split(x):
            return x, x
    """
}


def test_unpacking_and_a_replacement_that_no_longer_match_the_returned_tuple():
    consumer = {
        "plug/patch.py": """
            from pv.kv import KVCacheManager, split

            original = KVCacheManager.get_computed_blocks

            def wrapped(self, request):
                blocks, n = original(self, request)
                return blocks[:1], n

            KVCacheManager.get_computed_blocks = wrapped

            def parts(x):
                a, b, c = split(x)
                return a
        """
    }
    assert found(check(consumer, KV_A), "return-drift") == []
    result = check(consumer, KV_B, baseline=KV_A)
    assert sorted(found(result, "return-drift")) == [
        ("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/patch.py:6"),  # unpacks 2 of 3
        ("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/patch.py:9"),  # the replacement returns 2
        ("error", "pv.kv:split", "plug/patch.py:12"),  # unpacks 3 of 2
    ]
    assert any("it returned 2 since 1.0" in f.message for f in result.findings)


# vllm-ascend 0.25's balance scheduler, a subclass of vLLM's Scheduler, unpacks
# `self.kv_cache_manager.get_computed_blocks(request)` into two names; vLLM's Scheduler makes that
# attribute a `KVCacheManager(...)` in its `__init__`, whose method returns three values since 0.26.
KV_SCHEDULER = """
    from pv.kv import KVCacheManager

    class Scheduler:
        def __init__(self, config):
            self.kv_cache_manager = KVCacheManager()
"""
KV_SUBCLASS = {
    "plug/sched.py": """
        from pv.sched import Scheduler

        class Mine(Scheduler):
            def schedule(self, request):
                blocks, n = self.kv_cache_manager.get_computed_blocks(request)
                self.kv_cache_manager.get_computed_blocks(request, n)
                return blocks
    """
}


def test_a_call_through_an_attribute_the_provider_base_class_makes_is_judged():
    at_a, at_b = {**KV_A, "pv/sched.py": KV_SCHEDULER}, {**KV_B, "pv/sched.py": KV_SCHEDULER}
    assert found(check(KV_SUBCLASS, at_a), "return-drift") == []
    result = check(KV_SUBCLASS, at_b, baseline=at_a)
    assert found(result, "return-drift") == [("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/sched.py:5")]
    # The second call passes one argument too many, at either release.
    assert found(result, "arity-drift") == [("warning", "pv.kv:KVCacheManager.get_computed_blocks", "plug/sched.py:6")]
    assert found(check(KV_SUBCLASS, at_b), "arity-drift") == [
        ("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/sched.py:6")
    ]
    # A member gone since the baseline, read through the attribute, is a missing member.
    evicting = {
        **at_a,
        "pv/kv.py": KV_A["pv/kv.py"].replace(
            "        def split(", "            def evict(self):\n                pass\n\n        def split("
        ),
    }
    reads = KV_SUBCLASS["plug/sched.py"].replace("return blocks", "return self.kv_cache_manager.evict")
    assert found(check({"plug/sched.py": reads}, at_b, baseline=evicting), "missing-member") == [
        ("error", "pv.kv:KVCacheManager.evict", "plug/sched.py:7")
    ]
    # The consumer setting the attribute itself keeps whatever it holds unknown.
    own = KV_SUBCLASS["plug/sched.py"].replace(
        "            def schedule(",
        "            def __init__(self, config):\n                self.kv_cache_manager = object()\n\n            def schedule(",
    )
    assert check({"plug/sched.py": own}, at_b, baseline=at_a).findings == ()


def test_unpacking_that_matches_or_is_starred_fits():
    consumer = {
        "plug/patch.py": """
            from pv.kv import KVCacheManager, split

            original = KVCacheManager.get_computed_blocks

            def wrapped(self, request):
                blocks, n, boundary = original(self, request)
                return blocks[:1], n, boundary

            KVCacheManager.get_computed_blocks = wrapped

            def parts(x):
                a, *rest = split(x)
                return a
        """
    }
    assert found(check(consumer, KV_B), "return-drift") == []


def test_an_override_returning_another_tuple_length_that_the_provider_calls_and_a_super_unpack():
    consumer = {
        "plug/kv.py": """
            from pv.kv import KVCacheManager

            class MyManager(KVCacheManager):
                def get_computed_blocks(self, request):
                    blocks, n = super().get_computed_blocks(request)
                    return blocks, n
        """
    }
    assert found(check(consumer, KV_A), "return-drift") == []
    result = check(consumer, KV_B, baseline=KV_A)
    assert sorted(found(result, "return-drift")) == [
        ("error", "plug.kv:MyManager.get_computed_blocks", "plug/kv.py:4"),  # schedule() unpacks it
        ("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/kv.py:5"),
    ]
    assert "pv.kv:KVCacheManager.schedule calls it" in one_of(result, "plug.kv:MyManager.get_computed_blocks").message
    # When the consumer also takes over the caller, nothing of the provider unpacks it.
    consumer["plug/kv.py"] = """
        from pv.kv import KVCacheManager

        class MyManager(KVCacheManager):
            def get_computed_blocks(self, request):
                blocks, n = super().get_computed_blocks(request)
                return blocks, n

            def schedule(self, request):
                return 0
    """
    assert sorted(found(check(consumer, KV_B, baseline=KV_A), "return-drift")) == [
        ("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/kv.py:5"),
        ("warning", "plug.kv:MyManager.get_computed_blocks", "plug/kv.py:4"),  # public: others may call it
    ]
    # Without a baseline nothing tells whether the length changed: warnings.
    assert {f[0] for f in found(check(consumer, KV_B), "return-drift")} == {"warning"}


@pytest.mark.parametrize(
    "passes_on",
    [
        "return self._orig(request)",
        "return super().get_computed_blocks(request)",
        "return KVCacheManager.get_computed_blocks(self, request)",
    ],
)
def test_unpacking_the_class_s_own_method_that_returns_the_provider_s_result(passes_on: str):
    """arctic-inference wraps vLLM's `GPUModelRunner._bookkeeping_sync` (returning the original's
    result) and unpacks its own wrapper's into 7 names; vLLM 0.28 returns 8."""
    source = f"""
        from pv.kv import KVCacheManager

        class MyManager(KVCacheManager):
            _orig = KVCacheManager.get_computed_blocks

            def get_computed_blocks(self, request):
                if request is None:
                    {passes_on}
                self.seen = request
                {passes_on}

            def plan(self, request):
                blocks, n = self.get_computed_blocks(request)
                return n
    """
    consumer = {"plug/kv.py": source}
    assert found(check(consumer, KV_A), "return-drift") == []
    result = check(consumer, KV_B, baseline=KV_A)
    assert found(result, "return-drift") == [("error", "pv.kv:KVCacheManager.get_computed_blocks", "plug/kv.py:13")]
    assert one(result, "return-drift").message.startswith(
        "unpacks the result of plug.kv:MyManager.get_computed_blocks, which returns what "
        "pv.kv:KVCacheManager.get_computed_blocks does, into 2 name(s);"
    )
    # A method with a return of its own making is not passing anything through.
    own = {"plug/kv.py": source.replace(f"                {passes_on}\n\n", "                return [], 0\n\n")}
    assert found(check(own, KV_B, baseline=KV_A), "return-drift") == []


def test_a_method_defined_twice_in_a_class_body_is_its_last_def():
    """Python keeps the last `def` of a name in a class body (arctic-inference's runner patch defines
    `sample_tokens` twice): the one before is no override; a property's setter is."""
    consumer = {
        "plug/kv.py": """
            from pv.kv import KVCacheManager

            class MyManager(KVCacheManager):
                def get_computed_blocks(self, request):
                    return [], 0, 0

                def get_computed_blocks(self, request):
                    return [], 0
        """
    }
    result = check(consumer, KV_B, baseline=KV_A)
    assert found(result, "return-drift") == [("error", "plug.kv:MyManager.get_computed_blocks", "plug/kv.py:7")]
    swapped = {"plug/kv.py": consumer["plug/kv.py"].replace("[], 0, 0\n", "[], 1\n").replace("[], 0\n", "[], 0, 0\n")}
    assert "return [], 1" in swapped["plug/kv.py"]
    assert found(check(swapped, KV_B, baseline=KV_A), "return-drift") == []
    body = ast.parse(
        "class C:\n    def a(self): pass\n    def a(self): pass\n"
        "    @property\n    def b(self): pass\n    @b.setter\n    def b(self, v): pass\n"
    ).body[0]
    assert [n.lineno for n in redefined(body.body)] == [2]  # type: ignore[attr-defined]


UNPACKS_FOUR = """
    from pv.kv import KVCacheManager, split

    def parts(x):
        a, b, c, d = split(x)
        return a
"""


def test_a_length_mismatch_that_was_already_there_at_the_baseline_is_a_warning():
    consumer = {"plug/use.py": UNPACKS_FOUR}
    result = check(consumer, KV_B, baseline=KV_B)
    assert found(result, "return-drift") == [("warning", "pv.kv:split", "plug/use.py:4")]
    assert "probably a path not taken" in one(result, "return-drift").message


def test_a_length_that_changed_but_did_not_fit_at_the_baseline_either_is_a_warning():
    # vllm-mindspore at vLLM 0.33 against 0.23: `_try_schedule_encoder_inputs` went from 4
    # values to 5, and the consumer unpacks 3 (so it failed at 0.23 too); its replacement of
    # `_prepare_inputs` returns 8, where the provider's callers unpacked 2 and now 3.
    more = """
        def wrapped(self, request):
            return [], 0, 0, 0

        KVCacheManager.get_computed_blocks = wrapped

        class Mine(KVCacheManager):
            def get_computed_blocks(self, request):
                return [], 0, 0, 0
    """
    consumer = {"plug/use.py": textwrap.dedent(UNPACKS_FOUR) + textwrap.dedent(more)}
    result = check(consumer, KV_B, baseline=KV_A)
    assert sorted(found(result, "return-drift")) == [
        ("warning", "plug.use:Mine.get_computed_blocks", "plug/use.py:13"),
        ("warning", "pv.kv:KVCacheManager.get_computed_blocks", "plug/use.py:10"),
        ("warning", "pv.kv:split", "plug/use.py:4"),
    ]
    for finding in (f for f in result.findings if f.rule.value == "return-drift"):
        assert "which did not fit either, where the consumer works: probably a path not taken" in finding.message
    # Where the consumer's side fitted the baseline, the change is an error, as before.
    fitted = {"plug/use.py": consumer["plug/use.py"].replace("a, b, c, d = split(x)", "a, b, c = split(x)")}
    assert ("error", "pv.kv:split", "plug/use.py:4") in found(check(fitted, KV_B, baseline=KV_A), "return-drift")


# vLLM 0.22's EagleProposer, its methods moved up into a new SpecDecodeBaseProposer (pv/base.py).
EAGLE_ON_A_NEW_BASE = """
    from pv.base import SpecDecodeBaseProposer

    class EagleProposer(SpecDecodeBaseProposer):
        pass
"""


def mine_on_eagle(method: str) -> dict[str, str]:
    """A consumer class deriving from EagleProposer, with `method` (dedented) as its one method."""
    body = textwrap.indent(method, "    ")
    return {"plug/prop.py": f"from pv.eagle import EagleProposer\n\nclass Mine(EagleProposer):\n{body}"}


def test_an_override_whose_method_moved_up_to_a_new_base_is_judged_against_what_it_overrode():
    # vllm-ascend 0.18 at vLLM 0.22: `set_inputs_first_pass` moved from EagleProposer up into a
    # new SpecDecodeBaseProposer; the consumer's override returned 4 where vLLM unpacked 3 at the
    # baseline as well (it works there: a path not taken), not a method new since then.
    baseline = {
        "pv/eagle.py": """
            class EagleProposer:
                def set_inputs(self, x):
                    return x, x, x

                def propose(self, x):
                    a, b, c = self.set_inputs(x)
                    return a
        """
    }
    pin = {
        "pv/base.py": """
            class SpecDecodeBaseProposer:
                def set_inputs(self, x):
                    return x, x, x

                def propose(self, x):
                    a, b, c = self.set_inputs(x)
                    return a
        """,
        "pv/eagle.py": EAGLE_ON_A_NEW_BASE,
    }
    consumer = mine_on_eagle("def set_inputs(self, x):\n    return x, x, x, x\n")
    result = check(consumer, pin, baseline=baseline)
    assert found(result, "return-drift") == [("warning", "plug.prop:Mine.set_inputs", "plug/prop.py:4")]
    assert "where the consumer works: probably a path not taken" in one(result, "return-drift").message
    # Where the method the override overrode returned 4 at the baseline, the change is an error.
    fitted = {"pv/eagle.py": baseline["pv/eagle.py"].replace("return x, x, x", "return x, x, x, x")}
    assert found(check(consumer, pin, baseline=fitted), "return-drift") == [
        ("error", "plug.prop:Mine.set_inputs", "plug/prop.py:4")
    ]


def test_an_override_narrower_since_before_its_method_moved_up_is_no_new_drift():
    # The method moved up to a new base class since the baseline, with the same parameters:
    # what the override cannot take it could not take there either (a warning), not new.
    baseline = {
        "pv/eagle.py": """
            class EagleProposer:
                def propose(self, x, mm=None):
                    return x

                def step(self, x):
                    return self.propose(x, mm=1)
        """
    }
    pin = {
        "pv/base.py": """
            class SpecDecodeBaseProposer:
                def propose(self, x, mm=None, profile=False):
                    return x

                def step(self, x):
                    return self.propose(x, mm=1)
        """,
        "pv/eagle.py": EAGLE_ON_A_NEW_BASE,
    }
    consumer = mine_on_eagle("def propose(self, x):\n    return x\n")

    def drift(provider: dict[str, str], base: dict[str, str]) -> Finding:
        [finding] = [f for f in check(consumer, provider, baseline=base).findings if f.rule.value == "override-drift"]
        return finding

    # The provider's own call on the object (`self.propose(x, mm=1)`), made at the baseline too.
    finding = drift(pin, baseline)
    assert finding.severity.value == "warning" and "it did so since 1.0 too" in finding.message
    # Where the call there fitted the override (`self.propose(x)`), the failing one is new: an error.
    fitting = {"pv/eagle.py": baseline["pv/eagle.py"].replace("self.propose(x, mm=1)", "self.propose(x)")}
    assert drift(pin, fitting).severity.value == "error"
    # Calls found by the method's name elsewhere (`proposer.propose(x, mm=1)`): what the method
    # gained since the baseline is told from the one the override overrode there.
    runner = "class Runner:\n    def run(self, proposer, x):\n        return proposer.propose(x, mm=1)\n"
    by_name = {**pin, "pv/runner.py": runner, "pv/base.py": pin["pv/base.py"].replace("self.propose(x, mm=1)", "x")}
    base_by_name = {**baseline, "pv/runner.py": runner}
    base_by_name["pv/eagle.py"] = base_by_name["pv/eagle.py"].replace("self.propose(x, mm=1)", "x")
    finding = drift(by_name, base_by_name)
    assert finding.severity.value == "warning", finding.message
    assert "is new since" not in finding.message
    passing = {**by_name, "pv/runner.py": runner.replace("mm=1)", "profile=True)")}
    finding = drift(passing, {**base_by_name, "pv/runner.py": runner.replace(", mm=1)", ")")})
    assert finding.severity.value == "error" and "profile new since 1.0" in finding.message


# -- arity-drift through receivers ----------------------------------------------------------

ATTN_A = {
    "pv/attn.py": """
        class Attention:
            def attn_core(self, x, q, kv, positions, launched=False):
                return x

            def process_weights_after_loading(self):
                pass

        class SlidingSpec:
            def blocks(self, window, old_kw=None):
                return window
    """
}
ATTN_B = {
    "pv/attn.py": """
        class Attention:
            def attn_core(self, *, x, q, kv, positions, launched=False):
                return x

            def process_weights_after_loading(self, act_dtype):
                pass

        class SlidingSpec:
            def blocks(self, window, new_kw=None):
                return window
    """
}
RECEIVERS = {
    "plug/attn.py": """
        from pv.attn import Attention, SlidingSpec

        class MyAttention(Attention):
            def attn_core(self, x, q, kv, positions, launched=False):
                return super().attn_core(x, q, kv, positions, launched=launched)

            def load(self):
                self.process_weights_after_loading()

        def build(spec: SlidingSpec):
            return spec.blocks(4, old_kw=1)

        class Tower:
            def __init__(self):
                self.attn = Attention()

        def post_load(tower: Tower):
            tower.attn.process_weights_after_loading()

        def via_kwargs(spec: SlidingSpec):
            options = {"old_kw": 2}
            return spec.blocks(8, **options)
    """
}


def test_super_self_annotated_and_kwargs_calls_with_a_stale_argument_list():
    assert found(check(RECEIVERS, ATTN_A), "arity-drift") == []
    result = check(RECEIVERS, ATTN_B, baseline=ATTN_A)
    assert sorted(found(result, "arity-drift")) == [
        ("error", "pv.attn:Attention.attn_core", "plug/attn.py:5"),  # super(), positional into keyword-only
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:18"),  # an attribute's type
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:8"),  # self, inherited
        ("error", "pv.attn:SlidingSpec.blocks", "plug/attn.py:11"),  # an annotated parameter
        ("error", "pv.attn:SlidingSpec.blocks", "plug/attn.py:22"),  # **kw from a dict literal
    ]
    assert any("gained act_dtype" in f.message and "since 1.0" in f.message for f in result.findings)


def test_a_call_on_an_object_an_isinstance_test_narrowed_to_a_provider_class():
    # vllm-ascend 0.24's `elif isinstance(kv_cache_spec, (SlidingWindowSpec, ChunkedLocalAttentionSpec)):`
    # then `kv_cache_spec.max_admission_blocks_per_request(max_in_flight_tokens=...)`.
    consumer = {
        "plug/attn.py": """
            from pv.attn import Attention, SlidingSpec

            def build(spec, other):
                if isinstance(spec, Attention):
                    spec.process_weights_after_loading()
                elif isinstance(spec, (SlidingSpec, Attention)):
                    spec.blocks(4, old_kw=1)
                spec.blocks(5, old_kw=1)
                return other
        """
    }
    assert found(check(consumer, ATTN_A), "arity-drift") == []
    result = check(consumer, ATTN_B, baseline=ATTN_A)
    assert sorted(found(result, "arity-drift")) == [
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:5"),
        ("error", "pv.attn:SlidingSpec.blocks", "plug/attn.py:7"),  # the first class named
    ]


def test_calls_through_a_cast_of_self_and_in_a_mixin_are_judged_where_they_land():
    # vllm-mblt's cached-processor mixin: no base of its own, mixed into vLLM's processors by its
    # subclasses, calling their methods through `processor = cast(Any, self)`.
    consumer = {
        "plug/attn.py": """
            import typing
            from typing import Any, cast

            from pv.attn import Attention, SlidingSpec

            class LoadingMixin:
                def load(self):
                    processor = cast(Any, self)
                    processor.process_weights_after_loading()

                def core(self, x):
                    return typing.cast(Any, super()).attn_core(x, x, x, x)

            class MyAttention(LoadingMixin, Attention):
                pass

            class Direct(Attention):
                def load(self):
                    cast("Attention", self).process_weights_after_loading()
        """
    }
    result = check(consumer, ATTN_B, baseline=ATTN_A)
    assert sorted(found(result, "arity-drift")) == [
        ("error", "pv.attn:Attention.attn_core", "plug/attn.py:12"),
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:19"),
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:9"),
    ]
    # Mixed into classes whose methods differ: where a call lands is not one method.
    apart = consumer["plug/attn.py"].replace(
        "class Direct(Attention):",
        "class Other(LoadingMixin, SlidingSpec):\n                pass\n\n            class Direct(Attention):",
    )
    assert sorted(found(check({"plug/attn.py": apart}, ATTN_B, baseline=ATTN_A), "arity-drift")) == [
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:22"),
    ]


def test_a_cast_to_a_class_types_the_object_as_one():
    # vllm-omni's `engine_client = cast(AsyncOmni, self._engine_client)`: its own class, whose
    # `generate` takes what the call passes.
    consumer = {
        "plug/attn.py": """
            from typing import cast

            from pv.attn import Attention

            class Own:
                def process_weights_after_loading(self, *args):
                    pass

            def through_own(layer: Attention):
                cast(Own, layer).process_weights_after_loading()

            def through_provider(layer):
                cast(Attention, layer).process_weights_after_loading()
        """
    }
    assert found(check(consumer, ATTN_B, baseline=ATTN_A), "arity-drift") == [
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:13"),
    ]


def test_an_instance_of_its_own_subclass_the_consumer_keeps_is_typed_as_one():
    # vllm-ascend's `self.input_batch = NPUInputBatch(...)` (a subclass of vLLM's InputBatch), then
    # `self.input_batch.add_request(...)`: a method it inherits from the provider, judged there.
    consumer = {
        "plug/attn.py": """
            from pv.attn import Attention

            class MyAttention(Attention):
                def extra(self):
                    pass

            class Holder:
                def __init__(self):
                    self.layer = MyAttention()
                    self.made = MyAttention()
                    self.own = Own()

                def load(self):
                    self.layer.process_weights_after_loading()
                    self.own.process_weights_after_loading()
                    self.made.extra()
                    local = MyAttention()
                    local.process_weights_after_loading()

                def later(self):
                    self.made = object()

            class Own:
                def process_weights_after_loading(self):
                    pass
        """
    }
    # `self.made` holds two kinds of object: not typed; `self.own` is the consumer's own class.
    result = check(consumer, ATTN_B, baseline=ATTN_A)
    assert found(result, "arity-drift") == [
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:14"),
        ("error", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:18"),
    ]
    assert "the call x.process_weights_after_loading(0 positional)" in one_of_site(result, "plug/attn.py:18").message
    assert "the call x.process_weights_after_loading(0 positional)" in one_of_site(result, "plug/attn.py:14").message


def test_a_receiver_call_that_did_not_fit_the_baseline_either_is_a_warning_though_the_signature_changed():
    # vllm-mindspore's `self.maybe_randomize_inputs(input_ids)` at vLLM 0.33 against 0.23: the
    # method gained a parameter since, but it required `inputs_embeds` at 0.23 too.
    consumer = {
        "plug/attn.py": """
            from pv.attn import Attention

            class MyAttention(Attention):
                def load(self):
                    self.process_weights_after_loading(1, 2)
        """
    }
    result = check(consumer, ATTN_B, baseline=ATTN_A)
    assert found(result, "arity-drift") == [
        ("warning", "pv.attn:Attention.process_weights_after_loading", "plug/attn.py:5")
    ]
    assert "gained act_dtype" in result.findings[0].message
    assert (
        "where the call did not fit either and the consumer works: probably a path not taken"
        in result.findings[0].message
    )


def test_receiver_calls_that_fit_and_kwargs_that_may_change_are_not_reported():
    consumer = {
        "plug/attn.py": """
            from pv.attn import Attention, SlidingSpec

            class MyAttention(Attention):
                def attn_core(self, x, q, kv, positions, launched=False):
                    return super().attn_core(x=x, q=q, kv=kv, positions=positions, launched=launched)

                def load(self, dtype):
                    self.process_weights_after_loading(dtype)

            def via_kwargs(spec: SlidingSpec, extra):
                options = {"new_kw": 2}
                options.update(extra)
                return spec.blocks(8, **options)

            def mutated(spec: SlidingSpec):
                options = {"old_kw": 2}
                options["new_kw"] = options.pop("old_kw")
                return spec.blocks(8, **options)
        """
    }
    assert found(check(consumer, ATTN_B), "arity-drift") == []


def test_self_calls_of_a_method_the_consumer_defines_are_its_own():
    consumer = {
        "plug/attn.py": """
            from pv.attn import Attention

            class MyAttention(Attention):
                def process_weights_after_loading(self):
                    pass

                def load(self):
                    self.process_weights_after_loading()
        """
    }
    assert found(check(consumer, ATTN_B), "arity-drift") == []


def test_an_annotated_call_a_consumer_subclass_takes_is_a_warning():
    """vllm-omni's shape: a handler keeps `engine_client: EngineClient` (vLLM's protocol) and
    calls `abort(request_id, timeout=...)`, which vLLM's abort does not take; the engine it is
    given is its own `AsyncOmni(EngineClient)`, whose abort does. Not an error: the call lands on
    the consumer's override whenever the object is the consumer's."""
    consumer = {
        "plug/serve.py": """
            from pv.attn import SlidingSpec

            class MySpec(SlidingSpec):
                def blocks(self, window, old_kw=None, timeout=None):
                    return window

            class Handler:
                def __init__(self, spec: SlidingSpec):
                    self.spec = spec

                def run(self):
                    return self.spec.blocks(4, timeout=1)

            def direct(spec: SlidingSpec):
                return spec.blocks(4, other=1)
        """
    }
    result = check(consumer, ATTN_A)
    assert sorted(found(result, "arity-drift")) == [
        ("error", "pv.attn:SlidingSpec.blocks", "plug/serve.py:15"),  # no subclass takes other=
        ("warning", "pv.attn:SlidingSpec.blocks", "plug/serve.py:12"),
    ]
    [warning] = [f for f in result.findings if f.severity.value == "warning"]
    assert "plug.serve:MySpec.blocks takes it" in warning.message
    # The consumer makes the provider's class itself, or another subclass cannot take it: an error.
    made = consumer["plug/serve.py"].replace("self.spec = spec", "self.spec = SlidingSpec()")
    sibling = consumer["plug/serve.py"].replace(
        "class Handler:",
        "class Other(SlidingSpec):\n                def blocks(self, window):\n                    return window\n\n            class Handler:",
    )
    for source in (made, sibling):
        severities = {sev for sev, symbol, _ in found(check({"plug/serve.py": source}, ATTN_A), "arity-drift")}
        assert severities == {"error"}


# -- shadow-drift --------------------------------------------------------------------------


GDN_A = {
    "pv/gdn.py": """
        class GDNBuilder:
            def build(self, m):
                batch_size = m.num_actual_tokens
                return batch_size

            def untouched(self, m):
                return m.num_reqs

        def step(model, x):
            return model(x)
    """
}
GDN_B = {
    "pv/gdn.py": """
        class GDNBuilder:
            def build(self, m):
                # Comments do not count; code does.
                batch_size = m.num_reqs
                self.clear_buffer()
                self.scale_cache(batch_size)
                return batch_size

            def untouched(self, m):
                # Only a comment changed here.
                return m.num_reqs

            def clear_buffer(self):
                pass

            def scale_cache(self, n):
                pass

        def step(model, x):
            model.warm_up()
            return model(x)
    """
}
COPIES = {
    "plug/gdn.py": """
        import pv.gdn
        from pv.gdn import GDNBuilder

        class MyBuilder(GDNBuilder):
            def build(self, m):
                return m.num_actual_tokens

            def untouched(self, m):
                return m.num_reqs

        class Delegating(GDNBuilder):
            def build(self, m):
                return super().build(m) + 1

        def my_step(model, x):
            return model(x)

        pv.gdn.step = my_step
    """
}


def test_whole_copies_whose_upstream_changed_are_warnings_with_the_change():
    result = check(COPIES, GDN_B, baseline=GDN_A)
    assert sorted(found(result, "shadow-drift")) == [
        ("warning", "plug.gdn:MyBuilder.build", "plug/gdn.py:5"),
        ("warning", "pv.gdn:step", "plug/gdn.py:18"),
    ]
    build = next(f for f in result.findings if f.symbol == "plug.gdn:MyBuilder.build")
    assert "calls added: self.clear_buffer(), self.scale_cache()" in build.message
    assert "since 1.0" in build.message
    assert (
        "+        self.clear_buffer()" in build.detail and "-        batch_size = m.num_actual_tokens" in build.detail
    )
    step = next(f for f in result.findings if f.symbol == "pv.gdn:step")
    assert "model.warm_up()" in step.message


def test_a_copy_doing_what_changed_upstream_already_is_no_drift():
    """aleph-alpha-inference's Kolibri block copies `Qwen3MoeSparseMoeBlock.__init__` with vLLM
    0.31's `GateLinear` router already: nothing to port. A copy doing part of it still drifts."""
    ported = {
        "plug/gdn.py": """
            import pv.gdn
            from pv.gdn import GDNBuilder

            class MyBuilder(GDNBuilder):
                def build(self, m):
                    batch_size = m.num_reqs
                    self.clear_buffer()
                    self.scale_cache(batch_size)
                    return batch_size

            def my_step(model, x):
                model.warm_up()
                return model(x) + 1

            pv.gdn.step = my_step
        """
    }
    assert found(check(ported, GDN_B, baseline=GDN_A), "shadow-drift") == []
    half = {"plug/gdn.py": ported["plug/gdn.py"].replace("self.scale_cache(batch_size)", "pass")}
    drifting = found(check(half, GDN_B, baseline=GDN_A), "shadow-drift")
    assert drifting == [("warning", "plug.gdn:MyBuilder.build", "plug/gdn.py:5")]
    # The calls made, but not what the function now assigns (vLLM 0.29's `grammar_bitmask` no longer
    # tests `enable_in_reasoning`; vllm-ascend's copy validates tokens as it does, and still tests it).
    other = {"plug/gdn.py": ported["plug/gdn.py"].replace("batch_size = m.num_reqs", "batch_size = len(m.reqs)")}
    assert found(check(other, GDN_B, baseline=GDN_A), "shadow-drift") == drifting
    # Each callee as often as the function now calls it: vllm-ascend's copy of DeepSeek's `forward`
    # gathers the states after its loop as vLLM 0.25's does, but not inside it.
    twice = {
        "pv/gdn.py": GDN_B["pv/gdn.py"].replace(
            "model.warm_up()\n", "model.warm_up()\n            for _ in x:\n                model.warm_up()\n"
        )
    }
    once = {"plug/gdn.py": ported["plug/gdn.py"].replace("class MyBuilder(GDNBuilder)", "class MyBuilder")}
    assert found(check(once, twice, baseline=GDN_A), "shadow-drift") == [("warning", "pv.gdn:step", "plug/gdn.py:15")]
    both = {
        "plug/gdn.py": once["plug/gdn.py"].replace(
            "model.warm_up()\n", "model.warm_up()\n                model.warm_up()\n"
        )
    }
    assert found(check(both, twice, baseline=GDN_A), "shadow-drift") == []
    # A keyword the provider's calls now pass is done only when the copy passes it too.
    keyword_a = {"pv/gdn.py": "def step(model, x):\n    return model(x, cache=None)\n"}
    keyword_b = {"pv/gdn.py": "def step(model, x):\n    return model(x, cache=None, fast=True)\n"}
    copy = "import pv.gdn\n\ndef my_step(model, x):\n    return model(x, fast={})\n\npv.gdn.step = my_step\n"
    assert found(check({"plug/gdn.py": copy.format("False")}, keyword_b, baseline=keyword_a), "shadow-drift") == []
    without = copy.replace("fast={}", "slow=True")
    assert found(check({"plug/gdn.py": without}, keyword_b, baseline=keyword_a), "shadow-drift") == [
        ("warning", "pv.gdn:step", "plug/gdn.py:6")
    ]


def test_a_copy_of_a_function_that_now_sets_a_module_global_another_reads_says_so():
    """vLLM 0.30's `initialize_model_parallel` also sets `_ETP`, which `get_etp_group()` asserts is
    set; arctic-inference replaces it with a copy of vLLM 0.26's, which never sets it."""
    before = {
        "pv/state.py": """
            _TP = None
            _ETP = None

            def init(n):
                global _TP
                _TP = n

            def get_tp():
                return _TP
        """
    }
    after = {
        "pv/state.py": before["pv/state.py"].replace(
            "global _TP\n                _TP = n", "global _TP, _ETP\n                _TP = n\n                _ETP = n"
        )
        + """
            def get_etp():
                assert _ETP is not None
                return _ETP
        """
    }
    copy = """
        import pv.state

        def my_init(n):
            pv.state._TP = n

        pv.state.init = my_init
    """
    [finding] = [
        f for f in check({"plug/state.py": copy}, after, baseline=before).findings if f.rule.value == "shadow-drift"
    ]
    assert finding.severity.value == "warning"
    assert finding.message.endswith(
        ". Since 1.0 it sets the module's global _ETP (read by get_etp at pv/state.py:12): the copy leaves it unset"
    )
    # A copy setting it too leaves nothing unset (what else changed is not told by calls: still a copy).
    setting = copy.replace("pv.state._TP = n", "pv.state._TP = n\n            pv.state._ETP = n")
    [finding] = [
        f for f in check({"plug/state.py": setting}, after, baseline=before).findings if f.rule.value == "shadow-drift"
    ]
    assert "_ETP" not in finding.message


def test_a_provider_function_changed_only_in_what_it_logs_leaves_its_copies_alone():
    """vLLM 0.30's `Platform.import_kernels` formats its warning with `repr()` and logs once more;
    the Spyre platform's copy skips no work."""
    before = {
        "pv/platform.py": """
            import logging
            logger = logging.getLogger(__name__)

            class Platform:
                def import_kernels(self):
                    try:
                        import pv._C
                    except ImportError as e:
                        logger.warning("no kernels: %r", e)
                    return 1
        """
    }
    after = {
        "pv/platform.py": before["pv/platform.py"].replace(
            'logger.warning("no kernels: %r", e)',
            'logger.warning("no kernels: %s", repr(e))\n                        logger.info_once("kernels")',
        )
    }
    consumer = {
        "plug/platform.py": """
            from pv.platform import Platform

            class MyPlatform(Platform):
                def import_kernels(self):
                    return 2
        """
    }
    assert found(check(consumer, after, baseline=before), "shadow-drift") == []
    # Work added beside the message is still work to port.
    working = {
        "pv/platform.py": after["pv/platform.py"].replace("return 1", "self.load()\n                    return 1")
    }
    assert found(check(consumer, working, baseline=before), "shadow-drift") == [
        ("warning", "plug.platform:MyPlatform.import_kernels", "plug/platform.py:4")
    ]


def test_an_override_handing_on_through_its_own_helper_and_a_replacement_reading_no_argument_are_no_copies():
    """ai-dynamo's scheduler's `update_from_output` returns `self._update_from_output(...)`, which
    calls `super().update_from_output(...)`; its `kernel_warmup(*_args, **_kwargs)` only logs."""
    consumer = {
        "plug/gdn.py": """
            import logging
            import pv.gdn
            from pv.gdn import GDNBuilder

            class MyBuilder(GDNBuilder):
                def build(self, m):
                    if m is None:
                        return 0
                    return self._timed_build(m)

                def _timed_build(self, m):
                    return super().build(m)

            def my_step(*_args, **_kwargs):
                logging.info("skipped")

            pv.gdn.step = my_step
        """
    }
    assert found(check(consumer, GDN_B, baseline=GDN_A), "shadow-drift") == []
    # A helper calling another method's original hands nothing on for this one; a replacement
    # reading its arguments may copy the original.
    other = consumer["plug/gdn.py"].replace("super().build(m)", "super().untouched(m)")
    reading = other.replace('logging.info("skipped")', "return _args[0](_args[1])")
    assert sorted(found(check({"plug/gdn.py": reading}, GDN_B, baseline=GDN_A), "shadow-drift")) == [
        ("warning", "plug.gdn:MyBuilder.build", "plug/gdn.py:6"),
        ("warning", "pv.gdn:step", "plug/gdn.py:17"),
    ]


def test_a_replacement_using_the_original_only_in_an_early_exit_is_a_copy_on_its_other_path():
    """ROCm ATOM's DSpark `_sample_sequential` hands on to the original only when the model has no
    fused kernel (`if ...: return original_sample(...)`) and samples greedily itself otherwise;
    vLLM 0.28's original gained a top-k path and confidences that ATOM's path skips."""
    consumer = {
        "plug/gdn.py": """
            import functools
            import pv.gdn

            def install():
                original = pv.gdn.step

                @functools.wraps(original)
                def my_step(model, x):
                    fused = getattr(model, "fused", None)
                    if fused is None:
                        return original(model, x)
                    return fused(x)

                pv.gdn.step = my_step
        """
    }
    [finding] = [f for f in check(consumer, GDN_B, baseline=GDN_A).findings if f.rule.value == "shadow-drift"]
    assert (finding.severity.value, finding.symbol) == ("warning", "pv.gdn:step")
    assert "without using the original but when `fused is None` holds (plug/gdn.py:10)" in finding.message
    assert "model.warm_up()" in finding.message
    # Each exit handing on is counted.
    exits = consumer["plug/gdn.py"].replace(
        "return fused(x)",
        "if x is None:\n                        return original(model, x)\n                    return fused(x)",
    )
    [finding] = [f for f in check({"plug/gdn.py": exits}, GDN_B, baseline=GDN_A).findings if f.symbol == "pv.gdn:step"]
    assert "holds (plug/gdn.py:10, or one of 1 later exit(s) handing it on)" in finding.message
    # Handing on on the main path too, or doing nothing of its own after the exit, is no copy.
    for also in (
        "return fused(x) or original(model, x)",
        "raise NotImplementedError(x)",
    ):
        handing_on = {"plug/gdn.py": consumer["plug/gdn.py"].replace("return fused(x)", also)}
        assert found(check(handing_on, GDN_B, baseline=GDN_A), "shadow-drift") == [], also
    # An exit whose condition reads the original, or an `else:` branch, is not read as one.
    tested = consumer["plug/gdn.py"].replace("if fused is None:", "if fused is None or original is None:")
    assert found(check({"plug/gdn.py": tested}, GDN_B, baseline=GDN_A), "shadow-drift") == []
    branches = consumer["plug/gdn.py"].replace("return fused(x)", "else:\n                        return fused(x)")
    assert found(check({"plug/gdn.py": branches}, GDN_B, baseline=GDN_A), "shadow-drift") == []


def test_a_copy_whose_upstream_passes_another_keyword_says_which():
    """vLLM 0.27's `initialize_model_parallel` passes `use_all2all=` when it makes the expert-parallel
    group; arctic-inference's copy does not."""
    pin = {"pv/gdn.py": GDN_A["pv/gdn.py"].replace("return model(x)", "return model(x, fast=True)")}
    base = {"pv/gdn.py": GDN_A["pv/gdn.py"].replace("return model(x)", "return model(x, slow=True)")}
    result = check(COPIES, pin, baseline=base)
    step = next(f for f in result.findings if f.symbol == "pv.gdn:step")
    assert "keywords passed changed: model(+fast=, -slow=)" in step.message
    assert "no call or parameter changed" not in step.message


@pytest.mark.parametrize("mark", ["\x0c", "\x1c", "\x85", "\u2028"])
def test_a_copy_whose_upstream_file_has_a_character_text_splits_lines_at_shows_the_right_lines(mark: str):
    # Python counts lines at \n and \r only: a form feed, a file separator or a Unicode line
    # separator in a comment starts no line, so the function is where the parser says.
    pin = {"pv/gdn.py": f"# page one{mark} page two\n" + textwrap.dedent(GDN_B["pv/gdn.py"])}
    base = {"pv/gdn.py": f"# page one{mark} page two\n" + textwrap.dedent(GDN_A["pv/gdn.py"])}
    result = check(COPIES, pin, baseline=base)
    build = next(f for f in result.findings if f.symbol == "plug.gdn:MyBuilder.build")
    assert "calls added: self.clear_buffer(), self.scale_cache()" in build.message
    removed = [line for line in build.detail.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in build.detail.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["-        batch_size = m.num_actual_tokens"]
    assert "+        self.scale_cache(batch_size)" in added and "page two" not in build.detail
    # The function's own lines, from its `def` to its last line.
    assert "class GDNBuilder" not in build.detail and "         return batch_size" in build.detail


def test_a_copy_whose_upstream_file_changed_its_line_ends_shows_only_the_code_that_changed():
    pin = {"pv/gdn.py": textwrap.dedent(GDN_B["pv/gdn.py"]).replace("\n", "\r\n")}
    build = one_of(check(COPIES, pin, baseline=GDN_A), "plug.gdn:MyBuilder.build")
    changed = [line for line in build.detail.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [
        "-        batch_size = m.num_actual_tokens",
        "+        # Comments do not count; code does.",
        "+        batch_size = m.num_reqs",
        "+        self.clear_buffer()",
        "+        self.scale_cache(batch_size)",
    ]


def test_a_copy_whose_upstream_file_gained_a_byte_order_mark_is_no_drift():
    # Only a comment changed. The signature spans lines and its `):` sits at the `def`'s
    # indentation: the function is read from the whole file, byte order mark and all.
    upstream = """
        class GDNBuilder:
            def build(
                self, m
            ):
                batch_size = m.num_actual_tokens
                return batch_size
    """
    commented = upstream.replace("return batch_size", "# Only a comment is new.\n                return batch_size")
    pin = {"pv/gdn.py": "\ufeff" + textwrap.dedent(commented).lstrip("\n")}
    assert found(check(COPIES, pin, baseline={"pv/gdn.py": upstream}), "shadow-drift") == []


def test_wrappers_that_call_the_original_are_not_copies():
    consumer = {
        "plug/gdn.py": """
            import functools

            def install(module, name):
                original = getattr(module, name)

                @functools.wraps(original)
                def wrapped(*args, **kwargs):
                    return original(*args, **kwargs)

                setattr(module, name, wrapped)

            def install_classmethod(cls):
                original = cls.build.__func__

                def build(klass, m):
                    return original(klass, m)

                cls.build = classmethod(build)

            def run():
                import pv.gdn
                install(pv.gdn, "step")
                install_classmethod(pv.gdn.GDNBuilder)
        """
    }
    assert found(check(consumer, GDN_B, baseline=GDN_A), "shadow-drift") == []


SCHED_A = {
    "pv/sched.py": """
        class Base:
            def __init__(self, n):
                self.n = n

        class Scheduler(Base):
            def __init__(self, n):
                super().__init__(n)
                self.queue = []

            def schedule(self):
                return self.queue
    """
}
SCHED_B = {
    "pv/sched.py": """
        class Base:
            def __init__(self, n):
                self.n = n
                self.errors = set()

        class Scheduler(Base):
            def __init__(self, n):
                super().__init__(n)
                self.queue = []
                self.waiting = []

            def schedule(self):
                self.errors.clear()
                return self.queue + self.waiting
    """
}
MY_SCHEDULER = {
    "plug/sched.py": """
        from pv.sched import Scheduler

        class MyScheduler(Scheduler):
            def __init__(self, n):
                self.n = n
                self.queue = []

        def make_scheduler():
            return MyScheduler(4)
    """
}


def test_an_override_that_skips_new_setup_the_provider_reads_is_an_error():
    # vllm-rbln 0.11's scheduler overrides `Scheduler.__init__` without calling it; vLLM 0.30's
    # sets `grammar_compile_error_reqs`, which the `schedule()` it inherits reads every step.
    result = check(MY_SCHEDULER, SCHED_B, baseline=SCHED_A)
    [(severity, symbol, site)] = found(result, "shadow-drift")
    assert (severity, symbol, site) == ("error", "plug.sched:MyScheduler.__init__", "plug/sched.py:4")
    message = one(result, "shadow-drift").message
    # Set by the method it overrides, and by the one that hands on to with `super().__init__`.
    assert "Since 1.0 it sets self.errors, which Scheduler.schedule (pv/sched.py:13) reads" in message
    assert "(and 1 more such read(s))" in message and "AttributeError when it runs" in message
    # A class the consumer never makes nor hands to the provider (tpu-inference's
    # `DisaggEngineCore`, made only by its tests): a warning that says so.
    for unmade_by in ("return None", 'print("making MyScheduler")  # MyScheduler(4)'):
        unmade = {"plug/sched.py": MY_SCHEDULER["plug/sched.py"].replace("return MyScheduler(4)", unmade_by)}
        [finding] = check(unmade, SCHED_B, baseline=SCHED_A).findings
        assert finding.severity.value == "warning"
        assert "no class running it is seen made by the consumer or handed to the provider" in finding.message
    # Named in code otherwise (an alias called later, a patch putting it in the provider's place): made.
    aliased = {"plug/sched.py": MY_SCHEDULER["plug/sched.py"].replace("return MyScheduler(4)", "return MyScheduler")}
    assert [f.severity.value for f in check(aliased, SCHED_B, baseline=SCHED_A).findings] == ["error"]


def test_an_override_calling_a_base_further_up_skips_the_setup_between():
    # tpu-inference's `VllmMxfp4MoEMethod.__init__` calls `FusedMoEMethodBase.__init__`, not the
    # `Mxfp4MoEMethod.__init__` it overrides, where vLLM 0.27 sets `is_k3_situ_aiter`, which the
    # inherited `maybe_roundup_sizes` reads.
    further = {
        "plug/sched.py": MY_SCHEDULER["plug/sched.py"]
        .replace("from pv.sched import Scheduler", "from pv.sched import Base, Scheduler")
        .replace("self.n = n", "Base.__init__(self, n)")
    }
    result = check(further, SCHED_B, baseline=SCHED_A)
    assert found(result, "shadow-drift") == [("error", "plug.sched:MyScheduler.__init__", "plug/sched.py:4")]
    message = one(result, "shadow-drift").message
    # What `Base.__init__` sets runs: only what `Scheduler.__init__` sets is skipped.
    assert "Since 1.0 it sets self.waiting, which Scheduler.schedule (pv/sched.py:14) reads" in message
    assert "more such read" not in message
    # Calling the overridden method itself by its class hands on to it.
    handing_on = {
        "plug/sched.py": further["plug/sched.py"].replace("Base.__init__(self, n)", "Scheduler.__init__(self, n)")
    }
    assert found(check(handing_on, SCHED_B, baseline=SCHED_A), "shadow-drift") == []


@pytest.mark.parametrize(
    "change",
    [
        ("plug/sched.py", "self.queue = []", "self.queue = []\n        self.errors = self.waiting = None"),
        ("plug/sched.py", "self.queue = []", "self.queue = []\n\n    def schedule(self):\n        return []"),
        ("pv/sched.py", "self.errors.clear()\n", "getattr(self, 'errors', None), getattr(self, 'waiting', None)\n"),
        ("pv/sched.py", "class Scheduler(Base):\n", "class Scheduler(Base):\n    errors = waiting = None\n"),
        (
            "pv/sched.py",
            "    def schedule(self):",
            "    def reset(self):\n        self.errors = self.waiting = []\n\n    def schedule(self):",
        ),
    ],
    ids=["the-consumer-sets-them", "the-readers-overridden", "read-guarded", "class-defaults", "set-elsewhere-too"],
)
def test_new_setup_the_consumer_provides_or_nothing_running_reads_is_a_warning(change: tuple[str, str, str]):
    path, old, new = change
    consumer, pin = dict(MY_SCHEDULER), dict(SCHED_B)
    files = consumer if path.startswith("plug/") else pin
    assert old in textwrap.dedent(files[path])
    files[path] = textwrap.dedent(files[path]).replace(old, new, 1)
    severities = {severity for severity, _, _ in found(check(consumer, pin, baseline=SCHED_A), "shadow-drift")}
    assert severities <= {"warning"}


def test_no_shadow_drift_without_a_change_upstream_or_without_a_baseline():
    assert found(check(COPIES, GDN_A, baseline=GDN_A), "shadow-drift") == []
    assert found(check(COPIES, GDN_B), "shadow-drift") == []


def test_shadow_drift_detail_shows_with_verbose_and_fail_on_makes_it_gate(tmp_path: Path):
    consumer = write_files(tmp_path / "c", {"plug/__init__.py": "", **COPIES})
    provider = write_files(tmp_path / "b", {"pv/__init__.py": "", **GDN_B})
    baseline = write_files(tmp_path / "a", {"pv/__init__.py": "", **GDN_A})
    args = ["check", str(consumer), str(provider), "--baseline", str(baseline), "--no-cache"]
    quiet = runner.invoke(app, args)
    assert quiet.exit_code == 0, quiet.output  # warnings do not fail
    assert "shadow-drift" in quiet.output and "+        self.clear_buffer()" not in quiet.output
    verbose = runner.invoke(app, ["--verbose", *args])
    assert "| +        self.scale_cache(batch_size)" in verbose.output
    assert "| -        batch_size = m.num_actual_tokens" in verbose.output


# -- the name search -----------------------------------------------------------------------


def test_the_name_search_parses_only_files_that_contain_the_name_and_nothing_on_a_second_run(tmp_path: Path):
    files = {f"pv/m{i}.py": f"def f{i}(x):\n    return x.other()\n" for i in range(20)}
    files["pv/__init__.py"] = ""
    files["pv/user.py"] = "def g(backend):\n    return backend.supports_pcp()\n"
    files["pv/own.py"] = "class B:\n    def h(self):\n        return self.supports_pcp()\n"
    tree = MemoryTree(files)
    with SqliteAnalysisCache(tmp_path / "cache") as cache:
        search = NameSearch(tree, "pv", cache)
        sites = search.find(["supports_pcp"])["supports_pcp"]
        assert [(s.path, s.line, s.receiver.value) for s in sites] == [
            ("pv/own.py", 3, "self"),
            ("pv/user.py", 2, "other"),
        ]
        assert search.parsed == 2  # of 23 files
    with SqliteAnalysisCache(tmp_path / "cache") as cache:
        again = NameSearch(tree, "pv", cache)
        assert again.find(["supports_pcp"])["supports_pcp"] == sites
        assert again.parsed == 0


def test_a_call_whose_other_branch_fits_is_the_form_for_another_release():
    provider = {
        "pv/graphs.py": """
            class Manager:
                def capture(self):
                    return None
        """
    }
    consumer = {
        "plug/graphs.py": """
            import os
            from pv.graphs import Manager

            SUPPORTS_POOL = os.environ.get("SUPPORTS_POOL") == "1"

            class MyManager(Manager):
                def capture(self):
                    if SUPPORTS_POOL:
                        return super().capture(graph_pool=None)
                    else:
                        return super().capture()
        """
    }
    # A test of the signature itself is decided here: the branch that passes `graph_pool` never runs.
    signature_test = consumer["plug/graphs.py"].replace(
        'os.environ.get("SUPPORTS_POOL") == "1"', '"graph_pool" in inspect.signature(Manager.capture).parameters'
    )
    decided = {"plug/graphs.py": signature_test.replace("import os", "import inspect")}
    assert found(check(decided, provider), "arity-drift") == []
    [finding] = found(check(consumer, provider), "arity-drift")
    assert finding[0] == "warning"
    assert (
        "the other branch of the if at plug/graphs.py:8 makes a call that fits"
        in one(check(consumer, provider), "arity-drift").message
    )
    # Without a fitting alternative the same call is an error.
    alone = dict(consumer)
    alone["plug/graphs.py"] = consumer["plug/graphs.py"].replace("return super().capture()", "return None")
    assert [f[0] for f in found(check(alone, provider), "arity-drift")] == ["error"]


def test_a_call_of_a_method_the_consumer_patched_on_the_receivers_class_is_its_replacements():
    # vllm-ascend's shape: `Sub._begin = mine` (one argument), and `self._begin(name)` on a `Sub`,
    # while the provider's method, defined on Sub's base, takes two.
    provider = {
        "pv/__init__.py": "",
        "pv/parsers.py": """
            class Base:
                def _begin(self, name, deltas):
                    return name

            class Sub(Base):
                pass
        """,
    }
    patch = """
        from pv.parsers import Sub

        def _begin(self: Sub, name):
            return name

        def _process(self: Sub, text):
            self._begin(text)

        Sub._process = _process
        Sub._begin = _begin
    """
    # Only the replacement's own width is noted (a warning: no call it cannot take was found).
    assert found(check({"plug/patch.py": patch}, provider), "arity-drift") == [
        ("warning", "pv.parsers:Sub._begin", "plug/patch.py:10")
    ]
    unpatched = patch.replace("Sub._begin = _begin", "")
    assert found(check({"plug/patch.py": unpatched}, provider), "arity-drift") == [
        ("error", "pv.parsers:Base._begin", "plug/patch.py:7")
    ]
    # A subclass of its own, whose base's method the consumer patched: the replacement runs too.
    own = """
        from pv.parsers import Base, Sub

        def _begin(self, name):
            return name

        class Mine(Sub):
            def go(self, text):
                self._begin(text)

        Sub._begin = _begin
    """
    assert [f for f in found(check({"plug/own.py": own}, provider), "arity-drift") if f[0] == "error"] == []
    assert found(check({"plug/own.py": own.replace("Sub._begin = _begin", "")}, provider), "arity-drift") == [
        ("error", "pv.parsers:Base._begin", "plug/own.py:8")
    ]


def test_a_self_call_in_a_class_with_an_outside_base_that_may_derive_from_the_provider_class():
    # vllm-omni's shape: OmniNPURunner(OmniRunner, NPURunner) where OmniRunner derives from the
    # provider's Runner and NPURunner (another plugin's, not read) does too and overrides build():
    # in the real order NPURunner comes before Runner, so the call may be to its build().
    provider = {
        "pv/__init__.py": "",
        "pv/runner.py": """
            import dep

            class Runner:
                def build(self, batch):
                    return batch
        """,
    }
    plugin = """
        import dep.runner
        from pv.runner import Runner
        from other_plugin.runner import OtherRunner

        class OmniRunner(Runner):
            pass

        class OmniNPURunner(OmniRunner, {outside}):
            def step(self):
                return self.build(1, 2)
    """
    assert found(check({"plug/run.py": plugin.format(outside="OtherRunner")}, provider), "arity-drift") == []
    # A base from a package the provider's module imports cannot derive from the provider's class.
    dependency = plugin.format(outside="dep.runner.OtherRunner")
    assert found(check({"plug/run.py": dependency}, provider), "arity-drift") == [
        ("error", "pv.runner:Runner.build", "plug/run.py:10")
    ]


def test_a_dotted_path_a_test_double_replaces_is_no_handover():
    # `patch("plug.backend.MyBackend", fake)` names the class to replace it in a test, not to hand it over
    # (sglang's unit tests); three methods alone are too few for a guess from the shape.
    mocked = {
        "plug/backend.py": MY_BACKEND,
        "plug/test_platform.py": """
            from unittest import mock
            def test_it(monkeypatch):
                with mock.patch(
                    "plug.backend.MyBackend", object()
                ):
                    monkeypatch.setattr("plug.backend.MyBackend", object())
        """,
    }
    assert found(check(mocked, ROLE_B, baseline=ROLE_A), "protocol-drift") == []
    assert found(check(STAND_IN, ROLE_B, baseline=ROLE_A), "protocol-drift") != []  # handed over: checked


SHAPED_BACKEND = (
    MY_BACKEND
    + """
    @classmethod
    def get_supported_head_sizes(cls):
        return [64]
"""
)


def _role_with_head_sizes() -> dict[str, str]:
    role_b = dict(ROLE_B)
    role_b["pv/backend.py"] = role_b["pv/backend.py"].replace(
        "def old_uncalled(cls):",
        "def get_supported_head_sizes(cls):\n                return []\n\n            @classmethod\n            def old_uncalled(cls):",
    )
    return role_b


def test_no_shape_guess_for_a_class_whose_module_never_names_the_provider():
    # Scanned (it imports a consumer module that re-exports a provider object), yet it names no
    # provider module itself: lmcache's own ATOM adapters, tpu-inference's free-block queue.
    files = {
        "plug/util.py": "from pv.backend import AttentionBackend as Base  # noqa: F401\n",
        "plug/backend.py": "from plug.util import Base  # noqa: F401\n" + SHAPED_BACKEND,
    }
    assert found(check(files, _role_with_head_sizes(), baseline=ROLE_A), "protocol-drift") == []
    named = {"plug/backend.py": "import pv.backend  # noqa: F401\n" + SHAPED_BACKEND}
    assert {s for s, _, _ in found(check(named, _role_with_head_sizes(), baseline=ROLE_A), "protocol-drift")} == {
        "warning"
    }


def test_no_shape_guess_for_a_same_named_copy_of_the_provider_class():
    # sglang keeps its own GroupCoordinator beside aiter's (both copied from vLLM): a copy, not a stand-in.
    copy = {
        "plug/backend.py": "import pv.backend  # noqa: F401\n"
        + SHAPED_BACKEND.replace("class MyBackend:", "class AttentionBackend:")
    }
    assert found(check(copy, _role_with_head_sizes(), baseline=ROLE_A), "protocol-drift") == []


def test_no_shape_guess_for_a_wrapper_keeping_an_instance_of_the_provider_class():
    # vLLM's `AiterCustomAllreduce` keeps aiter's `CustomAllreduce` in `self._impl` and forwards to it.
    wrapper = SHAPED_BACKEND.replace(
        "class MyBackend:\n",
        "class MyBackend:\n    def __init__(self):\n        from pv.backend import AttentionBackend\n"
        "        self._impl = AttentionBackend()\n\n",
    )
    files = {"plug/backend.py": "import pv.backend  # noqa: F401\n" + wrapper}
    assert found(check(files, _role_with_head_sizes(), baseline=ROLE_A), "protocol-drift") == []


def test_the_next_name_search_of_a_process_reads_only_the_files_that_changed(monkeypatch: pytest.MonkeyPatch):
    """A bisect's next step, or the next pair of a lock: the identifiers of the files whose content
    the last search of the process held are taken from it; only the changed file is read, and the
    answers are a fresh search's."""
    files = {f"pv/m{i}.py": f"def f{i}(x):\n    return x.other()\n" for i in range(20)}
    files["pv/__init__.py"] = ""
    files["pv/user.py"] = "def g(backend):\n    return backend.supports_pcp()\n"
    changed = {**files, "pv/m3.py": "def f3(x):\n    return x.supports_pcp()\n"}
    first = NameSearch(MemoryTree(files), "pv", AnalysisCache())
    assert [s.path for s in first.find(["supports_pcp"])["supports_pcp"]] == ["pv/user.py"]
    read: list[str] = []
    real = NameSearch._read_identifiers
    monkeypatch.setattr(NameSearch, "_read_identifiers", lambda self, paths: read.extend(paths) or real(self, paths))
    second = NameSearch(MemoryTree(changed), "pv", AnalysisCache())
    found = [s.path for s in second.find(["supports_pcp"])["supports_pcp"]]
    assert read == ["pv/m3.py"]
    assert found == ["pv/m3.py", "pv/user.py"]
    assert second.files_defining([({"f3", "g"}, 1)]) == [["pv/m3.py", "pv/user.py"]]


def test_a_stand_in_search_with_no_candidate_class_reads_no_identifiers(monkeypatch: pytest.MonkeyPatch):
    """A consumer without a class that could stand in for a provider class (a bisect's step of a
    plugin that only imports functions) asks about no name: no file's identifiers are read."""
    files = {"pv/__init__.py": "", **{f"pv/m{i}.py": f"def f{i}(x):\n    return x\n" for i in range(5)}}
    read: list[str] = []
    real = NameSearch._read_identifiers
    monkeypatch.setattr(NameSearch, "_read_identifiers", lambda self, paths: read.extend(paths) or real(self, paths))
    search = NameSearch(MemoryTree(files), "pv", AnalysisCache())
    assert search.files_defining([]) == []
    assert search.files_defining([(set(), 1), (set(), 2)], 3) == [[], []]
    assert read == []
    assert search.files_defining([({"f1", "f4"}, 1)]) == [["pv/m1.py", "pv/m4.py"]]
    assert sorted(read) == sorted(files)


def test_a_file_s_identifiers_are_split_into_sets_when_asked():
    """The cached lists of the names a file defines, writes after a dot, and writes just before an
    opening parenthesis are split on first need."""
    from atompin.analysis.name_sites import Identifiers

    found = Identifiers(b"forward load_weights\nforward run supports_pcp to\ndrawrof nur")
    assert found.defs == {b"forward", b"load_weights"}
    assert found.attributes == {b"forward", b"run", b"supports_pcp", b"to"}
    assert found.calls_any({b"nur"}) and not found.calls_any({b"ot", b"load_weights"[::-1]})
    assert Identifiers(b"\n\n").defs == Identifiers(b"\n\n").attributes == set()
    assert not Identifiers(b"\n\n").calls_any({b"a"})
    middle_empty = Identifiers(b"a\n\nb c")
    assert (middle_empty.defs, middle_empty.attributes) == ({b"a"}, set()) and middle_empty.calls_any({b"c"})
    for damaged in (b"no newline", b"one\nnewline", None):
        assert Identifiers.parse(damaged) is None


def test_every_call_of_a_name_leaves_it_among_the_words_written_before_a_parenthesis():
    """What the caller search reads is chosen by `Identifiers.called`: every file where the call
    pattern finds a call of a name has that name among them (and a few more: definitions)."""
    from atompin.analysis.callsites import call_pattern
    from atompin.analysis.name_sites import Identifiers

    source = (
        b"def run(x):\n    return step (x) + obj.forward(\n        x) + self.  prep(1)\n"
        b"value = table[key](3)  # not a call by name\nprint('load(x)') ; x1(2); _a.b_c ( )\n"
        b"\xc3\xa9t(3)\n"
    )
    identifiers = Identifiers.read(source)
    names = ["run", "step", "forward", "prep", "load", "x1", "b_c", "key", "table", "t"]
    found = {m.decode() for m in call_pattern(names).findall(source)}
    assert found == {"step", "forward", "prep", "load", "x1", "b_c", "t"}  # t after a non-ASCII letter
    assert all(identifiers.calls_any({name.encode()[::-1]}) for name in found)
    assert identifiers.calls_any({b"nur"})  # a definition
    assert not identifiers.calls_any({b"yek", b"elbat"})


# vllm-omni's runners: a shared base overrides `execute_model`, and every runner it makes derives
# from that base and overrides `execute_model` again; vLLM 0.31's dummy run passes a new keyword.
RUNNER_A = {
    "pv/runner.py": """
        class Runner:
            def execute(self, batch, dummy=False):
                return batch

            def dummy_run(self):
                return self.execute(None, dummy=True)
    """
}
RUNNER_B = {"pv/runner.py": RUNNER_A["pv/runner.py"].replace("dummy=True)", "dummy=True, randomize=False)")}
RUNNER_B["pv/runner.py"] = RUNNER_B["pv/runner.py"].replace("dummy=False)", "dummy=False, randomize=False)")
OMNI_RUNNERS = """
    from pv.runner import Runner

    class BaseRunner(Runner):
        def execute(self, batch, dummy=False):
            return batch

    class ARRunner(BaseRunner):
        def execute(self, batch, dummy=False, randomize=False):
            return super().execute(batch, dummy=dummy)

    class GenRunner(BaseRunner):
        def execute(self, batch, dummy=False, randomize=False):
            return super().execute(batch, dummy=dummy)

    def make(kind):
        return ARRunner() if kind == "ar" else GenRunner()
"""


def test_an_override_every_consumer_subclass_overrides_again_is_a_warning_unless_made():
    result = check({"plug/runners.py": OMNI_RUNNERS}, RUNNER_B, baseline=RUNNER_A)
    assert found(result, "override-drift") == [("warning", "plug.runners:BaseRunner.execute", "plug/runners.py:4")]
    assert "every consumer class deriving from plug.runners:BaseRunner overrides execute" in (
        one(result, "override-drift").message
    )
    # A leaf that does not take it is the error it always was.
    leaf = OMNI_RUNNERS.replace(
        "dummy=False, randomize=False):\n            return super()", "dummy=False):\n            return super()"
    )
    assert ("error", "plug.runners:ARRunner.execute", "plug/runners.py:8") in found(
        check({"plug/runners.py": leaf}, RUNNER_B, baseline=RUNNER_A), "override-drift"
    )
    # A subclass passing any keyword on through super(): the call comes down to the base's override.
    forwards = OMNI_RUNNERS.replace(
        "dummy=False, randomize=False):\n            return super().execute(batch, dummy=dummy)",
        "dummy=False, **kwargs):\n            return super().execute(batch, dummy=dummy, **kwargs)",
    )
    assert forwards != OMNI_RUNNERS
    assert ("error", "plug.runners:BaseRunner.execute", "plug/runners.py:4") in found(
        check({"plug/runners.py": forwards}, RUNNER_B, baseline=RUNNER_A), "override-drift"
    )
    # The base made itself (or a subclass inheriting its override): the call lands on it.
    for more in ("\n    def base():\n        return BaseRunner()\n", "\n    class Plain(BaseRunner):\n        pass\n"):
        made = check({"plug/runners.py": OMNI_RUNNERS + more}, RUNNER_B, baseline=RUNNER_A)
        assert found(made, "override-drift") == [("error", "plug.runners:BaseRunner.execute", "plug/runners.py:4")]


# -- calling an instance (`layer(x)`) ----------------------------------------------------------


def _layers(forward: str) -> dict[str, str]:
    return {
        "pv/layers.py": f"""
            import torch.nn as nn
            from outside import Callback

            class LinearBase(nn.Module):
                pass

            class Linear(LinearBase):
                def forward(self, {forward}):
                    return x

            class Scaled(Linear):
                def __call__(self, {forward}):
                    return x

            class Hooked(Callback):
                def forward(self, {forward}):
                    return x
        """
    }


LAYERS_A, LAYERS_B = _layers("x"), _layers("x, residual")

LAYER_CALLS = {
    "plug/block.py": """
        from pv.layers import Hooked, Linear, Scaled

        class Block:
            def __init__(self):
                self.proj = Linear()

            def run(self, x):
                return self.proj(x)

        def apply(layer: Linear, scaled: Scaled, hooked: Hooked, x):
            return layer(x), scaled(x), hooked(x)
    """
}


def test_calling_an_instance_of_a_torch_module_is_judged_against_its_forward():
    """gaudi holds vLLM layers and calls them (`self.proj(x)`): torch's `nn.Module.__call__` runs
    `forward`, so a `forward` that gained a required parameter breaks the call. A class defining
    its own `__call__` runs that; one whose outside base is not torch's is not known."""
    assert found(check(LAYER_CALLS, LAYERS_A), "arity-drift") == []
    result = check(LAYER_CALLS, LAYERS_B, baseline=LAYERS_A)
    assert sorted(found(result, "arity-drift")) == [
        ("error", "pv.layers:Linear.forward", "plug/block.py:11"),
        ("error", "pv.layers:Linear.forward", "plug/block.py:8"),
        ("error", "pv.layers:Scaled.__call__", "plug/block.py:11"),  # its own __call__, not forward
    ]
    message = one_of_site(result, "plug/block.py:8").message
    assert message.startswith("the call x(1 positional) (torch's `nn.Module.__call__` runs `forward`)")
    assert "gained residual" in message and "since 1.0" in message


def one_of_site(result: CheckResult, site: str) -> Finding:
    [finding] = [f for f in result.findings if str(f.sites[0]) == site]
    return finding


def test_calling_an_instance_whose_forward_the_consumer_replaces_or_overrides_is_not_an_error():
    patched = {
        "plug/block.py": LAYER_CALLS["plug/block.py"]
        + """
        def forward(self, x):
            return x

        Linear.forward = forward
        """
    }
    # (The replacement itself is judged as a patch, at its own line.)
    forward = "pv.layers:Linear.forward"
    assert [site for _, sym, site in found(check(patched, LAYERS_B), "arity-drift") if sym == forward] == [
        "plug/block.py:16"
    ]
    # A consumer subclass, the only one, takes the call: the object may be the consumer's.
    subclass = {
        "plug/block.py": LAYER_CALLS["plug/block.py"]
        .replace(
            "class Block:",
            "class MyLinear(Linear):\n            def forward(self, x):\n                return x\n\n        class Block:",
        )
        .replace("self.proj = Linear()", "self.proj = None")
    }
    assert {sev for sev, sym, _ in found(check(subclass, LAYERS_B), "arity-drift") if sym == forward} == {"warning"}


def test_unpacking_what_a_called_layer_returns_is_judged_against_its_forward():
    """`out, bias = self.proj(x)` unpacks what the layer's `forward` returns."""

    def provider(returns: str) -> dict[str, str]:
        return {
            "pv/layers.py": f"""
                from torch import nn

                class Linear(nn.Module):
                    def forward(self, x):
                        return {returns}
            """
        }

    consumer = {
        "plug/block.py": """
            from pv.layers import Linear

            class Block:
                def __init__(self):
                    self.proj = Linear()

                def run(self, x):
                    out, bias = self.proj(x)
                    return out
        """
    }
    assert found(check(consumer, provider("x, None")), "return-drift") == []
    result = check(consumer, provider("x, None, None"), baseline=provider("x, None"))
    assert found(result, "return-drift") == [("error", "pv.layers:Linear.forward", "plug/block.py:8")]
    assert result.findings[0].message == (
        "unpacks the result into 2 name(s); pv.layers:Linear.forward returns a tuple of 3 (it returned 2 since 1.0): ValueError"
    )


def test_a_local_bound_to_a_new_instance_of_a_provider_class_is_that_class():
    """`layer = Linear()` then `layer(x)` and `layer.step(1)`: judged as on an attribute assigned
    so. A local bound to what a provider function returns is not followed."""
    provider = {
        "pv/layers.py": """
            import torch.nn as nn

            class Linear(nn.Module):
                def forward(self, x, residual):
                    return x

                def step(self, a, b):
                    pass

            def make():
                return Linear()
        """
    }
    consumer = {
        "plug/run.py": """
            from pv.layers import Linear, make

            def run(x):
                layer = Linear()
                layer(x)
                layer.step(1)
                other = make()
                other.step(1)
        """
    }
    assert sorted(found(check(consumer, provider), "arity-drift")) == [
        ("error", "pv.layers:Linear.forward", "plug/run.py:5"),
        ("error", "pv.layers:Linear.step", "plug/run.py:6"),
    ]


def test_an_instance_a_provider_factory_makes_is_the_class_its_return_annotation_names():
    """`self.rope = get_rope(...)` with `def get_rope(...) -> RotaryEmbedding`: calls on it land on
    that class. A factory without a return annotation makes nothing known."""
    provider = {
        "pv/rope.py": """
            import torch.nn as nn

            class RotaryEmbedding(nn.Module):
                def forward(self, positions, query, key, offsets):
                    return query, key

            def get_rope(size) -> RotaryEmbedding:
                return RotaryEmbedding()

            def get_other(size):
                return RotaryEmbedding()
        """
    }
    consumer = {
        "plug/attn.py": """
            from pv.rope import get_other, get_rope

            class Attention:
                def __init__(self):
                    self.rope = get_rope(64)
                    self.other = get_other(64)

                def forward(self, positions, q, k):
                    q, k = self.rope(positions, q, k)
                    return self.other(positions, q, k)
        """
    }
    assert found(check(consumer, provider), "arity-drift") == [
        ("error", "pv.rope:RotaryEmbedding.forward", "plug/attn.py:9")
    ]


def test_handing_another_instance_of_the_class_to_the_base_method_is_no_delegation():
    # `Base.m(self, ...)` inside `m` hands on to the original; `Base.m(other, ...)` with another
    # object typed as an instance of the class (here an annotated parameter) runs it on that one.
    from atompin.analysis.scanner import ConsumerScanner

    source = b"""from pv.attn import Attention

class MyAttention(Attention):
    def load(self, other: MyAttention):
        Attention.load(other)

    def reload(self):
        Attention.reload(self)
"""
    usage = ConsumerScanner("pv", ("plug",)).scan([("plug/attn.py", "plug.attn", False, source)])
    [cls] = [c for c in usage.contact.classes if c.name == "plug.attn.MyAttention"]
    assert [(m.name, [b.text for b in m.delegates_to]) for m in cls.methods] == [
        ("load", []),
        ("reload", ["Attention"]),
    ]


def test_a_call_through_a_provider_typed_attribute_that_a_consumer_duck_class_takes_is_a_warning():
    # vllm-ascend's 310P rejection sampler calls `self.sampler.apply_sampling_params(...)` with the
    # three arguments its own `Ascend310PSampler` takes; vLLM's base class types the attribute as
    # its `Sampler`, whose method takes more.
    provider = {
        "pv/sample.py": """
            class Sampler:
                def apply(self, logits, mapping, positions):
                    return logits

            class Rejecter:
                def __init__(self, sampler: Sampler):
                    self.sampler = sampler
        """
    }
    consumer = {
        "plug/rej.py": """
            from pv.sample import Rejecter

            class MyRejecter(Rejecter):
                def __call__(self, logits):
                    return self.sampler.apply(logits)
        """
    }
    assert found(check(consumer, provider), "arity-drift") == [("error", "pv.sample:Sampler.apply", "plug/rej.py:5")]
    duck = {
        **consumer,
        "plug/sampler.py": "import pv.sample\n\nclass MySampler:\n    def apply(self, logits):\n        return logits\n",
    }
    [finding] = check(duck, provider).findings
    assert (
        finding.severity.value == "warning"
        and "plug.sampler:MySampler.apply, of a class of the consumer's" in finding.message
    )
    # One that does not take the call either says nothing of it.
    other = {
        **consumer,
        "plug/sampler.py": "import pv.sample\n\nclass MySampler:\n    def apply(self, logits, a, b, c):\n        return logits\n",
    }
    assert found(check(other, provider), "arity-drift") == [("error", "pv.sample:Sampler.apply", "plug/rej.py:5")]


RENDERER_A = {
    "pv/renderer.py": """
        class BaseRenderer:
            def _process_singleton(self, prompt, *, skip_mm_cache=False):
                return prompt

            def process(self, prompt):
                return self._process_singleton(prompt, skip_mm_cache=True)
    """
}
RENDERER_B = {
    "pv/renderer.py": RENDERER_A["pv/renderer.py"]
    .replace("*, skip_mm_cache=False):", "*, skip_mm_cache=False, tok_params=None):")
    .replace("skip_mm_cache=True)", "skip_mm_cache=True, tok_params={})")
}
OMNI_RENDERER = {
    "plug/render.py": """
        from pv.renderer import BaseRenderer

        class OmniRenderer:
            def _process_singleton(self, prompt, *, skip_mm_cache=False):
                return prompt

        def omni_renderer_cls(base_cls: type[BaseRenderer]) -> type[BaseRenderer]:
            return type(f"Omni{base_cls.__name__}", (OmniRenderer, base_cls), {})
    """
}


def test_a_mixin_composed_with_a_provider_class_by_type_overrides_its_methods():
    # vllm-omni 0.30's `OmniRenderer` has no base; `omni_renderer_cls` puts it before the renderer
    # class it is given (`type(name, (OmniRenderer, base_cls), {})`, `base_cls: type[BaseRenderer]`).
    # vLLM 0.31 calls `_process_singleton(..., tok_params=...)`, which its override lacks.
    assert found(check(OMNI_RENDERER, RENDERER_B, RENDERER_A), "override-drift") == [
        ("error", "plug.render:OmniRenderer._process_singleton", "plug/render.py:4")
    ]
    # Composed with no provider class (or the parameter not typed as one): not the provider's.
    untyped = {"plug/render.py": OMNI_RENDERER["plug/render.py"].replace("base_cls: type[BaseRenderer]", "base_cls")}
    assert found(check(untyped, RENDERER_B, RENDERER_A), "override-drift") == []
    # Its reads through `self` are the composed class's: one the provider's class no longer has.
    kept = {
        "pv/renderer.py": RENDERER_A["pv/renderer.py"].replace(
            "class BaseRenderer:\n",
            "class BaseRenderer:\n            def __init__(self):\n                self.mm_cache = {}\n\n",
        )
    }
    reading = {
        "plug/render.py": OMNI_RENDERER["plug/render.py"].replace(
            "                return prompt\n\n        def omni",
            "                return self.mm_cache.get(prompt, prompt)\n\n        def omni",
        )
    }
    assert ("error", "pv.renderer:BaseRenderer.mm_cache", "plug/render.py:5") in found(
        check(reading, RENDERER_B, kept), "missing-member"
    )


def test_a_mixin_handing_on_through_a_cast_of_super_calls_the_original():
    # vllm-omni's `OmniRenderer._process_singleton` ends in
    # `cast(BaseRenderer, super())._process_singleton(...)`: it hands on, and skips no new behaviour.
    handing_on = {
        "plug/render.py": OMNI_RENDERER["plug/render.py"]
        .replace(
            "from pv.renderer import BaseRenderer",
            "from typing import cast\n\n        from pv.renderer import BaseRenderer",
        )
        .replace(
            "                return prompt\n\n        def omni",
            "                return cast(BaseRenderer, super())._process_singleton(prompt, skip_mm_cache=skip_mm_cache)\n\n"
            "        def omni",
        )
    }
    changed = {"pv/renderer.py": RENDERER_A["pv/renderer.py"].replace("return prompt", "return prompt.strip()", 1)}
    assert found(check(handing_on, changed, RENDERER_A), "shadow-drift") == []
    assert found(check(OMNI_RENDERER, changed, RENDERER_A), "shadow-drift") == [
        ("warning", "plug.render:OmniRenderer._process_singleton", "plug/render.py:4")
    ]
