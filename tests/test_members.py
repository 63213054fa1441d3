"""missing-member: members read through `self`, `super()` and annotated receivers.

A provider with two releases: A (the baseline, what the consumer was written against) has
`Spec.ratio` and `Config.compute_hash`; B (the pin) has neither. Each case has a consumer
that breaks at B, and variants in which something else supplies the member, which must
give no error.
"""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.results import check_trees
from atompin.model import Severity
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, found, one


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _release(field: str, method: str) -> dict[str, str]:
    """One release of the provider: a spec dataclass with `field`, a config class with `method`."""
    return {
        "pv/spec.py": f"""
            from dataclasses import dataclass

            @dataclass
            class BaseSpec:
                block_size: int = 16

            @dataclass
            class Spec(BaseSpec):
                {field}: int = 1
        """,
        "pv/config.py": f"""
            class Config:
                def __init__(self):
                    self.seed = 0

                def {method}(self):
                    return str(self.seed)
        """,
    }


PV_A = _release("ratio", "compute_hash")
PV_B = _release("tokens_per_state", "compile_factors")  # the bump: both renamed away

SPEC_CONSUMER = {
    "plug/spec.py": src(
        """
        from pv.spec import Spec

        class MySpec(Spec):
            @property
            def storage_block_size(self):
                return self.block_size // self.ratio
        """
    ),
}

CONFIG_CONSUMER = {
    "plug/cache.py": src(
        """
        from pv.config import Config

        def signature(config: Config) -> str:
            return config.compute_hash()
        """
    ),
}


def test_a_field_read_through_self_that_the_provider_removed_is_an_error():
    result = check(SPEC_CONSUMER, PV_B, PV_A)
    assert found(result, "missing-member") == [("error", "pv.spec:Spec.ratio", "plug/spec.py:6")]
    [finding] = [f for f in result.findings if f.rule.value == "missing-member"]
    assert "class attribute of pv.spec:Spec" in finding.message and "(1.0)" in finding.message


def test_a_method_called_on_an_annotated_parameter_that_the_provider_removed_is_an_error():
    result = check(CONFIG_CONSUMER, PV_B, PV_A)
    assert found(result, "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/cache.py:4")]


@pytest.mark.parametrize("declared", ["InitVar[int]", "dataclasses.InitVar[int]"])
def test_a_field_that_became_init_only_is_gone_from_the_object(declared: str):
    # vLLM 0.13's `SchedulerConfig.max_model_len: InitVar[int]`, a field until 0.12: `__init__`
    # takes it, and the object never has it. With a default, the class keeps the default.
    init_only = {**PV_A, "pv/spec.py": PV_A["pv/spec.py"].replace("ratio: int = 1", f"ratio: {declared}")}
    init_only["pv/spec.py"] = init_only["pv/spec.py"].replace(
        "from dataclasses import dataclass",
        "import dataclasses\n            from dataclasses import InitVar, dataclass",
    )
    result = check(SPEC_CONSUMER, init_only, PV_A)
    assert found(result, "missing-member") == [("error", "pv.spec:Spec.ratio", "plug/spec.py:6")]
    defaulted = {
        **init_only,
        "pv/spec.py": init_only["pv/spec.py"].replace(f"ratio: {declared}", f"ratio: {declared} = 1"),
    }
    assert found(check(SPEC_CONSUMER, defaulted, PV_A), "missing-member") == []


def test_nothing_is_said_where_the_member_is_still_there_or_without_a_baseline():
    assert found(check(SPEC_CONSUMER, PV_A, PV_A), "missing-member") == []
    assert found(check(CONFIG_CONSUMER, PV_A, PV_A), "missing-member") == []
    assert found(check(SPEC_CONSUMER, PV_B), "missing-member") == []
    assert found(check(CONFIG_CONSUMER, PV_B), "missing-member") == []


def test_a_member_the_baseline_lacked_too_is_not_judged():
    # Not the provider's at the baseline either: served by something the lookup does not see.
    consumer = {"plug/cache.py": CONFIG_CONSUMER["plug/cache.py"].replace("compute_hash", "digest")}
    assert found(check(consumer, PV_B, PV_A), "missing-member") == []


@pytest.mark.parametrize(
    "supplier",
    [
        # The consumer's class sets or defines it itself.
        "    ratio: int = 2\n",
        "    def __init__(self):\n        self.ratio = 2\n",
        "    def __getattr__(self, name):\n        return 1\n",
    ],
)
def test_a_member_the_consumer_class_supplies_is_no_error(supplier: str):
    source = SPEC_CONSUMER["plug/spec.py"].replace("class MySpec(Spec):\n", "class MySpec(Spec):\n" + supplier)
    assert found(check({"plug/spec.py": source}, PV_B, PV_A), "missing-member") == []


@pytest.mark.parametrize(
    "setter",
    [
        "def make():\n    spec = MySpec()\n    spec.ratio = 2\n    return spec\n",
        "def make(spec: MySpec):\n    spec.ratio = 2\n",
        "class Holder:\n    def __init__(self):\n        self.spec = MySpec()\n        self.spec.ratio = 2\n",
    ],
)
def test_a_member_the_consumer_sets_on_an_instance_of_its_class_from_outside_is_no_error(setter: str):
    # Typed as an instance of MySpec (made there, or annotated), the object is not the method's
    # own `self`: what is set on it is set from outside the class, as on any other object.
    source = SPEC_CONSUMER["plug/spec.py"] + "\n\n" + setter
    assert found(check({"plug/spec.py": source}, PV_B, PV_A), "missing-member") == []


def test_a_member_read_through_an_instance_the_consumer_makes_of_its_class_is_judged_as_through_self():
    # vllm-rbln's scheduler keeps `self.kv_cache_manager = RBLNKVCacheManager(...)` and calls
    # `get_num_common_prefix_blocks` on it, a method of vLLM's KVCacheManager gone in 0.34.
    source = SPEC_CONSUMER["plug/spec.py"] + "\n\ndef size():\n    spec = MySpec()\n    return spec.ratio\n"
    result = check({"plug/spec.py": source}, PV_B, PV_A)
    assert found(result, "missing-member") == [
        ("error", "pv.spec:Spec.ratio", "plug/spec.py:6"),
        ("error", "pv.spec:Spec.ratio", "plug/spec.py:11"),
    ]
    messages = sorted(f.message for f in result.findings if f.rule.value == "missing-member")
    assert "read through an instance of plug.spec.MySpec the consumer made or typed as one" in messages[0]
    assert "read through self in plug.spec.MySpec" in messages[1]


def test_a_consumer_subclass_that_defines_it_leaves_self_unknown():
    consumer = {"plug/spec.py": SPEC_CONSUMER["plug/spec.py"] + "\n\nclass Concrete(MySpec):\n    ratio = 4\n"}
    assert found(check(consumer, PV_B, PV_A), "missing-member") == []


@pytest.mark.parametrize(
    "provider_code",
    [
        # Provider code puts it on objects from outside the class...
        'def install(obj):\n    setattr(obj, "compute_hash", lambda: "")\n',
        "def install(obj):\n    obj.compute_hash = lambda: ''\n",
        # ...or a provider subclass of the annotated class defines it (the object may be one).
        "from pv.config import Config\n\nclass HashedConfig(Config):\n    def compute_hash(self):\n        return ''\n",
    ],
)
def test_a_member_provider_code_may_put_there_is_no_error(provider_code: str):
    provider = {**PV_B, "pv/extra.py": provider_code}
    assert found(check(CONFIG_CONSUMER, provider, PV_A), "missing-member") == []


def test_a_provider_subclass_defining_the_name_does_not_excuse_self_in_another_class():
    provider = {**PV_B, "pv/other.py": "from pv.spec import Spec\n\nclass Other(Spec):\n    ratio: int = 3\n"}
    assert found(check(SPEC_CONSUMER, provider, PV_A), "missing-member") == [
        ("error", "pv.spec:Spec.ratio", "plug/spec.py:6")
    ]


def test_an_outside_base_or_a_class_level_getattr_may_serve_the_name():
    config = src(PV_B["pv/config.py"])
    outside = {
        **PV_B,
        "pv/config.py": "import torch\n\n" + config.replace("class Config:", "class Config(torch.nn.Module):"),
    }
    assert found(check(CONFIG_CONSUMER, outside, PV_A), "missing-member") == []
    served = {**PV_B, "pv/config.py": config + "\n    def __getattr__(self, name):\n        return None\n"}
    assert found(check(CONFIG_CONSUMER, served, PV_A), "missing-member") == []


def test_the_consumer_setting_or_patching_the_name_is_no_error():
    sets = {
        "plug/cache.py": CONFIG_CONSUMER["plug/cache.py"]
        + "\ndef prepare(config: Config):\n    config.compute_hash = str\n"
    }
    assert found(check(sets, PV_B, PV_A), "missing-member") == []
    # The object may be the consumer's own subclass, which has it.
    derived = {
        **CONFIG_CONSUMER,
        "plug/mine.py": "from pv.config import Config\n\nclass Mine(Config):\n    def compute_hash(self):\n        return ''\n",
    }
    assert found(check(derived, PV_B, PV_A), "missing-member") == []
    patches = {
        **CONFIG_CONSUMER,
        "plug/patch.py": "from pv.config import Config\n\nConfig.compute_hash = lambda self: ''\n",
    }
    assert found(check(patches, PV_B, PV_A), "missing-member") == []


def test_a_name_the_consumer_sets_only_after_reading_it_in_the_same_function_is_judged():
    # vllm-rbln 0.11's replacement of `AutoWeightsLoader._load_module` reads `self.skip_prefixes`,
    # then sets it and puts it back: the first read finds only what the provider put there.
    reads_then_sets = {
        "plug/cache.py": src(
            """
            from pv.config import Config

            def signature(config: Config) -> str:
                kept = config.compute_hash
                config.compute_hash = str
                result = config.compute_hash()
                config.compute_hash = kept
                return result
            """
        )
    }
    assert found(check(reads_then_sets, PV_B, PV_A), "missing-member") == [
        ("error", "pv.config:Config.compute_hash", "plug/cache.py:4")
    ]
    # Set first, then read (or set in another function too): the read may find the consumer's own.
    sets_first = {"plug/cache.py": reads_then_sets["plug/cache.py"].replace("    kept = config.compute_hash\n", "")}
    sets_first["plug/cache.py"] = sets_first["plug/cache.py"].replace(
        "config.compute_hash = kept", "kept = config.compute_hash"
    )
    assert found(check(sets_first, PV_B, PV_A), "missing-member") == []
    elsewhere = {
        "plug/cache.py": reads_then_sets["plug/cache.py"]
        + "\ndef prepare(config: Config):\n    config.compute_hash = str\n"
    }
    assert found(check(elsewhere, PV_B, PV_A), "missing-member") == []


CAP_A = {
    "pv/cap.py": """
        class Capturer:
            def __init__(self):
                self._buf = None

            def init_buffer(self):
                self._buf = []
    """
}
CAP_B = {"pv/cap.py": "class Capturer:\n    def __init__(self):\n        self.buf = []\n"}
CAP_CONSUMER = {
    "plug/cap.py": src(
        """
        from pv.cap import Capturer

        def init_buffer(self):
            if self._buf is not None:
                raise RuntimeError("initialized twice")
            self._buf = [0]

        Capturer.init_buffer = init_buffer
        """
    )
}


def test_a_read_in_a_function_installed_under_a_name_nothing_calls_any_more_is_a_warning():
    # vllm-ascend 0.18 installs `RoutedExpertsCapturer.init_buffer`, which vLLM 0.22 dropped and no
    # longer calls: its read of `self._device_buffer` never runs.
    [finding] = [f for f in check(CAP_CONSUMER, CAP_B, CAP_A).findings if f.rule.value == "missing-member"]
    assert finding.severity.value == "warning"
    assert "installed as pv.cap:Capturer.init_buffer, a name the provider no longer has nor calls" in finding.message
    # Still called by name (the provider's own `self.init_buffer()`): the read runs, an error.
    calling = {"pv/cap.py": CAP_B["pv/cap.py"] + "        self.init_buffer()\n"}
    assert found(check(CAP_CONSUMER, calling, CAP_A), "missing-member") == [
        ("error", "pv.cap:Capturer._buf", "plug/cap.py:4")
    ]


@pytest.mark.parametrize(
    "body",
    [
        "    try:\n        return config.compute_hash()\n    except AttributeError:\n        return ''\n",
        "    if hasattr(config, 'compute_hash'):\n        return config.compute_hash()\n    return ''\n",
        "    f = getattr(config, 'compute_hash', None)\n    if f is not None:\n        return config.compute_hash()\n"
        "    return ''\n",
        "    if not getattr(config, 'compute_hash', None):\n        return ''\n    return config.compute_hash()\n",
        "    return getattr(config, 'compute_hash', None) and config.compute_hash()\n",
    ],
)
def test_a_read_whose_absence_the_code_handles_is_a_warning(body: str):
    consumer = {"plug/cache.py": "from pv.config import Config\n\ndef signature(config: Config) -> str:\n" + body}
    result = check(consumer, PV_B, PV_A)
    # (A `getattr` with a default is a read of its own: a warning too, "now always the default".)
    assert {(severity, symbol) for severity, symbol, _ in found(result, "missing-member")} == {
        (Severity.WARNING.value, "pv.config:Config.compute_hash")
    }


def test_a_getattr_with_a_default_guards_no_other_read_of_the_name():
    """tpu-inference's `update_states` takes `resumed_req_ids` with a default, then reads
    `req_data.resumed_req_ids` as it is: that read raises where the name is gone."""
    body = "    held = getattr(config, 'compute_hash', None)\n    return [held, config.compute_hash()]\n"
    consumer = {"plug/cache.py": "from pv.config import Config\n\ndef signature(config: Config) -> str:\n" + body}
    assert sorted(found(check(consumer, PV_B, PV_A), "missing-member")) == [
        ("error", "pv.config:Config.compute_hash", "plug/cache.py:5"),
        ("warning", "pv.config:Config.compute_hash", "plug/cache.py:4"),
    ]


def test_super_reads_after_the_consumer_class_and_dunder_names_are_left_out():
    consumer = {
        "plug/spec.py": """
            from pv.spec import Spec

            class MySpec(Spec):
                ratio = 2

                def size(self):
                    return super().ratio + self.__dict__.get("x", 0)
        """
    }
    assert found(check(consumer, PV_B, PV_A), "missing-member") == [("error", "pv.spec:Spec.ratio", "plug/spec.py:7")]


def test_a_read_under_a_version_gate_that_cannot_hold_is_not_judged():
    consumer = {
        "plug/__init__.py": "",
        "plug/cache.py": """
            import pv
            from pv.config import Config

            def signature(config: Config) -> str:
                if pv.__version_tuple__ < (2, 0):
                    return config.compute_hash()
                return str(config.compile_factors())
        """,
    }
    pin = MemoryTree(dedent_files({**PV_B, "pv/__init__.py": "__version_tuple__ = (2, 0)\n"}), "provider")
    before = MemoryTree(dedent_files({**PV_A, "pv/__init__.py": "__version_tuple__ = (1, 0)\n"}), "baseline")
    result = check_trees(
        MemoryTree(dedent_files(consumer), "consumer"), pin, "pv", "plug", baseline=before, provider_version="2.0"
    )
    assert found(result, "missing-member") == []
    # At a version where the gate holds, the read runs: an error.
    result = check_trees(
        MemoryTree(dedent_files(consumer), "consumer"), pin, "pv", "plug", baseline=before, provider_version="1.5"
    )
    assert [f.severity for f in result.findings if f.rule.value == "missing-member"] == [Severity.ERROR]


def test_an_attribute_a_mixin_without_bases_sets_is_no_error():
    consumer = {
        "plug/spec.py": """
            from pv.spec import Spec

            class RatioMixin:
                def init_ratio(self):
                    self.ratio = 2

            class MySpec(RatioMixin, Spec):
                def size(self):
                    self.init_ratio()
                    return self.block_size // self.ratio
        """
    }
    assert found(check(consumer, PV_B, PV_A), "missing-member") == []


HOOK_A = {
    "pv/builder.py": """
        class Builder:
            def dummy_inputs(self, n):
                return [0] * n

            def build(self, n):
                return self.dummy_inputs(n)
    """,
}
HOOK_B = {
    "pv/builder.py": """
        class Builder:
            def build(self, n):
                return [0] * n
    """,
}


HOOK_CONSUMER = {
    "plug/builder.py": """
        from pv.builder import Builder

        class MyBuilder(Builder):
            def dummy_inputs(self, n):
                return super().dummy_inputs(n) + [1]
    """
}


def test_a_read_inside_an_override_of_a_hook_nobody_calls_any_more_is_a_warning():
    [finding] = [f for f in check(HOOK_CONSUMER, HOOK_B, HOOK_A).findings if f.rule.value == "missing-member"]
    assert (finding.severity, str(finding.sites[0])) == (Severity.WARNING, "plug/builder.py:5")
    assert "no longer calls it" in finding.message


@pytest.mark.parametrize(
    "caller",
    [
        # The consumer calls the hook itself...
        ("plug/use.py", "def size(builder):\n    return len(builder.dummy_inputs(2))\n"),
        ("plug/use.py", "def size(builder):\n    return getattr(builder, 'dummy_inputs')(2)\n"),
        # ...or the provider still calls it on an object it was handed.
        ("pv/runner.py", "def run(builder):\n    return builder.dummy_inputs(1)\n"),
    ],
)
def test_a_hook_someone_still_calls_keeps_the_error(caller: tuple[str, str]):
    path, code = caller
    consumer, provider = dict(HOOK_CONSUMER), dict(HOOK_B)
    (provider if path.startswith("pv/") else consumer)[path] = code
    [finding] = [f for f in check(consumer, provider, HOOK_A).findings if f.rule.value == "missing-member"]
    assert finding.severity is Severity.ERROR


CHAIN_A = {
    **PV_A,
    "pv/worker.py": """
        from pv.config import Config

        class Worker:
            def __init__(self, config: Config) -> None:
                self.config = config
    """,
    "pv/runner.py": """
        from dataclasses import dataclass
        from typing import Optional

        from pv.config import Config

        @dataclass
        class Runner:
            config: Optional[Config] = None
    """,
}
CHAIN_B = {**CHAIN_A, **PV_B}


@pytest.mark.parametrize(
    ("base", "read"),
    [
        # Typed by the provider's `self.config = config` (a parameter annotated `Config`)...
        ("pv.worker:Worker", "self.config.compute_hash()"),
        # ...or by a dataclass field annotated `Optional[Config]`.
        ("pv.runner:Runner", "self.config.compute_hash()"),
    ],
)
def test_a_member_read_through_an_attribute_the_provider_annotates_is_judged(base: str, read: str):
    module, name = base.split(":")
    consumer = {
        "plug/mine.py": f"from {module} import {name}\n\nclass Mine({name}):\n    def go(self):\n        return {read}\n"
    }
    assert found(check(consumer, CHAIN_B, CHAIN_A), "missing-member") == [
        ("error", "pv.config:Config.compute_hash", "plug/mine.py:5")
    ]
    assert found(check(consumer, {**CHAIN_B, "pv/config.py": PV_A["pv/config.py"]}, CHAIN_A), "missing-member") == []


@pytest.mark.parametrize(
    "worker",
    [
        # Unannotated: what it holds is unknown.
        "class Worker:\n    def __init__(self, config) -> None:\n        self.config = config\n",
        # Stored twice with other things: unknown.
        "from pv.config import Config\n\nclass Worker:\n    def __init__(self, config: Config) -> None:\n"
        "        self.config = config\n\n    def reset(self, other) -> None:\n        self.config = other\n",
    ],
)
def test_an_attribute_the_provider_does_not_type_is_not_followed(worker: str):
    consumer = {
        "plug/mine.py": "from pv.worker import Worker\n\nclass Mine(Worker):\n    def go(self):\n        return self.config.compute_hash()\n"
    }
    provider = {**CHAIN_B, "pv/worker.py": worker}
    assert found(check(consumer, provider, {**CHAIN_A, "pv/worker.py": worker}), "missing-member") == []


@pytest.mark.parametrize("stored", ["make_config()", "config or make_config()"])
def test_an_attribute_the_consumer_sets_itself_is_not_followed(stored: str):
    consumer = {
        "plug/mine.py": "from pv.worker import Worker\n\nclass Mine(Worker):\n    def __init__(self, config):\n"
        f"        self.config = {stored}\n\n    def go(self):\n        return self.config.compute_hash()\n"
    }
    assert found(check(consumer, CHAIN_B, CHAIN_A), "missing-member") == []


def test_an_attribute_the_consumer_sets_to_its_overrides_parameter_is_typed_as_the_provider_annotates_it():
    """`self.config = config` in an `__init__` overriding `Worker.__init__(self, config: Config)`:
    the parameter holds what the provider's annotates (`param_types`), and so does the attribute."""
    consumer = {
        "plug/mine.py": "from pv.worker import Worker\n\nclass Mine(Worker):\n    def __init__(self, config):\n"
        "        self.config = config\n\n    def go(self):\n        return self.config.compute_hash()\n"
    }
    assert found(check(consumer, CHAIN_B, CHAIN_A), "missing-member") == [
        ("error", "pv.config:Config.compute_hash", "plug/mine.py:8")
    ]


def test_a_name_too_many_provider_files_may_define_is_taken_as_set():
    # Each file might define it in a subclass: past the bound their modules are not all parsed.
    many = {f"pv/m{i}.py": "def f():\n    compute_hash = 1\n    return compute_hash\n" for i in range(31)}
    assert found(check(CONFIG_CONSUMER, {**PV_B, **many}, PV_A), "missing-member") == []
    few = dict(list(many.items())[:3])
    assert found(check(CONFIG_CONSUMER, {**PV_B, **few}, PV_A), "missing-member") == [
        ("error", "pv.config:Config.compute_hash", "plug/cache.py:4")
    ]


def test_the_message_names_a_new_member_of_a_close_name():
    a = {"pv/proc.py": "class Processor:\n    def _get_mm_data(self, items):\n        return items\n"}
    b = {
        "pv/proc.py": "class Processor:\n    def _get_mm_inputs(self, items):\n        return items\n\n    def run(self):\n        return 1\n"
    }
    consumer = {
        "plug/proc.py": "from pv.proc import Processor\n\nclass Mine(Processor):\n    def go(self, items):\n"
        "        return self._get_mm_data(items)\n"
    }
    [finding] = [f for f in check(consumer, b, a).findings if f.rule.value == "missing-member"]
    assert finding.message.endswith("new there since: `_get_mm_inputs`")
    # No close name: nothing is guessed.
    [finding] = [f for f in check(SPEC_CONSUMER, PV_B, PV_A).findings if f.rule.value == "missing-member"]
    assert "new there since" not in finding.message


def test_a_class_setting_attributes_by_computed_names_serves_only_names_written_as_such():
    # vLLM's GPU Worker: `setattr(self, config_name, new_config)` for names it checks against a
    # literal set. A gone member named nowhere as a string or keyword is still an error.
    config = src(PV_B["pv/config.py"]) + (
        "\n    def update(self, overrides):\n        allowed = {'seed'}\n"
        "        for name, value in overrides.items():\n            if name in allowed:\n"
        "                setattr(self, name, value)\n"
    )
    assert found(check(CONFIG_CONSUMER, {**PV_B, "pv/config.py": config}, PV_A), "missing-member") == [
        ("error", "pv.config:Config.compute_hash", "plug/cache.py:4")
    ]
    passed = {
        **PV_B,
        "pv/config.py": config,
        "pv/make.py": "from pv.config import Config\n\ndef f(c: Config):\n    c.update(dict(compute_hash=str))\n",
    }
    assert found(check(CONFIG_CONSUMER, passed, PV_A), "missing-member") == []


# vLLM 0.32 keeps `self.cascade_attn_enabled = False` in its model runner ("kept for out-of-tree
# model runners") and drops `_compute_cascade_attn_prefix_lens`; vllm-omni's runners call it only
# `if self.cascade_attn_enabled and ...:`, which they never turn on.
def _runner(init: str, method: str) -> dict[str, str]:
    return {
        "pv/runner.py": f"""
            class Runner:
                def __init__(self, config):
                    self.config = config
                    {init}

                {method}
        """
    }


CASCADE_A = _runner("self.cascade = not config.off", "def _prefix_lens(self):\n                    return 0")
CASCADE_B = _runner("self.cascade = False  # deprecated", "def other(self):\n                    return 1")
CASCADE_USER = """
    from pv.runner import Runner

    class MyRunner(Runner):
        def step(self, ready):
            if self.cascade and ready:
                return self._prefix_lens()
            return 0
"""


HOLDER = """
    class Holder:
        def __init__(self):
            self.runner = MyRunner(None)

        def enable(self):
            self.runner.cascade = True
            return self.runner.step(True)
"""


@pytest.mark.parametrize(
    ("change", "where", "severity"),
    [
        ("", "plug/runner.py", None),  # never on: the call never runs
        ("        def turn_on(self):\n            self.cascade = True\n", "plug/runner.py", "error"),
        ("    def enable(r):\n        r.cascade = True\n", "plug/runner.py", "error"),  # set from outside
        # ... also through an object typed as one of its instances: not the method's own `self`
        ("    def enable(r: MyRunner):\n        r.cascade = True\n", "plug/runner.py", "error"),
        ("    def enable():\n        r = MyRunner(None)\n        r.cascade = True\n", "plug/runner.py", "error"),
        (HOLDER, "plug/runner.py", "error"),
    ],
)
def test_a_call_under_a_flag_the_provider_keeps_false_never_runs(change: str, where: str, severity: str | None):
    result = check({where: CASCADE_USER + change}, CASCADE_B, baseline=CASCADE_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ([severity] if severity else [])


def test_a_flag_the_provider_sets_anywhere_else_may_be_on():
    elsewhere = {**CASCADE_B, "pv/toggle.py": "def on(runner):\n    runner.cascade = True\n"}
    result = check({"plug/runner.py": CASCADE_USER}, elsewhere, baseline=CASCADE_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["error"]
    # Not a literal false: it may be on.
    computed = _runner("self.cascade = config.cascade", "def other(self):\n                    return 1")
    result = check({"plug/runner.py": CASCADE_USER}, computed, baseline=CASCADE_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["error"]


def test_a_flag_the_constructor_takes_as_a_field_may_be_on():
    fields = {
        "pv/runner.py": """
            from dataclasses import dataclass

            @dataclass
            class Runner:
                cascade: bool = False

                def other(self):
                    return 1
        """
    }
    made = CASCADE_USER + "\n    def make():\n        return MyRunner(cascade=True)\n"
    result = check({"plug/runner.py": made}, fields, baseline=CASCADE_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["error"]


# vLLM 0.29 dropped the multimodal processor's `_call_hf_processor` hooks together with the helpers
# they called; vllm-omni's overrides of them still call those helpers, but nothing calls the overrides.
HOOKS_A = {
    "pv/processor.py": """
        class Processor:
            def apply(self, prompt):
                return self._call_hf(prompt)

            def _call_hf(self, prompt):
                return self._text_mm(prompt)

            def _text_mm(self, prompt):
                return prompt
    """
}
HOOKS_B = {
    "pv/processor.py": "class Processor:\n    def apply(self, prompt):\n    return prompt\n".replace(
        "\n    return", "\n        return"
    )
}
MY_PROCESSOR = """
    from pv.processor import Processor

    class MyProcessor(Processor):
        def _call_hf(self, prompt):
            return self._text_mm(prompt.strip())
"""


def test_a_member_read_inside_an_override_of_a_hook_the_provider_dropped_is_a_warning():
    result = check({"plug/proc.py": MY_PROCESSOR}, HOOKS_B, baseline=HOOKS_A)
    assert found(result, "missing-member") == [("warning", "pv.processor:Processor._text_mm", "plug/proc.py:5")]
    assert (
        "which overrides pv.processor:Processor._call_hf, gone since the baseline"
        in one(result, "missing-member").message
    )
    # Another class of the consumer calling its own `_call_hf` says nothing of this one's.
    other = (
        MY_PROCESSOR + "\n    class Other:\n        def run(self, prompt):\n            return self._call_hf(prompt)\n"
        "\n        def base(self, prompt):\n            return super()._call_hf(prompt)\n"
    )
    result = check({"plug/proc.py": other}, HOOKS_B, baseline=HOOKS_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["warning"]
    # The consumer calls the override itself: its body still runs.
    called = MY_PROCESSOR + "\n        def run(self, prompt):\n            return self._call_hf(prompt)\n"
    result = check({"plug/proc.py": called}, HOOKS_B, baseline=HOOKS_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["error"]


def test_a_provider_class_keeping_its_own_dead_override_of_the_hook_does_not_call_it():
    """vLLM 0.29 still defines `_call_hf_processor` in one model's processor, which nothing calls."""
    dead = {**HOOKS_B, "pv/model.py": "class ModelProcessor:\n    def _call_hf(self, p):\n        return p\n"}
    result = check({"plug/proc.py": MY_PROCESSOR}, dead, baseline=HOOKS_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["warning"]
    # A provider call of it on an object: it may run.
    calls = {**HOOKS_B, "pv/model.py": "def run(proc, p):\n    return proc._call_hf(p)\n"}
    result = check({"plug/proc.py": MY_PROCESSOR}, calls, baseline=HOOKS_A)
    assert [sev for sev, _, _ in found(result, "missing-member")] == ["error"]


SCHED_A = {
    "pv/sched.py": """
        class SchedulerConfig:
            def __init__(self):
                self.enable_chunked_prefill = False

            @property
            def chunked_prefill_enabled(self):
                return self.enable_chunked_prefill

            @chunked_prefill_enabled.setter
            def chunked_prefill_enabled(self, value):
                self.enable_chunked_prefill = value
    """,
    "pv/config.py": """
        from pv.sched import SchedulerConfig

        class VllmConfig:
            scheduler_config: SchedulerConfig
    """,
}
SCHED_B = {
    **SCHED_A,
    "pv/sched.py": "class SchedulerConfig:\n    def __init__(self):\n        self.enable_chunked_prefill = False\n",
}
PLATFORM = """
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from pv.config import VllmConfig

    def check_and_update_config(vllm_config: "VllmConfig") -> None:
        vllm_config.scheduler_config.chunked_prefill_enabled = True
"""


def test_setting_a_member_gone_since_the_baseline_loses_the_setting_silently():
    # vllm-mblt's platform at vLLM 0.13: the property's setter is gone, and the assignment only
    # adds an attribute nothing reads. Typed by an annotation naming an `if TYPE_CHECKING:` import.
    result = check({"plug/platform.py": PLATFORM}, SCHED_B, SCHED_A)
    assert found(result, "missing-member") == [
        ("error", "pv.sched:SchedulerConfig.chunked_prefill_enabled", "plug/platform.py:7")
    ]
    assert result.findings[0].message == (
        "`chunked_prefill_enabled`, set through x.scheduler_config (an instance of pv.sched:SchedulerConfig, as "
        "the provider annotates it), is gone: at the baseline (1.0) it was a property of pv.sched:SchedulerConfig; "
        "at the pin no class of the lookup defines or sets it; the assignment ran its setter there, and now only adds "
        "an attribute of the consumer's own that nothing of the provider names: the setting is silently lost"
    )
    # Still there, or no baseline: nothing. The provider still names it somewhere: a warning.
    assert found(check({"plug/platform.py": PLATFORM}, SCHED_A, SCHED_A), "missing-member") == []
    assert found(check({"plug/platform.py": PLATFORM}, SCHED_B), "missing-member") == []
    named = {**SCHED_B, "pv/log.py": "def show(c):\n    return c.chunked_prefill_enabled\n"}
    assert [f[0] for f in found(check({"plug/platform.py": PLATFORM}, named, SCHED_A), "missing-member")] == ["warning"]
    # The consumer patches the name onto the class: its own, and judged as a patch.
    patched = PLATFORM + "\n    import pv.sched\n    pv.sched.SchedulerConfig.chunked_prefill_enabled = None\n"
    assert found(check({"plug/platform.py": patched}, SCHED_B, SCHED_A), "missing-member") == []


PLAIN_A = {
    "pv/sched.py": """
        class SchedulerConfig:
            def __init__(self):
                self.max_partial = 1
    """,
    "pv/config.py": SCHED_A["pv/config.py"],
    "pv/scheduler.py": """
        class Scheduler:
            def admit(self, config):
                return config.scheduler_config.max_partial
    """,
}
PLAIN_B = {
    **PLAIN_A,
    "pv/sched.py": "class SchedulerConfig:\n    pass\n",
    "pv/scheduler.py": "class Scheduler:\n    pass\n",
}


def test_setting_a_plain_attribute_the_provider_read_and_reads_no_more_is_a_warning():
    platform = {"plug/platform.py": PLATFORM.replace("chunked_prefill_enabled = True", "max_partial = 4")}
    result = check(platform, PLAIN_B, PLAIN_A)
    assert found(result, "missing-member") == [
        ("warning", "pv.sched:SchedulerConfig.max_partial", "plug/platform.py:7")
    ]
    assert result.findings[0].message.endswith(
        "the provider read it at the baseline (pv/scheduler.py:3) and names it nowhere now: the assignment only "
        "adds an attribute of the consumer's own, and what it controlled is gone or moved"
    )
    # Nothing of the provider read it at the baseline either (written only): nothing is lost.
    unread = {**PLAIN_A, "pv/scheduler.py": "class Scheduler:\n    pass\n"}
    assert found(check(platform, PLAIN_B, unread), "missing-member") == []
    # The consumer reads it back itself: its own state.
    own = {
        "plug/platform.py": platform["plug/platform.py"]
        + "\n    def show(c: 'VllmConfig'):\n        return c.scheduler_config.max_partial\n"
    }
    assert found(check(own, PLAIN_B, PLAIN_A), "missing-member") == []
    # The only reader at the baseline is a method the consumer replaces: its own reads.
    patched = {
        **platform,
        "plug/patch.py": "from pv.scheduler import Scheduler\n\nScheduler.admit = lambda self, config: 0\n",
    }
    assert found(check(patched, PLAIN_B, PLAIN_A), "missing-member") == []


def test_a_name_imported_for_type_checkers_only_types_annotations_and_is_never_imported():
    consumer = {
        "plug/cache.py": """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                import pv.config
                from pv.config import Config as Cfg
                from pv.gone import Nothing

            def signature(config: "Cfg", other: "pv.config.Config") -> str:
                mine = config.compute_hash()
                return mine + other.compute_hash()
        """
    }
    result = check(consumer, PV_B, PV_A)
    [finding] = result.findings
    assert (finding.symbol, [str(site) for site in finding.sites]) == (
        "pv.config:Config.compute_hash",
        ["plug/cache.py:9", "plug/cache.py:10"],
    )
    assert found(result, "unresolved-import") == []  # the block never runs
    # vllm-rbln's `else: VllmConfig = None`, with the annotation unquoted: type checkers read the import.
    stand_in = (
        consumer["plug/cache.py"]
        .replace(
            "from pv.gone import Nothing", "from pv.gone import Nothing\n            else:\n                Cfg = None"
        )
        .replace('config: "Cfg"', "config: Cfg")
    )
    [finding] = check({"plug/cache.py": stand_in}, PV_B, PV_A).findings
    assert [str(site) for site in finding.sites] == ["plug/cache.py:11", "plug/cache.py:12"]


MIXED_SCHED_A = {
    "pv/sched.py": """
        class Scheduler:
            def __init__(self):
                self.waiting = []
                self.skipped_waiting = []

            def schedule(self):
                return self.waiting
    """
}
MIXED_SCHED_B = {"pv/sched.py": MIXED_SCHED_A["pv/sched.py"].replace("                self.skipped_waiting = []\n", "")}
MIXIN = {
    "plug/mixin.py": src(
        """
        from pv.sched import Scheduler

        class OmniMixin:
            def drop(self, request):
                if request in self.skipped_waiting:
                    self.skipped_waiting.remove(request)
        """
    ),
    "plug/sched.py": src(
        """
        from pv.sched import Scheduler
        from plug.mixin import OmniMixin

        class OmniScheduler(OmniMixin, Scheduler):
            pass
        """
    ),
}


def test_a_read_through_self_in_a_mixin_is_judged_in_the_classes_mixing_it_in_with_provider_classes():
    # vllm-omni 0.30's `OmniSchedulerMixin` reads `self.skipped_waiting`, which vLLM 0.31's
    # `Scheduler` dropped; the mixin has no provider base, but its schedulers mix it in with one.
    assert found(check(MIXIN, MIXED_SCHED_B, MIXED_SCHED_A), "missing-member") == [
        ("error", "pv.sched:Scheduler.skipped_waiting", "plug/mixin.py:5")
    ]
    # The class mixing it in defines the method itself: the mixin's never runs for it.
    own = {**MIXIN, "plug/sched.py": MIXIN["plug/sched.py"].replace("pass", "def drop(self, request):\n        pass")}
    assert found(check(own, MIXED_SCHED_B, MIXED_SCHED_A), "missing-member") == []
    # Nothing mixes it in with a provider class, or the class mixing it in sets the attribute.
    alone = {**MIXIN, "plug/sched.py": MIXIN["plug/sched.py"].replace("(OmniMixin, Scheduler)", "(OmniMixin)")}
    assert found(check(alone, MIXED_SCHED_B, MIXED_SCHED_A), "missing-member") == []
    sets = {
        **MIXIN,
        "plug/sched.py": MIXIN["plug/sched.py"].replace(
            "pass", "def __init__(self):\n        super().__init__()\n        self.skipped_waiting = []"
        ),
    }
    assert found(check(sets, MIXED_SCHED_B, MIXED_SCHED_A), "missing-member") == []
    # Still there at the pin: nothing to say.
    assert found(check(MIXIN, MIXED_SCHED_A, MIXED_SCHED_A), "missing-member") == []


def test_getattr_with_a_default_of_a_member_gone_since_the_baseline_is_a_warning():
    # vllm-omni 0.30 gates a feature on `getattr(self.model_config, "enable_return_routed_experts",
    # False)`; vLLM 0.31 moved the field to another config: the feature is off, silently.
    consumer = {
        "plug/cache.py": src(
            """
            from pv.spec import Spec

            def ratio(spec: Spec) -> int:
                return getattr(spec, "ratio", 1)
            """
        )
    }
    result = check(consumer, PV_B, PV_A)
    assert found(result, "missing-member") == [("warning", "pv.spec:Spec.ratio", "plug/cache.py:4")]
    [finding] = [f for f in result.findings if f.rule.value == "missing-member"]
    assert "now always gives the default, silently" in finding.message
    # Still there, or not there at the baseline either: nothing to say.
    assert found(check(consumer, PV_A, PV_A), "missing-member") == []
    other = {"plug/cache.py": consumer["plug/cache.py"].replace('"ratio"', '"scale"')}
    assert found(check(other, PV_B, PV_A), "missing-member") == []


def test_getattr_without_a_default_reads_the_member():
    consumer = {
        "plug/cache.py": src(
            """
            from pv.config import Config

            def signature(config: Config) -> str:
                return getattr(config, "compute_hash")()
            """
        )
    }
    # It names the member in a string, as a test for it would: a warning, not an error.
    assert found(check(consumer, PV_B, PV_A), "missing-member") == [
        ("warning", "pv.config:Config.compute_hash", "plug/cache.py:4")
    ]


@pytest.mark.parametrize("default", ['getattr(spec, "tokens_per_state", 1)', "spec.tokens_per_state"])
def test_getattr_falling_back_to_another_member_of_the_same_object_is_not_judged(default: str):
    # vllm-ascend's `getattr(spec, "compress_ratio", getattr(spec, "tokens_per_state", 0))`: the
    # rename is handled where it is read.
    consumer = {
        "plug/cache.py": src(
            f"""
            from pv.spec import Spec

            def ratio(spec: Spec) -> int:
                return getattr(spec, "ratio", {default})
            """
        )
    }
    assert found(check(consumer, PV_B, PV_A), "missing-member") == []


@pytest.mark.parametrize(
    "consumer",
    [
        "from pv.factory import make_config\n\ndef go():\n    config = make_config()\n    return config.compute_hash()\n",
        "from pv.factory import make_config\n\nclass Mine:\n    def __init__(self):\n        self.config = make_config()\n\n"
        "    def go(self):\n        return self.config.compute_hash()\n",
    ],
)
def test_a_member_of_what_a_provider_function_annotated_to_return_a_class_makes_is_judged(consumer: str):
    """`config = make_config()` of a `def make_config() -> Config`: an instance of Config, as for
    arity (`Hierarchy.instance_class`), so a member gone from the class since the baseline is read."""
    factory = {"pv/factory.py": "from pv.config import Config\n\ndef make_config() -> Config:\n    return Config()\n"}
    result = check({"plug/mine.py": consumer}, {**PV_B, **factory}, {**PV_A, **factory})
    [(severity, symbol, _)] = found(result, "missing-member")
    assert (severity, symbol) == ("error", "pv.config:Config.compute_hash")
    # Annotated with what is not a provider class (here nothing): not known.
    bare = {"pv/factory.py": factory["pv/factory.py"].replace(" -> Config", "")}
    assert found(check({"plug/mine.py": consumer}, {**PV_B, **bare}, {**PV_A, **bare}), "missing-member") == []


@pytest.mark.parametrize(
    ("consumer", "judged"),
    [
        ("from pv.factory import make_config\n\ndef go():\n    return make_config().compute_hash()\n", True),
        ("from pv.config import Config\n\ndef go():\n    return Config().compute_hash()\n", True),
        # at a module's top level a call's result is not read as an instance (as for an assignment there)
        ("from pv.config import Config\n\nHASH = Config().compute_hash()\n", False),
        # an assignment expression binds the name as an assignment does
        (
            "from pv.factory import make_config\n\ndef go():\n"
            "    if (config := make_config()) is not None:\n        return config.compute_hash()\n",
            True,
        ),
        (
            "from pv.config import Config\n\ndef go():\n    return [c.compute_hash() for _ in () if (c := Config())]\n",
            True,
        ),
    ],
)
def test_a_member_read_on_what_a_call_makes_is_judged(consumer: str, judged: bool):
    """`make_config().compute_hash()`: the call's result is what a local assigned it would hold."""
    factory = {"pv/factory.py": "from pv.config import Config\n\ndef make_config() -> Config:\n    return Config()\n"}
    result = check({"plug/mine.py": consumer}, {**PV_B, **factory}, {**PV_A, **factory})
    symbols = [symbol for _, symbol, _ in found(result, "missing-member")]
    assert symbols == (["pv.config:Config.compute_hash"] if judged else [])
