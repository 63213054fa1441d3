"""Patch classes: `class P(Patch[Target])`, where the consumer's `Patch` sets every member of its
subclass on the target (arctic-inference's `ArcticPatch`). P's methods replace Target's for every
instance, so they are judged as a subclass's overrides would be: against the calls the provider
makes, and their reads of `self` against Target's members.
"""

from __future__ import annotations

from tests.test_contact import check, found

PATCHING = """
    from types import MethodType


    class Patch:
        @classmethod
        def __class_getitem__(cls, target):
            return type(f"{cls.__name__}[{target.__name__}]", (cls,), {"_patch_target": target})

        @classmethod
        def apply_patch(cls):
            target = cls._patch_target
            for name, attr in cls.__dict__.items():
                if name in ("_patch_target", "__dict__", "__weakref__", "__module__", "__doc__"):
                    continue
                if isinstance(attr, MethodType):
                    attr = MethodType(attr.__func__, target)
                setattr(target, name, attr)
"""
BEFORE = {
    "pv/engine.py": """
        class Engine:
            def run(self, x):
                return self.step(x)

            def step(self, x):
                return x
    """,
}
AFTER = {
    "pv/engine.py": """
        class Engine:
            def run(self, x):
                return self.step(x, scale=2)

            def step(self, x, scale=1):
                return x * scale
    """,
}
CONSUMER = {
    "plug/patching.py": PATCHING,
    "plug/fix.py": """
        from pv.engine import Engine
        from plug.patching import Patch


        class EnginePatch(Patch[Engine]):
            _orig_step = Engine.step

            def step(self, x):
                return self._orig_step(x) + 1


        def install():
            EnginePatch.apply_patch()
    """,
}


def test_a_patch_class_method_is_judged_as_an_override_of_its_target():
    [finding] = [f for f in check(CONSUMER, AFTER, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert (finding.severity.value, finding.symbol) == ("error", "plug.fix:EnginePatch.step")
    assert "pv.engine:Engine.run" in finding.message and "scale" in finding.message
    # The members read as `vars(cls)`: the same.
    by_vars = {**CONSUMER, "plug/patching.py": PATCHING.replace("cls.__dict__.items()", "vars(cls).items()")}
    assert [f[0] for f in found(check(by_vars, AFTER, baseline=BEFORE), "override-drift")] == ["error"]


def test_a_patch_class_calling_the_original_it_keeps_is_no_stale_copy():
    # `self._orig_step(x)` calls the original the class body keeps (`_orig_step = Engine.step`).
    result = check(CONSUMER, AFTER, baseline=BEFORE)
    assert found(result, "shadow-drift") == []
    # A body that does not call it copies the original, which changed since the baseline.
    copy = {**CONSUMER, "plug/fix.py": CONSUMER["plug/fix.py"].replace("self._orig_step(x) + 1", "x + 1")}
    assert [(s, sym) for s, sym, _ in found(check(copy, AFTER, baseline=BEFORE), "shadow-drift")] == [
        ("warning", "plug.fix:EnginePatch.step")
    ]
    # A static method calls it through the class's name.
    static = {
        **CONSUMER,
        "plug/fix.py": CONSUMER["plug/fix.py"]
        .replace("def step(self, x):", "@staticmethod\n            def step(x):")
        .replace("self._orig_step(x)", "EnginePatch._orig_step(x)"),
    }
    assert found(check(static, AFTER, baseline=BEFORE), "shadow-drift") == []


def test_a_patch_class_reads_its_targets_members_through_self():
    provider = {
        "pv/engine.py": AFTER["pv/engine.py"].replace("return x * scale", "return x * scale * self.gain"),
    }
    before = {"pv/engine.py": BEFORE["pv/engine.py"] + "\n            gain = 1\n"}
    consumer = {
        **CONSUMER,
        "plug/fix.py": CONSUMER["plug/fix.py"]
        .replace("return self._orig_step(x) + 1", "return self._orig_step(x, scale) + self.gain")
        .replace("def step(self, x):", "def step(self, x, scale=1):"),
    }
    # `gain` was a class attribute at the baseline and is gone at the pin: the patch reads it on an Engine.
    assert ("error", "pv.engine:Engine.gain") in [
        (s, sym) for s, sym, _ in found(check(consumer, provider, before), "missing-member")
    ]


def test_a_subscripted_base_that_sets_nothing_is_no_patch():
    box = """
        class Box:
            @classmethod
            def __class_getitem__(cls, item):
                return cls

            @classmethod
            def fill(cls):
                for name, attr in cls.__dict__.items():
                    print(name, attr)
    """
    consumer = {**CONSUMER, "plug/patching.py": box.replace("class Box", "class Patch")}
    assert found(check(consumer, AFTER, baseline=BEFORE), "override-drift") == []


STATE_BEFORE = {
    "pv/state.py": """
        def init_groups(size):
            return [size]


        def setup():
            return init_groups(4)
    """,
}
STATE_AFTER = {
    "pv/state.py": """
        def init_groups(size, backend):
            return [size, backend]


        def setup():
            return init_groups(4, "nccl")
    """,
}
STATE_CONSUMER = {
    "plug/patching.py": PATCHING,
    "plug/state_fix.py": """
        import pv.state as state
        from plug.patching import Patch


        class StatePatch(Patch[state]):
            _GROUP = None

            def init_groups(size):
                return [size * 2]


        def install():
            StatePatch.apply_patch()
    """,
}


def test_a_patch_class_of_a_module_patches_each_member():
    result = check(STATE_CONSUMER, STATE_AFTER, baseline=STATE_BEFORE)
    [finding] = [f for f in result.findings if f.symbol == "pv.state:init_groups" and f.rule.value == "arity-drift"]
    assert finding.severity.value == "error" and "the real call at pv/state.py:6" in finding.message
    # `_GROUP = None` adds a name of the consumer's own to the module.
    assert [(f.rule.value, f.severity.value) for f in result.findings if f.symbol == "pv.state:_GROUP"] == [
        ("patch-addition", "info")
    ]


def test_a_name_the_consumer_also_sets_to_a_literal_is_its_own():
    """arctic-inference stores its own process groups on vLLM's `parallel_state` (`_SP = _SP`),
    resets them to None, and reads them back with `getattr(parallel_state, "_SP", None)`: its own
    state, not a replacement of something gone (no baseline tells)."""
    consumer = {
        "plug/groups.py": """
            from pv import state


            def make():
                state._SP = object()


            def destroy():
                sp = getattr(state, "_SP", None)
                if sp is not None:
                    print(sp)
                state._SP = None
        """,
    }
    result = check(consumer, STATE_AFTER)
    assert [(f.rule.value, f.severity.value) for f in result.findings if f.symbol == "pv.state:_SP"] == [
        ("patch-addition", "info")
    ]
    # Without the reset to a literal, the read of it before the store keeps it a replacement.
    kept = {"plug/groups.py": consumer["plug/groups.py"].replace("state._SP = None", "print(state)")}
    assert [f.rule.value for f in check(kept, STATE_AFTER).findings if f.symbol == "pv.state:_SP"] == [
        "missing-patch-target"
    ]
