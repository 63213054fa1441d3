"""arity-drift of replacements judged by real calls, caught TypeErrors, patches that vanished since the
baseline, and patches named by a dotted path through a registry."""

from __future__ import annotations

import ast

import pytest
from conftest import brief, only

PROVIDER = {
    "pv/__init__.py": "",
    "pv/ops.py": """
        def conv(x, weight, bias=None, cache_indices=None, block_idx=None):
            return x
    """,
    "pv/mixer.py": """
        from pv.ops import conv

        class Mixer:
            def forward(self, x, w):
                return conv(x, w, cache_indices=None, block_idx=3)
    """,
    "pv/coordinator.py": """
        def get_coordinator(config, max_len, use_eagle, metrics=None):
            return config
    """,
    "pv/manager.py": """
        from pv.coordinator import get_coordinator

        def build(config):
            return get_coordinator(config=config, max_len=1, use_eagle=False, metrics=None)
    """,
    "pv/custom_op.py": """
        class CustomOp:
            def forward(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)

        class Norm(CustomOp):
            def forward_native(self, x, residual=None):
                return x

        class Other(CustomOp):
            def forward_native(self, a, b, c):
                return a

            def run(self, a, b, c):
                return self.forward(a, b, c)
    """,
    "pv/runner.py": """
        from typing import TYPE_CHECKING

        class Runner:
            def init_cache(self, config, is_profiling=False):
                pass

            def capture(self):
                self.init_cache({})
    """,
    "pv/profiling.py": """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from pv.runner import Runner

        def profile(runner: "Runner") -> None:
            runner.init_cache({}, is_profiling=True)
    """,
    "pv/utils.py": "def decorate_logs(process_name=None):\n    pass\n",
}


def consumer(source: str, **more: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source, **{f"plug/{k}.py": v for k, v in more.items()}}


def test_a_narrower_replacement_that_a_real_provider_call_misses_is_an_error_citing_it(run_check):
    src = """
        import pv.ops

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        pv.ops.conv = conv
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "cannot take the real call at pv/mixer.py:5: it passes block_idx=" in finding.message


def test_a_replacement_defined_in_a_module_that_is_not_scanned_is_judged_all_the_same(run_check):
    # vllm-ascend's shape: the kernels module names the provider only in a comment (so it is not
    # scanned up front); the patch module imports the replacement from it.
    kernels = """
        # adapted from pv/ops.py
        def conv(x, weight, bias=None, cache_indices=None):
            return x
    """
    src = """
        import pv.ops
        from plug.kernels import conv

        pv.ops.conv = conv
    """
    [finding] = run_check(PROVIDER, consumer(src, kernels=kernels)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "cannot take the real call at pv/mixer.py:5: it passes block_idx=" in finding.message


def test_a_patch_of_an_importing_module_reaches_only_the_calls_that_read_its_binding(run_check):
    # vllm-ascend's shape: `sampler.topk = npu_topk` replaces the name `sampler` imported from
    # `logprob`; `prompt` imports it from `logprob` too and keeps the original.
    provider = {
        "pv/__init__.py": "",
        "pv/logprob.py": "def topk(logits, n, ids=None, state=None):\n    return logits\n",
        "pv/sampler.py": """
            from pv.logprob import topk

            def sample(logits):
                return topk(logits, 2, state=1)
        """,
        "pv/prompt.py": """
            from pv.logprob import topk

            def prompt_logprobs(logits):
                return topk(logits, 2, state=1)
        """,
        "pv/reexport.py": "from pv.sampler import topk\n",
        "pv/user.py": """
            from pv.reexport import topk
            import pv.sampler as sampler_module

            def use(logits):
                return topk(logits, 1, state=2), sampler_module.topk(logits, 3, state=3)
        """,
    }
    patch = """
        from pv import prompt, sampler

        def topk(logits, n, ids=None):
            return logits

        {module}.topk = topk
    """
    # `prompt` binds the name from `logprob`: the call in `sampler` never reaches its patch.
    [finding] = run_check(provider, consumer(patch.replace("{module}", "prompt"))).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "the real call at pv/prompt.py:4" in finding.message
    # `sampler`'s binding is read in sampler itself, by `reexport` (and so `user`), and as `sampler_module.topk`.
    [finding] = run_check(provider, consumer(patch.replace("{module}", "sampler"))).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "the real call at pv/sampler.py:4" in finding.message
    only_user = dict(provider, **{"pv/sampler.py": "from pv.logprob import topk\n"})
    [finding] = run_check(only_user, consumer(patch.replace("{module}", "sampler"))).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "the real call at pv/user.py:5" in finding.message
    # A patch where the function is defined reaches every call; the message counts the others.
    [finding] = run_check(
        provider, consumer(patch.replace("{module}", "logprob").replace("prompt, ", "logprob, "))
    ).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "the real call at pv/prompt.py:4" in finding.message
    assert "; so do 2 more, at pv/sampler.py:4, pv/user.py:5." in finding.message


def test_a_call_of_an_imported_name_the_consumer_replaced_with_one_that_takes_it_is_a_warning(run_check):
    # vllm-ascend's shape: `pkg.FusedMoE = wrapper(*args, **kwargs)` drops a keyword the consumer's
    # own model passes; the model imports the name, so it holds the wrapper when imported after the patch.
    provider = {
        "pv/__init__.py": "",
        "pv/moe.py": "def make_moe(experts, top_k):\n    return experts\n",
    }
    model = """
        from pv.moe import make_moe

        def build():
            return make_moe(8, 2, hash=True)
    """
    patch = """
        import pv.moe

        _original = pv.moe.make_moe

        def make_moe(*args, hash=None, **kwargs):
            return _original(*args, **kwargs)

        pv.moe.make_moe = make_moe
    """
    unpatched = [(f.rule.value, f.severity.value) for f in run_check(provider, consumer(model)).findings]
    assert unpatched == [("arity-drift", "error")]
    [finding] = [f for f in run_check(provider, consumer(model, patch=patch)).findings if f.rule.value == "arity-drift"]
    assert finding.severity.value == "warning"
    assert "the consumer replaces that name at plug/patch.py:8" in finding.message
    # The original kept under another name is still the original: a call of it that misses is an error.
    stash = patch.replace(
        "pv.moe.make_moe = make_moe\n",
        "pv.moe.make_moe = make_moe\n\n        def build_original():\n            return _original(8, 2, hash=True)\n",
    )
    severities = {
        f.severity.value for f in run_check(provider, consumer(stash)).findings if f.rule.value == "arity-drift"
    }
    assert severities == {"error"}


def test_a_narrower_replacement_that_no_real_call_misses_is_a_warning(run_check):
    # Inserts parameters before `metrics`: a positional caller would bind wrongly, but every real
    # caller passes keywords.
    src = """
        import pv.coordinator as c

        def get_coordinator(config, max_len, use_eagle, block_size=None, metrics=None):
            return config

        c.get_coordinator = get_coordinator
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "no call found in the provider or the consumer fails (1 checked)" in finding.message
    # A call of the consumer's own that does not fit makes it an error.
    mine = src + "\n        c.get_coordinator({}, 1, False, 2)\n"
    assert only(run_check(PROVIDER, consumer(mine)), "arity-drift")[0].severity.value == "error"


def test_a_narrower_replacement_as_narrow_at_the_baseline_is_info(run_check):
    """The patched function is the same at the baseline, where the consumer works: its replacement
    was as narrow there, so the bump changes nothing (info). Where the function changed since, or
    the patch did not run at the baseline, it stays a warning."""
    src = """
        import pv.coordinator as c

        def get_coordinator(config, max_len, use_eagle, block_size=None, metrics=None):
            return config

        c.get_coordinator = get_coordinator
    """
    [finding] = run_check(PROVIDER, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "info")
    assert finding.message.startswith("the replacement is narrower than the patched function (unchanged since ")
    older = {**PROVIDER, "pv/coordinator.py": PROVIDER["pv/coordinator.py"].replace(", metrics=None", "")}
    [finding] = run_check(PROVIDER, consumer(src), baseline=older).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "unchanged since" not in finding.message
    gated = """
        from packaging.version import Version

        import pv
        import pv.coordinator as c

        def get_coordinator(config, max_len, use_eagle, block_size=None, metrics=None):
            return config

        if Version(pv.__version__) >= Version("2.0"):
            c.get_coordinator = get_coordinator
    """
    versioned = {**PROVIDER, "pv/__init__.py": '__version__ = "2.0.0"\n'}
    baseline = {**PROVIDER, "pv/__init__.py": '__version__ = "1.0.0"\n'}
    found = run_check(versioned, consumer(gated), version="2.0.0", baseline=baseline, baseline_version="1.0.0")
    # The patch did not run at the baseline: what it replaces there says nothing.
    assert [f.severity.value for f in found.findings if f.rule.value == "arity-drift"] == ["warning"]


def test_calls_from_a_provider_function_the_consumer_replaces_do_not_count(run_check):
    src = """
        import pv.ops
        from pv.mixer import Mixer

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        def forward(self, x, w):
            return conv(x, w)

        pv.ops.conv = conv
        Mixer.forward = forward
    """
    assert [f[:2] for f in brief(run_check(PROVIDER, consumer(src)))] == [("arity-drift", "warning")]


def test_a_dispatcher_original_is_no_evidence_and_other_subclasses_calls_do_not_count(run_check):
    # CustomOp.forward(self, *args, **kwargs): any replacement "fails" a hypothetical call. The real call
    # `self.forward(a, b, c)` is made by another subclass, which the patch of Norm.forward does not touch.
    src = """
        from pv.custom_op import Norm

        def forward(self, x, residual=None):
            return x

        Norm.forward = forward
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    other = src.replace("Norm", "Other")
    [finding] = run_check(PROVIDER, consumer(other)).findings
    assert (finding.severity.value, "pv/custom_op.py:14" in finding.message) == ("error", True)


def test_a_call_on_a_parameter_annotated_with_the_class_counts(run_check):
    src = """
        from pv.runner import Runner

        def init_cache(self, config):
            pass

        Runner.init_cache = init_cache
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.severity.value == "error"
    assert "the real call at pv/profiling.py:7: it passes is_profiling=" in finding.message


def test_a_call_whose_typeerror_is_caught_is_degraded(run_check):
    src = """
        def standby():
            try:
                from pv.utils import decorate_logs
                decorate_logs("APIServer", skip_if_decorated=True)
            except Exception:
                pass
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "degraded" in finding.message and "the handler at line 5 does nothing" in finding.message
    # Work after the failing call is skipped too: that is no longer only its own effect.
    more = src.replace("skip_if_decorated=True)", "skip_if_decorated=True)\n                register_all()")
    assert only(run_check(PROVIDER, consumer(more)), "arity-drift")[0].severity.value == "error"
    # Work after it that only sets names from its result (gridbook's diagnostics: `cls, _ =
    # registry.resolve(arch)` then `module = getattr(cls, "__module__", module)`) is its own work.
    names = src.replace(
        'decorate_logs("APIServer", skip_if_decorated=True)',
        'cls, _ = decorate_logs("APIServer", skip_if_decorated=True)\n'
        '                module = getattr(cls, "__module__", "?")\n'
        '                label: str = str(module) + "!"',
    )
    assert only(run_check(PROVIDER, consumer(names)), "arity-drift")[0].severity.value == "warning"
    stored = names.replace("label: str =", "self.label =")
    assert only(run_check(PROVIDER, consumer(stored)), "arity-drift")[0].severity.value == "error"
    called = names.replace("str(module)", "describe(module)")
    assert only(run_check(PROVIDER, consumer(called)), "arity-drift")[0].severity.value == "error"
    # A name the function shares (`global`), a name at module level, an attribute in a tuple:
    # work beyond the function's own names.
    shared = names.replace("        def standby():\n", "        def standby():\n            global label\n")
    assert "global label" in shared
    assert only(run_check(PROVIDER, consumer(shared)), "arity-drift")[0].severity.value == "error"
    tupled = names.replace('label: str = str(module) + "!"', 'label, self.x = str(module), "!"')
    assert only(run_check(PROVIDER, consumer(tupled)), "arity-drift")[0].severity.value == "error"
    redefined = """
        import os

        if os.environ.get("PLUG_QUIET"):
            def standby():
                pass
        else:
            def standby():
                global label
                try:
                    from pv.utils import decorate_logs
                    cls, _ = decorate_logs("APIServer", skip_if_decorated=True)
                    label = str(cls)
                except Exception:
                    pass
    """
    assert only(run_check(PROVIDER, consumer(redefined)), "arity-drift")[0].severity.value == "error"
    module_level = """
        try:
            from pv.utils import decorate_logs
            cls, _ = decorate_logs("APIServer", skip_if_decorated=True)
            READY = True
        except Exception:
            pass
    """
    assert only(run_check(PROVIDER, consumer(module_level)), "arity-drift")[0].severity.value == "error"


def test_a_caught_call_whose_handler_returns_the_functions_answer_for_failure_is_degraded(run_check):
    # vLLM's quick-reduce setup for aiter: the whole try is the optional feature, and its handler
    # marks it unavailable and returns the function's answer for that; a TypeError anywhere in it
    # loses only that feature.
    src = """
        def setup(comm):
            try:
                from pv.utils import decorate_logs
                handle = decorate_logs("APIServer", skip_if_decorated=True)
                register_all(handle)
            except Exception:
                comm.enabled = False
                return None
            comm.enabled = True
            return handle
    """
    [finding] = only(run_check(PROVIDER, consumer(src)), "arity-drift")
    assert finding.severity.value == "warning"
    assert "the handler at line 6 sets comm.enabled = False, returns None" in finding.message
    # A handler that goes on past the try: the rest of the try is lost to what follows.
    goes_on = src.replace("                return None\n", "")
    assert only(run_check(PROVIDER, consumer(goes_on)), "arity-drift")[0].severity.value == "error"
    # A procedure (a plugin's `register()`) returning from its handler: its callers cannot tell
    # that the rest of its work was lost.
    procedure = src.replace("            return handle\n", "")
    assert only(run_check(PROVIDER, consumer(procedure)), "arity-drift")[0].severity.value == "error"
    # At module level there is no function to return from.
    module_level = """
        try:
            from pv.utils import decorate_logs
            decorate_logs("APIServer", skip_if_decorated=True)
            register_all()
        except Exception:
            pass
    """
    assert only(run_check(PROVIDER, consumer(module_level)), "arity-drift")[0].severity.value == "error"


def test_a_name_bound_to_the_provider_only_by_one_branch_of_a_consumer_test_is_a_warning(run_check):
    # sglang's `if _use_aiter: from aiter import rmsnorm2d_fwd as rms_norm` / `elif _is_hip: from
    # vllm._custom_ops import rms_norm`, then `rms_norm(x, w, eps)` in its aiter path: which one the
    # call gets is the consumer's own state.
    src = """
        import os

        if os.environ.get("USE_OTHER"):
            from otherlib import logs as decorate_logs
        else:
            from pv.utils import decorate_logs

        def start():
            decorate_logs("APIServer", skip_if_decorated=True)
    """
    [finding] = only(run_check(PROVIDER, consumer(src)), "arity-drift")
    assert finding.severity.value == "warning"
    assert "bound to the provider's object by one branch of an `if` on the consumer's own state" in finding.message
    # The consumer's own function in the other branch: the same.
    own = src.replace(
        "from otherlib import logs as decorate_logs", "def decorate_logs(name, **kw):\n                pass"
    )
    assert only(run_check(PROVIDER, consumer(own)), "arity-drift")[0].severity.value == "warning"
    # A placeholder is no other object: where the call runs, the provider's function is bound.
    placeholder = src.replace("from otherlib import logs as decorate_logs", "decorate_logs = None")
    assert only(run_check(PROVIDER, consumer(placeholder)), "arity-drift")[0].severity.value == "error"
    # Nor is a branch on the provider itself (a version gate, a `hasattr` test): the checks decide it.
    probed = src.replace('os.environ.get("USE_OTHER")', 'not hasattr(pv.utils, "decorate_logs")').replace(
        "import os\n", "import pv.utils\n"
    )
    assert only(run_check(PROVIDER, consumer(probed)), "arity-drift")[0].severity.value == "error"


def test_the_consumers_flags_at_the_call_tell_which_branch_bound_the_name(run_check):
    # sglang calls vLLM's `fused_add_rms_norm` in the `else` of `if _use_aiter:` (it gets vLLM's:
    # an error), and `awq_dequantize` under `if _is_cuda or _is_hip:`, where it is its own.
    src = """
        import os

        USE_OTHER = bool(os.environ.get("USE_OTHER"))

        if USE_OTHER:
            from otherlib import logs as decorate_logs
        else:
            from pv.utils import decorate_logs

        def start():
            if USE_OTHER:
                decorate_logs("APIServer", skip_if_decorated=True)
            else:
                decorate_logs("APIServer", colour=True)
    """
    [finding] = only(run_check(PROVIDER, consumer(src)), "arity-drift")
    assert (finding.severity.value, [str(site) for site in finding.sites]) == ("error", ["plug/mod.py:14"])
    # Bound again by a later `if` whose branches all bind the provider's: which test bound what is
    # no longer known, and each call is a warning.
    again = src.replace(
        "\n        def start():",
        '\n        if os.environ.get("AGAIN"):\n            from pv.utils import decorate_logs\n\n        def start():',
    )
    assert [f.severity.value for f in only(run_check(PROVIDER, consumer(again)), "arity-drift")] == ["warning"] * 2
    either = """
        import os

        ON_A = bool(os.environ.get("A"))
        ON_B = bool(os.environ.get("B"))

        if ON_A:
            from otherlib import logs as decorate_logs
        elif ON_B:
            from anotherlib import logs as decorate_logs
        else:
            from pv.utils import decorate_logs

        def start():
            if ON_A or ON_B:
                decorate_logs("APIServer", skip_if_decorated=True)
            if not ON_A and not ON_B:
                decorate_logs("APIServer", colour=True)
    """
    [finding] = only(run_check(PROVIDER, consumer(either)), "arity-drift")
    assert (finding.severity.value, [str(site) for site in finding.sites]) == ("error", ["plug/mod.py:17"])


def test_flag_tests_read_names_not_and_or():
    from atompin.analysis.flag_tests import branch_clauses, excludes

    def clauses(text: str) -> tuple:
        return branch_clauses(ast.parse(text, mode="eval").body)

    holds, fails = clauses("a or not b")
    assert holds == (frozenset({("a", True), ("b", False)}),)
    assert fails == (frozenset({("a", False)}), frozenset({("b", True)}))
    holds, fails = clauses("x.on and y")
    assert holds == (frozenset({("x.on", True)}), frozenset({("y", True)}))
    assert fails == (frozenset({("x.on", False), ("y", False)}),)
    assert clauses("a == 1") == ((), ()) and clauses("a or f()") == ((), ())
    assert excludes(clauses("a")[0], clauses("a")[1])
    assert excludes(clauses("a or b")[0], clauses("a or b")[1])  # neither a nor b: not (a or b)
    assert not excludes(clauses("a")[0], clauses("b")[0])
    assert not excludes(clauses("a or b")[0], clauses("a")[1])  # b may hold where a does not


def test_the_older_form_in_a_typeerror_handler_is_a_fallback_when_the_newer_form_fits(run_check):
    # vllm-omni's shape: the current form first, the older release's form when it raises TypeError.
    src = """
        from pv.utils import decorate_logs

        def setup():
            options = {"process_name": "APIServer"}
            try:
                return decorate_logs(**options)
            except TypeError:
                return decorate_logs(name="APIServer", old_style=True)
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert (
        "a fallback for another release: the call it falls back from (the try at plug/mod.py:5) fits" in finding.message
    )
    # When the newer form does not fit either, the handler's call runs and fails: an error there;
    # the try's own call is caught (each site keeps its own verdict, one finding per severity).
    neither = src.replace('{"process_name": "APIServer"}', '{"process_title": "APIServer"}')
    handler, caught = run_check(PROVIDER, consumer(neither)).findings
    assert (handler.severity.value, [str(site) for site in handler.sites]) == ("error", ["plug/mod.py:8"])
    assert (caught.severity.value, [str(site) for site in caught.sites]) == ("warning", ["plug/mod.py:6"])
    assert "the TypeError is caught" in caught.message


VANISHED = """
    from pv.runner import Runner

    def init_buffer(self, size):
        pass

    Runner.init_buffer = init_buffer
"""


BUFFERED = """
    class Runner:
        def init_buffer(self, size):
            pass

        def start(self):
            self.init_buffer(1)
"""


def test_a_replaced_method_that_vanished_since_the_baseline(run_check):
    baseline = {**PROVIDER, "pv/runner.py": BUFFERED}
    [finding] = run_check(PROVIDER, consumer(VANISHED), baseline=baseline).findings
    assert (finding.rule.value, finding.severity.value) == ("missing-patch-target", "error")
    assert "pv.runner:Runner.init_buffer existed at the baseline" in finding.message
    # Without a baseline it stays an addition, and says what a baseline would tell.
    [info] = run_check(PROVIDER, consumer(VANISHED)).findings
    assert (info.rule.value, info.severity.value) == ("patch-addition", "info")
    assert "a baseline would tell whether it vanished" in info.message
    # An addition the baseline did not have either stays one.
    [still] = run_check(PROVIDER, consumer(VANISHED), baseline=PROVIDER).findings
    assert still.rule.value == "patch-addition" and "baseline" not in still.message


def test_a_vanished_helper_that_the_consumers_own_replacement_calls_on_self_is_a_warning(run_check):
    # vllm-mindspore replaces `initialize_kv_cache_tensors`, whose body calls
    # `self._allocate_kv_cache_tensors(...)`, and installs that helper too; vLLM 0.33 dropped the
    # helper. The assignment adds it back for the consumer's own call: the replaced method is
    # the consumer's, so the provider's code does not run "unpatched" for it.
    baseline = {
        **PROVIDER,
        "pv/runner.py": PROVIDER["pv/runner.py"]
        + "\n            def init_buffer(self, size):\n                pass\n"
        + "\n            def start(self):\n                self.init_buffer(1)\n",
    }
    kernels = """
        def init_cache(self, config, is_profiling=False):
            self.init_buffer(1)
    """
    src = VANISHED + "\n    from plug.kernels import init_cache\n\n    Runner.init_cache = init_cache\n"
    [finding] = run_check(PROVIDER, consumer(src, kernels=kernels), baseline=baseline).findings
    assert (finding.rule.value, finding.severity.value) == ("missing-patch-target", "warning")
    assert (
        "this assignment adds the name back, and the consumer's own reads of it (plug/kernels.py:2)" in finding.message
    )
    assert sorted(str(site) for site in finding.sites) == ["plug/kernels.py:2", "plug/mod.py:6"]
    # Read on another object than `self`, it is no read of that patch: the error stays.
    other = {"kernels": kernels.replace("self.init_buffer(1)", "config.init_buffer(1)")}
    [finding] = run_check(PROVIDER, consumer(src, **other), baseline=baseline).findings
    assert (finding.rule.value, finding.severity.value) == ("missing-patch-target", "error")


REGISTRY = """
    from importlib import import_module

    _PATCHES = []

    def register_patch(*, target, reason):
        def decorator(replacement):
            _PATCHES.append((target, replacement))
            return replacement
        return decorator

    def apply_patches():
        for target, replacement in _PATCHES:
            module, _, attr = target.rpartition(".")
            setattr(import_module(module), attr, replacement)
"""


def test_patches_through_a_registry_with_a_dotted_string_target(run_check):
    src = """
        from plug.registry import register_patch

        @register_patch(target="pv.runner.Runner.capture", reason="faster")
        def capture(self):
            pass

        @register_patch(target="pv.runner.Runner.gone", reason="moved?")
        def gone(self):
            pass
    """
    result = run_check(PROVIDER, consumer(src, registry=REGISTRY))
    assert result.summary.patch_sites == 2
    assert brief(result) == [("missing-patch-target", "error", "pv.runner:Runner.gone", ["plug/mod.py:7"])]
    assert "names it as a patch target by its dotted path" in result.findings[0].message
    # The call form, and the check of the replacement's signature.
    called = 'from plug.registry import register_patch\n\ndef init_cache(self):\n    pass\n\nregister_patch(target="pv.runner.Runner.init_cache", reason="x")(init_cache)\n'
    [drift] = run_check(PROVIDER, consumer(called, registry=REGISTRY)).findings
    assert (drift.rule.value, drift.severity.value) == ("arity-drift", "error")
    # A decorator whose module resolves no dotted path is not a patch registry.
    plain = REGISTRY.replace("setattr(import_module(module), attr, replacement)", "print(module, attr)")
    assert run_check(PROVIDER, consumer(src, registry=plain)).summary.patch_sites == 0


def test_a_registry_decorator_re_exported_by_its_package_patches_all_the_same(run_check):
    # vllm-rbln's shape: `from vllm_rbln.patches import register_patch`, the package's
    # `__init__` re-exporting it from its `registry` module (which never names the provider).
    src = """
        from plug.patches import register_patch

        @register_patch(target="pv.runner.Runner.gone", reason="moved?")
        def gone(self):
            pass
    """
    files = {
        "plug/__init__.py": "",
        "plug/patches/__init__.py": "from plug.patches.registry import register_patch\nfrom . import mod\n",
        "plug/patches/registry.py": REGISTRY,
        "plug/patches/mod.py": src,
    }
    result = run_check(PROVIDER, files)
    assert brief(result) == [("missing-patch-target", "error", "pv.runner:Runner.gone", ["plug/patches/mod.py:3"])]
    # Re-exported twice over (the top package re-exporting the subpackage's name) it is followed too.
    files["plug/__init__.py"] = "from plug.patches import register_patch\n"
    files["plug/patches/mod.py"] = src.replace("from plug.patches import", "from plug import")
    assert [f[0] for f in brief(run_check(PROVIDER, files))] == ["missing-patch-target"]


def test_a_literal_table_of_dotted_targets_split_in_a_loop(run_check):
    src = """
        from importlib import import_module

        def capture(x, weight, bias=None, cache_indices=None, block_idx=None):
            return x

        def apply():
            for target, fn in {"pv.ops.conv": capture, "pv.ops.gone": capture}.items():
                module, _, attr = target.rpartition(".")
                setattr(import_module(module), attr, fn)
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("patch-addition", "info", "pv.ops:gone", ["plug/mod.py:9"])]
    assert result.summary.patch_targets == 2


def test_calls_from_a_class_the_consumer_substitutes_out_of_tree_do_not_count(run_check):
    provider = {
        **PROVIDER,
        "pv/layer.py": """
            from pv.ops import conv

            class Layer:
                registry = {}

                def __new__(cls, *args, **kwargs):
                    return super().__new__(cls.registry.get(cls.__name__, cls))

                @classmethod
                def register_oot(cls, op_cls=None, name=None):
                    cls.registry[name] = op_cls

            class Mixer(Layer):
                def forward(self, x, w):
                    return conv(x, w, block_idx=3)
        """,
        "pv/mixer.py": "X = 1\n",
    }
    src = """
        import pv.ops
        from pv.layer import Layer, Mixer

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        class MyMixer(Mixer):
            def forward(self, x, w):
                return conv(x, w)

        pv.ops.conv = conv
        Layer.register_oot(op_cls=MyMixer, name="Mixer")
    """
    assert [f[:2] for f in brief(run_check(provider, consumer(src)))] == [("arity-drift", "warning")]
    # Not registered: the provider may still make plain Mixers, but the only call that does not fit is
    # inside Mixer.forward, which MyMixer takes over without calling it: a warning that says so.
    unregistered = src.replace('Layer.register_oot(op_cls=MyMixer, name="Mixer")', "")
    [finding] = run_check(provider, consumer(unregistered)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "plug.mod:MyMixer overrides without calling it" in finding.message
    # Calling the provider's forward from the override makes the call real again: an error.
    delegating = unregistered.replace("return conv(x, w)", "return super().forward(x, w)")
    assert [f[:2] for f in brief(run_check(provider, consumer(delegating)))] == [("arity-drift", "error")]


# vllm-gaudi 0.24 replaces CPUOffloadingSpec.get_handlers, the one caller of create_handlers, and
# CpuGpuOffloadingHandlers.__init__, which TieringOffloadingSpec.create_handlers calls with mmap_region=.
OFFLOAD = {
    "pv/__init__.py": "",
    "pv/handlers.py": """
        class Handlers:
            def __init__(self, caches, factor, mmap_region=None):
                self.caches = caches
    """,
    "pv/spec.py": """
        from pv.handlers import Handlers

        class Spec:
            def create_handlers(self, caches):
                return Handlers(caches, 1)

            def get_handlers(self, caches):
                return self.create_handlers(caches)

        class TieredSpec(Spec):
            def create_handlers(self, caches):
                return Handlers(caches, 1, mmap_region=object())
    """,
}
OFFLOAD_PATCH = """
    from pv.handlers import Handlers
    from pv.spec import Spec

    def init(self, caches, factor):
        self.caches = caches

    def get_handlers(self, caches):
        return Handlers(caches, 2)

    Spec.get_handlers = get_handlers
    Handlers.__init__ = init
"""


@pytest.mark.parametrize(
    "change",
    [
        # the replacement calls the original, which calls create_handlers
        ("return Handlers(caches, 2)", "return original(self, caches)", "    original = Spec.get_handlers\n"),
        # the consumer calls create_handlers itself
        ("self.caches = caches", "self.caches = Spec().create_handlers(caches)", ""),
    ],
)
def test_a_call_the_provider_or_consumer_still_reaches_stays_an_error(run_check, change):
    old, new, before = change
    source = OFFLOAD_PATCH.replace(old, new).replace("    Spec.get_handlers = ", before + "    Spec.get_handlers = ")
    assert [f[:2] for f in brief(run_check(OFFLOAD, consumer(source)))] == [("arity-drift", "error")]


@pytest.mark.parametrize(
    "more",
    [
        # another caller the consumer leaves alone
        "def build(spec, caches):\n    return spec.create_handlers(caches)\n",
        # the name as a string: a getattr may call it
        "HOOK = 'create_handlers'\n",
    ],
)
def test_a_method_called_elsewhere_or_by_name_keeps_its_call_an_error(run_check, more):
    provider = {**OFFLOAD, "pv/other.py": more}
    assert [f[:2] for f in brief(run_check(provider, consumer(OFFLOAD_PATCH)))] == [("arity-drift", "error")]


def test_a_base_class_method_calls_the_patched_method_of_a_subclass_that_inherits_it(run_check):
    provider = {
        **PROVIDER,
        "pv/parser.py": """
            class BaseParser:
                def get_config(self, name):
                    return name

                def stream(self, text):
                    return self.get_config(text)

            class NewParser(BaseParser):
                pass
        """,
    }
    src = """
        from pv.parser import NewParser

        def get_config(self, request, name):
            return name

        NewParser.get_config = get_config
    """
    [finding] = run_check(provider, consumer(src)).findings
    assert (finding.severity.value, "pv/parser.py:6" in finding.message) == ("error", True)
    # Replacing the calling method too: on a NewParser the base class's caller never runs.
    both = src + "\n        def stream(self, text):\n            return text\n\n        NewParser.stream = stream\n"
    assert [f[:2] for f in brief(run_check(provider, consumer(both)))] == [("arity-drift", "warning")]


def test_the_consumer_text_is_searched_for_a_word_once_per_consumer_content(run_check, monkeypatch):
    """Whether the consumer writes a name itself is cached by its files' stamps: a re-lock after a
    bump (another provider, the same consumer) asks git nothing about the consumer's text."""
    from atompin.analysis.cache import AnalysisCache
    from atompin.sources.tree import SourceTree

    asked: list[tuple[str, tuple[bytes, ...]]] = []
    real = SourceTree.files_containing

    def spy(self, paths, words):
        asked.append((self.label, tuple(words)))
        return real(self, paths, words)

    monkeypatch.setattr(SourceTree, "files_containing", spy)
    cache = AnalysisCache()
    first = brief(run_check(OFFLOAD, consumer(OFFLOAD_PATCH), cache=cache))
    assert [words for label, words in asked if label == "consumer"] == [(b"create_handlers",)]
    bumped = {**OFFLOAD, "pv/extra.py": "X = 1\n"}
    asked.clear()
    assert brief(run_check(bumped, consumer(OFFLOAD_PATCH), cache=cache)) == first
    assert [words for label, words in asked if label == "consumer"] == []
    # Another consumer text: asked again, and answered from it.
    calling = OFFLOAD_PATCH.replace("self.caches = caches", "self.caches = Spec().create_handlers(caches)")
    assert [f[:2] for f in brief(run_check(bumped, consumer(calling), cache=cache))] == [("arity-drift", "error")]
    assert [words for label, words in asked if label == "consumer"] == [(b"create_handlers",)]


# vllm-omni 0.30 calls vLLM 0.30's private `_merge_multimodal_embeddings` with four positional
# arguments in a method vLLM no longer calls: it takes three at that release and at the one the
# plugin was written against. Not drift: a warning that says so.
MERGE_OLD = {
    "pv/__init__.py": "",
    "pv/utils.py": "def _merge(inputs_embeds, embeddings, is_multimodal, *, extra=None):\n    pass\n",
}
MERGE_NEW = {"pv/__init__.py": "", "pv/utils.py": "def _merge(inputs_embeds, embeddings, is_multimodal):\n    pass\n"}
MERGE_CALLS = """
    from pv.utils import _merge

    def legacy(input_ids, embeds, mm):
        return _merge(input_ids, embeds, mm, 7)

    def current(embeds, mm, mask):
        return _merge(embeds, mm, is_multimodal=mask, extra=1)
"""


def brief_sites(findings):
    return [(f.rule.value, f.severity.value, [str(site) for site in f.sites]) for f in findings]


def test_a_call_that_fails_at_the_baseline_too_is_a_warning_and_a_new_failure_an_error(run_check):
    legacy_only = MERGE_CALLS.split("    def current")[0]
    [old] = run_check(MERGE_NEW, consumer(legacy_only), baseline=MERGE_OLD).findings
    assert brief_sites([old]) == [("arity-drift", "warning", ["plug/mod.py:4"])]
    assert "fails at the baseline too (passes 4 positional argument(s)" in old.message
    # At the baseline itself, the old call is all that fails: a warning.
    assert brief_sites(run_check(MERGE_OLD, consumer(MERGE_CALLS), baseline=MERGE_OLD).findings) == [
        ("arity-drift", "warning", ["plug/mod.py:4"])
    ]
    # A call that newly fails is an error; the old one beside it stays a warning (each site its verdict).
    new, old_too = run_check(MERGE_NEW, consumer(MERGE_CALLS), baseline=MERGE_OLD).findings
    assert brief_sites([new, old_too]) == [
        ("arity-drift", "error", ["plug/mod.py:7"]),
        ("arity-drift", "warning", ["plug/mod.py:4"]),
    ]
    assert "extra=" in new.message and "fails at the baseline" not in new.message
    assert "fails at the baseline too" in old_too.message
    # Without a baseline nothing says it is old: an error.
    assert brief_sites(run_check(MERGE_NEW, consumer(legacy_only)).findings) == [
        ("arity-drift", "error", ["plug/mod.py:4"])
    ]


def test_a_real_call_the_replacement_missed_at_the_baseline_too_is_a_warning(run_check):
    """vllm-ascend 0.29's `fused_kda_gate` takes no `lower_bound=`, which vLLM's bailing_moe_v3
    passed at 0.29 already (line 777) and still passes at 0.30 (line 783): not drift, so a warning
    at the bump. A call that newly misses it stays an error."""
    src = """
        import pv.ops

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        pv.ops.conv = conv
    """
    # The same call, two lines down.
    moved = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace("from", "# a\n        # b\n        from", 1)}
    [finding] = run_check(moved, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "cannot take the real call at pv/mixer.py:7" in finding.message
    assert "fails at the baseline too" in finding.message
    # Beside it, a call new since the baseline that misses it too: an error citing that one.
    more = {**moved, "pv/zz.py": "from pv.ops import conv\n\ndef run(x, w):\n    return conv(x, w, block_idx=1)\n"}
    [finding] = run_check(more, consumer(src), baseline=PROVIDER).findings
    assert finding.severity.value == "error"
    assert "real call at pv/zz.py:4" in finding.message
    # The call newly passing block_idx= (it did not at the baseline): an error.
    before = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace(", block_idx=3", "")}
    [finding] = run_check(moved, consumer(src), baseline=before).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")


def test_a_call_reading_a_binding_the_consumer_patches_too_is_that_patchs_alone(run_check):
    # vllm-gaudi patches `router_factory.create_fused_moe_router` and `layer.create_fused_moe_router`
    # (layer imported it from router_factory before the patches ran): layer's call reads layer's
    # binding, and is judged once, with that patch.
    src = """
        import pv.ops
        import pv.mixer

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        pv.ops.conv = conv
        pv.mixer.conv = conv
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("arity-drift", "error", "pv.mixer:conv", ["plug/mod.py:8"]),
        ("arity-drift", "warning", "pv.ops:conv", ["plug/mod.py:7"]),  # narrower, but no call of its fails
    ]
    alone = src.replace("        pv.mixer.conv = conv\n", "")
    assert brief(run_check(PROVIDER, consumer(alone))) == [("arity-drift", "error", "pv.ops:conv", ["plug/mod.py:7"])]


# A replacement of `pv.ops.conv` that cannot take `block_idx=`, which `Mixer.forward` passes.
NARROW_CONV = """
    import pv.ops

    def conv(x, weight, bias=None, cache_indices=None):
        return x

    pv.ops.conv = conv
"""


# The provider with the call of `Mixer.forward` one the narrow replacement takes (`bias=` for `block_idx=`).
FITTED = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace(", block_idx=3", ", bias=1")}


def test_a_real_call_that_changed_but_missed_the_replacement_at_the_baseline_too_is_a_warning(run_check):
    """vllm-mindspore's `BlockTable.__init__` takes six arguments after self; vLLM 0.23's
    `MultiGroupBlockTable.__init__` passed it eight and 0.33's passes seven and a keyword: the
    call changed, but the replacement missed it at the baseline too (where the consumer works)."""
    src = NARROW_CONV
    before = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace("block_idx=3", "block_idx=3, other=1")}
    [finding] = run_check(PROVIDER, consumer(src), baseline=before).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "the provider made a call there that the replacement could not take either" in finding.message
    # A call there at the baseline that the replacement took: the miss is new, an error.
    [finding] = run_check(PROVIDER, consumer(src), baseline=FITTED).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")


def test_a_call_the_baseline_made_from_a_function_since_renamed_is_a_warning(run_check):
    """vLLM 0.30 renamed the nixl worker's `get_finished` to `get_transfer_results`; the call of
    `post_process_device_kv_on_receive` in it is the same, and vllm-gaudi's two-argument replacement
    missed it at the baseline (0.27.1) too: not a change since."""
    src = NARROW_CONV
    renamed = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace("def forward", "def run")}
    [finding] = run_check(renamed, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "the provider made the same call there" in finding.message
    # The old function kept beside the new one (not a rename): the new caller's miss is an error.
    kept = {**PROVIDER, "pv/mixer.py": renamed["pv/mixer.py"] + PROVIDER["pv/mixer.py"].split("class Mixer:")[1]}
    [finding] = run_check(kept, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "real call at pv/mixer.py:5:" in finding.message  # in `run`


def test_a_call_the_baseline_made_from_a_file_that_moved_since_is_a_warning(run_check):
    """vLLM 0.31 moved GLM5Next's attention from `glm5next/nvidia/attention.py` (gone since) to
    `glm5next/common/attention.py`; its call of `MultiHeadLatentAttentionWrapper` with
    `fuse_qkv_rmsnorm=` is the same, and tpu-inference 0.30's class registered in the wrapper's place
    missed it at the baseline (0.30) too: not a change since."""
    src = NARROW_CONV
    moved = {**PROVIDER, "pv/layers/__init__.py": "", "pv/layers/mixer.py": PROVIDER["pv/mixer.py"]}
    del moved["pv/mixer.py"]
    [finding] = run_check(moved, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert "the provider made the same call in pv/mixer.py, a file gone since" in finding.message
    # The baseline's call there took the replacement: the miss is new, an error.
    [finding] = run_check(moved, consumer(src), baseline=FITTED).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    # The old file kept beside the new one (a copy, not a move): the new file's miss is an error.
    copied = {**moved, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace(", block_idx=3", "")}
    errors = [f for f in run_check(copied, consumer(src), baseline=PROVIDER).findings if f.severity.value == "error"]
    assert [f.rule.value for f in errors] == ["arity-drift"]
    # Another class's method of that name in the gone file is not the same code.
    other = {**PROVIDER, "pv/mixer.py": PROVIDER["pv/mixer.py"].replace("class Mixer:", "class Blender:")}
    [finding] = run_check(moved, consumer(src), baseline=other).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")


# ATOM wraps `BlockPool.free_blocks` as `(self, ordered_blocks)`; vLLM 0.34 added `evict_first=` and
# passes it in `pool.free_blocks(blocks, evict_first=...)` on a pool it was handed: the keyword, new
# since the baseline, says which method the call is.
POOL_A = {"pv/pool.py": "class Pool:\n    def free(self, blocks):\n        return None\n"}
POOL_B = {
    "pv/pool.py": "class Pool:\n    def free(self, blocks, evict_first=False):\n        return None\n",
    "pv/drain.py": "def drain(pools, blocks):\n    for pool in pools:\n        pool.free(blocks, evict_first=True)\n",
}
WRAPPER = """
    from pv.pool import Pool

    original = Pool.free

    def free(self, blocks):
        return original(self, blocks)

    Pool.free = free
"""


def test_a_narrower_patch_the_provider_passes_a_new_keyword_to_by_name_is_an_error(run_check):
    [finding] = run_check(POOL_B, consumer(WRAPPER), baseline=POOL_A).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == ("arity-drift", "error", "pv.pool:Pool.free")
    assert "cannot take evict_first= (evict_first new since the baseline)" in finding.message
    assert "pv/drain.py:3" in finding.message
    # Without a baseline it is only narrower (a warning); where the original is what it wraps, nothing.
    [narrower] = run_check(POOL_B, consumer(WRAPPER)).findings
    assert narrower.severity.value == "warning"
    assert run_check(POOL_A, consumer(WRAPPER), baseline=POOL_A).findings == ()


MIXER_LINES = [
    "from pv.ops import conv",
    "",
    "class Mixer:",
    "    def forward(self, x, w):",
    "        return conv(x, w, cache_indices=None, block_idx=3)",
    "",
]


@pytest.mark.parametrize(
    "mixer",
    [
        "\r".join(MIXER_LINES),  # old Mac line ends: the parser counts them as lines too
        "\r".join(MIXER_LINES[:3]) + "\n" + "\n".join(MIXER_LINES[3:]),  # mixed
        "\r\n".join(MIXER_LINES),
    ],
    ids=["cr", "cr-then-lf", "crlf"],
)
def test_a_real_call_is_found_whatever_line_ends_its_file_has(run_check, mixer):
    src = """
        import pv.ops

        def conv(x, weight, bias=None, cache_indices=None):
            return x

        pv.ops.conv = conv
    """
    [finding] = run_check({**PROVIDER, "pv/mixer.py": mixer}, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "error")
    assert "cannot take the real call at pv/mixer.py:5: it passes block_idx=" in finding.message


# vllm-ascend 0.23 replaces DeepSeekV4ToolParser._repair_param_dict (a staticmethod in vLLM) with a
# plain function, and every method of the parser that calls _convert_params_with_schema, the one
# caller of _repair_param_dict: on a V4 parser the base class's call never runs.
PARSERS = {
    "pv/__init__.py": "",
    "pv/parser.py": """
        class BaseParser:
            @staticmethod
            def _repair(params, config):
                return params

            def _convert(self, params, config):
                return self._repair(params, config)

            def extract(self, text):
                return self._convert(text, {})

            def _finish(self, text):
                return self._convert(text, {})

        class NewParser(BaseParser):
            pass
    """,
}
PARSER_PATCH = """
    from pv.parser import NewParser

    def _repair(params, config):
        return params

    def extract(self, text):
        return _repair(text, {})

    def _finish(self, text):
        return _repair(text, {})

    NewParser._repair = _repair
    NewParser.extract = extract
    NewParser._finish = _finish
"""


@pytest.mark.parametrize(
    "provider, source, site, says",
    [
        # create_handlers: the provider calls it only from Spec.get_handlers, which the consumer replaces
        (OFFLOAD, OFFLOAD_PATCH, "pv/spec.py:12", "which the provider calls only from pv.spec:Spec.get_handlers, "),
        # _convert: on a NewParser, only from the two methods the consumer replaces there
        (PARSERS, PARSER_PATCH, "pv/parser.py:7", "on a pv.parser:NewParser only from pv.parser:NewParser.extract, "),
    ],
)
def test_a_call_in_a_method_called_only_from_replaced_functions_is_a_warning(run_check, provider, source, site, says):
    [finding] = run_check(provider, consumer(source)).findings
    assert (finding.rule.value, finding.severity.value) == ("arity-drift", "warning")
    assert site in finding.message and says in finding.message
    assert "which the consumer replaces without calling the original" in finding.message


@pytest.mark.parametrize(
    "change",
    [
        # one caller left as the provider wrote it
        ("    NewParser._finish = _finish\n", ""),
        # a replacement that calls the original, which calls _convert
        ("return _repair(text, {})\n\n    NewParser", "return original(self, text)\n\n    NewParser"),
    ],
)
def test_a_call_a_caller_still_reaches_on_the_patched_class_stays_an_error(run_check, change):
    old, new = change
    source = PARSER_PATCH.replace(old, new)
    if "original" in source:
        source = source.replace(
            "    NewParser._repair = ", "    original = NewParser._finish\n    NewParser._repair = "
        )
    assert [f[:2] for f in brief(run_check(PARSERS, consumer(source)))] == [("arity-drift", "error")]


def test_a_vanished_patch_target_beside_a_patch_of_the_name_that_took_its_place_is_a_warning(run_check):
    # vllm-ascend 0.28.0rc1 patches vLLM's `_allocate_kv_cache` (gone at 0.29) and also the
    # `allocate_kv_cache` that took its place at 0.29.
    baseline = {**PROVIDER, "pv/runner.py": BUFFERED}
    now = {**PROVIDER, "pv/runner.py": BUFFERED.replace("init_buffer", "allocate_buffer")}
    source = (
        VANISHED
        + "\n    def allocate_buffer(self, size):\n        pass\n\n    Runner.allocate_buffer = allocate_buffer\n"
    )
    [finding] = [
        f
        for f in run_check(now, consumer(source), baseline=baseline).findings
        if f.rule.value == "missing-patch-target"
    ]
    assert finding.severity.value == "warning"
    assert "the same file also patches allocate_buffer, new on that object since the baseline" in finding.message
    # A patch of a name the baseline had already is no successor.
    both = {**PROVIDER, "pv/runner.py": BUFFERED + "\n        def allocate_buffer(self, size):\n            pass\n"}
    [finding] = [
        f for f in run_check(now, consumer(source), baseline=both).findings if f.rule.value == "missing-patch-target"
    ]
    assert finding.severity.value == "error"


COORDINATOR = """
    class Coordinator:
        def __init__(self, ranks, backend, use_all2all=False):
            self.ranks = ranks

    def init_group(ranks):
        return Coordinator(ranks, "hccl", use_all2all=True)
"""
MY_COORDINATOR = """
    import pv.parallel

    class MyCoordinator:
        def __init__(self, ranks, backend):
            self.ranks = ranks

    pv.parallel.Coordinator = MyCoordinator
"""


def test_a_class_installed_in_a_class_s_place_must_take_the_provider_s_constructions(run_check):
    # vllm-ascend 0.26.0rc1 installs its `GroupCoordinatorPatch` as vLLM's `GroupCoordinator`; at
    # vLLM 0.27.1 `init_model_parallel_group` passes it `use_all2all=`, which its `__init__` lacks.
    provider = {**PROVIDER, "pv/parallel.py": COORDINATOR}

    def errors(source: str) -> list:
        found = run_check(provider, consumer(source)).findings
        return [f for f in found if f.rule.value == "arity-drift" and f.severity.value == "error"]

    [finding] = errors(MY_COORDINATOR)
    assert [str(s) for s in finding.sites] == ["plug/mod.py:7"]
    assert "the replacement cannot take the real call at pv/parallel.py:6: it passes use_all2all=" in finding.message
    # One whose `__init__` takes it, or one that keeps the provider's `__init__`, fits.
    wider = MY_COORDINATOR.replace("ranks, backend):", "ranks, backend, **kwargs):")
    assert errors(wider) == []
    [narrower] = [f for f in run_check(provider, consumer(wider)).findings if f.rule.value == "arity-drift"]
    assert narrower.severity.value == "warning"
    assert narrower.message.startswith("the replacement class's `__init__` is narrower than the patched class's")
    keeps = MY_COORDINATOR.replace(
        "import pv.parallel\n", "import pv.parallel\n    from pv.parallel import Coordinator\n"
    )
    keeps = keeps.replace(
        "class MyCoordinator:\n        def __init__(self, ranks, backend):\n            self.ranks = ranks\n",
        "class MyCoordinator(Coordinator):\n        pass\n",
    )
    assert errors(keeps) == []
    # Installed only for a while, inside a function (around one construction the consumer makes
    # itself, say): which provider constructions run meanwhile is not known.
    scoped = MY_COORDINATOR.replace(
        "    pv.parallel.Coordinator = MyCoordinator\n",
        "    def build(ranks):\n        pv.parallel.Coordinator = MyCoordinator\n        return pv.parallel.init_group(ranks)\n",
    )
    assert errors(scoped) == []


OUT_OF_TREE = {
    "pv/custom_op.py": """
        class CustomOp:
            registry = {}

            def __new__(cls, *args, **kwargs):
                return super().__new__(cls.registry.get(cls.__name__, cls))

            @classmethod
            def register_oot(cls, _decorated_op_cls=None, name=None):
                def decorator(op_cls):
                    cls.registry[name or cls.__name__] = op_cls
                    return op_cls

                return decorator if _decorated_op_cls is None else decorator(_decorated_op_cls)
    """,
    "pv/head.py": """
        from pv.custom_op import CustomOp

        class LMHead(CustomOp):
            def __init__(self, vocab, hidden, disable_tp=False):
                self.vocab = vocab

        class TiedHead(LMHead):
            def __init__(self, vocab, hidden, tied=True, disable_tp=False):
                super().__init__(vocab, hidden, disable_tp=disable_tp)
    """,
    "pv/model.py": """
        from pv.head import LMHead

        def build(config):
            return LMHead(config.vocab, config.hidden, disable_tp=True)
    """,
}
MY_HEAD = """
    from pv.custom_op import CustomOp
    from pv.head import LMHead

    class MyHead(LMHead):
        def __init__(self, vocab, hidden):
            super().__init__(vocab, hidden)

    def register():
        ops = {"LMHead": MyHead}
        for name, op_cls in ops.items():
            CustomOp.register_oot(_decorated_op_cls=op_cls, name=name)
"""


@pytest.mark.parametrize(
    "registered",
    [
        MY_HEAD,
        MY_HEAD.replace("    def register():\n", "    if True:\n"),
        # A decorator of the class, through the class itself or through the registry's base by name.
        MY_HEAD.replace("    class MyHead", "    @LMHead.register_oot\n    class MyHead").split("\n    def register")[
            0
        ],
        MY_HEAD.replace("    class MyHead", '    @CustomOp.register_oot(name="LMHead")\n    class MyHead').split(
            "\n    def register"
        )[0],
    ],
)
def test_a_class_registered_out_of_tree_must_take_the_provider_s_constructions(run_check, registered):
    # vllm-ascend 0.26.0rc1 registers its `AscendParallelLMHead` for vLLM's `ParallelLMHead`, a
    # custom op whose `__new__` hands out the class registered under its name; at vLLM 0.27.1 a
    # model builds `ParallelLMHead(..., disable_tp=True)`, which the Ascend `__init__` lacks.
    provider = {**PROVIDER, **OUT_OF_TREE}

    def errors(source: str) -> list:
        found = run_check(provider, consumer(source)).findings
        return [f for f in found if f.rule.value == "arity-drift" and f.severity.value == "error"]

    [finding] = errors(registered)
    assert finding.symbol == "pv.head:LMHead", finding.message
    assert finding.message.startswith(
        "the consumer's class is registered out of tree in LMHead's place, so `LMHead(...)` builds it: "
        "the replacement cannot take the real call at pv/model.py:4: it passes disable_tp="
    )
    # The baseline built it so too, where the consumer works: not a change since.
    [same] = [
        f
        for f in run_check(provider, consumer(registered), baseline=provider).findings
        if f.rule.value == "arity-drift"
    ]
    assert same.severity.value == "warning"
    # An `__init__` that takes it fits; so does a class that keeps the provider's `__init__`.
    assert errors(registered.replace("(self, vocab, hidden):", "(self, vocab, hidden, **kwargs):")) == []
    keeps = registered.replace(
        "def __init__(self, vocab, hidden):\n            super().__init__(vocab, hidden)", "pass"
    )
    assert errors(keeps) == []
    # Narrower than the provider's, but no construction passes what it lacks: nothing to say (a
    # registry swaps in many classes; a class installed by assignment gets a warning).
    plain = {**provider, "pv/model.py": provider["pv/model.py"].replace(", disable_tp=True", "")}
    assert [f for f in run_check(plain, consumer(registered)).findings if f.rule.value == "arity-drift"] == []


def test_a_class_registered_out_of_tree_is_not_built_by_constructions_of_other_classes(run_check):
    provider = {**PROVIDER, **OUT_OF_TREE}
    provider["pv/model.py"] = provider["pv/model.py"].replace("LMHead", "TiedHead")
    # `TiedHead(...)` builds a TiedHead (its own name is not registered): MyHead's `__init__` never runs.
    errors = [f for f in run_check(provider, consumer(MY_HEAD)).findings if f.severity.value == "error"]
    assert errors == []
    # Registered under a name no provider class it derives from has: nothing is known to be replaced.
    other = {**PROVIDER, **OUT_OF_TREE}
    found = run_check(other, consumer(MY_HEAD.replace('{"LMHead": MyHead}', '{"Sampler": MyHead}'))).findings
    assert [f for f in found if f.severity.value == "error"] == []


def test_a_call_passing_a_new_keyword_by_name_is_said_beside_the_real_call_found(run_check):
    """vLLM 0.29's CPU runner calls `super().initialize_kv_cache(..., kv_cache_allocation_context=)`
    (a real call of ATOM's wrapper, found through its class) and its GPU worker passes the same
    keyword to `self.model_runner.initialize_kv_cache(...)` (found by the name and the keyword):
    a ROCm reader needs the second, the call that runs there."""
    subclass = "from pv.pool import Pool\n\n\nclass CpuPool(Pool):\n    def free(self, blocks, evict_first=False):\n        return super().free(blocks, evict_first=evict_first)\n"
    provider = {**POOL_B, "pv/cpu_pool.py": subclass}
    [finding] = run_check(provider, consumer(WRAPPER), baseline=POOL_A).findings
    assert (finding.severity.value, finding.symbol) == ("error", "pv.pool:Pool.free")
    assert "cannot take the real call at pv/cpu_pool.py:6" in finding.message
    assert "; the provider also passes evict_first= to a .free(...) call at pv/drain.py:3" in finding.message


# vLLM 0.27's `Scheduler.update_from_output` calls `self._update_request_with_output(request, ids,
# is_stale=...)`; `AsyncScheduler`, the default scheduler, defines that method itself, and
# tpu-inference replaces it with one that takes no `is_stale`.
SCHEDULERS = {
    "pv/__init__.py": "",
    "pv/sched.py": """
        class Scheduler:
            def update(self, request, ids):
                return self._record(request, ids, is_stale=False)

            def _record(self, request, ids, is_stale=False):
                return ids
    """,
    "pv/async_sched.py": """
        from pv.sched import Scheduler

        class AsyncScheduler(Scheduler):
            def _record(self, request, ids, is_stale=False):
                return super()._record(request, ids, is_stale)
    """,
}
ASYNC_PATCH = """
    from pv.async_sched import AsyncScheduler

    original = AsyncScheduler._record

    def _record(self, request, ids):
        return original(self, request, ids)

    AsyncScheduler._record = _record
"""


def test_a_base_class_s_call_on_self_reaches_the_method_a_subclass_defines(run_check):
    [finding] = [f for f in run_check(SCHEDULERS, consumer(ASYNC_PATCH)).findings if f.rule.value == "arity-drift"]
    assert (finding.severity.value, finding.symbol) == ("error", "pv.async_sched:AsyncScheduler._record")
    assert "cannot take the real call at pv/sched.py:3: it passes is_stale=" in finding.message
    # A subclass that takes the calling method over runs its own: the base's call is not made on it.
    overriding = {
        **SCHEDULERS,
        "pv/async_sched.py": SCHEDULERS["pv/async_sched.py"]
        + "\n    def update(self, request, ids):\n        return self._record(request, ids)\n",
    }
    errors = [f for f in run_check(overriding, consumer(ASYNC_PATCH)).findings if f.severity.value == "error"]
    assert errors == []
    # Nor does a call on `self` in a class outside the patched class's order reach it.
    without = SCHEDULERS["pv/sched.py"].replace("ids, is_stale=False)\n\n", "ids)\n\n")
    unrelated = {
        **SCHEDULERS,
        "pv/sched.py": without,
        "pv/unrelated.py": SCHEDULERS["pv/sched.py"].replace("class Scheduler:", "class Unrelated:"),
    }
    errors = [f for f in run_check(unrelated, consumer(ASYNC_PATCH)).findings if f.severity.value == "error"]
    assert errors == []
