"""`dataclasses.replace(obj, name=value)` of a provider dataclass's instance runs its `__init__`
with every field, the names given among them: a name that is no field of it raises TypeError.
vllm-omni 0.28's paged-attention adapter makes `replace(spec, num_kv_heads=...,
indexes_kv_by_block_stride=...)` of its `spec: AttentionSpec`, a field vLLM 0.30 removed."""

from __future__ import annotations

import pytest

from tests.test_contact import check

SPEC = """
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class AttentionSpec:
        block_size: int
        num_kv_heads: int
        indexes_kv_by_block_stride: bool = False
"""
SPEC_NEW = SPEC.replace("        indexes_kv_by_block_stride: bool = False\n", "")

ADAPTER = """
    from dataclasses import replace

    from pv.spec import AttentionSpec


    class Adapter:
        def __init__(self, spec: AttentionSpec, heads: int):
            self.spec = replace(spec, num_kv_heads=heads, indexes_kv_by_block_stride=True)
"""


def arity(result):
    return [
        (f.severity.value, f.symbol, [str(s) for s in f.sites])
        for f in result.findings
        if f.rule.value == "arity-drift"
    ]


@pytest.mark.parametrize("call", ["replace(", "dataclasses.replace("])
def test_replace_with_a_field_the_provider_dropped_is_an_error(call: str):
    adapter = ADAPTER.replace("replace(spec", call + "spec")
    if call.startswith("dataclasses."):
        adapter = adapter.replace("from dataclasses import replace", "import dataclasses")
    consumer = {"plug/adapter.py": adapter}
    assert arity(check(consumer, {"pv/spec.py": SPEC})) == []
    [finding] = [
        f
        for f in check(consumer, {"pv/spec.py": SPEC_NEW}, baseline={"pv/spec.py": SPEC}).findings
        if f.rule.value == "arity-drift"
    ]
    assert (finding.severity.value, finding.symbol, [str(s) for s in finding.sites]) == (
        "error",
        "pv.spec:AttentionSpec",
        ["plug/adapter.py:8"],
    )
    assert "indexes_kv_by_block_stride=" in finding.message and "does not take" in finding.message


def test_replace_of_what_is_no_provider_instance_or_by_another_replace_is_not_judged():
    # `str.replace`, a replace of the consumer's own, or of an object of unknown class: nothing said.
    other = ADAPTER.replace("from dataclasses import replace", "from plug.util import replace")
    files = {"plug/adapter.py": other, "plug/util.py": "def replace(obj, **kw):\n    return obj\n"}
    assert arity(check(files, {"pv/spec.py": SPEC_NEW}, baseline={"pv/spec.py": SPEC})) == []
    untyped = ADAPTER.replace("spec: AttentionSpec", "spec")
    assert arity(check({"plug/adapter.py": untyped}, {"pv/spec.py": SPEC_NEW}, baseline={"pv/spec.py": SPEC})) == []


def test_a_same_named_class_elsewhere_in_the_consumer_shadows_nothing_here():
    # vllm-omni 0.28 defines a class of its own named `AttentionSpec` in another module.
    data = "from pv.spec import AttentionSpec as PvSpec\n\n\nclass AttentionSpec:\n    base = PvSpec\n"
    consumer = {"plug/adapter.py": ADAPTER, "plug/data.py": data}
    assert arity(check(consumer, {"pv/spec.py": SPEC_NEW}, baseline={"pv/spec.py": SPEC})) == [
        ("error", "pv.spec:AttentionSpec", ["plug/adapter.py:8"])
    ]
    # Imported here from the consumer's module too (a ladder preferring its own), it may be either.
    ladder = ADAPTER.replace(
        "from pv.spec import AttentionSpec",
        "try:\n        from plug.data import AttentionSpec\n    except ImportError:\n        from pv.spec import AttentionSpec",
    )
    shadowed = {**consumer, "plug/adapter.py": ladder}
    assert arity(check(shadowed, {"pv/spec.py": SPEC_NEW}, baseline={"pv/spec.py": SPEC})) == []


def test_a_field_a_provider_subclass_has_is_not_judged():
    # vllm-ascend's `replace(effective_spec, compress_ratio=1)` of a spec typed `KVCacheSpec`, under
    # `getattr(effective_spec, "compress_ratio", 1) > 1`: the field is a subclass's.
    adapter = ADAPTER.replace("indexes_kv_by_block_stride=True", "compress_ratio=1")
    subclass = (
        "from dataclasses import dataclass\n\nfrom pv.spec import AttentionSpec\n\n\n"
        "@dataclass(frozen=True)\nclass CompressedSpec(AttentionSpec):\n    compress_ratio: int = 1\n"
    )
    provider = {"pv/spec.py": SPEC_NEW, "pv/compressed.py": subclass}
    assert arity(check({"plug/adapter.py": adapter}, provider)) == []
    # Without such a subclass it is judged: no object of the class takes it.
    assert arity(check({"plug/adapter.py": adapter}, {"pv/spec.py": SPEC_NEW})) == [
        ("error", "pv.spec:AttentionSpec", ["plug/adapter.py:8"])
    ]


def test_a_field_a_consumer_subclass_has_is_not_judged():
    # vllm-ascend 0.30's `replace(spec, store_on_host=False)` of an item of `specs: dict[str,
    # KVCacheSpec]` that it checked is its own `AscendMLAAttentionSpec`.
    own = (
        "from dataclasses import dataclass\n\nfrom pv.spec import AttentionSpec\n\n\n"
        "@dataclass(frozen=True)\nclass OwnSpec(AttentionSpec):\n    store_on_host: bool = True\n"
    )
    adapter = ADAPTER.replace("indexes_kv_by_block_stride=True", "store_on_host=False")
    assert arity(check({"plug/adapter.py": adapter, "plug/own.py": own}, {"pv/spec.py": SPEC_NEW})) == []
    assert arity(check({"plug/adapter.py": adapter}, {"pv/spec.py": SPEC_NEW})) == [
        ("error", "pv.spec:AttentionSpec", ["plug/adapter.py:8"])
    ]
