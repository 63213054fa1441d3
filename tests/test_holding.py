"""A consumer class the provider reaches only through the classes holding it (`holding`): a
provider call found by a method's name is on it only where its receiver can hold what reading a
holder's member gives. ATOM's DeepSeek-V4 proxy backend, an `AttentionBackend`, is only what its
proxy layer's `get_attn_backend()` returns; vLLM 0.31 calls `get_supported_kernel_block_sizes(spec)`
only on the backend its own `Attention` keeps, which the platform selects or its constructor is
given, and no file that calls layers' `get_attn_backend()` gives it one."""

from __future__ import annotations

from tests.test_contact import check, found, one_of

BACKEND_A = """
class AttentionBackend:
    @staticmethod
    def get_name():
        return ""

    @staticmethod
    def get_supported_kernel_block_sizes():
        return [16]
"""
BACKEND_B = BACKEND_A.replace(
    "get_supported_kernel_block_sizes():", "get_supported_kernel_block_sizes(kv_cache_spec=None):"
)
LAYER = "class LayerBase:\n    def get_attn_backend(self):\n        raise NotImplementedError\n"
ATTENTION = """
from pv.backend import AttentionBackend
from pv.layer import LayerBase
from pv.selector import select_backend


def _largest_block(attn_backend, spec):
    return max(attn_backend.get_supported_kernel_block_sizes(spec))


class Attention(LayerBase):
    def __init__(self, attn_backend=None):
        if attn_backend is None:
            self.attn_backend = select_backend()
        else:
            self.attn_backend = attn_backend

    def get_attn_backend(self):
        return self.attn_backend

    def kv_cache_spec(self):
        return _largest_block(self.attn_backend, None)
"""
RUNNER = """
def names(layers):
    return [layer.get_attn_backend().get_name() for layer in layers]
"""
PROVIDER_A = {
    "pv/backend.py": BACKEND_A,
    "pv/layer.py": LAYER,
    "pv/selector.py": "def select_backend():\n    return None\n",
}
PROVIDER_B = {**PROVIDER_A, "pv/backend.py": BACKEND_B, "pv/attention.py": ATTENTION, "pv/runner.py": RUNNER}
PROXY = """
from pv.backend import AttentionBackend
from pv.layer import LayerBase


class ProxyBackend(AttentionBackend):
    @staticmethod
    def get_name():
        return "PROXY"

    @staticmethod
    def get_supported_kernel_block_sizes():
        return [256]


class ProxyLayer(LayerBase):
    def get_attn_backend(self):
        return ProxyBackend
"""
SYMBOL = "plug.proxy:ProxyBackend.get_supported_kernel_block_sizes"


def test_an_override_held_only_by_a_layer_is_not_what_the_provider_s_own_layer_keeps():
    result = check({"plug/proxy.py": PROXY}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("warning", SYMBOL, "plug/proxy.py:11")]
    assert (
        "the provider passes them at pv/attention.py:7, in a call that cannot be on it: plug.proxy:ProxyBackend "
        "reaches the provider only as returned by plug.proxy:ProxyLayer.get_attn_backend at plug/proxy.py:17"
    ) in one_of(result, SYMBOL).message


def test_a_provider_call_on_what_a_holder_returns_reaches_it():
    every_layer = RUNNER + "\n\ndef sizes(layers, spec):\n"
    every_layer += "    return [layer.get_attn_backend().get_supported_kernel_block_sizes(spec) for layer in layers]\n"
    result = check({"plug/proxy.py": PROXY}, {**PROVIDER_B, "pv/runner.py": every_layer}, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    assert "at pv/runner.py:6" in one_of(result, SYMBOL).message


def test_a_provider_file_storing_what_it_reads_from_a_layer_may_give_it_to_the_provider_s_layer():
    # What a file reads from a layer it may hand to `Attention(attn_backend=...)`, or store on one.
    for text in (
        "from pv.attention import Attention\n\ndef copy(layer):\n    return Attention(attn_backend=layer.get_attn_backend())\n",
        "def copy(layer, other):\n    other.attn_backend = layer.get_attn_backend()\n",
        'def copy(layer, other):\n    setattr(other, "attn_backend", layer.get_attn_backend())\n',
    ):
        result = check({"plug/proxy.py": PROXY}, {**PROVIDER_B, "pv/copier.py": text}, PROVIDER_A)
        assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")], text
    # A file storing it that reads no holder's member gives the provider's layer nothing of ours.
    elsewhere = "from pv.attention import Attention\n\ndef copy(backend):\n    return Attention(attn_backend=backend)\n"
    result = check({"plug/proxy.py": PROXY}, {**PROVIDER_B, "pv/copier.py": elsewhere}, PROVIDER_A)
    assert found(result, "override-drift") == [("warning", SYMBOL, "plug/proxy.py:11")]


def test_an_override_handed_over_another_way_too_reaches_every_call():
    # Named by a dotted path (a platform selecting it): the provider may put it anywhere.
    platform = 'def get_attn_backend_cls():\n    return "plug.proxy.ProxyBackend"\n'
    result = check({"plug/proxy.py": PROXY, "plug/platform.py": platform}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    # Not seen handed over at all: how it reaches the provider is unknown, so every call counts.
    unheld = PROXY.replace("        return ProxyBackend\n", "        return None\n")
    result = check({"plug/proxy.py": unheld}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]


def test_a_holder_deriving_from_the_provider_s_layer_holds_it_there():
    # The consumer's layer derives from `Attention` and keeps the backend where it does.
    derived = PROXY.replace("from pv.layer import LayerBase", "from pv.attention import Attention")
    derived = derived.replace(
        "class ProxyLayer(LayerBase):\n    def get_attn_backend(self):\n        return ProxyBackend\n",
        "class ProxyLayer(Attention):\n    def __init__(self):\n        self.attn_backend = ProxyBackend\n",
    )
    result = check({"plug/proxy.py": derived}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]


def test_a_stand_in_held_only_by_a_layer_is_asked_the_same():
    # A backend deriving from nothing, which a layer returns: `protocol-drift` judges its narrower
    # method by the calls that can be on it, as `override-drift` judges the override's.
    stand_in = PROXY.replace("class ProxyBackend(AttentionBackend):", "class ProxyBackend:")
    result = check({"plug/proxy.py": stand_in}, PROVIDER_B, PROVIDER_A)
    assert [sev for sev, _, _ in found(result, "protocol-drift")] == []
    stored = RUNNER + "\n\ndef copy(layer, other):\n    other.attn_backend = layer.get_attn_backend()\n"
    result = check({"plug/proxy.py": stand_in}, {**PROVIDER_B, "pv/runner.py": stored}, PROVIDER_A)
    assert found(result, "protocol-drift") == [("error", SYMBOL, "plug/proxy.py:11")]


def test_a_replacement_near_the_class_may_hand_it_out():
    # A factory the provider's layer stores from, replaced to make it: `select_backend()`.
    factory = PROXY + "\n\nimport pv.selector\n\npv.selector.select_backend = lambda: ProxyBackend\n"
    result = check({"plug/proxy.py": factory}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    # The same replacement in a file importing the class's module.
    apart = (
        "import pv.selector\nfrom plug.proxy import ProxyBackend\n\npv.selector.select_backend = lambda: ProxyBackend\n"
    )
    result = check({"plug/proxy.py": PROXY, "plug/patches.py": apart}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    # A constructor replaced there that stores it on the provider's layer itself.
    init = (
        "from pv.attention import Attention\nfrom plug.proxy import ProxyBackend\n\n\n"
        "def init(self, attn_backend=None):\n    self.attn_backend = ProxyBackend\n\n\nAttention.__init__ = init\n"
    )
    result = check({"plug/proxy.py": PROXY, "plug/patches.py": init}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    # Imported by a relative import, or the module itself from its package: near as well.
    for imports, value in (
        ("from .proxy import ProxyBackend", "ProxyBackend"),
        ("from . import proxy", "proxy.ProxyBackend"),
    ):
        relative = f"import pv.selector\n{imports}\n\npv.selector.select_backend = lambda: {value}\n"
        result = check({"plug/proxy.py": PROXY, "plug/patches.py": relative}, PROVIDER_B, PROVIDER_A)
        assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")], imports
    # A replacement in a file that names neither the class nor its module hands out something else;
    # so does one in a file writing the module's last name as a word of its own (ATOM's backends
    # live in `attention/backend.py`, and a hundred of its files write "backend").
    for text in ("", "proxy = None  # no proxy here\n"):
        far = f"import pv.selector\n\n{text}pv.selector.select_backend = lambda: None\n"
        result = check({"plug/proxy.py": PROXY, "plug/patches.py": far}, PROVIDER_B, PROVIDER_A)
        assert found(result, "override-drift") == [("warning", SYMBOL, "plug/proxy.py:11")], text


def test_the_consumer_setting_the_attribute_from_outside_may_put_it_there():
    outside = "from plug.proxy import ProxyBackend\n\n\ndef adopt(layer):\n    layer.attn_backend = ProxyBackend\n"
    result = check({"plug/proxy.py": PROXY, "plug/adopt.py": outside}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    # Set from outside in a file that names neither the class nor its module (ATOM's sglang
    # plugin sets `forward_batch.attn_backend`): something else is put there.
    far = "import pv.layer\n\n\ndef adopt(batch, other):\n    batch.attn_backend = other.backends[0]\n"
    result = check({"plug/proxy.py": PROXY, "plug/adopt.py": far}, PROVIDER_B, PROVIDER_A)
    assert found(result, "override-drift") == [("warning", SYMBOL, "plug/proxy.py:11")]


def test_too_many_files_reading_the_member_are_not_read():
    # More provider files than `_MAX_READING` reading the holders' member: whether one of them stores
    # what it reads is not read, so it may.
    from atompin.analysis.holding import _MAX_READING

    readers = {f"pv/reader{i}.py": RUNNER for i in range(_MAX_READING + 1)}
    result = check({"plug/proxy.py": PROXY}, {**PROVIDER_B, **readers}, PROVIDER_A)
    assert found(result, "override-drift") == [("error", SYMBOL, "plug/proxy.py:11")]
    fewer = {f"pv/reader{i}.py": RUNNER for i in range(3)}
    result = check({"plug/proxy.py": PROXY}, {**PROVIDER_B, **fewer}, PROVIDER_A)
    assert found(result, "override-drift") == [("warning", SYMBOL, "plug/proxy.py:11")]
