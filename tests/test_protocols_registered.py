"""protocol-drift: a consumer class registered as a virtual subclass of a provider ABC
(`LayerBase.register(IndexerCache)`) passes `isinstance` but inherits none of its members.
ATOM registers its DeepSeek-V3.2 indexer cache (an `nn.Module`) under vLLM's
`AttentionLayerBase`, whose class attributes vLLM 0.34 reads on every layer."""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.protocols import passes_on
from tests.test_contact import MY_BACKEND, check, found, one, one_of

CONSUMER = """
import torch.nn as nn
from pv.base import LayerBase

class IndexerCache(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def get_kv_cache_spec(self, config):
        return None

def register():
    LayerBase.register(IndexerCache)
"""

BASE_A = """
from abc import ABC, abstractmethod

class LayerBase(ABC):
    @abstractmethod
    def get_kv_cache_spec(self, config):
        ...
"""
BASE_B = BASE_A.replace("class LayerBase(ABC):\n", "class LayerBase(ABC):\n    is_draft_layer: bool = False\n\n")
UTILS_A = "def specs(layers):\n    return [layer.get_kv_cache_spec(None) for layer in layers]\n"
UTILS_B = """
from pv.base import LayerBase

def specs(config):
    out = []
    for layer in config.layers(LayerBase):
        if layer.is_draft_layer:
            continue
        out.append(layer.get_kv_cache_spec(None))
    return out
"""
PV_A = {"pv/base.py": BASE_A, "pv/utils.py": UTILS_A}
PV_B = {"pv/base.py": BASE_B, "pv/utils.py": UTILS_B}


def drift(consumer: str, provider=PV_B, baseline=PV_A):
    return found(check({"plug/layers.py": consumer}, provider, baseline), "protocol-drift")


def test_a_class_attribute_new_in_the_abc_is_an_error_for_a_registered_class():
    assert drift(CONSUMER) == [("error", "plug.layers:IndexerCache.is_draft_layer", "plug/layers.py:4")]
    result = check({"plug/layers.py": CONSUMER}, PV_B, PV_A)
    [finding] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert "registered as a virtual subclass of pv.base:LayerBase at plug/layers.py:13" in finding.message
    assert "inherits none of its members" in finding.message and "pv/utils.py:6" in finding.message


def test_at_the_baseline_nothing_and_without_one_a_warning():
    assert drift(CONSUMER, PV_A) == []
    assert drift(CONSUMER, PV_B, None) == [("warning", "plug.layers:IndexerCache", "plug/layers.py:4")]


def test_what_the_class_or_its_decorator_sets_serves_the_name():
    own = CONSUMER.replace("        self.dim = dim\n", "        self.dim = dim\n        self.is_draft_layer = False\n")
    assert drift(own) == []
    decorated = "def plugin_mode(cls):\n    cls.is_draft_layer = False\n    return cls\n\n" + CONSUMER.replace(
        "class IndexerCache", "@plugin_mode\nclass IndexerCache"
    )
    assert drift(decorated) == []


def test_an_attribute_read_where_the_role_is_not_named_is_a_warning():
    # `t.dtype` in a file that never names the role: any object may have that attribute.
    pin = {**PV_B, "pv/utils.py": UTILS_A + "\ndef flags(t):\n    return t.is_draft_layer\n"}
    assert drift(CONSUMER, pin) == [("warning", "plug.layers:IndexerCache", "plug/layers.py:4")]


def test_a_class_given_to_a_registry_s_own_register_method_stands_in_for_nothing():
    # `Registry.register(item)` is the class's own method, not ABCMeta's: no virtual subclass.
    registry = "class Registry:\n    is_draft_layer = False\n\n    @classmethod\n    def register(cls, item):\n        return item\n"
    consumer = CONSUMER.replace("from pv.base import LayerBase", "from pv.reg import Registry").replace(
        "LayerBase.register(IndexerCache)", "Registry.register(IndexerCache)"
    )
    a = {**PV_A, "pv/reg.py": registry.replace("    is_draft_layer = False\n\n", "")}
    b = {**PV_B, "pv/reg.py": registry, "pv/utils.py": UTILS_B.replace("LayerBase", "Registry")}
    assert drift(consumer, b, a) == []


def test_a_registered_class_with_an_unknown_outside_base_is_not_judged():
    assert drift(CONSUMER.replace("nn.Module", "nn.Linear")) == []


def test_a_class_merely_passed_to_a_provider_call_is_not_registered():
    passed = CONSUMER.replace("LayerBase.register(IndexerCache)", "LayerBase.describe(IndexerCache)")
    assert drift(passed) == []


# A stand-in's own method, narrower than its role's at the pin: vLLM 0.34 calls
# `backend.get_supported_kernel_block_sizes(spec)` on backends written as `()`.
# The role's two methods every stand-in here defines.
HOOK_ROLE = """
class AttentionBackend:
    @staticmethod
    def get_name():
        return ""

    @staticmethod
    def get_impl_cls():
        return None
"""
ROLE = HOOK_ROLE + "\n    @staticmethod\n    def get_supported_kernel_block_sizes({param}):\n        return [16]\n"
RUNNER = """
def block_sizes(layers, spec):
    return [layer.get_attn_backend().get_supported_kernel_block_sizes({arg}) for layer in layers]
"""
STAND_IN = {
    "plug/backend.py": MY_BACKEND
    + "\n    @staticmethod\n    def get_supported_kernel_block_sizes():\n        return [64]\n",
    "plug/platform.py": 'def get_attn_backend_cls():\n    return "plug.backend.MyBackend"\n',
}


def role(param: str, arg: str) -> dict[str, str]:
    return {"pv/backend.py": ROLE.format(param=param), "pv/runner.py": RUNNER.format(arg=arg)}


def test_a_stand_in_method_that_cannot_take_a_new_parameter_the_provider_passes_is_an_error():
    result = check(STAND_IN, role("kv_cache_spec=None", "spec"), role("", ""))
    symbol = "plug.backend:MyBackend.get_supported_kernel_block_sizes"
    assert found(result, "protocol-drift") == [("error", symbol, "plug/backend.py:15")]
    [finding] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert "its get_supported_kernel_block_sizes() cannot take kv_cache_spec= (kv_cache_spec new since 1.0)" in (
        finding.message
    )
    assert ".get_supported_kernel_block_sizes(1 positional) at pv/runner.py:2" in finding.message


def test_a_class_named_only_in_the_consumers_own_enum_of_paths_is_not_handed_over():
    """vllm-omni lists its diffusion attention backends in its own `Enum` of dotted paths, which it
    resolves itself: naming a class there hands nothing to the provider."""
    registry = (
        "import enum\nimport pv\n\n\nclass Backends(enum.Enum):\n"
        '    MINE = "plug.backend.MyBackend"\n\n    def get_path(self):\n        return self.value\n'
    )
    own = {"plug/backend.py": STAND_IN["plug/backend.py"], "plug/registry.py": registry}
    assert found(check(own, role("kv_cache_spec=None", "spec"), role("", "")), "protocol-drift") == []
    # Nor as an example in a docstring or a comment.
    loader = 'import pv\n\n\ndef load(path):\n    """path: e.g. "plug.backend.MyBackend"."""\n    return path  # "plug.backend.MyBackend"\n'
    prose = {"plug/backend.py": STAND_IN["plug/backend.py"], "plug/loader.py": loader}
    assert found(check(prose, role("kv_cache_spec=None", "spec"), role("", "")), "protocol-drift") == []
    # Named elsewhere as well (returned to the provider by the platform): handed over.
    both = {**STAND_IN, "plug/registry.py": registry}
    assert [
        sev for sev, _, _ in found(check(both, role("kv_cache_spec=None", "spec"), role("", "")), "protocol-drift")
    ] == ["error"]


def test_no_error_while_the_provider_does_not_pass_it_or_at_the_baseline():
    assert found(check(STAND_IN, role("kv_cache_spec=None", ""), role("", "")), "protocol-drift") == []
    assert found(check(STAND_IN, role("", ""), role("", "")), "protocol-drift") == []


# A layer keeps the backend a helper picks (ATOM's MHA layers: `self.attn_backend =
# _mha_backend_for_layer(n, config)`, returning one of two backends): both are handed over.
PICKED = {
    "plug/backend.py": """
        class FastBackend:
            @staticmethod
            def get_name():
                return "FAST"

            @staticmethod
            def get_impl_cls():
                return None

        class WideBackend:
            @staticmethod
            def get_name():
                return "WIDE"

            @staticmethod
            def get_impl_cls():
                return None
    """,
    "plug/layer.py": """
        from pv.layer import LayerBase
        from plug.backend import FastBackend, WideBackend

        def _backend_for(n):
            if n > 10:
                return WideBackend
            return FastBackend

        class MyLayer(LayerBase):
            def __init__(self, n):
                self.attn_backend = _backend_for(n)
    """,
}
HOOK_ROLE_B = HOOK_ROLE + "\n    @classmethod\n    def customize_spec(cls, spec):\n        return spec\n"
LAYER_BASE = "class LayerBase:\n    def get_attn_backend(self):\n        return self.attn_backend\n"
SPECS = "def specs(layers):\n    return [layer.get_attn_backend().customize_spec(None) for layer in layers]\n"


def test_classes_a_helper_picks_for_a_layer_are_handed_over():
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    result = check(PICKED, b, a)
    errors = [symbol for severity, symbol, _ in found(result, "protocol-drift") if severity == "error"]
    assert errors == ["plug.backend:FastBackend.customize_spec", "plug.backend:WideBackend.customize_spec"]
    assert "stored as plug.layer:MyLayer.attn_backend" in one_of(result, errors[0]).message


def test_an_object_kept_in_a_member_the_provider_never_names_is_not_handed_over():
    # sendnn-inference's sampler keeps a ring buffer in `self._noise_buffer`, which nothing of vLLM
    # reads: the buffer is the plugin's own, whatever provider class it happens to look like.
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    assert found(check(private, b, a), "protocol-drift") == []
    # Named by the provider as a string (`getattr(layer, "_picked")`): it can get it.
    named = {**b, "pv/runner.py": SPECS.replace("layer.get_attn_backend()", 'getattr(layer, "_picked")')}
    assert [severity for severity, _, _ in found(check(private, named, a), "protocol-drift")] == ["error", "error"]
    # The consumer hands it on itself (ATOM's layers: `self.attn_backend = self.attn_backend_cls`).
    handed_on = {
        **private,
        "plug/layer.py": private["plug/layer.py"]
        + "\n            def get_attn_backend(self):\n                return self._picked\n",
    }
    assert [severity for severity, _, _ in found(check(handed_on, b, a), "protocol-drift")] == ["error", "error"]


def test_a_member_the_consumer_only_tests_for_truth_is_not_passed_on():
    # vllm-rbln 0.11's runner tests `if getattr(self.model, "attention_manager", None):` and then
    # calls the manager's own methods: a truth test (like `is not None`) hands nothing on, and the
    # name written as getattr's string in a scanned file is no other way the provider gets it.
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    runner = """
        from plug.layer import MyLayer

        class Runner:
            def __init__(self):
                self.layer = MyLayer(3)

            def reset(self):
                if getattr(self.layer, "_picked", None):
                    self.layer._picked.get_name()
                if not self.layer._picked:
                    return None
    """
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    assert found(check({**private, "plug/runner.py": runner}, b, a), "protocol-drift") == []
    # Handed to a call, the object is passed on: the provider may get it.
    passing = runner.replace("self.layer._picked.get_name()", 'print(getattr(self.layer, "_picked", None))')
    assert [
        severity for severity, _, _ in found(check({**private, "plug/runner.py": passing}, b, a), "protocol-drift")
    ] == [
        "error",
        "error",
    ]


def test_a_member_read_only_by_the_provider_classes_own_methods_does_not_reach_another_holder():
    """vllm-ascend keeps its Mooncake scheduler in `self.connector_scheduler` of its own connector
    (a `KVConnectorBase_V1`); vLLM reads `self.connector_scheduler` only in the methods of its own
    `MooncakeConnector`, which the plugin's connector does not derive from: vLLM never gets it."""
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    own_reads = LAYER_BASE + "\n\nclass OtherLayer:\n    def picked(self):\n        return self._picked\n"
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": own_reads, "pv/runner.py": SPECS}
    assert found(check(private, b, a), "protocol-drift") == []
    # Read by a method of a class the holder derives from: it can get it.
    inherited = {**b, "pv/layer.py": LAYER_BASE.replace("return self.attn_backend", "return self._picked")}
    assert [severity for severity, _, _ in found(check(private, inherited, a), "protocol-drift")] == ["error", "error"]


def test_a_class_shaped_like_its_role_but_kept_where_the_provider_cannot_get_it_is_a_guess():
    """With enough of its role's methods, the class is still taken for a stand-in by its shape (a
    warning); the member it is kept in is no evidence it is handed over (no error)."""
    role = HOOK_ROLE + "".join(f"\n    def m{i}(self):\n        return {i}\n" for i in range(4))
    mine = (
        "\n        import pv\n"
        + PICKED["plug/backend.py"]
        + "".join(f"\n            def m{i}(self):\n                return {i}\n" for i in range(4))
    )
    consumer = {**PICKED, "plug/backend.py": mine}
    consumer["plug/layer.py"] = PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")
    own_reads = LAYER_BASE + "\n\nclass OtherLayer:\n    def picked(self):\n        return self._picked\n"
    a = {"pv/backend.py": role, "pv/layer.py": own_reads}
    b = {"pv/backend.py": role + "\n    @classmethod\n    def customize_spec(cls, spec):\n        return spec\n"}
    b |= {"pv/layer.py": own_reads, "pv/runner.py": SPECS}
    assert {severity for severity, _, _ in found(check(consumer, b, a), "protocol-drift")} == {"warning"}


def test_what_the_consumer_passes_on_is_searched_once_per_consumer_content(monkeypatch):
    """A bump checks the same consumer again: the search of its files is answered from the cache.
    The check's own result is cached too, so the provider changes between the two checks."""
    from conftest import dedent_files

    from atompin.analysis.cache import AnalysisCache
    from atompin.analysis.results import check_trees
    from atompin.sources.tree import MemoryTree

    asked: list[object] = []
    original = MemoryTree.files_containing

    def counting(self, paths, words):
        if self.label == "consumer" and any(b"_picked" in word for word in words):
            asked.append(words)
        return original(self, paths, words)

    monkeypatch.setattr(MemoryTree, "files_containing", counting)
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    consumer = MemoryTree(dedent_files({"plug/__init__.py": "", **private}), "consumer")
    cache = AnalysisCache()
    for specs in (SPECS, SPECS + "\n"):
        provider = {
            "pv/__init__.py": "",
            "pv/backend.py": HOOK_ROLE_B,
            "pv/layer.py": LAYER_BASE,
            "pv/runner.py": specs,
        }
        result = check_trees(consumer, MemoryTree(dedent_files(provider), "provider"), "pv", "plug", cache)
        assert not [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert len(asked) == 1
    # A damaged entry is searched again, not trusted nor raised on.
    original_get = AnalysisCache.get_raw
    monkeypatch.setattr(
        AnalysisCache,
        "get_raw",
        lambda self, key: b"\x00damaged" if key.startswith("consumer-passes-on:") else original_get(self, key),
    )
    provider = {"pv/__init__.py": "", "pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    check_trees(consumer, MemoryTree(dedent_files(provider), "provider"), "pv", "plug", AnalysisCache())
    assert len(asked) == 2
    # Where the scan read the member for its object (`return self._picked`), nothing is searched.
    monkeypatch.setattr(AnalysisCache, "get_raw", original_get)
    handed_on = {
        **private,
        "plug/layer.py": private["plug/layer.py"]
        + "\n            def get_attn_backend(self):\n                return self._picked\n",
    }
    tree = MemoryTree(dedent_files({"plug/__init__.py": "", **handed_on}), "consumer")
    result = check_trees(tree, MemoryTree(dedent_files(provider), "provider"), "pv", "plug", AnalysisCache())
    assert [f.rule.value for f in result.findings].count("protocol-drift") == 2  # a stand-in all the same
    assert len(asked) == 2


def test_a_call_inside_a_method_of_the_same_name_hands_on_and_is_no_evidence():
    # vLLM's composite backend: `supports_x` asks its two parts; only `cls.supports_x()` calls it.
    composite = (
        "def make(general, causal):\n    class Composite:\n        @classmethod\n        def customize_spec(cls, spec):\n"
        "            return [b.customize_spec(spec) for b in (general, causal)]\n    return Composite\n"
    )
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/composite.py": composite}
    result = check(PICKED, b, a)
    assert [severity for severity, _, _ in found(result, "protocol-drift")] == [
        "warning",
        "warning",
    ]  # one per stand-in


def test_a_member_only_tested_for_none_is_not_passed_on_by_the_scan_either():
    """vllm-ascend asserts `self.connector_scheduler is not None` before each use of it: no read for
    the object (the scan's own reading, which answers before the text is searched)."""
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    private["plug/layer.py"] += "\n            def ready(self):\n                assert self._picked is not None\n"
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    assert found(check(private, b, a), "protocol-drift") == []


@pytest.mark.parametrize("where", ["plug/other.py", "plug/layer.py"])
def test_another_class_passing_on_its_own_member_of_that_name_hands_nothing_over(where):
    """vllm-ascend: each connector keeps its own `connector_scheduler`; one of them passes its own
    on (`for c in (self.connector_worker, self.connector_scheduler):`), which says nothing of the
    Mooncake connector's."""
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    other = """
        class Other:
            def __init__(self):
                self._picked = []

            def parts(self):
                return self._picked
    """
    consumer = {**private, where: private.get(where, "") + textwrap.dedent(other).replace("\n", "\n" + " " * 8)}
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    assert found(check(consumer, b, a), "protocol-drift") == []
    # Passed on through an object, not `self`: any holder's may be.
    through = {**consumer, where: consumer[where].replace("return self._picked", "return layer._picked")}
    through[where] = through[where].replace("def parts(self):", "def parts(self, layer):")
    assert [severity for severity, _, _ in found(check(through, b, a), "protocol-drift")] == ["error", "error"]


def _drift_with(layer: str, more: dict[str, str] | None = None, provider_layer: str = LAYER_BASE, specs: str = SPECS):
    private = {**PICKED, "plug/layer.py": PICKED["plug/layer.py"].replace("self.attn_backend =", "self._picked =")}
    consumer = {**private, "plug/layer.py": private["plug/layer.py"] + layer, **(more or {})}
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": provider_layer}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": provider_layer, "pv/runner.py": specs}
    return [severity for severity, _, _ in found(check(consumer, b, a), "protocol-drift")]


def test_every_way_the_kept_object_may_reach_the_provider_counts():
    both = ["error", "error"]
    # The provider names the member in a string, and reads `self._picked` in an unrelated class too.
    named = SPECS.replace("layer.get_attn_backend()", 'getattr(layer, "_picked")')
    own_reads = LAYER_BASE + "\n\nclass OtherLayer:\n    def picked(self):\n        return self._picked\n"
    assert _drift_with("", provider_layer=own_reads, specs=named) == both
    # A provider class reading `self._picked`, mixed in by a consumer subclass of the holder.
    reader = LAYER_BASE + "\n\nclass Reader:\n    def picked(self):\n        return self._picked\n"
    mixed = "\n        from pv.layer import Reader\n\n        class Combined(MyLayer, Reader):\n            pass\n"
    assert _drift_with(mixed, provider_layer=reader) == both
    # A consumer mixin (in a file the scan does not read) passing it on, mixed into a subclass.
    mixin = {"plug/mixin.py": "class PassMixin:\n    def get_attn_backend(self):\n        return self._picked\n"}
    combined = (
        "\n        from plug.mixin import PassMixin\n\n        class Combined(PassMixin, MyLayer):\n            pass\n"
    )
    assert _drift_with(combined, mixin) == both
    # Named in a string in a file the scan read (`vars(self)[...]`).
    by_name = '\n            def get_attn_backend(self):\n                return vars(self)["_picked"]\n'
    assert _drift_with(by_name) == both


@pytest.mark.parametrize(
    ("text", "passed"),
    [
        (b"self._buf.borrow_rows(n)", False),
        (b"self._buf = Ring()", False),
        (b"self._buf: Ring = Ring()", False),
        (b"    self._buf: Ring\n", False),
        (b"for row in self._buf:\n    hand(row)\n", True),  # its items
        (b"registry = {self._buf: spec}\n", True),  # a key of what is handed on
        (b"self._buf += [x]", False),
        (b"self._buf[0]", True),  # an item of it may be what is handed on
        (b"self._buf()", True),  # a class kept there: calling it makes the instance
        (b"self._bufs.append(x)", False),
        (b"return self._buf", True),
        (b"f(self._buf)", True),
        (b"self.other = self._buf\n", True),
        (b"if self._buf == x:", True),  # compared, so read as itself: counted
        (b"assert self._buf is not None", False),  # tested for None: nothing is handed on
        (b"if self._buf is None:\n    return\n", False),
        (b'getattr(self, "_buf")', True),
    ],
)
def test_what_passes_a_kept_member_on(text, passed):
    assert passes_on(text, "_buf") is passed
    # In a file holding no method of the holder's line, only a read on another object counts.
    assert passes_on(text, "_buf", on_self=False) is (passed and b"self._buf" not in text)


# A mapper kept twice in a model class's body: under the plugin's own name, and under the name the
# provider reads (ATOM's Qwen3.5 models: `hf_to_vllm_mapper = hf_to_atom_mapper`).
MAPPER_A = """
class Mapper:
    def apply(self, weights):
        return weights

    def map_name(self, name):
        return name
"""
MAPPER_B = MAPPER_A + "\n    def get_rename_mapper(self):\n        return self\n"
LORA = """
def load_adapter(model):
    mapper = getattr(model, "hf_mapper", None)
    if mapper is not None:
        mapper = mapper.get_rename_mapper()
    return mapper
"""
KEPT_TWICE = {
    "plug/mapper.py": """
        import pv

        class PlugMapper:
            def apply(self, weights):
                return weights

            def map_name(self, name):
                return name
    """,
    "plug/model.py": """
        from pv.model import ModelBase
        from plug.mapper import PlugMapper

        class MyModel(ModelBase):
            plug_mapper = PlugMapper()
            hf_mapper = plug_mapper
    """,
}


def test_a_class_attribute_bound_again_in_the_body_keeps_the_same_object():
    a = {"pv/utils.py": MAPPER_A, "pv/model.py": "class ModelBase:\n    pass\n"}
    b = {**a, "pv/utils.py": MAPPER_B, "pv/lora.py": LORA}
    result = check(KEPT_TWICE, b, a)
    assert found(result, "protocol-drift") == [
        ("error", "plug.mapper:PlugMapper.get_rename_mapper", "plug/mapper.py:3")
    ]
    assert "stored as plug.model:MyModel.hf_mapper at plug/model.py:6" in one(result, "protocol-drift").message
    # Bound in the body to something else first: the later name is not the mapper.
    other = KEPT_TWICE["plug/model.py"].replace("hf_mapper =", "plug_mapper = None\n            hf_mapper =")
    assert found(check({**KEPT_TWICE, "plug/model.py": other}, b, a), "protocol-drift") == []


def test_the_member_the_provider_reads_itself_is_the_evidence_cited_first():
    # The plugin also hands its own name on (to a loader of its own): both members reach the
    # provider, but only one is read by the provider itself.
    loader = """
        from plug.model import MyModel

        def load(model: MyModel):
            return load_with(mapper=model.plug_mapper)

        def load_with(mapper):
            return mapper
    """
    a = {"pv/utils.py": MAPPER_A, "pv/model.py": "class ModelBase:\n    pass\n"}
    # (Ranked by a read after a dot: the plugin's own name is read nowhere in the provider.)
    lora = LORA + "\n\ndef rename(model):\n    return model.hf_mapper.get_rename_mapper()\n"
    b = {**a, "pv/utils.py": MAPPER_B, "pv/lora.py": lora}
    result = check({**KEPT_TWICE, "plug/loader.py": loader}, b, a)
    assert "stored as plug.model:MyModel.hf_mapper at plug/model.py:6" in one(result, "protocol-drift").message
    # Read only as a string: not ranked above the member the plugin passes on.
    b = {**a, "pv/utils.py": MAPPER_B, "pv/lora.py": LORA}
    result = check({**KEPT_TWICE, "plug/loader.py": loader}, b, a)
    assert "stored as plug.model:MyModel.plug_mapper at plug/model.py:5" in one(result, "protocol-drift").message


def test_a_subclass_that_lacks_a_member_as_its_base_does_is_said_in_the_base_s_error():
    """ATOM's flexible-block MHA backend derives from its MHA backend; both are handed over, and
    both lack vLLM 0.28's `customize_spec`: one error, at both classes, says it (one fix mends
    both). A chain folds into the class at its root."""
    chain = PICKED["plug/backend.py"].replace("class WideBackend:", "class WideBackend(FastBackend):")
    chain += "\n        class WidestBackend(WideBackend):\n            pass\n"
    layer = PICKED["plug/layer.py"].replace(
        "if n > 10:", "if n > 99:\n                return WidestBackend\n            if n > 10:"
    )
    layer = layer.replace("import FastBackend, WideBackend", "import FastBackend, WideBackend, WidestBackend")
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": SPECS}
    result = check({"plug/backend.py": chain, "plug/layer.py": layer}, b, a)
    [error] = [f for f in result.findings if f.rule.value == "protocol-drift" and f.severity.value == "error"]
    assert error.symbol == "plug.backend:FastBackend.customize_spec"
    assert [str(site) for site in error.sites] == ["plug/backend.py:1", "plug/backend.py:10", "plug/backend.py:19"]
    assert error.message.endswith(
        "; so do plug.backend:WideBackend, plug.backend:WidestBackend (deriving from it, in the same role)"
    )
    # A warning too: the same members lacked, used the same way, said once.
    read = SPECS + "\n\ndef wants_output(layer):\n    return layer.get_attn_backend().accepts_output\n"
    attribute = {**b, "pv/backend.py": HOOK_ROLE_B + "\n    accepts_output = False\n", "pv/runner.py": read}
    result = check({"plug/backend.py": chain, "plug/layer.py": layer}, attribute, a)
    [warning] = [f for f in result.findings if f.rule.value == "protocol-drift" and f.severity.value == "warning"]
    assert warning.symbol == "plug.backend:FastBackend" and len(warning.sites) == 3
    assert "accepts_output" in warning.message and warning.message.endswith("(deriving from it, in the same role)")
    # The base not handed over itself (no error of its own): the subclass's error stands.
    private_base = {"plug/backend.py": chain, "plug/layer.py": layer.replace("return FastBackend", "return None")}
    symbols = [s for sev, s, _ in found(check(private_base, b, a), "protocol-drift") if sev == "error"]
    assert symbols == ["plug.backend:WideBackend.customize_spec"]


# vLLM 0.31 calls `get_supported_kernel_block_sizes(spec)` only on a helper's parameter: the
# backend its own `Attention` layer holds, or the two backends of its own composites. ATOM's
# layers keep their backends but do not derive from `Attention`: no call reaches them.
SIZES_ROLE_A = HOOK_ROLE + "\n    @staticmethod\n    def get_supported_kernel_block_sizes():\n        return [16]\n"
SIZES_ROLE_B = SIZES_ROLE_A.replace(
    "get_supported_kernel_block_sizes():", "get_supported_kernel_block_sizes(kv_cache_spec=None):"
)
SIZES_CALLERS = {
    "pv/attention.py": """
from pv.layer import LayerBase


def _largest_block(attn_backend, spec):
    return max(attn_backend.get_supported_kernel_block_sizes(spec))


class Attention(LayerBase):
    def kv_cache_spec(self):
        return _largest_block(self.attn_backend, None)
""",
    "pv/composite.py": """
from pv.backend import AttentionBackend


def _intersect(first, second, spec):
    return [a for a in first.get_supported_kernel_block_sizes(spec) if a in second.get_supported_kernel_block_sizes(spec)]


def make_composite(general, causal):
    class Composite(AttentionBackend):
        @classmethod
        def get_supported_kernel_block_sizes(cls, kv_cache_spec=None):
            return _intersect(general, causal, kv_cache_spec)

    return Composite


Both = make_composite(AttentionBackend, AttentionBackend)
""",
}


def test_a_call_on_a_helper_s_parameter_reaches_only_what_its_callers_pass():
    narrow = "\n            @staticmethod\n            def get_supported_kernel_block_sizes():\n                return [64]\n"
    backend = PICKED["plug/backend.py"].replace(
        '                return "FAST"\n', '                return "FAST"\n' + narrow
    )
    consumer = {**PICKED, "plug/backend.py": backend}
    a = {"pv/backend.py": SIZES_ROLE_A, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": SIZES_ROLE_B, "pv/layer.py": LAYER_BASE, **SIZES_CALLERS}
    symbol = "plug.backend:FastBackend.get_supported_kernel_block_sizes"
    assert [s for sev, s, _ in found(check(consumer, b, a), "protocol-drift") if sev == "error"] == []
    # The consumer's layer derives from the provider's `Attention`: its `self.attn_backend` is ours.
    derived = PICKED["plug/layer.py"].replace("from pv.layer import LayerBase", "from pv.attention import Attention")
    derived = derived.replace("class MyLayer(LayerBase):", "class MyLayer(Attention):")
    errors = [
        s
        for sev, s, _ in found(check({**consumer, "plug/layer.py": derived}, b, a), "protocol-drift")
        if sev == "error"
    ]
    assert errors == [symbol]
    # A caller passing what it does not read exactly (a local it got from a call) may pass ours.
    local = SIZES_CALLERS["pv/attention.py"].replace(
        "return _largest_block(self.attn_backend, None)",
        "chosen = pick(self)\n        return _largest_block(chosen, None)",
    )
    errors = [
        s
        for sev, s, _ in found(check(consumer, {**b, "pv/attention.py": local}, a), "protocol-drift")
        if sev == "error"
    ]
    assert errors == [symbol]


# The same call on the elements of a collection the provider annotates with the role's class.
RUNNER_ELEMENTS = """
from pv.backend import AttentionBackend

def make(name) -> AttentionBackend:
    return AttentionBackend()

class Runner:
    def __init__(self, names):
        self.backends = [make(n) for n in names]

    def block_sizes(self, spec):
        out = []
        for backend in self.backends:
            out.append(backend.get_supported_kernel_block_sizes({arg}))
        return out
"""


def test_a_stand_in_is_among_elements_annotated_with_its_role():
    # The elements are `AttentionBackend`s by the factory's annotation, which the stand-in does
    # not derive from: it is handed where one is expected, so the call reaches it all the same.
    def runner(param: str, arg: str) -> dict[str, str]:
        return {"pv/backend.py": ROLE.format(param=param), "pv/runner.py": RUNNER_ELEMENTS.format(arg=arg)}

    result = check(STAND_IN, runner("kv_cache_spec=None", "spec"), runner("", ""))
    symbol = "plug.backend:MyBackend.get_supported_kernel_block_sizes"
    assert found(result, "protocol-drift") == [("error", symbol, "plug/backend.py:15")]
    # Under an `isinstance` test of the role's class, the call never reaches the stand-in.
    tested = RUNNER_ELEMENTS.replace(
        "            out.append(", "            if isinstance(backend, AttentionBackend):\n                out.append("
    )
    pin = {"pv/backend.py": ROLE.format(param="kv_cache_spec=None"), "pv/runner.py": tested.format(arg="spec")}
    assert found(check(STAND_IN, pin, runner("", "")), "protocol-drift") == []


def test_a_call_under_an_isinstance_test_the_stand_in_fails_does_not_reach_it():
    # vLLM 0.27's coordinator calls `manager.get_num_blocks_to_allocate(...)` for its
    # cross-attention managers under `if isinstance(manager, CrossAttentionManager):`.
    specs = """
from pv.backend import AttentionBackend

def specs(layers):
    out = []
    for layer in layers:
        backend = layer.get_attn_backend()
        if isinstance(backend, AttentionBackend):
            out.append(backend.customize_spec(None))
    return out
"""
    a = {"pv/backend.py": HOOK_ROLE, "pv/layer.py": LAYER_BASE}
    b = {"pv/backend.py": HOOK_ROLE_B, "pv/layer.py": LAYER_BASE, "pv/runner.py": specs}
    assert [severity for severity, _, _ in found(check(PICKED, b, a), "protocol-drift")] == ["warning", "warning"]
    untested = {**b, "pv/runner.py": specs.replace("isinstance(backend, AttentionBackend)", "backend")}
    assert [severity for severity, _, _ in found(check(PICKED, untested, a), "protocol-drift")] == ["error", "error"]


# ROCm ATOM's indexer cache (registered with vLLM's `AttentionLayerBase`) gets its
# `get_attn_backend` from a class decorator, which sets it to a function returning ATOM's
# sparse-MLA indexer backend: that backend is handed over, so what it lacks is an error.
DECORATED = {
    "plug/backend.py": "import pv\n\n" + MY_BACKEND,
    "plug/modes.py": """
        def _get_attn_backend(self):
            from plug.backend import MyBackend

            return MyBackend

        def plugin_mode(cls):
            cls.get_attn_backend = _get_attn_backend
            return cls
    """,
    "plug/models.py": """
        import torch.nn as nn
        from plug.modes import plugin_mode

        @plugin_mode
        class IndexerCache(nn.Module):
            def get_kv_cache_spec(self, config):
                return None

        class Model(nn.Module):
            pass
    """,
    "plug/layers.py": """
        from pv.base import LayerBase
        from plug.models import IndexerCache

        MODELS = {"M": "plug.models.Model"}  # the provider loads it by path: its module is read

        def register():
            LayerBase.register(IndexerCache)
    """,
}
CUSTOMIZING_ROLE = BASE_A + "\n    def get_attn_backend(self):\n        ...\n"
BACKEND_ROLE = HOOK_ROLE + "\n    @classmethod\n    def customize_spec(cls, spec):\n        return spec\n"
SPECS = """
from pv.base import LayerBase

def specs(config):
    out = []
    for layer in config.layers(LayerBase):
        spec = layer.get_kv_cache_spec(None)
        out.append(layer.get_attn_backend().customize_spec(spec))
    return out
"""
DECORATED_PV_A = {"pv/base.py": CUSTOMIZING_ROLE, "pv/backend.py": HOOK_ROLE, "pv/utils.py": UTILS_A}
DECORATED_PV_B = {"pv/base.py": CUSTOMIZING_ROLE, "pv/backend.py": BACKEND_ROLE, "pv/utils.py": SPECS}


@pytest.mark.parametrize("scanned", [False, True], ids=["class-read-when-handed", "class-scanned"])
def test_a_class_a_decorator_s_method_returns_is_handed_over(scanned: bool):
    consumer = dict(DECORATED)
    if scanned:  # the class's module names the provider, so it is scanned with the rest
        consumer["plug/models.py"] = "import pv\n" + textwrap.dedent(consumer["plug/models.py"])
    result = check(consumer, DECORATED_PV_B, DECORATED_PV_A)
    finding = one_of(result, "plug.backend:MyBackend.customize_spec")
    assert finding.severity.value == "error"
    assert "returned by plug.models:IndexerCache.get_attn_backend at plug/modes.py:7" in finding.message
    # A function the decorator sets under a name the role does not have hands nothing over.
    other = {**consumer, "plug/modes.py": consumer["plug/modes.py"].replace("cls.get_attn_backend", "cls.pick")}
    assert [sev for sev, *_ in found(check(other, DECORATED_PV_B, DECORATED_PV_A), "protocol-drift")] != ["error"]
