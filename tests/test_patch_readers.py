"""Where provider code may read a name a consumer patch installs (`patch_readers`), and the
missing-patch-target verdict it gives: a patch whose target vanished is an error only where, at the
baseline, some code that runs read what it set."""

from __future__ import annotations

import ast
import textwrap

from atompin.analysis.patch_readers import FunctionKey, PatchedName, Readers, readers

ON_MODULE = PatchedName("helper", "pv.utils", ("pv.utils", "helper"))
ON_CLASS = PatchedName("helper", "", ("pv.runner:Runner", "helper"))


def read(
    source: str,
    module: str = "pv.other",
    patched: PatchedName = ON_MODULE,
    replaced: tuple[FunctionKey, ...] = (),
    installed_here: bool = False,
) -> Readers:
    tree = ast.parse(textwrap.dedent(source))
    return readers(tree, module, patched, lambda key: key in replaced, installed_here)


def test_a_bare_read_in_the_patched_module_is_the_patchs():
    src = """
        def helper(x):
            return helper(x - 1) if x else 0  # its own body runs only when called

        def use():
            return helper(2)
    """
    assert read(src, module="pv.utils").lines == [6]


def test_a_name_another_module_imported_is_read_there_unless_the_consumer_sets_it_there_too():
    src = """
        from pv.utils import helper

        def use():
            return helper(2)
    """
    assert read(src).lines == [5]
    covered = read(src, installed_here=True)
    assert (covered.lines, covered.covered) == ([], True)


def test_reads_in_a_function_the_consumer_replaces_are_held_not_live():
    src = """
        from pv.utils import helper

        class Sampler:
            def forward(self):
                return helper(1)

            def other(self):
                return 0
    """
    found = read(src, replaced=(("pv.other:Sampler", "forward"),))
    assert (found.lines, found.held) == ([], [("pv.other:Sampler", "forward")])
    # A replaced function that reads nothing of it is not named.
    assert read(src, replaced=(("pv.other:Sampler", "other"),)).lines == [6]
    assert read(src, replaced=(("pv.other:Sampler", "other"),)).held == []


def test_locals_parameters_and_closures_of_the_same_name_are_not_reads():
    src = """
        def a(helper):
            return helper()

        def b():
            helper = make()
            return helper()

        def c():
            from elsewhere import helper
            def inner():
                return helper()
            return inner

        def d():
            global helper
            return helper()
    """
    assert read(src, module="pv.utils").lines == [17]


def test_a_comprehension_variable_is_its_own_scope_so_the_name_counts():
    src = """
        def a(items):
            return [helper for helper in items]
    """
    assert read(src, module="pv.utils").lines == [3]


def test_self_members_are_the_classs_own_not_a_module_function():
    src = """
        class Sampler:
            def run(self, x):
                return self.helper(x)
    """
    assert read(src).lines == []
    assert read(src, patched=ON_CLASS).lines == [4]


def test_strings_naming_it_count_docstrings_all_and_imports_do_not():
    src = '''
        """helper lives in pv.utils."""
        import pv.utils
        from pv.utils import helper as h

        __all__ = ["helper"]

        def find(x):
            """Calls helper."""
            return getattr(pv.utils, "helper")

        PATH = "pv.utils.helper"
        MESSAGE = "helper failed"
    '''
    assert read(src).lines == [10, 12]


def test_a_module_defining_its_own_function_of_that_name_reads_its_own():
    src = """
        def helper():
            return 1

        def use():
            return helper()
    """
    assert read(src).lines == []
    assert read(src, module="pv.utils").lines == [6]
    # An attribute read is another object's: it may be the patched one.
    assert read(src + "\n        def more(m):\n            return m.helper()\n").lines == [9]


# -- the verdict -----------------------------------------------------------------


PIN = {
    "pv/__init__.py": "",
    "pv/utils.py": "def other():\n    pass\n",
    "pv/penalties.py": "def convert(x):\n    return x\n",
}


def baseline(reader: str = "") -> dict[str, str]:
    return {
        **PIN,
        "pv/utils.py": "def other():\n    pass\n\ndef helper(x):\n    return x\n",
        "pv/penalties.py": "from pv.utils import helper\n\ndef convert(x):\n    return " + (reader or "x") + "\n",
    }


def consumer(extra: str = "") -> dict[str, str]:
    return {
        "plug/__init__.py": "",
        "plug/mod.py": textwrap.dedent(
            """
            import pv.utils
            import pv.penalties

            def helper(x):
                return x

            pv.utils.helper = helper
            """
        )
        + textwrap.dedent(extra),
    }


def only(result, rule: str):  # type: ignore[no-untyped-def]
    return [f for f in result.findings if f.rule.value == rule]


def test_a_vanished_target_nothing_read_at_the_baseline_is_a_warning(run_check):
    # vllm-mindspore sets `vllm.utils.async_tensor_h2d`, which no vLLM 0.11 code called.
    [finding] = only(run_check(PIN, consumer(), baseline=baseline()), "missing-patch-target")
    assert finding.severity.value == "warning"
    assert "(no provider code reads the name): it did nothing there either" in finding.message


def test_a_vanished_target_the_baseline_read_is_an_error(run_check):
    [finding] = only(run_check(PIN, consumer(), baseline=baseline("helper(x)")), "missing-patch-target")
    assert finding.severity.value == "error"
    assert "the provider's code runs unpatched" in finding.message


def test_reads_only_in_functions_the_consumer_replaces_make_it_a_warning(run_check):
    # vllm-mindspore's `make_tensor_with_pad`: vLLM 0.11 called it only in the `_convert_to_tensors`
    # that the plugin replaces as well.
    replacing = """
        def convert(x):
            return x

        pv.penalties.convert = convert
    """
    found = run_check(PIN, consumer(replacing), baseline=baseline("helper(x)"))
    [finding] = only(found, "missing-patch-target")
    assert finding.severity.value == "warning"
    assert "its reads are in pv.penalties.convert, which the consumer replaces" in finding.message
    # A replacement that calls the original still runs the read: the error stays.
    wrapping = """
        _orig = pv.penalties.convert

        def convert(x):
            return _orig(x)

        pv.penalties.convert = convert
    """
    [error] = only(run_check(PIN, consumer(wrapping), baseline=baseline("helper(x)")), "missing-patch-target")
    assert error.severity.value == "error"


def test_a_read_where_the_consumer_sets_the_name_too_is_covered(run_check):
    # vllm-mindspore sets `gpu_input_batch.copy_slice` beside `vllm.v1.utils.copy_slice`.
    beside = "\n        pv.penalties.helper = helper\n"
    found = only(run_check(PIN, consumer(beside), baseline=baseline("helper(x)")), "missing-patch-target")
    [finding] = [f for f in found if f.symbol == "pv.utils:helper"]
    assert finding.severity.value == "warning"
    assert "pv.penalties reads the name it binds itself, where the consumer sets its replacement too" in (
        finding.message
    )


def test_a_replacement_in_the_other_branch_stands_for_nothing(run_check):
    # vllm-ascend replaces `do_mamba_copy_block` (the one reader of `batch_memcpy`) only where it
    # cannot launch its Triton kernel; where it can, it patches `batch_memcpy` and vLLM's
    # `do_mamba_copy_block` reads it.
    branches = """
        def convert(x):
            return x

        if fast():
            pv.utils.helper = helper
        else:
            pv.utils.helper = helper
            pv.penalties.convert = convert
    """
    head = consumer()["plug/mod.py"].rsplit("pv.utils.helper = helper", 1)[0]
    files = {"plug/__init__.py": "", "plug/mod.py": head + textwrap.dedent(branches)}
    found = only(run_check(PIN, files, baseline=baseline("helper(x)")), "missing-patch-target")
    assert sorted((f.sites[0].line, f.severity.value) for f in found) == [(12, "error"), (14, "warning")]


def test_a_replacement_reaching_the_original_through_a_stashed_member_still_runs_it(run_check):
    # vllm-ascend keeps `chat_completion_stream_generator` as `_ascend_glm_original_...` on the
    # class and calls it through `self`: the original's reads still run.
    provider_pin = {**PIN, "pv/serving.py": "class Chat:\n    def stream(self):\n        return 1\n"}
    before = {
        **baseline(),
        "pv/serving.py": (
            "class Chat:\n    def delta(self):\n        return 0\n\n"
            "    def stream(self):\n        return self.delta()\n"
        ),
    }
    src = """
        from pv.serving import Chat

        def delta(self):
            return 1

        Chat._kept_stream = Chat.stream

        def stream(self):
            original = self._kept_stream
            return original()

        Chat.delta = delta
        Chat.stream = stream
    """
    found = only(
        run_check(provider_pin, {"plug/__init__.py": "", "plug/mod.py": src}, baseline=before), "missing-patch-target"
    )
    assert [(f.symbol, f.severity.value) for f in found] == [("pv.serving:Chat.delta", "error")]
    # Without the stash read, the replacement never runs the original: nothing read `delta`.
    plain = src.replace("original = self._kept_stream\n            return original()", "return 2")
    found = only(
        run_check(provider_pin, {"plug/__init__.py": "", "plug/mod.py": plain}, baseline=before), "missing-patch-target"
    )
    assert [(f.symbol, f.severity.value) for f in found] == [("pv.serving:Chat.delta", "warning")]
