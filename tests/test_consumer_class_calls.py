"""A call of a consumer class runs the `__init__` its order gives: the provider's, when no consumer
class before it defines one, or the one `@dataclass` writes for a consumer dataclass from the
fields of the provider dataclasses it derives from. vllm-ascend's
`AscendCommonAttentionMetadata(CommonAttentionMetadata)` is called with `_seq_lens_cpu=`, a field
vLLM 0.30 removed: a TypeError wherever it builds one."""

from __future__ import annotations

import pytest

from tests.test_contact import check, found, one

PROVIDER = """
    from dataclasses import dataclass

    @dataclass
    class Metadata:
        query_start_loc: list
        num_reqs: int
        _seq_lens_cpu: list | None = None

    class Layer:
        def __init__(self, hidden, bias=True):
            self.hidden = hidden

    @dataclass
    class Spec:
        block_size: int
"""
PROVIDER_NEW = PROVIDER.replace("        _seq_lens_cpu: list | None = None\n", "").replace(", bias=True", "")

CONSUMER = """
    from dataclasses import dataclass
    from pv.meta import Metadata, Layer, Spec

    @dataclass
    class MyMetadata(Metadata):
        positions: list | None = None

        def unpadded(self, n):
            return MyMetadata(query_start_loc=self.query_start_loc[:n], num_reqs=n, _seq_lens_cpu=None)

    class MyLayer(Layer):
        def forward(self, x):
            return x

    class MySpec(Spec):
        pass

    def build():
        layer = MyLayer(16, bias=False)
        spec = MySpec(block_size=16)
        return layer, spec
"""


def arity(consumer: str, provider: str = PROVIDER_NEW, baseline: str | None = PROVIDER) -> list[tuple[str, str, str]]:
    result = check(
        {"plug/meta.py": consumer}, {"pv/meta.py": provider}, baseline={"pv/meta.py": baseline} if baseline else None
    )
    return found(result, "arity-drift")


def test_a_call_of_a_consumer_class_is_judged_against_the_provider_init_it_runs():
    assert arity(CONSUMER) == [
        ("error", "pv.meta:Layer.__init__", "plug/meta.py:19"),
        ("error", "pv.meta:Metadata.__init__", "plug/meta.py:9"),
    ]


def test_the_message_says_which_init_runs_and_what_changed_since_the_baseline():
    result = check({"plug/meta.py": CONSUMER}, {"pv/meta.py": PROVIDER_NEW}, baseline={"pv/meta.py": PROVIDER})
    messages = {f.symbol: f.message for f in result.findings if f.rule.value == "arity-drift"}
    generated = messages["pv.meta:Metadata.__init__"]
    assert generated.startswith("the call MyMetadata(0 positional, query_start_loc=, num_reqs=, _seq_lens_cpu=)")
    assert "@dataclass writes for plug.meta.MyMetadata" in generated
    assert "__init__(self, query_start_loc, num_reqs, positions=…)" in generated
    assert "_seq_lens_cpu" in generated.partition("positions=…)")[2]  # what was lost since the baseline
    assert "the provider has pv.meta:Layer.__init__(self, hidden)" in messages["pv.meta:Layer.__init__"]


def test_calls_that_fit_are_not_reported_and_at_the_pin_nothing_is():
    assert arity(CONSUMER, provider=PROVIDER, baseline=PROVIDER) == []
    fits = CONSUMER.replace(", _seq_lens_cpu=None", "").replace(", bias=False", "")
    assert arity(fits) == []


def test_a_call_that_did_not_fit_the_baseline_either_is_a_warning():
    assert arity(CONSUMER.replace("MyLayer(16, bias=False)", "MyLayer(16, 32, 64)"), baseline=PROVIDER) == [
        ("warning", "pv.meta:Layer.__init__", "plug/meta.py:19"),
        ("error", "pv.meta:Metadata.__init__", "plug/meta.py:9"),
    ]


@pytest.mark.parametrize(
    "change",
    [
        # the consumer writes the __init__ that runs
        (
            "    class MyLayer(Layer):\n",
            "    class MyLayer(Layer):\n        def __init__(self, *a, **k):\n            pass\n",
        ),
        # another decorator may write or wrap it
        ("    class MyLayer(Layer):\n", "    @attr.s\n    class MyLayer(Layer):\n"),
        # a metaclass may make the instance
        ("    class MyLayer(Layer):\n", "    class MyLayer(Layer, metaclass=Meta):\n"),
        # an outside base comes first: it may define __init__
        ("    class MyLayer(Layer):\n", "    class MyLayer(torch.nn.Module, Layer):\n"),
        # the consumer replaces the provider's __init__
        ("    def build():\n", "    Layer.__init__ = lambda self, *a, **k: None\n\n    def build():\n"),
    ],
)
def test_what_may_run_another_init_leaves_the_call_unjudged(change: tuple[str, str]):
    consumer = CONSUMER.replace(*change)
    assert change[1] in consumer
    assert [f for f in arity(consumer) if "Layer" in f[1]] == []


FORWARDING = """
        def __init__(self, *args, **kwargs):
            \"\"\"Hands every argument on.\"\"\"
            super().__init__(*args, **kwargs)
            self.extra = 1
"""


def test_a_consumer_init_that_hands_every_argument_on_runs_the_provider_init_with_them():
    # vllm-omni's and vllm-ascend's `def __init__(self, *args, **kwargs): super().__init__(*args,
    # **kwargs)` before their own setup: the call's arguments are the provider __init__'s.
    consumer = CONSUMER.replace("    class MyLayer(Layer):\n", "    class MyLayer(Layer):" + FORWARDING)
    assert [f for f in arity(consumer) if "Layer" in f[1]] == [("error", "pv.meta:Layer.__init__", "plug/meta.py:23")]
    result = check({"plug/meta.py": consumer}, {"pv/meta.py": PROVIDER_NEW}, baseline={"pv/meta.py": PROVIDER})
    message = {f.symbol: f.message for f in result.findings}["pv.meta:Layer.__init__"]
    assert (
        "plug.meta.MyLayer.__init__ hands every argument on, and the provider has pv.meta:Layer.__init__(self, hidden)"
        in message
    )


@pytest.mark.parametrize(
    "init",
    [
        # takes something of its own, or hands on something else
        FORWARDING.replace("(self, *args, **kwargs)", "(self, size, *args, **kwargs)"),
        FORWARDING.replace("super().__init__(*args, **kwargs)", "super().__init__(*args)"),
        FORWARDING.replace("super().__init__(*args, **kwargs)", "super().__init__(16, **kwargs)"),
        # may change them first, or hand them on only sometimes
        FORWARDING.replace(
            "            super().__init__", "            kwargs['bias'] = True\n            super().__init__"
        ),
        FORWARDING.replace(
            "            super().__init__", "            kwargs.pop(name)\n            super().__init__"
        ),
        FORWARDING.replace(
            "            super().__init__(*args, **kwargs)",
            "            if args:\n                super().__init__(*args, **kwargs)",
        ),
        # or another class's __init__, or twice
        FORWARDING.replace("super().__init__", "Other.__init__"),
        FORWARDING + "\n        __init__ = other_init\n",
    ],
)
def test_a_consumer_init_that_does_anything_else_with_its_arguments_leaves_the_call_unjudged(init: str):
    consumer = CONSUMER.replace("    class MyLayer(Layer):\n", "    class MyLayer(Layer):" + init)
    assert init in consumer
    assert [f for f in arity(consumer) if "Layer" in f[1]] == []


@pytest.mark.parametrize(
    "pop", ["kwargs.pop('sampler')", "self.sampler = kwargs.pop('sampler', True)", "sampler = kwargs.pop('sampler')"]
)
def test_the_keywords_a_handing_on_init_takes_out_first_are_its_own(pop: str):
    """vllm-rbln's `RBLNInputBatch.__init__(self, *args, **kwargs)` pops `use_rbln_sampler`, then
    hands the rest to vLLM's `InputBatch.__init__`: a call passing both is judged against that
    `__init__` with the popped keyword its own. vLLM 0.32 dropped `kernel_block_sizes=` there."""
    forwarding = FORWARDING.replace("            super().__init__", f"            {pop}\n            super().__init__")
    consumer = CONSUMER.replace("    class MyLayer(Layer):\n", "    class MyLayer(Layer):" + forwarding)
    passing = consumer.replace("MyLayer(16, bias=False)", "MyLayer(16, bias=False, sampler=1)")
    assert [f for f in arity(passing) if "Layer" in f[1]] == [("error", "pv.meta:Layer.__init__", "plug/meta.py:24")]
    fitting = consumer.replace("MyLayer(16, bias=False)", "MyLayer(16, sampler=1)")
    assert [f for f in arity(fitting) if "Layer" in f[1]] == []  # `sampler=` is the consumer's


def test_a_consumer_dataclass_under_another_library_or_with_unreadable_fields_is_not_judged():
    pydantic = CONSUMER.replace(
        "    from dataclasses import dataclass\n", "    from pydantic.dataclasses import dataclass\n"
    )
    assert [f for f in arity(pydantic) if "Metadata" in f[1]] == []
    branch = CONSUMER.replace(
        "        positions: list | None = None\n", "        if True:\n            positions: list | None = None\n"
    )
    assert [f for f in arity(branch) if "Metadata" in f[1]] == []


def test_a_consumer_dataclass_over_a_plain_provider_class_runs_only_its_own_fields():
    # No provider dataclass gives it fields: the provider's `__init__` never runs, nothing to judge.
    consumer = CONSUMER.replace(
        "    class MyLayer(Layer):\n", "    @dataclass\n    class MyLayer(Layer):\n        width: int = 0\n"
    )
    assert [f for f in arity(consumer) if "Layer" in f[1]] == []


def test_the_dotted_standard_library_decorator_counts_and_a_consumer_base_between_is_followed():
    consumer = CONSUMER.replace("    from dataclasses import dataclass\n", "    import dataclasses\n").replace(
        "    @dataclass\n    class MyMetadata(Metadata):", "    @dataclasses.dataclass\n    class MyMetadata(Metadata):"
    )
    consumer += """
    class Padded(MyLayer):
        pass

    def more():
        return Padded(8, bias=True)
    """
    result = check({"plug/meta.py": consumer}, {"pv/meta.py": PROVIDER_NEW}, baseline={"pv/meta.py": PROVIDER})
    sites = sorted(
        (f.severity.value, f.symbol, str(s)) for f in result.findings if f.rule.value == "arity-drift" for s in f.sites
    )
    assert sites == [
        ("error", "pv.meta:Layer.__init__", "plug/meta.py:19"),
        ("error", "pv.meta:Layer.__init__", "plug/meta.py:27"),
        ("error", "pv.meta:Metadata.__init__", "plug/meta.py:9"),
    ]


# vLLM 0.28's `InputBatch` gained `max_query_len: int = ...`; vllm-ascend 0.23's
# `@dataclass class AscendInputBatch(InputBatch)` declares `seq_lens_np: np.ndarray` after it.
BATCH = """
    from dataclasses import dataclass, field

    @dataclass
    class Batch:
        req_ids: list
        num_reqs: int
        hidden: int = field(default=0, kw_only=True)
"""
BATCH_NEW = BATCH.replace("        num_reqs: int\n", "        num_reqs: int\n        max_query_len: int = 1\n")
MY_BATCH = """
    from dataclasses import dataclass
    from pv.batch import Batch

    @dataclass
    class MyBatch(Batch):
        seq_lens_np: list
        attn_state: int = 0

    def build(n):
        return MyBatch(req_ids=[], num_reqs=n, seq_lens_np=[])
"""


def batch_findings(consumer: str = MY_BATCH, provider: str = BATCH_NEW, baseline: str | None = BATCH):
    base = {"pv/batch.py": baseline} if baseline is not None else None
    return check({"plug/batch.py": consumer}, {"pv/batch.py": provider}, baseline=base)


def test_a_consumer_dataclass_the_provider_s_new_defaulted_field_makes_undefinable_is_an_error():
    result = batch_findings()
    assert found(result, "arity-drift") == [("error", "pv.batch:Batch.__init__", "plug/batch.py:5")]
    message = one(result, "arity-drift").message
    assert message.startswith("defining plug.batch:MyBatch raises TypeError when its module is imported")
    assert "would take seq_lens_np, which has no default, after the defaulted max_query_len" in message
    assert "gained max_query_len as parameter 3 since 1.0" in message
    # Its calls are not judged against a signature that cannot exist: the definition fails first.
    assert "the call MyBatch" not in message


def test_a_dataclass_that_can_be_defined_or_keeps_its_fields_keyword_only_is_no_finding():
    assert found(batch_findings(provider=BATCH, baseline=BATCH), "arity-drift") == []
    keyword_only = MY_BATCH.replace(
        "    @dataclass\n    class MyBatch", "    @dataclass(kw_only=True)\n    class MyBatch"
    )
    assert found(batch_findings(consumer=keyword_only), "arity-drift") == []
    defaulted = MY_BATCH.replace("seq_lens_np: list\n", "seq_lens_np: list | None = None\n")
    assert found(batch_findings(consumer=defaulted), "arity-drift") == []


def test_an_undefinable_dataclass_at_the_baseline_too_or_under_an_undecided_gate_is_a_warning():
    assert found(batch_findings(baseline=BATCH_NEW), "arity-drift") == [
        ("warning", "pv.batch:Batch.__init__", "plug/batch.py:5")
    ]
    gated = MY_BATCH.replace(
        "    from pv.batch import Batch\n", "    from pv.batch import Batch\n    from pv import __version__\n"
    ).replace(
        "    @dataclass\n    class MyBatch(Batch):",
        "    if __version__ < '0.1':\n        @dataclass\n        class MyBatch(Batch):",
    )
    gated = gated.replace(
        "        seq_lens_np: list\n        attn_state: int = 0\n",
        "            seq_lens_np: list\n            attn_state: int = 0\n",
    )
    result = check(
        {"plug/batch.py": gated},
        {"pv/batch.py": BATCH_NEW, "pv/__init__.py": "__version__ = '1.0'\n"},
        baseline={"pv/batch.py": BATCH, "pv/__init__.py": "__version__ = '0.9'\n"},
    )
    assert found(result, "arity-drift") == [("warning", "pv.batch:Batch.__init__", "plug/batch.py:7")]


def test_a_loop_over_a_parameter_annotated_as_a_collection_of_provider_objects_binds_instances():
    """tpu-inference's DP scheduler combines `rank_outputs: List[SchedulerOutput]` with
    `for output in rank_outputs: ... output.scheduled_cached_reqs.resumed_req_ids`, gone in vLLM 0.34."""
    provider = """
        class Cached:
            def __init__(self):
                self.req_ids = []
                self.resumed = []

            def step(self, a):
                return a

        class Out:
            cached: Cached
    """
    consumer = """
        from typing import List
        from pv.out import Cached, Out

        def combine(outs: List[Out], items: "tuple[Cached, ...]", table: dict[str, Cached]):
            for o in outs:
                o.cached.resumed
            for c in items:
                c.step(1)
            for k in table:
                k.resumed
            return [d.step(2) for d in items if d.req_ids], {k: k.resumed for k in table}
    """
    new = provider.replace("        self.resumed = []\n", "").replace("def step(self, a):", "def step(self, a, b):")
    result = check({"plug/out.py": consumer}, {"pv/out.py": new}, baseline={"pv/out.py": provider})
    # In a comprehension too (line 11; its variable is its own: `k` over a dict's keys is no instance).
    assert sorted((f.rule.value, f.severity.value, f.symbol, str(s)) for f in result.findings for s in f.sites) == [
        ("arity-drift", "error", "pv.out:Cached.step", "plug/out.py:11"),
        ("arity-drift", "error", "pv.out:Cached.step", "plug/out.py:8"),
        ("missing-member", "error", "pv.out:Cached.resumed", "plug/out.py:6"),
    ]
