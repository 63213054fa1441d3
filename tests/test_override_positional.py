"""override-drift: a parameter the base gained since the baseline, passed by position.

vLLM 0.34 calls `self.scheduler.schedule(throttle)` and
`backend.get_supported_kernel_block_sizes(spec)`: overrides written against older
releases (`schedule(self)`) fail there, though no call passes the new parameter by
keyword. A call found by the method's name alone is weaker evidence than a keyword:
it counts only where no provider class outside the base's family defines the name, or
where its receiver is typed as one of the family."""

from __future__ import annotations

import pytest

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.name_sites import NameSearch, SiteKind
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, found

BASE_A = "class Scheduler:\n    def schedule(self):\n        return []\n"
BASE_B = "class Scheduler:\n    def schedule(self, throttle=False):\n        return []\n"
ENGINE = """
from pv.sched import Scheduler

class Engine:
    scheduler: Scheduler

    def step(self, throttle):
        return self.scheduler.schedule(throttle)

def run(sched, throttle):
    return sched.schedule(throttle)
"""
# At the baseline the engine passed nothing.
ENGINE_A = ENGINE.replace(".schedule(throttle)", ".schedule()")
KERNEL = "class Kernel:\n    def schedule(self, stream):\n        return stream\n"

CONSUMER = {
    "plug/sched.py": """
        from pv.sched import Scheduler

        class MyScheduler(Scheduler):
            def schedule(self):
                return []
    """
}


def drift(provider, baseline=None):
    baseline = baseline or {"pv/sched.py": BASE_A, "pv/engine.py": ENGINE_A}
    return found(check(CONSUMER, provider, baseline), "override-drift")


def test_a_new_parameter_passed_by_position_is_an_error():
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": ENGINE}
    assert drift(pin) == [("error", "plug.sched:MyScheduler.schedule", "plug/sched.py:4")]
    result = check(CONSUMER, pin, {"pv/sched.py": BASE_A, "pv/engine.py": ENGINE_A})
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert ".schedule(1 positional) at pv/engine.py:" in finding.message and "throttle new since 1.0" in finding.message


def test_a_class_outside_the_family_defining_the_name_leaves_only_typed_receivers():
    # `Kernel.schedule(stream)` fits `sched.schedule(throttle)` too: that call may be a kernel's.
    # `self.scheduler` of Engine is annotated `Scheduler`: that call is the scheduler's.
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": ENGINE, "pv/kernel.py": KERNEL}
    assert drift(pin) == [("error", "plug.sched:MyScheduler.schedule", "plug/sched.py:4")]
    untyped = ENGINE.replace("    scheduler: Scheduler\n", "    scheduler = None\n")
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": untyped, "pv/kernel.py": KERNEL}
    assert drift(pin) == [("warning", "plug.sched:MyScheduler.schedule", "plug/sched.py:4")]


def test_a_call_the_override_could_not_take_at_the_baseline_either_is_not_on_it():
    # The same function made a one-argument call at the baseline, where `schedule(self)` could
    # not take it and the consumer worked: that call is on another object.
    old_engine = "def run(sched, throttle):\n    return sched.schedule(throttle)\n"
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": old_engine}
    assert drift(pin, {"pv/sched.py": BASE_A, "pv/engine.py": old_engine}) == [
        ("warning", "plug.sched:MyScheduler.schedule", "plug/sched.py:4")
    ]


def test_a_subclass_made_in_a_function_is_of_the_family_by_its_header():
    # vLLM's `create_composite_attention_backend` defines its backend class inside a function:
    # the index cannot place it, its header names the base.
    local = "from pv.sched import Scheduler\n\ndef make():\n    class Local(Scheduler):\n        def schedule(self, throttle=False):\n            return []\n    return Local\n"
    untyped = ENGINE.replace("    scheduler: Scheduler\n", "    scheduler = None\n")
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": untyped, "pv/local.py": local}
    assert drift(pin) == [("error", "plug.sched:MyScheduler.schedule", "plug/sched.py:4")]


def test_a_built_in_type_s_method_name_counts_only_on_a_typed_receiver():
    # `a.update(b)` of two dicts fits `Stats.update(self, other=None)` as well: not evidence.
    consumer = {
        "plug/stats.py": "from pv.stats import Stats\n\nclass MyStats(Stats):\n    def update(self):\n        return None\n"
    }
    a = {"pv/stats.py": "class Stats:\n    def update(self):\n        return None\n"}
    b = {
        "pv/stats.py": "class Stats:\n    def update(self, other=None):\n        return None\n",
        "pv/util.py": "def merge(a: dict, b: dict):\n    a.update(b)\n    return a\n",
    }
    assert found(check(consumer, b, a), "override-drift") == [
        ("warning", "plug.stats:MyStats.update", "plug/stats.py:4")
    ]


# vLLM 0.34 dropped `AttentionMetadataBuilder.build_for_drafting`; ATOM's builders still override
# it: nothing calls them as that method any more, and nothing fails to say so.
DRAFTING = {
    "plug/b.py": "from pv.base import Builder\n\nclass MyBuilder(Builder):\n    def build_for_drafting(self, x):\n        return x\n"
}
BUILDER_A = {
    "pv/base.py": "class Builder:\n    def build(self, x):\n        return x\n\n    def build_for_drafting(self, x):\n        return self.build(x)\n"
}
BUILDER_B = {"pv/base.py": "class Builder:\n    def build(self, x):\n        return x\n"}


def test_an_override_of_a_method_the_provider_dropped_is_a_warning():
    result = check(DRAFTING, BUILDER_B, BUILDER_A)
    assert found(result, "override-drift") == [("warning", "plug.b:MyBuilder.build_for_drafting", "plug/b.py:4")]
    assert "silently gone" in result.findings[0].message
    # At the baseline, without one, or where the consumer calls it itself: nothing.
    assert found(check(DRAFTING, BUILDER_A, BUILDER_A), "override-drift") == []
    assert found(check(DRAFTING, BUILDER_B), "override-drift") == []
    calling = {
        "plug/b.py": DRAFTING["plug/b.py"] + "\n    def build(self, x):\n        return self.build_for_drafting(x)\n"
    }
    # An override handing on to the dropped original (`super().build_for_drafting(x)`) is dropped too.
    handing_on = {"plug/b.py": DRAFTING["plug/b.py"].replace("return x", "return super().build_for_drafting(x)")}
    assert ("warning", "plug.b:MyBuilder.build_for_drafting", "plug/b.py:4") in found(
        check(handing_on, BUILDER_B, BUILDER_A), "override-drift"
    )
    # (Its new `build` is idle: the provider read `.build` at the baseline only; see test_idle_hooks.)
    assert [f[1] for f in found(check(calling, BUILDER_B, BUILDER_A), "override-drift")] == ["plug.b:MyBuilder.build"]
    # An override that only raises customised nothing (verl's receive-only weight-transfer adapter
    # raises in `trainer_send_weights`, which vLLM 0.30's engine base no longer has).
    raising = {"plug/b.py": DRAFTING["plug/b.py"].replace("return x", 'raise NotImplementedError("receive only")')}
    assert found(check(raising, BUILDER_B, BUILDER_A), "override-drift") == []


# vLLM 0.11.2 keeps calling a platform's `get_attn_backend_cls` the old way, `use_v1` first, where
# the platform's method still takes it: vllm-kunlun's does, and takes one argument fewer.
PLATFORM_A = """
class Platform:
    @classmethod
    def backend(cls, size, use_v1, dtype):
        return ""
"""
PLATFORM_B = """
class Platform:
    @classmethod
    def backend(cls, size, dtype, kind=None):
        return ""
"""
SELECTOR = """
import inspect
from pv.platform import Platform

def select(platform: Platform, size, dtype, kind):
    sig = inspect.signature(platform.backend)
    if "use_v1" in sig.parameters:
        return platform.backend(size, True, dtype, kind)
    return platform.backend(size, dtype, kind)
"""
SELECTOR_A = "def select(platform, size, dtype):\n    return platform.backend(size, True, dtype)\n"
PLUGIN = """
    from pv.platform import Platform

    class MyPlatform(Platform):
        @classmethod
        def backend(cls, size, use_v1, dtype):
            return "mine"
"""


def test_a_call_made_only_where_the_method_takes_a_parameter_the_override_has_reaches_it():
    baseline = {"pv/platform.py": PLATFORM_A, "pv/select.py": SELECTOR_A}
    pin = {"pv/platform.py": PLATFORM_B, "pv/select.py": SELECTOR}
    result = check({"plug/platform.py": PLUGIN}, pin, baseline)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert (finding.severity.value, finding.symbol) == ("error", "plug.platform:MyPlatform.backend")
    assert finding.message.startswith("the provider calls .backend(4 positional) at pv/select.py:7;")
    # An override that no longer takes `use_v1` is not called that way: the other call fits it.
    fitting = PLUGIN.replace("size, use_v1, dtype)", "size, dtype, kind=None)")
    assert found(check({"plug/platform.py": fitting}, pin, baseline), "override-drift") == []
    # Without the test, a call the base cannot take is another class's method of that name.
    untested = {**pin, "pv/select.py": SELECTOR.replace('if "use_v1" in sig.parameters:', "if size:")}
    assert [
        f.severity.value
        for f in check({"plug/platform.py": PLUGIN}, untested, baseline).findings
        if f.rule.value == "override-drift"
    ] == ["warning"]


def test_the_parameter_a_call_is_made_for_is_kept_in_the_cache():
    """A warm run reads the sites from the cache: what a call is made only for (`NameSite.taken`)
    must come back with them, or a warm check would judge the call as the cold one did not."""
    cache = AnalysisCache()
    tree = MemoryTree(dedent_files({"pv/__init__.py": "", "pv/select.py": SELECTOR}), "provider")
    for _ in range(2):  # the second search reads what the first stored
        sites = NameSearch(tree, "pv", cache).find(["backend"])["backend"]
        assert [(s.line, s.taken) for s in sites if s.kind is SiteKind.CALL] == [(7, "use_v1"), (8, "")]


@pytest.mark.parametrize(
    ("use", "severity"),
    [
        # Named nowhere but in its definition: it may be loaded by a path not read (as before).
        ("", "error"),
        # Named only to call a static method or read a class attribute: no instance is made.
        ("from plug.sched import MyScheduler\n\nMyScheduler.helper()\nMyScheduler.LIMIT\n", "warning"),
        ("from plug.sched import MyScheduler as S\n\nS.helper()\n", "warning"),
        # Made, handed on, named by a path, or read for what may make one: it may run.
        ("from plug.sched import MyScheduler\n\nMyScheduler()\n", "error"),
        ("from plug.sched import MyScheduler\n\nMyScheduler.helper()\nMyScheduler.create()\n", "error"),
        ("from plug.sched import MyScheduler\n\nSCHEDULERS = [MyScheduler]\n", "error"),
        ('SCHEDULER = "plug.sched.MyScheduler"\n', "error"),
        ("import plug.sched\n\nplug.sched.MyScheduler.helper()\nplug.sched.MyScheduler.run()\n", "error"),
    ],
)
def test_a_class_named_only_to_read_its_static_members_is_not_seen_made(use: str, severity: str):
    """arctic-inference keeps a copy of vLLM's `FlashAttentionBackend`, whose module only calls its
    static `get_fp8_dtype_for_flashattn`; the backend it installs is another class, deriving from
    vLLM's. The copy's narrower `get_supported_kernel_block_sizes` never meets vLLM 0.31's calls."""
    consumer = {
        "plug/sched.py": CONSUMER["plug/sched.py"]
        + """
            LIMIT = 4

            @staticmethod
            def helper():
                return 1

            @classmethod
            def create(cls):
                return cls()
        """,
        "plug/use.py": use,
    }
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": ENGINE}
    result = check(consumer, pin, {"pv/sched.py": BASE_A, "pv/engine.py": ENGINE_A})
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert finding.severity.value == severity
    told = "(but plug.sched:MyScheduler is not seen made or handed over: its code names it only to read its static"
    assert (told in finding.message) == (severity == "warning")


@pytest.mark.parametrize(("decorator", "severity"), [("", "warning"), ("@register\n", "error")])
def test_a_static_read_in_the_class_s_own_module_counts_and_a_decorated_class_may_be_registered(
    decorator: str, severity: str
):
    source = f"""
from pv.sched import Scheduler

def register(cls):
    return cls

{decorator}class MyScheduler(Scheduler):
    @staticmethod
    def helper():
        return 1

    def schedule(self):
        return [MyScheduler.helper()]
"""
    pin = {"pv/sched.py": BASE_B, "pv/engine.py": ENGINE}
    result = check({"plug/sched.py": source}, pin, {"pv/sched.py": BASE_A, "pv/engine.py": ENGINE_A})
    assert [f.severity.value for f in result.findings if f.rule.value == "override-drift"] == [severity]
