"""The `__init__` a standard-library `@dataclass` writes, read from its fields: a consumer call of
a provider dataclass is judged like any other call. vLLM 0.29 dropped the
`indexes_kv_by_block_stride` field of its KV-cache specs (`@dataclass(frozen=True, kw_only=True)`),
which vllm-omni 0.28 still passes to `FullAttentionSpec(...)`: a TypeError where it builds one."""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.indexer import index_module
from tests.test_contact import check, found

SPECS = """
    from dataclasses import dataclass, field, KW_ONLY
    from typing import ClassVar

    @dataclass(frozen=True)
    class Spec:
        block_size: int
        registry: ClassVar[dict] = {}
        dtype: str = "auto"

    @dataclass(frozen=True, kw_only=True)
    class AttentionSpec(Spec):
        num_heads: int
        strided: bool = False
        cache: list = field(default_factory=list)
        hidden: int = field(default=0, init=False)

    @dataclass
    class Mixed:
        a: int
        _: KW_ONLY
        b: int = 1
        c: int = field(default=2, kw_only=False)
"""


def fields_of(source: str, name: str) -> tuple[str, ...] | None:
    return index_module(textwrap.dedent(source).encode(), "m", False).classes[name].fields


def test_a_dataclass_s_fields_are_read_in_order_with_defaults_and_keyword_only_marks():
    assert fields_of(SPECS, "Spec") == ("block_size", "!registry", "dtype=")
    assert fields_of(SPECS, "AttentionSpec") == ("*num_heads", "*strided=", "*cache=", "!hidden")
    assert fields_of(SPECS, "Mixed") == ("a", "*b=", "c=")


@pytest.mark.parametrize(
    "source",
    [
        "class Plain:\n    a: int\n",  # no decorator: no generated __init__
        "from pydantic.dataclasses import dataclass\n\n@dataclass\nclass P:\n    a: int\n",  # another library's
        "from dataclasses import dataclass\n\n@dataclass(init=False)\nclass P:\n    a: int\n",
        "from dataclasses import dataclass\nimport os\n\n@dataclass(kw_only=os.environ.get('K'))\nclass P:\n    a: int\n",
        "from dataclasses import dataclass\n\n@dataclass\nclass P:\n    if True:\n        a: int\n",
        "from dataclasses import dataclass, field\n\n@dataclass\nclass P:\n    a: int = field(**{'default': 1})\n",
    ],
)
def test_what_cannot_be_read_for_sure_is_unknown(source: str):
    name = "Plain" if "Plain" in source else "P"
    assert fields_of(source, name) is None


def test_the_dotted_decorator_of_the_standard_library_counts():
    source = "import dataclasses\n\n@dataclasses.dataclass(kw_only=True)\nclass P:\n    a: int\n    b: int = 0\n"
    assert fields_of(source, "P") == ("*a", "*b=")


SPECS_A = SPECS.replace("strided: bool = False", "strided: bool = False\n        indexes_kv: bool = False")
CONSUMER = """
    from pv.specs import AttentionSpec, Mixed

    def make(n):
        return AttentionSpec(block_size=16, num_heads=n, indexes_kv=True)

    def other():
        return Mixed(1, 2, 3)
"""


def test_a_call_passing_a_field_the_dataclass_dropped_is_an_error():
    result = check({"plug/specs.py": CONSUMER}, {"pv/specs.py": SPECS}, baseline={"pv/specs.py": SPECS_A})
    assert found(result, "arity-drift") == [
        ("error", "pv.specs:AttentionSpec", "plug/specs.py:4"),
        ("warning", "pv.specs:Mixed", "plug/specs.py:7"),
    ]
    errors = [f for f in result.findings if f.rule.value == "arity-drift" and f.severity.value == "error"]
    message = errors[0].message
    assert "indexes_kv=" in message
    assert "AttentionSpec.__init__(self, block_size, dtype=…, *, num_heads, strided=…, cache=…)" in message


def test_a_call_that_fits_the_generated_init_is_not_reported():
    fits = CONSUMER.replace(", indexes_kv=True", "").replace("Mixed(1, 2, 3)", "Mixed(1, 2, b=3)")
    result = check({"plug/specs.py": fits}, {"pv/specs.py": SPECS}, baseline={"pv/specs.py": SPECS_A})
    assert found(result, "arity-drift") == []


def test_a_dataclass_defining_its_own_init_or_with_a_base_outside_the_provider_is_not_judged():
    own = SPECS.replace(
        "        num_heads: int\n", "        num_heads: int\n\n        def __init__(self, **kw):\n            pass\n"
    )
    result = check({"plug/specs.py": CONSUMER}, {"pv/specs.py": own}, baseline={"pv/specs.py": SPECS_A})
    assert [f for f in found(result, "arity-drift") if "AttentionSpec" in f[1]] == []
    outside = SPECS.replace("class Spec:", "class Spec(torch.nn.Module):").replace(
        "from typing import ClassVar", "from typing import ClassVar\n    import torch"
    )
    result = check({"plug/specs.py": CONSUMER}, {"pv/specs.py": outside}, baseline={"pv/specs.py": SPECS_A})
    assert [f for f in found(result, "arity-drift") if "AttentionSpec" in f[1]] == []


def test_a_consumer_replacing_the_dataclass_s_init_with_one_that_takes_the_call_is_no_error():
    # vllm-ascend 0.29 wraps `ModelRunnerOutput.__init__` to take `spec_token_ids=` it then passes.
    patch = """
        from pv import specs

        def install():
            cls = specs.AttentionSpec
            original = cls.__init__

            def init(self, *args, indexes_kv=False, **kwargs):
                original(self, *args, **kwargs)

            cls.__init__ = init
    """
    consumer = {"plug/specs.py": CONSUMER, "plug/patch.py": patch}
    result = check(consumer, {"pv/specs.py": SPECS}, baseline={"pv/specs.py": SPECS_A})
    assert [f for f in found(result, "arity-drift") if "AttentionSpec" in f[1]] == []
