"""Consumer methods nothing calls: an error found only inside one is a warning.

vllm-kunlun's platform keeps `is_hpu` from older vLLM releases; its body names
`PlatformEnum.HPU`, which vLLM 0.11 removed together with every call of `is_hpu`.
"""

from __future__ import annotations

PROVIDER = {
    "pv/__init__.py": "",
    "pv/platforms.py": """
        import enum

        class PlatformEnum(enum.Enum):
            CUDA = 1

        class Platform:
            def is_cuda(self):
                return False

            def device_name(self):
                return "cpu"

        def pick(platform):
            return platform.is_cuda()
    """,
}

PLATFORM = """
    from pv.platforms import Platform, PlatformEnum

    class MyPlatform(Platform):
        def is_cuda(self):
            return self._enum == PlatformEnum.CUDA_GONE

        def is_hpu(self):
            \"\"\"is_hpu\"\"\"
            return self._enum == PlatformEnum.HPU

        def is_npu(self):
            return self._enum == PlatformEnum.NPU

        def describe(self):
            return "npu" if self.is_npu() else self.device_name()

        @staticmethod
        def is_xpu():
            return PlatformEnum.XPU

        @registered
        def is_ipu(self):
            return PlatformEnum.IPU
"""


REGISTER = 'def register():\n    return "plug.platform.MyPlatform"\n'


def severities(result) -> dict[str, str]:
    return {f.symbol.rpartition(".")[2]: f.severity.value for f in result.findings}


def test_an_error_only_inside_a_method_nothing_calls_is_a_warning(run_check):
    result = run_check(PROVIDER, {"plug/__init__.py": REGISTER, "plug/platform.py": PLATFORM})
    assert severities(result) == {
        "CUDA_GONE": "error",  # an override: the provider calls it
        "HPU": "warning",  # named by nobody (its docstring aside)
        "NPU": "error",  # the plugin calls it itself
        "XPU": "warning",  # a static method nothing calls
        "IPU": "error",  # a decorator may register it
    }
    [hpu] = [f for f in result.findings if f.symbol.endswith(".HPU")]
    assert hpu.message.endswith(
        "(in plug.platform:MyPlatform.is_hpu, which nothing calls: no provider class of its order defines is_hpu, "
        "and neither the provider nor the plugin names it elsewhere)"
    )


def test_a_method_the_provider_names_or_a_subclass_overrides_for_it_is_called(run_check):
    consumer = {"plug/__init__.py": REGISTER, "plug/platform.py": PLATFORM}
    # The provider names it (a call on any object, or a string it looks it up by).
    for named in ("def probe(p):\n    return p.is_hpu()\n", 'NAMES = ["is_hpu", "is_xpu"]\n'):
        provider = {**PROVIDER, "pv/probe.py": named}
        assert severities(run_check(provider, consumer))["HPU"] == "error", named
    # A consumer subclass mixes it into a provider class that defines it: the provider calls it there.
    provider = {**PROVIDER, "pv/hpu.py": "class HpuBase:\n    def is_hpu(self):\n        return True\n"}
    mixed = {
        **consumer,
        "plug/hpu.py": "from pv.hpu import HpuBase\nfrom plug.platform import MyPlatform\n\n"
        "class Mixed(MyPlatform, HpuBase):\n    pass\n",
    }
    assert severities(run_check(provider, mixed))["HPU"] == "error"
    # Not handed to the provider: a class of the plugin's own API, whose users may call it.
    assert severities(run_check(PROVIDER, {**consumer, "plug/__init__.py": ""}))["HPU"] == "error"
    # Derived from a class outside both packages, which may call it.
    outside = {**consumer, "plug/platform.py": PLATFORM.replace("(Platform)", "(Platform, torch.nn.Module)")}
    assert severities(run_check(PROVIDER, outside))["HPU"] == "error"


# vllm-mindspore keeps `_aclgraph_capture_dummy_run` beside the `GPUModelRunner` methods it
# installs, installs it nowhere, and calls it nowhere: what its body calls wrongly never runs.
FUNCTIONS = """
    from pv.platforms import PlatformEnum


    def _unused(
        self,
        n,
    ):
        # PlatformEnum.IN_COMMENT
        return PlatformEnum.GONE_A


    def _used():
        return PlatformEnum.GONE_B


    def public():
        return PlatformEnum.GONE_C


    @registered
    def _registered():
        return PlatformEnum.GONE_D


    def _installed():
        return PlatformEnum.GONE_E


    def _by_string():
        return PlatformEnum.GONE_F


    def run():
        x = 1
        return _used()


    X = PlatformEnum.GONE_G
"""


def test_an_error_only_inside_a_private_function_nothing_names_is_a_warning(run_check):
    consumer = {
        "plug/__init__.py": "",
        "plug/funcs.py": FUNCTIONS,
        "plug/patches.py": "import pv.platforms\nfrom plug.funcs import _installed\npv.platforms.pick = _installed\n",
        "plug/table.py": 'HOOKS = ["_by_string"]\n',
    }
    result = run_check(PROVIDER, consumer)
    assert {k: v for k, v in severities(result).items() if k.startswith("GONE")} == {
        "GONE_A": "warning",  # named nowhere but at its `def` (and in a comment)
        "GONE_B": "error",  # called by `run`
        "GONE_C": "error",  # public: a user of the plugin may call it
        "GONE_D": "error",  # a decorator may register it
        "GONE_E": "error",  # imported and installed
        "GONE_F": "error",  # named in a string: it may be looked up by it
        "GONE_G": "error",  # at the module's top level: runs at import
    }
    [a] = [f for f in result.findings if f.symbol.endswith(".GONE_A")]
    assert a.message.endswith(
        "(in _unused(), a private function nothing calls: the plugin names it nowhere but at its definition, "
        "and no provider code can reach it)"
    )
    # The provider names it (a string it looks it up by): it may call it.
    provider = {**PROVIDER, "pv/probe.py": 'NAMES = ["_unused"]\n'}
    assert severities(run_check(provider, consumer))["GONE_A"] == "error"


# vllm-omni's OmniVoice module keeps a multimodal processor nothing registers any more.
BUILDERS = """
    from pv.platforms import Platform, PlatformEnum


    class Unnamed(Platform):
        def is_cuda(self):
            return PlatformEnum.GONE_A


    class Used(Platform):
        def is_cuda(self):
            return PlatformEnum.GONE_B


    @registered
    class Decorated(Platform):
        def is_cuda(self):
            return PlatformEnum.GONE_C


    class ByString(Platform):
        def is_cuda(self):
            return PlatformEnum.GONE_D


    class Based(Platform):
        def is_cuda(self):
            return PlatformEnum.GONE_E


    class Derived(Based):
        pass


    def make():
        return Used()
"""
PLUGIN_PROJECT = '[project]\nname = "plug"\n[project.entry-points."pv.general_plugins"]\nplug = "plug:register"\n'


def test_an_error_only_in_a_class_of_a_plugin_nothing_names_is_a_warning(run_check):
    consumer = {
        "pyproject.toml": PLUGIN_PROJECT,
        "plug/__init__.py": "def register():\n    import plug.builders\n",
        "plug/builders.py": BUILDERS,
        "plug/table.py": 'CLASSES = ["plug.builders.ByString"]\n',
    }

    def gone(result) -> dict[str, str]:
        return {k: v for k, v in severities(result).items() if k.startswith("GONE")}

    assert gone(run_check(PROVIDER, consumer, consumer_package="plug")) == {
        "GONE_A": "warning",  # named nowhere but at its `class` line
        "GONE_B": "error",  # made by `make`
        "GONE_C": "error",  # a decorator may register it
        "GONE_D": "error",  # named in a string: a path the provider may be handed
        "GONE_E": "error",  # a base of a class (itself named nowhere: Derived's own findings would go)
    }
    [a] = [f for f in run_check(PROVIDER, consumer, consumer_package="plug").findings if f.symbol.endswith("GONE_A")]
    assert a.message.endswith(
        "(in plug.builders:Unnamed, a class nothing names: the plugin writes its name nowhere but at its "
        "definition, and no provider code can reach it; only a configuration naming it could make one)"
    )
    # The provider names it, or a provider base registers what derives from it as it is made.
    named = {**PROVIDER, "pv/probe.py": 'NAMES = ["Unnamed"]\n'}
    assert gone(run_check(named, consumer, consumer_package="plug"))["GONE_A"] == "error"
    registering = PROVIDER["pv/platforms.py"].replace(
        "class Platform:\n", "class Platform:\n            def __init_subclass__(cls):\n                pass\n"
    )
    assert (
        gone(run_check({**PROVIDER, "pv/platforms.py": registering}, consumer, consumer_package="plug"))["GONE_A"]
        == "error"
    )
    # A library's users may make any of its classes.
    library = {k: v for k, v in consumer.items() if k != "pyproject.toml"}
    assert gone(run_check(PROVIDER, library, consumer_package="plug"))["GONE_A"] == "error"


# vllm-mindspore installs `_get_num_input_tokens` on vLLM's `GPUModelRunner`, which dropped the
# method at 0.13 (vLLM's second model runner defines one of its own, which does not name it).
RUNNER_BEFORE = {
    **PROVIDER,
    "pv/platforms.py": PROVIDER["pv/platforms.py"].replace("CUDA = 1", "CUDA = 1\n            GONE_A = 2"),
    "pv/runner.py": """
        class Runner:
            def _num_tokens(self, n):
                return n

            def run(self, n):
                return self._num_tokens(n)
    """,
}
RUNNER_NOW = {
    **PROVIDER,
    "pv/runner.py": "class Runner:\n    def run(self, n):\n        return n\n",
    "pv/runner2.py": "class Runner2:\n    def _num_tokens(self, n):\n        return n\n",
}
INSTALLED = {
    "plug/__init__.py": "",
    "plug/funcs.py": """
        from pv.platforms import PlatformEnum


        def _num_tokens(self, n):
            return PlatformEnum.GONE_A
    """,
    "plug/patches.py": """
        import pv.runner
        from plug.funcs import (
            _num_tokens,
        )

        pv.runner.Runner._num_tokens \\
            = _num_tokens
    """,
}


def _gone_a(result):
    [a] = [f for f in result.findings if f.symbol.endswith(".GONE_A")]
    return a


def test_a_private_function_installed_only_under_a_name_the_provider_dropped_is_called_by_nothing(run_check):
    a = _gone_a(run_check(RUNNER_NOW, INSTALLED, baseline=RUNNER_BEFORE))
    assert a.severity.value == "warning"
    assert a.message.endswith(
        "(in _num_tokens(), a private function nothing calls here: the plugin names it only where it imports it "
        "and where it installs it under a name the provider no longer has (plug/patches.py:6), and no provider "
        "code can reach it otherwise)"
    )
    # Where the provider still has the name, what is installed there runs.
    kept = {**RUNNER_NOW, "pv/runner.py": RUNNER_BEFORE["pv/runner.py"]}
    assert _gone_a(run_check(kept, INSTALLED, baseline=RUNNER_BEFORE)).severity.value == "error"
    # Imported under another name, it is called by that name.
    aliased = {
        **INSTALLED,
        "plug/user.py": "from plug.funcs import _num_tokens as count\n\ndef go():\n    return count(None, 1)\n",
    }
    assert _gone_a(run_check(RUNNER_NOW, aliased, baseline=RUNNER_BEFORE)).severity.value == "error"


def test_a_module_put_in_the_providers_place_may_be_imported_from_by_the_provider(run_check):
    """Put in `sys.modules` under a provider module's name, its functions are what the provider's
    imports from there get: a provider file writing the name may call it."""
    served = {
        **INSTALLED,
        "plug/patches.py": "import sys\nimport plug.funcs as funcs\n\nsys.modules['pv.runner2'] = funcs\n",
    }
    assert _gone_a(run_check(RUNNER_NOW, served, baseline=RUNNER_BEFORE)).severity.value == "error"
    # Not put there: the provider's own `_num_tokens` of another class does not name it.
    alone = {**INSTALLED, "plug/patches.py": "import sys\nimport plug.funcs as funcs\n"}
    assert _gone_a(run_check(RUNNER_NOW, alone, baseline=RUNNER_BEFORE)).severity.value == "warning"
