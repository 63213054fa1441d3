"""missing-patch-target and patch-addition: each patch pattern, its guard, and its correct variant."""

from __future__ import annotations

import pytest
from conftest import brief

PROVIDER = {
    "pv/__init__.py": "",
    "pv/core/__init__.py": "",
    "pv/core/utils.py": """
        def get_groups(config, spec):
            return []
    """,
    "pv/worker/__init__.py": "",
    "pv/worker/base.py": """
        class RunnerBase:
            def _dummy_run(self, n):
                return n
    """,
    "pv/worker/runner.py": """
        from pv.worker.base import RunnerBase

        class Mixin:
            def profile(self):
                pass

        class Runner(Mixin, RunnerBase):
            def execute(self, batch):
                pass
    """,
}


def consumer(source: str, **more: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source, **more}


def test_setattr_literal_name(run_check):
    bad = run_check(
        PROVIDER, consumer("import pv.core.utils as u\nsetattr(u, 'gone_fn', wrap(getattr(u, 'gone_fn')))\n")
    )
    assert brief(bad) == [("missing-patch-target", "error", "pv.core.utils:gone_fn", ["plug/mod.py:2"])]
    ok = run_check(PROVIDER, consumer("import pv.core.utils as u\nsetattr(u, 'get_groups', lambda config, spec: [])\n"))
    assert ok.findings == ()
    assert ok.summary.patch_sites == 1


def test_attribute_assignment_reading_the_original(run_check):
    src = "import pv.core.utils as u\norig = u.gone_fn\nu.gone_fn = lambda *a: orig(*a)\n"
    result = run_check(PROVIDER, consumer(src))
    [finding] = result.findings
    assert (finding.rule.value, finding.symbol, [str(s) for s in finding.sites]) == (
        "missing-patch-target",
        "pv.core.utils:gone_fn",
        ["plug/mod.py:2", "plug/mod.py:3"],  # the read of the original raises first
    )
    assert "unguarded" in finding.message and "raises AttributeError" in finding.message


def test_wrapper_that_keeps_the_original_on_a_class(run_check):
    src = """
        import functools
        from pv.worker.runner import Runner

        def install():
            original = Runner.execute_model
            @functools.wraps(original)
            def wrapped(self, *args, **kwargs):
                return original(self, *args, **kwargs)
            Runner.execute_model = wrapped
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("missing-patch-target", "error", "pv.worker.runner:Runner.execute_model", ["plug/mod.py:5", "plug/mod.py:9"])
    ]
    ok = src.replace("execute_model", "execute")
    assert run_check(PROVIDER, consumer(ok)).findings == ()


def test_inherited_members_across_modules_are_found(run_check):
    src = """
        from pv.worker.runner import Runner
        orig_dummy = Runner._dummy_run
        Runner._dummy_run = lambda self, n: orig_dummy(self, n)
        orig_profile = Runner.profile
        Runner.profile = lambda self: orig_profile(self)
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()


def test_loop_over_literal_names_with_getattr_and_setattr(run_check):
    src = """
        import pv.core.utils as u
        for name in ("get_groups", "get_config_from_groups"):
            original = getattr(u, name, None)
            if original is None:
                continue
            setattr(u, name, original)
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == (
        "missing-patch-target",
        "error",
        "pv.core.utils:get_config_from_groups",
    )
    assert "getattr-default" in finding.message and "silently installs nothing" in finding.message


def test_loop_over_pairs_and_dict_items(run_check):
    src = """
        import pv.core.utils as u
        PATCHES = {"get_groups": len, "vanished": len}
        for name, fn in PATCHES.items():
            setattr(u, name, fn)
        for name, fn in [("get_groups", len)]:
            setattr(u, name, fn)
    """
    result = run_check(PROVIDER, consumer(src))
    # No read of the original and no guard: assigning "vanished" only adds an attribute.
    assert brief(result) == [("patch-addition", "info", "pv.core.utils:vanished", ["plug/mod.py:4"])]


def test_loop_with_break_is_a_set_of_alternatives(run_check):
    src = """
        import pv.core.utils as u
        for name in ("old_name", "get_groups"):
            original = getattr(u, name, None)
            if original is None:
                continue
            setattr(u, name, original)
            break
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    gone = src.replace('"get_groups"', '"also_gone"')
    assert {f.symbol for f in run_check(PROVIDER, consumer(gone)).findings} == {
        "pv.core.utils:old_name",
        "pv.core.utils:also_gone",
    }


def test_a_name_a_breaking_loop_picks_is_any_of_its_names(run_check):
    """flash-head's shape: the loop picks the first name the provider has ("name varies across
    vLLM versions"), the patch after it installs under that name. It was judged as the last
    name alone: an error saying the guarded patch installs nothing, where one name exists."""
    src = """
        from pv.worker.runner import Runner

        def patch():
            method_name = None
            for name in ("_dummy_run", "dummy_run", "_run_dummy"):
                if hasattr(Runner, name):
                    method_name = name
                    break
            if method_name is None:
                return
            original = getattr(Runner, method_name)

            def patched(self, n):
                return original(self, n)

            setattr(Runner, method_name, patched)
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    # None of them there: each is reported.
    none = src.replace('"_dummy_run", ', "")
    assert {f.symbol for f in run_check(PROVIDER, consumer(none)).findings} == {
        "pv.worker.runner:Runner.dummy_run",
        "pv.worker.runner:Runner._run_dummy",
    }
    # The class gone and the installer returning: one patch is lost, under one of the names.
    gone = src.replace(
        "        from pv.worker.runner import Runner\n\n        def patch():\n",
        "        def patch():\n            try:\n                from pv.worker.gone import Runner\n"
        "            except ImportError:\n                return\n",
    )
    [finding] = run_check(PROVIDER, consumer(gone)).findings
    assert "1 patch(es) are never installed: pv.worker.gone:Runner._dummy_run or " in finding.message
    # Only read under the name it picks: the read resolves wherever one of them exists.
    read = src.replace("            setattr(Runner, method_name, patched)\n", "            return patched\n")
    assert run_check(PROVIDER, consumer(read)).findings == ()


def test_a_module_name_a_breaking_loop_picks_is_a_ladder(run_check):
    src = """
        import importlib
        import importlib.util

        def load():
            mod_name = None
            for candidate in ("pv.gone_a", "pv.core.utils"):
                if importlib.util.find_spec(candidate) is not None:
                    mod_name = candidate
                    break
            return importlib.import_module(mod_name)
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    # The plugin's own module as the other name: always there, nothing can fail.
    own = src.replace('"pv.core.utils"', '"plug.compat"')
    assert run_check(PROVIDER, {**consumer(own), "plug/compat.py": "X = 1\n"}).findings == ()
    neither = src.replace('"pv.core.utils"', '"pv.gone_b"')
    [finding] = run_check(PROVIDER, consumer(neither)).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")
    assert "every alternative of the import ladder" in finding.message


def test_target_through_getattr_of_a_class_and_local_variables(run_check):
    src = """
        import importlib

        def install():
            runner_mod = importlib.import_module("pv.worker.runner")
            cls = getattr(runner_mod, "Runner", None)
            if cls is None:
                return
            target = cls
            original = getattr(target, "capture", None)
            target.capture = original
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.symbol) == ("missing-patch-target", "pv.worker.runner:Runner.capture")
    assert "getattr-default" in finding.message


def test_owner_class_gone_behind_getattr_default(run_check):
    src = """
        import pv.worker.runner as r
        cls = getattr(r, "OldRunner", None)
        if cls is not None:
            cls.execute = lambda self, b: None
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.symbol) == ("missing-patch-target", "pv.worker.runner:OldRunner.execute")
    assert "the patched object is gone" in finding.message


def test_hasattr_guard(run_check):
    src = """
        from pv.core import utils
        if hasattr(utils, "gone_fn"):
            utils.gone_fn = len
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.rule.value == "missing-patch-target" and "hasattr" in finding.message


# vllm-ascend's forward-compatible patch: a target only a newer release has, behind hasattr.
GUARDED_NEWER = """
    from pv.core import utils
    if hasattr(utils, "newer_fn"):
        utils.newer_fn = len
"""
# vllm-mindspore's patch of `cli.serve.run_api_server_worker_proc` (reading the original first),
# a name no vLLM it ran on had there: it would raise at the baseline too, where the consumer
# works, so that code does not run.
UNGUARDED_GONE = "import pv.core.utils as u\norig = u.gone_fn\nu.gone_fn = lambda *a: orig(*a)\n"


@pytest.mark.parametrize(
    ("src", "name", "said"),
    [
        (GUARDED_NEWER, "newer_fn", "the same at the baseline, where the consumer works"),
        (
            UNGUARDED_GONE,
            "gone_fn",
            "it fails at the baseline too: not a change since (code that does not run there, or that was broken there already)",
        ),
    ],
)
def test_a_patch_of_a_name_missing_at_the_baseline_too_is_a_warning(run_check, src, name, said):
    [alone] = run_check(PROVIDER, consumer(src)).findings  # no baseline to tell: an error
    assert (alone.rule.value, alone.severity.value) == ("missing-patch-target", "error")
    [inert] = run_check(PROVIDER, consumer(src), baseline=PROVIDER).findings
    assert (inert.rule.value, inert.severity.value) == ("missing-patch-target", "warning")
    assert said in inert.message
    # There at the baseline, gone now: the patch the consumer relied on no longer installs.
    had_it = {
        **PROVIDER,
        "pv/core/utils.py": f"def get_groups(config, spec):\n    return []\n\ndef {name}():\n    pass\n",
    }
    [gone] = run_check(PROVIDER, consumer(src), baseline=had_it).findings
    assert (gone.rule.value, gone.severity.value) == ("missing-patch-target", "error")


def test_not_hasattr_early_return_guard(run_check):
    src = """
        from pv.core import utils
        def install():
            if not hasattr(utils, "gone_fn"):
                return
            utils.gone_fn = len
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.rule.value == "missing-patch-target" and "hasattr" in finding.message


def test_try_guard(run_check):
    src = """
        from pv.core import utils
        def install():
            try:
                orig = utils.gone_fn
                utils.gone_fn = orig
            except AttributeError:
                pass
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.rule.value == "missing-patch-target" and "guarded (try)" in finding.message


def test_addition_is_info_not_missing(run_check):
    src = "from pv.worker.runner import Runner\nRunner._plugin_marker = True\nRunner.extra = staticmethod(len)\n"
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [
        ("patch-addition", "info", "pv.worker.runner:Runner._plugin_marker", ["plug/mod.py:2"]),
        ("patch-addition", "info", "pv.worker.runner:Runner.extra", ["plug/mod.py:3"]),
    ]


def test_marker_read_with_default_then_set_is_an_addition(run_check):
    src = """
        import pv.core.utils as u
        def install():
            if getattr(u, "_plug_patched", False):
                return
            u.get_groups = len
            u._plug_patched = True
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("patch-addition", "info", "pv.core.utils:_plug_patched", ["plug/mod.py:6"])
    ]


@pytest.mark.parametrize("test", ["archs is None", "getattr(Runner, '_plug_archs', None) is None"])
def test_state_read_with_a_none_default_and_set_where_it_is_none_is_an_addition(run_check, test: str):
    """unsloth-zoo keeps the architectures it adds on vLLM's `ModelConfig`: `archs =
    getattr(ModelConfig, "_unsloth_replayssm_archs", None)`, then `if archs is None:` it makes the
    set and stores it there. Stored only where the class lacks it: the consumer's own."""
    src = f"""
        from pv.worker.runner import Runner

        def remember(name):
            archs = getattr(Runner, "_plug_archs", None)
            if {test}:
                archs = set()
                Runner._plug_archs = archs
            archs.add(name)
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("patch-addition", "info", "pv.worker.runner:Runner._plug_archs", ["plug/mod.py:7"])
    ]
    # Stored where a value is there already: not what a test for its absence guards.
    other = src.replace(" is None:", " is not None:")
    assert [f.rule.value for f in run_check(PROVIDER, consumer(other)).findings] == ["missing-patch-target"]


def test_patches_of_the_consumers_own_classes_are_ignored(run_check):
    src = """
        class Mine:
            def run(self):
                pass
        Mine.run = lambda self: None
        Mine.anything = 1
        setattr(Mine, "other", 2)
    """
    result = run_check(PROVIDER, consumer(src))
    assert [f.rule.value for f in result.findings] == ["no-contact"] and result.summary.patch_sites == 0


def test_class_passed_to_a_helper_in_another_module(run_check):
    files = consumer(
        """
        from pv.worker.runner import Runner
        from plug.helpers import wrap_method, patch_class

        wrap_method(Runner, "execute")
        wrap_method(Runner, "vanished_method")
        patch_class(Runner)
        """,
        **{
            "plug/helpers.py": """
                def wrap_method(cls, method_name):
                    original = getattr(cls, method_name, None)
                    if original is None:
                        return False
                    setattr(cls, method_name, original)
                    return True

                def patch_class(klass):
                    orig = klass.profile_gone
                    klass.profile_gone = orig
            """
        },
    )
    result = run_check(PROVIDER, files)
    assert brief(result) == [
        (
            "missing-patch-target",
            "error",
            "pv.worker.runner:Runner.profile_gone",
            ["plug/helpers.py:9", "plug/helpers.py:10"],
        ),
        ("missing-patch-target", "error", "pv.worker.runner:Runner.vanished_method", ["plug/helpers.py:5"]),
    ]
    assert "plug/mod.py:5" in result.findings[1].message  # the call that passed the name


def test_helper_outside_the_scanned_subpackage_is_followed(run_check):
    files = {
        "plug/__init__.py": "",
        "plug/shared.py": """
            import importlib
            def apply(module_path):
                mod = importlib.import_module(module_path)
                Coordinator = getattr(mod, "Coordinator", None)
                if Coordinator is None:
                    return False
                original = getattr(Coordinator, "capture", None)
                Coordinator.capture = original
                return True
        """,
        "plug/vl/__init__.py": "",
        "plug/vl/patch.py": "from plug.shared import apply\nAPPLIED = apply('pv.worker.runner')\n",
    }
    result = run_check(PROVIDER, files, consumer_package="plug.vl")
    assert brief(result) == [
        ("missing-patch-target", "error", "pv.worker.runner:Coordinator.capture", ["plug/shared.py:8"])
    ]


def test_class_from_an_import_ladder_passed_to_a_helper(run_check):
    src = """
        def _patch(attention):
            orig = attention.execute
            attention.execute = orig

        try:
            from pv.old_layer import Runner
        except ImportError:
            from pv.worker.runner import Runner
        _patch(Runner)
    """
    result = run_check(PROVIDER, consumer(src))
    assert result.findings == ()
    assert result.summary.patch_sites == 1


def test_classmethod_rewrap(run_check):
    src = """
        from pv.worker.runner import Runner
        original = Runner.execute.__func__
        def execute(cls, batch):
            return original(cls, batch)
        Runner.execute = classmethod(execute)
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()


# ATOM's SGLang bridges keep the test in a name and patch the older API in the else branch:
# `uses_shape_api = hasattr(Runner, "capture_one_shape")` / `if uses_shape_api: ... else: <old names>`.
KEPT_TEST = """
    from pv.worker.runner import Runner
    def install():
        uses_new_api = {test}
        if {condition}:
            original = Runner.execute
            Runner.execute = original
        else:
            original = Runner.execute_old
            Runner.execute_old = original
"""


@pytest.mark.parametrize(
    ("test", "condition"),
    [
        ('hasattr(Runner, "execute")', "uses_new_api"),
        ('all(hasattr(Runner, name) for name in ("execute", "profile"))', "uses_new_api"),
        ('not hasattr(Runner, "execute")', "not uses_new_api"),
    ],
)
def test_the_older_api_branch_of_a_kept_hasattr_test_is_a_fallback(run_check, test: str, condition: str):
    result = run_check(PROVIDER, consumer(KEPT_TEST.format(test=test, condition=condition)))
    [finding] = [f for f in result.findings if f.rule.value == "missing-patch-target"]
    assert finding.symbol == "pv.worker.runner:Runner.execute_old" and finding.severity.value == "info"
    assert "a fallback for older providers" in finding.message


def test_the_older_api_branch_runs_where_one_tested_name_is_missing(run_check):
    # `Runner.gone` is absent, so `all(...)` is false and the else branch runs: its missing target is an error.
    src = KEPT_TEST.format(test='all(hasattr(Runner, name) for name in ("execute", "gone"))', condition="uses_new_api")
    result = run_check(PROVIDER, consumer(src))
    [finding] = [f for f in result.findings if f.rule.value == "missing-patch-target"]
    assert finding.symbol == "pv.worker.runner:Runner.execute_old" and finding.severity.value == "error"


LEAVING_TEST = """
    from pv.worker.runner import Runner
    def install():
        {keep}
        if {condition}:
            return
        original = Runner.{name}
        Runner.{name} = original
"""


@pytest.mark.parametrize(
    ("condition", "name", "severity", "says"),
    [
        # The rest runs only where Runner.gone exists: a guarded patch, which then installs nothing.
        ('not hasattr(Runner, "gone")', "gone", "error", "guarded (hasattr)"),
        # The rest runs only where Runner.execute is absent: a fallback for older providers.
        ('hasattr(Runner, "execute")', "execute_old", "info", "a fallback for older providers"),
    ],
)
def test_the_rest_of_a_block_a_kept_hasattr_test_leaves_is_guarded_as_a_written_one(
    run_check, condition: str, name: str, severity: str, says: str
):
    written = run_check(PROVIDER, consumer(LEAVING_TEST.format(keep="pass", condition=condition, name=name)))
    kept_condition = "not uses_new_api" if condition.startswith("not ") else "uses_new_api"
    keep = f"uses_new_api = {condition.removeprefix('not ')}"
    kept = run_check(PROVIDER, consumer(LEAVING_TEST.format(keep=keep, condition=kept_condition, name=name)))
    [finding] = [f for f in kept.findings if f.rule.value == "missing-patch-target"]
    assert (finding.symbol, finding.severity.value) == (f"pv.worker.runner:Runner.{name}", severity)
    assert says in finding.message
    assert [(f.rule, f.symbol, f.severity) for f in kept.findings] == [
        (f.rule, f.symbol, f.severity) for f in written.findings
    ]


def test_a_deeper_read_of_a_patched_attribute_goes_with_the_patch(run_check):
    # ATOM's Kimi-K3 bridge keeps `original = ModelRunner.kimi_linear_config` and calls
    # `original.__get__(...)` in its replacement: reading the gone attribute is what raises first.
    src = """
        from pv.worker.runner import Runner
        def install():
            original = Runner.gone
            def replacement(self):
                return original.__get__(self)
            Runner.gone = property(replacement)
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        (
            "missing-patch-target",
            "error",
            "pv.worker.runner:Runner.gone",
            ["plug/mod.py:3", "plug/mod.py:5", "plug/mod.py:6"],
        )
    ]


# vLLM 0.23 moved `config.model.is_cumem_allocator_available` onto `Platform`; vllm-ascend keeps a
# guarded patch of the old name (for older releases) and overrides the method on its platform.
MOVED_BEFORE = {
    "pv/__init__.py": "",
    "pv/config.py": "def is_fast():\n    return False\n",
    "pv/platform.py": "class Platform:\n    def name(self):\n        return 'base'\n",
}
MOVED_AFTER = {
    "pv/__init__.py": "",
    "pv/config.py": "from pv.platform import current\n\ndef check():\n    return current.is_fast()\n",
    "pv/platform.py": """
        class Platform:
            def name(self):
                return 'base'

            def is_fast(self):
                return False

        current = Platform()
    """,
    "pv/cuda.py": """
        from pv.platform import Platform

        class CudaPlatform(Platform):
            def is_fast(self):
                return True
    """,
}
GUARDED_OLD_NAME = """
    import pv.config as m

    def _fast():
        return True

    if hasattr(m, "is_fast"):
        m.is_fast = _fast
"""
OVERRIDE_NEW_HOME = """
    from pv.platform import Platform

    class MyPlatform(Platform):
        def is_fast(self):
            return True
"""


@pytest.mark.parametrize("baseline", [None, MOVED_BEFORE])
def test_a_guarded_patch_of_a_name_moved_onto_a_class_the_consumer_overrides_is_a_warning(run_check, baseline):
    files = consumer(GUARDED_OLD_NAME, **{"plug/platform.py": OVERRIDE_NEW_HOME})
    [finding] = run_check(MOVED_AFTER, files, baseline=baseline).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == (
        "missing-patch-target",
        "warning",
        "pv.config:is_fast",
    )
    assert "but plug.platform:MyPlatform.is_fast overrides pv.platform:Platform.is_fast" in finding.message
    # The consumer does not answer at the new home: the patch silently does nothing, an error.
    alone = run_check(MOVED_AFTER, consumer(GUARDED_OLD_NAME), baseline=baseline)
    assert [(f.rule.value, f.severity.value) for f in alone.findings] == [("missing-patch-target", "error")]


@pytest.mark.parametrize(
    "elsewhere",
    [
        "def is_fast():\n    return True\n",  # a module-level function of that name lives on
        "class Other:\n    def is_fast(self):\n        return True\n",  # a class of another family has it
    ],
)
def test_a_name_defined_outside_the_overridden_class_family_is_not_taken_as_moved(run_check, elsewhere):
    provider = {**MOVED_AFTER, "pv/util.py": elsewhere}
    files = consumer(GUARDED_OLD_NAME, **{"plug/platform.py": OVERRIDE_NEW_HOME})
    result = run_check(provider, files)
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("missing-patch-target", "error")]


def test_a_guarded_patch_of_a_class_attribute_is_not_taken_as_moved(run_check):
    """Only a module's function can have moved onto a class the consumer overrides; a class that
    lost a method of that name is judged as a missing target, whatever else the consumer overrides."""
    provider = {**MOVED_AFTER, "pv/worker.py": "class Worker:\n    def run(self):\n        pass\n"}
    patch = "import pv.worker as w\n\ndef _fast(self):\n    return True\n\nif hasattr(w.Worker, 'is_fast'):\n    w.Worker.is_fast = _fast\n"
    files = consumer(patch, **{"plug/platform.py": OVERRIDE_NEW_HOME})
    result = run_check(provider, files)
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("missing-patch-target", "error")]


def test_an_addition_under_a_helper_testing_the_name_is_absent(run_check):
    """vllm-ascend 0.27: `_USES_LEGACY = _needs_legacy()`, whose body is `return not hasattr(enc,
    "PROMPTS")`, then `if _USES_LEGACY: enc.PROMPTS = ...`: the name is added where it is missing."""
    src = """
        import pv.worker.runner as runner

        def _needs_legacy():
            \"\"\"Older releases lack ADDED.\"\"\"
            return not hasattr(runner, "ADDED")

        LEGACY = _needs_legacy()

        if LEGACY:
            runner.ADDED = {}
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("patch-addition", "info", "pv.worker.runner:ADDED", ["plug/mod.py:10"])
    ]


# kvcached patches vLLM's `TransferTopology.__init__`, a class vLLM 0.23 made, through
# `getattr(module, "TransferTopology", None)` and a return when it is None.
GUARDED_NEW_CLASS = """
    import pv.core.utils as u

    def install():
        Topology = getattr(u, "Topology", None)
        if Topology is None:
            return
        original = Topology.__init__

        def patched(self, *args, **kwargs):
            original(self, *args, **kwargs)

        Topology.__init__ = patched
"""
GUARDED_NEW_FUNCTION = """
    import pv.core.utils as u

    def install():
        if hasattr(u, "new_fn"):
            u.new_fn = len
"""
NEW_AT_2 = {
    **PROVIDER,
    "pv/core/utils.py": """
        def get_groups(config, spec):
            return []

        def new_fn(x):
            return x

        class Topology:
            def __init__(self, n):
                self.n = n
    """,
}


@pytest.mark.parametrize(
    ("src", "target"),
    [(GUARDED_NEW_CLASS, "pv.core.utils:Topology.__init__"), (GUARDED_NEW_FUNCTION, "pv.core.utils:new_fn")],
)
def test_a_guarded_patch_of_what_came_after_the_checked_release_is_a_warning(run_check, src, target):
    """At a release older than the baseline, a guarded patch of a name the baseline has and this
    release lacks is the guard doing what it was written for: the name came after this release,
    and with it the code the patch changes."""

    def patch_findings(version, baseline_version="2.0.0"):
        result = run_check(
            PROVIDER, consumer(src), version=version, baseline=NEW_AT_2, baseline_version=baseline_version
        )
        return [f for f in result.findings if f.rule.value == "missing-patch-target"]

    [before] = patch_findings("1.0.0")
    assert (before.rule.value, before.severity.value, before.symbol) == ("missing-patch-target", "warning", target)
    assert "the baseline (2.0.0) has it: it came after 1.0.0" in before.message
    # Newer than the baseline, the name is gone: the patch the consumer relied on silently does nothing.
    [after] = patch_findings("3.0.0")
    assert (after.rule.value, after.severity.value, after.symbol) == ("missing-patch-target", "error", target)
    # Versions not known: which way the name went is not either.
    for version, baseline_version in [(None, "2.0.0"), ("1.0.0", None), ("main", "2.0.0")]:
        [alone] = patch_findings(version, baseline_version)
        assert alone.severity.value == "error"


# vllm-mindspore sets its platform on `vllm.platforms` and on each module that imported it there;
# vLLM 0.13's attention selector imports it inside its function instead of at its top.
PLATFORMS = {
    "pv/__init__.py": "",
    "pv/platforms.py": "current_platform = object()\n",
    "pv/selector.py": """
        def get_backend():
            from pv.platforms import current_platform
            return current_platform
    """,
}
SELECTOR_AT_BASELINE = """
    from pv.platforms import current_platform

    def get_backend():
        return current_platform
"""


@pytest.mark.parametrize(("origin_patched", "reads_it"), [(True, True), (False, True), (True, False)])
def test_a_patched_import_gone_since_whose_origin_the_consumer_patches_too(run_check, origin_patched, reads_it):
    """Where the module no longer writes the name at all, it uses something else instead (vLLM
    0.30's attention utilities call `bind_kv_cache_to_layers`, not the `bind_kv_cache` vllm-ascend
    patches in them and where it is defined): that code runs unpatched."""
    source = """
        import pv.platforms
        import pv.selector
        mine = object()
        pv.platforms.current_platform = mine
        pv.selector.current_platform = mine
    """
    if not origin_patched:
        source = source.replace("pv.platforms.current_platform = mine", "kept = mine")
    baseline = {**PLATFORMS, "pv/selector.py": SELECTOR_AT_BASELINE}
    pin = PLATFORMS if reads_it else {**PLATFORMS, "pv/selector.py": "def get_backend():\n    return None\n"}
    [finding] = run_check(pin, consumer(source), baseline=baseline).findings
    assert (finding.rule.value, finding.symbol) == ("missing-patch-target", "pv.selector:current_platform")
    if origin_patched and reads_it:
        assert finding.severity.value == "warning"
        assert (
            "at the baseline it was pv.platforms:current_platform, imported there, and the consumer patches "
            "pv.platforms:current_platform itself (plug/mod.py:4)" in finding.message
        )
    else:
        assert finding.severity.value == "error"
        assert "the provider's code runs unpatched" in finding.message


def test_a_patch_of_another_module_importing_the_origin_is_not_one_of_the_origin(run_check):
    """vllm-ascend sets `gumbel_sample` on vLLM's sampler, which imported it from `gumbel`, and on
    the speculator, which no longer does: the origin itself is not patched."""
    provider = {**PLATFORMS, "pv/other.py": "from pv.platforms import current_platform\n"}
    source = """
        import pv.other
        import pv.selector
        mine = object()
        pv.other.current_platform = mine
        pv.selector.current_platform = mine
    """
    baseline = {**provider, "pv/selector.py": SELECTOR_AT_BASELINE}
    [finding] = [
        f for f in run_check(provider, consumer(source), baseline=baseline).findings if f.severity.value != "info"
    ]
    assert (finding.symbol, finding.severity.value) == ("pv.selector:current_platform", "error")
