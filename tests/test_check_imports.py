"""unresolved-import: each way a consumer reaches into the provider, and its correct variant."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import brief, only

from atompin.analysis.provider import ProviderIndex
from atompin.model import Status
from atompin.sources.tree import FolderTree
from atompin.testing import write_files

PROVIDER = {
    "pv/__init__.py": "",
    "pv/core/__init__.py": "",
    "pv/core/utils.py": """
        def helper(a, b=1):
            return a
        class Spec:
            size = 1
    """,
    "pv/core/planning.py": "def plan(config, groups):\n    return groups\n",
}


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source}


def test_module_level_from_import_missing_and_present(run_check):
    bad = run_check(PROVIDER, consumer("from pv.core.utils import gone, helper\n"))
    assert brief(bad) == [("unresolved-import", "error", "pv.core.utils:gone", ["plug/mod.py:1"])]
    assert "raises ImportError" in bad.findings[0].message
    assert bad.summary.import_sites == 2
    good = run_check(PROVIDER, consumer("from pv.core.utils import Spec, helper\n"))
    assert good.findings == ()


def test_function_local_import(run_check):
    src = "def f():\n    from pv.core.utils import gone\n    return gone\n"
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "error", "pv.core.utils:gone", ["plug/mod.py:2"])
    ]
    ok = "def f():\n    from pv.core.planning import plan\n    return plan\n"
    assert run_check(PROVIDER, consumer(ok)).findings == ()


def test_missing_module(run_check):
    result = run_check(PROVIDER, consumer("import pv.core.nothere\n"))
    assert brief(result) == [("unresolved-import", "error", "pv.core.nothere", ["plug/mod.py:1"])]
    assert "closest existing package: pv.core" in result.findings[0].message


def test_import_as_alias_then_attribute_chain(run_check):
    src = "import pv.core as c\n\ndef f():\n    return c.utils.Spec.size, c.utils.Gone\n"
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("unresolved-import", "error", "pv.core.utils:Gone", ["plug/mod.py:4"])]
    ok = "import pv.core as c\n\ndef f():\n    return c.utils.Spec.size, c.planning.plan\n"
    assert run_check(PROVIDER, consumer(ok)).findings == ()


def test_plain_import_then_full_chain(run_check):
    src = "import pv.core.utils\n\nx = pv.core.utils.helper\ny = pv.core.utils.Spec.nope\n"
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "error", "pv.core.utils:Spec.nope", ["plug/mod.py:4"])
    ]


def test_from_import_of_a_submodule(run_check):
    src = "from pv.core import planning, utils\nplanning.plan\n"
    assert run_check(PROVIDER, consumer(src)).findings == ()
    bad = run_check(PROVIDER, consumer("from pv.core import planner\n"))
    assert brief(bad) == [("unresolved-import", "error", "pv.core:planner", ["plug/mod.py:1"])]


def test_importlib_literal(run_check):
    src = (
        "import importlib\nm = importlib.import_module('pv.core.gone')\nok = importlib.import_module('pv.core.utils')\n"
    )
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "error", "pv.core.gone", ["plug/mod.py:2"])
    ]


def test_importlib_from_import_and_attribute_on_result(run_check):
    src = "from importlib import import_module\nm = import_module('pv.core.utils')\nm.helper\nm.vanished\n"
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "error", "pv.core.utils:vanished", ["plug/mod.py:4"])
    ]


def test_importlib_literal_passed_to_helper_in_same_file(run_check):
    src = """
        import importlib

        def _load(path):
            return importlib.import_module(path)

        A = _load("pv.core.utils")
        B = _load("pv.core.gone")
        C = _load("elsewhere.module")
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("unresolved-import", "error", "pv.core.gone", ["plug/mod.py:4"])]
    assert "plug/mod.py:7" in result.findings[0].message  # the call that passed the literal


def test_type_checking_block_is_skipped(run_check):
    src = """
        from typing import TYPE_CHECKING
        import typing
        if TYPE_CHECKING:
            from pv.core.utils import OnlyForTypes
        if typing.TYPE_CHECKING:
            from pv.core import gone_too
        else:
            from pv.core.utils import helper
    """
    result = run_check(PROVIDER, consumer(src))
    assert result.findings == ()
    assert result.summary.import_sites == 1


def test_ladder_first_alternative_missing_second_found_passes(run_check):
    src = """
        try:
            from pv.old.place import plan
        except ImportError:
            from pv.core.planning import plan
    """
    result = run_check(PROVIDER, consumer(src))
    assert result.findings == ()
    assert result.summary.groups == 1
    assert result.summary.import_sites == 2


def test_ladder_every_alternative_missing_and_nothing_catches(run_check):
    src = """
        try:
            from pv.old.place import plan
        except ModuleNotFoundError:
            try:
                from pv.core.utils import plan
            except ImportError:
                raise RuntimeError("no plan")
    """
    result = run_check(PROVIDER, consumer(src))
    [finding] = result.findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")
    assert [(a.symbol, a.status.value) for a in finding.alternatives] == [
        ("pv.old.place:plan", "missing"),
        ("pv.core.utils:plan", "missing"),
    ]
    assert [str(s) for s in finding.sites] == ["plug/mod.py:2", "plug/mod.py:5"]
    assert result.summary.groups == 1


# AReaL 1.0's platform returns vLLM's V1 worker when it imports, and tries the V0 one only then.
RETURNED_OR_NEXT = """
    import logging

    def worker_class():
        try:
            from pv.core.planning import plan

            return plan
        except ImportError:
            pass

        try:
            from pv.old.place import plan

            return plan
        except ImportError as e:
            logging.error("no plan: %s", e)
            raise RuntimeError("no plan") from e
"""


def test_a_try_that_returns_what_it_imported_makes_what_follows_the_next_alternative(run_check):
    """What follows a try whose body returns, and whose handler lets the function go on, runs
    only where that import failed: with it, one ladder; it fails only when every way does."""
    result = run_check(PROVIDER, consumer(RETURNED_OR_NEXT))
    assert result.findings == ()
    assert result.summary.groups == 1
    # Both gone: one finding, the ladder's, with both alternatives and the handler that raises.
    both = RETURNED_OR_NEXT.replace("pv.core.planning", "pv.new.place")
    [finding] = run_check(PROVIDER, consumer(both)).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")
    assert [(a.symbol, a.status.value) for a in finding.alternatives] == [
        ("pv.new.place:plan", "missing"),
        ("pv.old.place:plan", "missing"),
    ]
    # A plain import after it is the next alternative as well.
    plain = """
        def worker_class():
            try:
                from pv.core.planning import plan
                return plan
            except ImportError:
                pass
            from pv.old.place import plan
            return plan
    """
    assert run_check(PROVIDER, consumer(plain)).findings == ()
    assert brief(run_check(PROVIDER, consumer(plain.replace("pv.core.planning", "pv.new.place")))) == [
        ("unresolved-import", "error", "pv.new.place:plan", ["plug/mod.py:3", "plug/mod.py:7"])
    ]
    # Nothing imported after it (unsloth's `disable_broken_vllm`): the handler is the fallback.
    kept = """
        def broken():
            failure = None
            try:
                import pv.gone.ext
                return False
            except Exception as error:
                failure = error
            return failure is not None
    """
    [finding] = run_check(PROVIDER, consumer(kept)).findings
    assert finding.severity.value == "warning" and "the fallback sets failure = error" in finding.message


def test_a_use_of_a_name_the_handler_stands_in_for_is_the_ladders_finding(run_check):
    """unsloth-zoo imports vLLM's `AbstractWorkerManager` and, where a release no longer has it,
    defines a class of its own under the name; `AbstractWorkerManager.__init__(self, device)`
    then calls that one. The failing import is the ladder's (degraded) finding, not the use's."""
    src = """
        try:
            from pv.gone.manager import Manager
        except ImportError:
            class Manager:
                def __init__(self, device):
                    self.device = device

        def init(self, device):
            Manager.__init__(self, device)
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "warning", "pv.gone.manager:Manager", ["plug/mod.py:2"])
    ]


def test_what_follows_a_try_whose_handler_returns_runs_only_where_its_imports_work(run_check):
    """unsloth-zoo's `patch_vllm_gdn_replayssm` imports the layer it patches in a try that
    returns False when that fails, then calls the helper that imports what only releases with
    that layer have: where the layer is missing, the helper is never reached."""
    src = """
        def install():
            try:
                from pv.gone.layer import Layer
            except Exception:
                return False
            _patch(Layer)
            return True

        def _patch(layer):
            from pv.gone.backend import Backend
            return Backend(layer)
    """
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "warning", "pv.gone.layer:Layer", ["plug/mod.py:3"])
    ]
    # Where the first import works, what follows runs, and its own failure is reported.
    works = src.replace("pv.gone.layer import Layer", "pv.core.utils import Spec as Layer")
    assert [(f.severity.value, f.symbol) for f in run_check(PROVIDER, consumer(works)).findings] == [
        ("error", "pv.gone.backend:Backend")
    ]


def test_a_function_defined_in_a_try_body_after_its_imports_runs_only_where_they_worked(run_check):
    """unsloth-zoo wraps vLLM V1's `capture_model` with a closure defined in the try that imports
    the runner, and prints a line where that fails: where the module is gone, the closure is
    never made, and what it reads is not reported on its own."""
    src = """
        def patch():
            try:
                from pv.gone.runner import Runner, logger
                original = Runner.capture

                def capture(self, *args):
                    logger.info("capture")
                    return original(self, *args)

                Runner.capture = capture
            except Exception as e:
                print(f"could not patch: {e}")
    """
    assert [(f.severity.value, f.symbol) for f in run_check(PROVIDER, consumer(src)).findings] == [
        ("warning", "pv.gone.runner:Runner + pv.gone.runner:logger")
    ]


def test_what_follows_a_try_whose_body_returns_where_a_module_is_missing_runs_only_where_it_is_there(run_check):
    """unsloth-zoo: `try: if find_spec("vllm.third_party.triton_kernels") is None: return None` /
    `except (ImportError, ValueError): return None`, then it imports the module and reads it."""
    src = """
        import importlib
        import importlib.util

        def vendored():
            try:
                if importlib.util.find_spec("pv.gone.kernels") is None:
                    return None
            except (ImportError, ValueError):
                return None
            kernels = importlib.import_module("pv.gone.kernels")
            return kernels.__path__
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    # A handler that lets the function go on: what follows may run where the module is missing.
    goes_on = src.replace(
        "except (ImportError, ValueError):\n                return None", "except ImportError:\n                pass"
    )
    assert [f.severity.value for f in run_check(PROVIDER, consumer(goes_on)).findings if f.severity.value == "error"]


def test_a_body_read_for_one_calls_values_runs_only_where_that_call_does(run_check):
    """unsloth-zoo's `_probe(module)` reads `module.__name__`; one of its calls passes vLLM's
    vendored module, and runs only where `find_spec` found it."""
    src = """
        import importlib
        import importlib.util

        def _probe(module):
            return module.__name__

        def top():
            return _probe(importlib.import_module("json"))

        def vendored():
            if importlib.util.find_spec("pv.gone.kernels") is None:
                return None
            return _probe(importlib.import_module("pv.gone.kernels"))
    """
    assert run_check(PROVIDER, consumer(src)).findings == ()
    # Called with it where nothing tested for it: the read fails there.
    untested = src.replace('if importlib.util.find_spec("pv.gone.kernels") is None:\n                return None\n', "")
    assert [f.symbol for f in run_check(PROVIDER, consumer(untested)).findings if f.severity.value == "error"] == [
        "pv.gone.kernels",
        "pv.gone.kernels:__name__",
    ]


def test_an_import_an_inner_try_catches_is_no_alternative_of_the_ladder_around_it(run_check):
    """unsloth's `disable_broken_vllm`: `try: import vllm`, then each compiled extension by name in
    `try: importlib.import_module(ext)` / `except ModuleNotFoundError: pass`. A missing extension is
    that inner try's (degraded) finding; the ladder around it imports vLLM fine."""
    src = """
        import importlib

        EXTENSIONS = ("pv.core.utils", "pv.gone.ext")

        def broken():
            try:
                import pv.core
                for ext in EXTENSIONS:
                    try:
                        importlib.import_module(ext)
                    except ModuleNotFoundError:
                        pass
                return False
            except Exception:
                return True
    """
    assert [(f.severity.value, f.symbol) for f in run_check(PROVIDER, consumer(src)).findings] == [
        ("warning", "pv.gone.ext")
    ]


def test_ladder_with_fallback_is_degraded_warning(run_check):
    src = """
        try:
            from pv.core.utils import fast_path
        except (ImportError, AttributeError):
            fast_path = None
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == (
        "unresolved-import",
        "warning",
        "pv.core.utils:fast_path",
    )
    assert "degraded" in finding.message and "sets fast_path = None" in finding.message


def test_an_import_computed_in_a_try_that_catches_it_is_a_ladder(run_check):
    """vllm-sabi-mla and eagle-harness try each of several module names in a loop
    (`import_module(name)` in a try whose handler goes on to the next): the one missing is caught,
    as a literal import there would be. It was an error saying the import raises."""
    src = """
        import importlib

        def runner_classes():
            found = []
            for name in ("pv.old_runner", "pv.core.utils"):
                try:
                    found.append(importlib.import_module(name))
                except Exception:
                    continue
            return found
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("unresolved-import", "warning", "pv.old_runner", ["plug/mod.py:7"])]
    assert "degraded" in result.findings[0].message and "skips to the next iteration" in result.findings[0].message
    # A handler that raises again catches nothing.
    reraised = src.replace("continue", "raise")
    assert [f.severity.value for f in run_check(PROVIDER, consumer(reraised)).findings] == ["error"]


@pytest.mark.parametrize("suppress", ["contextlib.suppress(ImportError)", "suppress(ImportError, AttributeError)"])
def test_an_import_under_suppress_is_read_as_a_try_that_catches_it(run_check, suppress: str):
    src = f"""
        import contextlib
        from contextlib import suppress
        with {suppress}:
            from pv.core.utils import fast_path
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("unresolved-import", "warning", "pv.core.utils:fast_path", ["plug/mod.py:4"])]
    [finding] = result.findings
    assert "degraded" in finding.message and "the fallback does nothing" in finding.message
    # Another context manager catches nothing: the import raises.
    [other] = run_check(PROVIDER, consumer(src.replace(suppress, "open('x')"))).findings
    assert other.severity.value == "error"


CAUGHT_HELPER = """
    import contextlib

    def install():
        from pv.core.utils import fast_path
        fast_path.enabled = True

    with contextlib.suppress(ImportError):
        install()
"""


def test_an_import_failing_in_a_function_every_call_of_which_is_caught_is_a_warning(run_check):
    # vllm-ascend's patch_vision: `with contextlib.suppress(ImportError): install_patch()`.
    [finding] = run_check(PROVIDER, consumer(CAUGHT_HELPER)).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "warning")
    assert "every call of install() is inside a try that catches it (plug/mod.py:7)" in finding.message
    as_try = CAUGHT_HELPER.replace(
        "with contextlib.suppress(ImportError):\n        install()",
        "try:\n        install()\n    except ImportError:\n        pass",
    )
    assert [f.severity.value for f in run_check(PROVIDER, consumer(as_try)).findings] == ["warning"]


@pytest.mark.parametrize(
    "more",
    [
        "install()",  # also called where nothing catches it
        "HOOKS = [install]",  # handed on: whoever calls it is not seen
    ],
)
def test_an_import_failing_in_a_function_called_elsewhere_too_stays_an_error(run_check, more: str):
    [finding] = run_check(PROVIDER, consumer(CAUGHT_HELPER + "    " + more + "\n")).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")
    # Named in another file of the consumer (imported there): an error as well.
    files = {**consumer(CAUGHT_HELPER), "plug/other.py": "from plug.mod import install\ninstall()\n"}
    assert [f.severity.value for f in run_check(PROVIDER, files).findings] == ["error"]


STEPS = """
    import logging
    import os

    logger = logging.getLogger(__name__)

    def install_rows(report):
        report.append("rows")

    def install_json(report):
        from pv.core.utils import fast_path
        fast_path.enabled = True

    def install_all():
        report = []
        steps = []
        if os.environ.get("TUNE_GEMM"):
            steps += [install_rows, install_json]
        if os.environ.get("TUNE_MHC"):
            steps.append(install_rows)
        for step in steps:
            try:
                step(report)
            except Exception as err:
                logger.warning("%s skipped: %r", step.__name__, err)
        return report
"""


@pytest.mark.parametrize("added", ["steps += [install_rows, install_json]", "steps.extend([install_rows, install_json])"])
def test_a_function_called_as_a_step_of_a_list_a_try_runs_is_caught_there(run_check, added: str):
    # sglang 0.5.23's aiter in-tree tuning: `steps += [install_bpreshuffle_rows, install_triton_json]`,
    # then `for step in steps: try: step(report) except Exception: logger.warning(...)`.
    src = STEPS.replace("steps += [install_rows, install_json]", added)
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "warning")
    assert "every call of install_json() is inside a try that catches it (plug/mod.py:21)" in finding.message
    # Listed where no try runs the steps, it stays an error.
    bare = STEPS.replace(
        """            try:
                step(report)
            except Exception as err:
                logger.warning("%s skipped: %r", step.__name__, err)""",
        """            step(report)""",
    )
    assert [f.severity.value for f in run_check(PROVIDER, consumer(bare)).findings] == ["error"]


def test_ladder_broad_except_that_logs_and_returns(run_check):
    src = """
        import logging
        logger = logging.getLogger(__name__)
        def maybe():
            try:
                import pv.core.missing_mod as m
            except Exception:
                logger.warning("no luck")
                return False
            return True
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.severity.value == "warning"
    assert "logs, returns False" in finding.message


def test_ladder_whose_handler_exits_is_an_error_and_its_later_uses_are_part_of_it(run_check):
    # A real shape (NVIDIA Dynamo's frontend at vLLM 0.33): the handler logs and exits, so the use
    # after the ladder never runs without the import; the one finding is the ladder's, an error.
    src = """
        import sys
        def main():
            try:
                from pv.core.utils import Spec
                from pv.moved.args import Front
            except ModuleNotFoundError:
                print("needs pv")
                sys.exit(1)
            Front.add_cli_args(Spec)
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [
        ("unresolved-import", "error", "pv.core.utils:Spec + pv.moved.args:Front", ["plug/mod.py:4", "plug/mod.py:5"])
    ]
    assert "its handler logs, exits" in result.findings[0].message
    assert "AttributeError" not in result.findings[0].message


def test_each_way_a_handler_ends_the_program_makes_the_ladder_an_error(run_check):
    for ending in ("import os\n        os._exit(3)", "exit()", "sys.exit(1)\n        print('unreached')"):
        src = f"import sys\ntry:\n    from pv.moved import Front\nexcept ImportError:\n    {ending}\nFront.run()\n"
        src = src.replace("\n        ", "\n    ")
        [finding] = run_check(PROVIDER, consumer(src)).findings
        assert (finding.severity.value, [str(s) for s in finding.sites]) == ("error", ["plug/mod.py:3"]), ending
        assert finding.message.endswith("exits"), ending  # the ladder's finding, not the use's


def test_a_use_after_a_ladder_whose_handler_returns_is_not_an_error_of_its_own(run_check):
    src = """
        def load():
            try:
                from pv.moved.args import Front
            except ImportError:
                return None
            return Front.add_cli_args(1)
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [("unresolved-import", "warning", "pv.moved.args:Front", ["plug/mod.py:3"])]
    assert "the fallback returns None" in result.findings[0].message
    # The same with a module imported under a name: the module is what is gone.
    module = src.replace("from pv.moved.args import Front", "import pv.moved.args as Front")
    assert [f.severity.value for f in run_check(PROVIDER, consumer(module)).findings] == ["warning"]


def test_a_use_after_a_ladder_still_reports_what_the_import_does_not_cover(run_check):
    # The import works and the attribute is gone: the use fails on its own.
    present = """
        def load():
            try:
                import pv.core.utils as u
            except ImportError:
                return None
            return u.gone
    """
    assert brief(run_check(PROVIDER, consumer(present))) == [
        ("unresolved-import", "error", "pv.core.utils:gone", ["plug/mod.py:6"])
    ]
    # A handler that falls through: the use runs without the name, so it is still an error.
    through = """
        import logging
        def load():
            try:
                from pv.moved.args import Front
            except ImportError:
                logging.warning("no Front")
            return Front.add_cli_args(1)
    """
    severities = {f.severity.value for f in run_check(PROVIDER, consumer(through)).findings}
    assert "error" in severities


def test_ladder_whose_installer_returns_loses_its_patches(run_check):
    src = """
        def install():
            try:
                import pv.core.moved as m
            except ImportError:
                return
            m.helper = lambda a, b=1: a
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "error")
    assert "never installed: pv.core.moved:helper" in finding.message


def test_patches_an_installer_never_made_at_the_baseline_either_are_a_warning(run_check):
    """unsloth-zoo patches `Gemma4ForCausalLM` right after importing it, and returns where the
    import fails. Where the baseline had no Gemma 4 either, the patch was never made there: not a
    change since. Where it had, the patch stopped applying since."""
    src = """
        def install():
            try:
                from pv.models.gemma4 import Gemma4
            except Exception:
                return
            Gemma4.get_expert_mapping = lambda self: []
    """
    [finding] = run_check(PROVIDER, consumer(src), baseline=PROVIDER).findings
    assert (finding.rule.value, finding.severity.value) == ("unresolved-import", "warning")
    assert "never installed" in finding.message and "not a change since" in finding.message
    baseline = {**PROVIDER, "pv/models/__init__.py": "", "pv/models/gemma4.py": "class Gemma4:\n    pass\n"}
    assert [f.severity.value for f in run_check(PROVIDER, consumer(src), baseline=baseline).findings] == ["error"]


def test_ladder_that_falls_back_to_another_package(run_check):
    src = """
        try:
            from pv.core.utils import tl
        except ModuleNotFoundError:
            import triton.language as tl
    """
    [finding] = run_check(PROVIDER, consumer(src)).findings
    assert finding.severity.value == "warning"
    assert "imports import triton.language as tl instead" in finding.message


def test_unguarded_import_inside_try_that_does_not_catch_import_errors(run_check):
    src = "try:\n    from pv.core.utils import gone\nexcept KeyError:\n    gone = None\n"
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "error", "pv.core.utils:gone", ["plug/mod.py:2"])
    ]


def test_star_import_from_provider_counts_the_module(run_check):
    assert run_check(PROVIDER, consumer("from pv.core.utils import *\n")).findings == ()
    bad = run_check(PROVIDER, consumer("from pv.core.gone import *\n"))
    assert only(bad, "unresolved-import")[0].symbol == "pv.core.gone"


def test_relative_imports_are_the_consumers_own(run_check):
    files = {"plug/__init__.py": "", "plug/a.py": "from .b import thing\n", "plug/b.py": "thing = 1\n"}
    # Nothing of the provider's is used: the only finding says the check proves nothing.
    assert [f.rule.value for f in run_check(PROVIDER, files).findings] == ["no-contact"]


def test_unparseable_consumer_file_is_reported_not_fatal(run_check):
    files = {
        "plug/__init__.py": "",
        "plug/bad.py": "import pv\ndef broken(:\n",
        "plug/good.py": "from pv.core.utils import gone\n",
        # Names neither the provider nor a module that does: it cannot use the provider, so it is not parsed.
        "plug/unrelated.py": "def broken(:\n",
    }
    result = run_check(PROVIDER, files)
    assert brief(result) == [
        ("unparseable", "warning", "plug/bad.py", ["plug/bad.py:2"]),
        ("unresolved-import", "error", "pv.core.utils:gone", ["plug/good.py:1"]),
    ]


# A package that moved its modules and keeps the old names importable (ROCm aiter's
# `aiter.ops.triton`): a literal map of old name -> new place, read by a module `__getattr__` and
# by an import finder it puts on `sys.meta_path`.
COMPAT_PROVIDER = {
    "pv/__init__.py": "",
    "pv/ops/__init__.py": """
        import importlib
        import sys
        from types import SimpleNamespace
        _COMPAT = {"old_gemm": "gemm.basic.old_gemm", "gone": "gemm.nowhere"}
        def __getattr__(name):
            if name in _COMPAT:
                return importlib.import_module(f"pv.ops.{_COMPAT[name]}")
            raise AttributeError(name)
        def _find_spec(fullname, path, target=None):
            name = fullname.split(".")[-1]
            if name in _COMPAT:
                sys.modules[fullname] = importlib.import_module(f"pv.ops.{_COMPAT[name]}")
                return importlib.util.find_spec(f"pv.ops.{_COMPAT[name]}")
            return None
        sys.meta_path.insert(0, SimpleNamespace(find_spec=_find_spec))
    """,
    "pv/ops/gemm/__init__.py": "",
    "pv/ops/gemm/basic/__init__.py": "",
    "pv/ops/gemm/basic/old_gemm.py": "def old_gemm(a, b):\n    return a\n",
}


def test_submodule_served_by_the_packages_import_finder(run_check):
    src = "from pv.ops.old_gemm import old_gemm\nimport pv.ops.old_gemm as g\nfrom pv.ops import old_gemm as m\n"
    assert run_check(COMPAT_PROVIDER, consumer(src)).findings == ()
    # What the new place lacks, the old name lacks too.
    bad = run_check(COMPAT_PROVIDER, consumer("from pv.ops.old_gemm import new_gemm\n"))
    assert brief(bad) == [("unresolved-import", "error", "pv.ops.old_gemm:new_gemm", ["plug/mod.py:1"])]
    # An entry pointing nowhere is missing, and says through what.
    gone = run_check(COMPAT_PROVIDER, consumer("from pv.ops.gone import f\n"))
    assert brief(gone) == [("unresolved-import", "error", "pv.ops.gone:f", ["plug/mod.py:1"])]
    assert "pv.ops's import finder serves pv.ops.gone from pv.ops.gemm.nowhere" in gone.findings[0].message
    # A module inside a served package is found in the package it is served from (vLLM 0.25's
    # `aiter.ops.triton.moe_routing.routing`, served from `aiter.ops.triton.moe.moe_routing`).
    files = {**COMPAT_PROVIDER, "pv/ops/gemm/basic/deep/routing.py": "def routing(x):\n    pass\n"}
    files["pv/ops/__init__.py"] = files["pv/ops/__init__.py"].replace(
        '"gone": "gemm.nowhere"', '"deep": "gemm.basic.deep"'
    )
    assert run_check(files, consumer("from pv.ops.deep.routing import routing\n")).findings == ()
    lost = run_check(files, consumer("from pv.ops.deep.nothere import routing\n"))
    assert brief(lost) == [("unresolved-import", "error", "pv.ops.deep.nothere:routing", ["plug/mod.py:1"])]


def test_the_map_serves_imports_only_with_a_finder(tmp_path: Path):
    # Without the finder only attribute access (`__getattr__`) is served: `import pv.ops.old_gemm` fails.
    files = dict(COMPAT_PROVIDER)
    files["pv/ops/__init__.py"] = files["pv/ops/__init__.py"].replace(
        "sys.meta_path.insert(0, SimpleNamespace(find_spec=_find_spec))", ""
    )
    index = ProviderIndex(FolderTree(write_files(tmp_path, files)), "pv")
    assert index.resolve_symbol("pv.ops.old_gemm:old_gemm").status is Status.MISSING
    assert index.resolve_symbol("pv.ops:old_gemm.old_gemm").status is Status.FOUND


def test_a_finder_without_getattr_serves_the_submodule_as_an_attribute_too(run_check):
    # `import pv.ops.old_gemm` binds `old_gemm` on the package, as a file's submodule would be.
    files = dict(COMPAT_PROVIDER)
    init = files["pv/ops/__init__.py"]
    files["pv/ops/__init__.py"] = init[: init.index("def __getattr__")] + init[init.index("def _find_spec") :]
    src = "import pv.ops.old_gemm\nfrom pv.ops import old_gemm\nx = pv.ops.old_gemm.old_gemm\ny = old_gemm.old_gemm\n"
    assert run_check(files, consumer(src)).findings == ()
    bad = run_check(files, consumer("import pv.ops.old_gemm\nx = pv.ops.old_gemm.nothere\n"))
    assert brief(bad) == [("unresolved-import", "error", "pv.ops:old_gemm.nothere", ["plug/mod.py:2"])]


PROBE = """\
def kernels_available():
    try:
        from pv.core.utils import fast_kernel, fast_topk  # noqa: F401
    except ImportError:
        return False
    return True


def run(x):
    from pv.core.utils import fast_kernel
    return fast_kernel(x)
"""


def test_a_function_importing_what_the_consumer_tests_for_elsewhere_warns(run_check):
    # vLLM's MiniMax-M3 indexer on AMD: `forward` imports aiter's MSA kernels, which a feature test
    # tried first; the backend is chosen only where the test passed.
    result = run_check(PROVIDER, consumer(PROBE))
    assert brief(result) == [
        ("unresolved-import", "warning", "pv.core.utils:fast_kernel", ["plug/mod.py:10"]),
        ("unresolved-import", "warning", "pv.core.utils:fast_kernel + pv.core.utils:fast_topk", ["plug/mod.py:3"]),
    ]
    assert "in run() raises ImportError, but the consumer tests for it at plug/mod.py:2" in result.findings[0].message


@pytest.mark.parametrize(
    "source",
    [
        # At module level the import runs whatever the test says.
        PROBE.replace(
            "def run(x):\n    from pv.core.utils import fast_kernel\n",
            "from pv.core.utils import fast_kernel\n\n\ndef run(x):\n",
        ),
        # A test whose handler raises is no feature test: nothing goes on without the kernel.
        PROBE.replace("        return False", '        raise RuntimeError("the kernels are required")'),
        # A test of something else.
        PROBE.replace("import fast_kernel, fast_topk  # noqa", "import helper  # noqa"),
        # An installer that guards its own import and goes on to use it is no feature test
        # (ATOM's `apply_vllm_req_id_passthrough_patch`): other functions are not chosen by it.
        PROBE.replace(
            "        return False\n    return True",
            "        return False\n    fast_kernel.patched = True\n    return True",
        ),
    ],
)
def test_the_import_stays_an_error_without_a_feature_test_that_covers_it(run_check, source: str):
    errors = [f for f in run_check(PROVIDER, consumer(source)).findings if f.severity.value == "error"]
    assert "pv.core.utils:fast_kernel" in [f.symbol for f in errors]


FIND_SPEC = """\
import importlib.util


class Worker:
    def setup(self):
        if importlib.util.find_spec("pv.profiler") is None:
            return None
        return self.make()

    def make(self):
        from pv.profiler import Profiler
        return Profiler()
"""


def test_a_function_importing_from_a_module_the_consumer_finds_first_warns(run_check):
    # vllm-spyre 1.9 returns early from `_setup_profiler` unless `find_spec("vllm.profiler.wrapper")`
    # finds the module (new in vLLM 0.16), then calls the method that imports from it.
    result = run_check(PROVIDER, consumer(FIND_SPEC))
    assert brief(result) == [("unresolved-import", "warning", "pv.profiler:Profiler", ["plug/mod.py:11"])]
    assert (
        "but the consumer tests whether the provider has pv.profiler at plug/mod.py:6 "
        "(`importlib.util.find_spec('pv.profiler') is None`)" in result.findings[0].message
    )
    # A test of another module covers nothing; at module level the import runs whatever it says.
    other = FIND_SPEC.replace('find_spec("pv.profiler")', 'find_spec("pv.other")')
    assert [f.severity.value for f in run_check(PROVIDER, consumer(other)).findings] == ["error"]
    top = FIND_SPEC.replace("        from pv.profiler import Profiler\n", "") + "\nfrom pv.profiler import Profiler\n"
    assert [f.severity.value for f in run_check(PROVIDER, consumer(top)).findings] == ["error"]


def test_a_feature_test_of_a_module_covers_what_is_imported_from_it(run_check):
    # vLLM's `_kda_gluon_decode_importable`: `from aiter.ops.triton.attention import kda`, then the
    # decode imports `fused_recurrent_kda` from that module.
    source = """\
def kda_importable():
    try:
        from pv.core import kda  # noqa: F401

        return True
    except (ImportError, ModuleNotFoundError):
        return False


def decode(x):
    from pv.core.kda import fused_recurrent_kda
    return fused_recurrent_kda(x)
"""
    assert [(f.severity.value, f.symbol) for f in run_check(PROVIDER, consumer(source)).findings] == [
        ("warning", "pv.core.kda:fused_recurrent_kda"),
        ("warning", "pv.core:kda"),
    ]


# ROCm ATOM imports vLLM's `maybe_patch_hf_config_from_gguf` in a fallback for configurations
# transformers cannot read; vLLM had dropped it before 0.27.1, the release ATOM declares. The
# bump does not break it: it was broken where ATOM works. A warning that says so.
GGUF = """
    def load(model):
        try:
            return read(model)
        except ValueError:
            from pv.core.utils import patch_from_gguf
            return patch_from_gguf(model)
"""
LADDER = """
    try:
        from pv.old.place import plan
    except ImportError:
        from pv.core.utils import plan
"""


def test_an_import_missing_at_the_baseline_too_is_a_warning_and_one_gone_since_an_error(run_check):
    had_it = {**PROVIDER, "pv/core/utils.py": "def patch_from_gguf(model):\n    return model\n"}
    [gone] = run_check(PROVIDER, consumer(GGUF), baseline=had_it).findings
    assert (gone.rule.value, gone.severity.value, gone.symbol) == (
        "unresolved-import",
        "error",
        "pv.core.utils:patch_from_gguf",
    )
    assert "baseline" not in gone.message
    [old] = run_check(PROVIDER, consumer(GGUF), baseline=PROVIDER).findings
    assert (old.rule.value, old.severity.value, old.symbol) == (
        "unresolved-import",
        "warning",
        "pv.core.utils:patch_from_gguf",
    )
    assert old.message.endswith(
        "the import raises ImportError; it fails at the baseline too: not a change since (code that does not run there, or that was broken there already)"
    )
    # Without a baseline: an error, as before.
    assert brief(run_check(PROVIDER, consumer(GGUF))) == [
        ("unresolved-import", "error", "pv.core.utils:patch_from_gguf", ["plug/mod.py:5"])
    ]


def test_a_ladder_every_alternative_of_which_failed_at_the_baseline_too_is_a_warning(run_check):
    had_plan = {**PROVIDER, "pv/old/__init__.py": "", "pv/old/place.py": "def plan():\n    pass\n"}
    [gone] = run_check(PROVIDER, consumer(LADDER), baseline=had_plan).findings
    assert (gone.rule.value, gone.severity.value) == ("unresolved-import", "error")
    [old] = run_check(PROVIDER, consumer(LADDER), baseline=PROVIDER).findings
    assert (old.rule.value, old.severity.value) == ("unresolved-import", "warning")
    assert "fails at the baseline too" in old.message


# vLLM's `envs` serves its environment variables through a module `__getattr__` that looks the
# name up in the literal `environment_variables` table and raises AttributeError for any other.
ENVS = """
    import os

    environment_variables = {
        "VLLM_HOST": lambda: os.getenv("VLLM_HOST", ""),
        "VLLM_PORT": lambda: int(os.getenv("VLLM_PORT", "0")),
    }

    def __getattr__(name: str):
        \"\"\"Gets environment variables lazily.\"\"\"
        if name in environment_variables:
            return environment_variables[name]()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
"""


def _envs_check(run_check, source: str, envs: str = ENVS, baseline: dict[str, str] | None = None):
    return run_check({**PROVIDER, "pv/envs.py": envs}, consumer(source), baseline=baseline)


def test_a_name_a_closed_module_getattr_does_not_serve_is_missing(run_check):
    """`envs.VLLM_GONE` raises AttributeError: its `__getattr__` serves only the table's keys."""
    gone = _envs_check(run_check, "import pv.envs as envs\nport = envs.VLLM_PORT\nold = envs.VLLM_GONE\n")
    assert brief(gone) == [("unresolved-import", "error", "pv.envs:VLLM_GONE", ["plug/mod.py:3"])]
    assert "its __getattr__ (pv/envs.py:8) serves only the keys of environment_variables" in gone.findings[0].message
    # Guarded: skipped, no error. Served names are found: nothing to say (not "unknown" any more).
    guarded = _envs_check(run_check, "import pv.envs as envs\nold = getattr(envs, 'VLLM_GONE', None)\n")
    assert not [f for f in guarded.findings if f.severity.value == "error"]
    assert _envs_check(run_check, "from pv import envs\nport = envs.VLLM_PORT\n").findings == ()
    # Missing at the baseline too, where the consumer works: that code does not run there, a warning.
    before = {**PROVIDER, "pv/envs.py": ENVS}
    both = _envs_check(run_check, "import pv.envs as envs\nold = envs.VLLM_GONE\n", baseline=before)
    assert [(f.severity.value, "fails at the baseline too" in f.message) for f in both.findings] == [("warning", True)]


@pytest.mark.parametrize(
    "envs",
    [
        ENVS + "\n    environment_variables['VLLM_GONE'] = lambda: 1\n",  # the module adds keys itself
        ENVS + "\n    environment_variables.update(extra={})\n",
        ENVS.replace('"VLLM_PORT":', "**{}, 'VLLM_PORT':"),  # keys not all written out
        ENVS.replace("        raise AttributeError", "        return None\n        raise AttributeError"),
        ENVS.replace("if name in environment_variables:", "if name.startswith('VLLM_'):"),
        ENVS + "\n    environment_variables[_KEYS[0]] = lambda: 1\n",  # a subscript holding brackets
        ENVS + "\n    environment_variables, _other = {}, 0\n",  # bound again through a tuple
    ],
)
def test_a_module_getattr_that_may_serve_other_names_leaves_them_unknown(run_check, envs):
    result = _envs_check(run_check, "import pv.envs as envs\nold = envs.VLLM_GONE\n", envs=envs)
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("dynamic-target", "info")]


# vLLM's `platforms` from 0.11 serves `current_platform` alone, made when first read: an `elif`
# chain of literal tests (and `name in globals()`, which holds nothing a module `__getattr__` is
# asked for), its `else` raising AttributeError.
PLATFORMS = """
    _current_platform = None

    class Platform:
        pass

    def __getattr__(name: str):
        if name == "current_platform":
            global _current_platform
            if _current_platform is None:
                _current_platform = Platform()
            return _current_platform
        elif name in globals():
            return globals()[name]
        else:
            raise AttributeError(f"No attribute named '{name}' exists in {__name__}.")
"""


def test_a_module_getattr_serving_literal_names_serves_those_alone(run_check):
    """vllm-kunlun's `from vllm.platforms import _Backend` raises ImportError at vLLM 0.11.2:
    `_Backend` left the module, and its `__getattr__` serves `current_platform` alone."""
    provider = {**PROVIDER, "pv/platforms.py": PLATFORMS}
    gone = run_check(provider, consumer("from pv.platforms import _Backend, current_platform, Platform\n"))
    assert brief(gone) == [("unresolved-import", "error", "pv.platforms:_Backend", ["plug/mod.py:1"])]
    assert "its __getattr__ (pv/platforms.py:6) serves only current_platform" in gone.findings[0].message
    # The same names in a tuple, or tested one `if` after another: the same.
    tupled = PLATFORMS.replace('name == "current_platform"', 'name in ("current_platform", "other")')
    result = run_check({**PROVIDER, "pv/platforms.py": tupled}, consumer("from pv.platforms import other, gone\n"))
    assert brief(result) == [("unresolved-import", "error", "pv.platforms:gone", ["plug/mod.py:1"])]
    assert "serves only current_platform, other" in result.findings[0].message
    separate = PLATFORMS.replace("        elif name in globals()", "        if name in globals()")
    result = run_check({**PROVIDER, "pv/platforms.py": separate}, consumer("from pv.platforms import _Backend\n"))
    assert [f.severity.value for f in result.findings] == ["error"]


@pytest.mark.parametrize(
    "getattr_body",
    [
        PLATFORMS.replace(
            "        else:\n            raise", "        else:\n            return None\n            raise"
        ),
        PLATFORMS.replace('name == "current_platform"', 'name.startswith("current")'),
        PLATFORMS.replace("elif name in globals():", "elif name in _dynamic():"),
        PLATFORMS.replace("            return _current_platform", "            _current_platform.touch()"),
    ],
)
def test_a_module_getattr_whose_tests_may_serve_other_names_leaves_them_unknown(run_check, getattr_body):
    result = run_check({**PROVIDER, "pv/platforms.py": getattr_body}, consumer("from pv.platforms import _Backend\n"))
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("dynamic-target", "info")]


def test_a_table_the_consumer_reaches_may_hold_its_own_names(run_check):
    """vllm-rbln adds its variables to vLLM's table (`vllm_envs.update(...)`), then reads them
    through `vllm.envs`: what it reaches of the table it may change, so the names stay unknown."""
    source = (
        "import pv.envs as envs\nfrom pv.envs import environment_variables as pv_envs\n"
        "pv_envs.update({'PLUG_X': lambda: 1})\nx = envs.PLUG_X\n"
    )
    result = _envs_check(run_check, source)
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("dynamic-target", "info")]


def test_an_attribute_missing_at_the_baseline_too_is_a_warning(run_check):
    """As an import missing there too: the consumer works against the provider it was written for,
    so the code reading it does not run there (vllm-spyre's legacy profiler reads env vars gone
    before its baseline, only where vLLM lacks the new profiler)."""
    source = "import pv.core.utils as u\nx = u.gone\n"
    assert [f.severity.value for f in run_check(PROVIDER, consumer(source)).findings] == ["error"]
    both = run_check(PROVIDER, consumer(source), baseline=PROVIDER)
    [finding] = both.findings
    assert finding.severity.value == "warning" and "it fails at the baseline too" in finding.message
    # Present at the baseline: gone since, an error.
    before = {**PROVIDER, "pv/core/utils.py": textwrap.dedent(PROVIDER["pv/core/utils.py"]) + "gone = 1\n"}
    assert [f.severity.value for f in run_check(PROVIDER, consumer(source), baseline=before).findings] == ["error"]


LEGACY_PROFILER = """
    import pv.envs as envs

    class Worker:
        def setup(self):
            if getattr(envs, "VLLM_PROFILE_DIR", None) is not None:
                return self.legacy()
            return None

        def legacy(self):
            where = envs.VLLM_PROFILE_DIR
            return where, envs.VLLM_PROFILE_STACK
"""


def test_reads_in_a_function_that_reads_a_name_the_consumer_tests_for_are_warnings(run_check):
    """vllm-spyre calls its legacy profiler only when `getattr(envs, "VLLM_TORCH_PROFILER_DIR", None)`
    is set; the profiler reads that variable and four more, gone from vLLM 0.18 (its own release)."""
    result = _envs_check(run_check, LEGACY_PROFILER)
    assert [(f.severity.value, f.symbol) for f in result.findings if f.rule.value == "unresolved-import"] == [
        ("warning", "pv.envs:VLLM_PROFILE_DIR"),
        ("warning", "pv.envs:VLLM_PROFILE_STACK"),
    ]
    assert "Worker.legacy() reads pv.envs:VLLM_PROFILE_DIR, which the consumer tests for" in result.findings[-1].message
    # Without the test, nothing says the function runs only where the names exist: errors.
    untested = LEGACY_PROFILER.replace('getattr(envs, "VLLM_PROFILE_DIR", None) is not None', "True")
    result = _envs_check(run_check, untested)
    assert [f.severity.value for f in result.findings if f.rule.value == "unresolved-import"] == ["error", "error"]


def test_the_keys_of_a_table_whose_test_raises_are_missing(run_check):
    """`if name in _REMOVED: raise ...` names what is gone, not what is served."""
    envs = ENVS.replace(
        "        if name in environment_variables:",
        "        if name in _REMOVED:\n            raise AttributeError(name)\n        if name in environment_variables:",
    ).replace("    environment_variables = {", "    _REMOVED = {'VLLM_OLD': None}\n\n    environment_variables = {")
    result = _envs_check(run_check, "import pv.envs as envs\nold = envs.VLLM_OLD\n", envs=envs)
    assert [(f.rule.value, f.severity.value) for f in result.findings] == [("unresolved-import", "error")]


def test_a_consumer_that_replaces_the_modules_getattr_or_reaches_the_table_elsewhere_keeps_names_unknown(run_check):
    replaced = "import pv.envs as envs\n\ndef _mine(name):\n    return 1\n\nenvs.__getattr__ = _mine\nx = envs.PLUG_X\n"
    result = _envs_check(run_check, replaced)
    assert not [f for f in result.findings if f.severity.value == "error"]
    # The table re-exported by another provider module, and updated from there.
    provider_more = {"pv/reexport.py": "from pv.envs import environment_variables\n"}
    source = "import pv.envs as envs\nfrom pv.reexport import environment_variables\nx = envs.PLUG_X\n"
    result = run_check({**PROVIDER, "pv/envs.py": ENVS, **provider_more}, consumer(source))
    assert not [f for f in result.findings if f.severity.value == "error"]


def test_a_guarded_read_of_a_tested_name_does_not_excuse_the_functions_other_reads(run_check):
    source = (
        "import pv.envs as envs\n\ndef setup():\n    if hasattr(envs, 'VLLM_OLD'):\n        print(envs.VLLM_OLD)\n"
        "    return envs.VLLM_GONE\n"
    )
    result = _envs_check(run_check, source)
    assert [(f.symbol, f.severity.value) for f in result.findings if f.severity.value == "error"] == [
        ("pv.envs:VLLM_GONE", "error")
    ]


def test_one_name_imported_unguarded_here_and_caught_there_gets_a_verdict_per_site(run_check):
    # ATOM's shape at vLLM 0.34: `GPUModelRunner` imported bare by two patches and, in a third,
    # under `except Exception: log; return False`. Only the bare imports raise.
    files = {
        "plug/__init__.py": "",
        "plug/bare.py": "def install():\n    from pv.core.runner import Runner\n    Runner.x = 1\n",
        "plug/caught.py": """
            import logging

            def install():
                try:
                    from pv.core.runner import Runner
                except Exception as e:
                    logging.debug("no runner (%s), skip", e)
                    return False
                return Runner is not None
        """,
        "plug/entry.py": "from plug import bare, caught\n\nbare.install()\ncaught.install()\n",
    }
    result = run_check(PROVIDER, files)
    imports = [f for f in result.findings if f.rule.value == "unresolved-import"]
    assert [(f.severity.value, [str(s) for s in f.sites]) for f in imports] == [
        ("error", ["plug/bare.py:2"]),
        ("warning", ["plug/caught.py:5"]),
    ]
    assert "raises ImportError" in imports[0].message and "degraded" in imports[1].message


# ATOM reads `getattr(vllm_monitor, "cudagraph_capturing_enabled", False)`; vLLM 0.34 dropped the
# flag: the probe is silent, and only the release the consumer was written for says it mattered.
DEFAULT_PROBE = "import pv.core.utils as u\n\ndef capturing():\n    return getattr(u, 'capturing', False)\n"


def test_a_probe_with_a_default_of_a_name_the_baseline_had_now_gives_the_default(run_check):
    had = {**PROVIDER, "pv/core/utils.py": textwrap.dedent(PROVIDER["pv/core/utils.py"]) + "capturing = True\n"}
    result = run_check(PROVIDER, consumer(DEFAULT_PROBE), baseline=had)
    assert brief(result) == [("unresolved-import", "warning", "pv.core.utils:capturing", ["plug/mod.py:4"])]
    assert "now always gives the default, silently" in result.findings[0].message
    # Without a baseline, or one that lacked it too, a probe is what it looks like: nothing to say.
    assert run_check(PROVIDER, consumer(DEFAULT_PROBE)).findings == ()
    assert run_check(PROVIDER, consumer(DEFAULT_PROBE), baseline=PROVIDER).findings == ()


# vllm-rbln copies vLLM's `Fp8MoEMethod`, sets `self.rocm_aiter_moe_enabled = False` in
# `create_weights` and nothing else, and keeps the ROCm branch that imports `rocm_aiter_ops`.
KEPT_OFF = """
from pv.core.utils import helper


class Method(helper):
    def create(self):
        self.aiter_enabled = False

    def process(self):
        if self.aiter_enabled:
            from pv.core.utils import gone
            return gone()
        return 0
"""


@pytest.mark.parametrize(
    ("change", "severities"),
    [
        ("", []),  # never on: the import never runs
        ("\n\nclass Other(Method):\n    def create(self):\n        self.aiter_enabled = True\n", ["error"]),
        ("\n\ndef turn_on(m):\n    m.aiter_enabled = True\n", ["error"]),  # set from outside
        ("\n\nclass Other(Method):\n    def create(self):\n        setattr(self, name, True)\n", ["error"]),
    ],
)
def test_an_import_under_a_flag_the_consumer_keeps_false_never_runs(run_check, change: str, severities: list[str]):
    provider = {
        **PROVIDER,
        "pv/core/utils.py": textwrap.dedent(PROVIDER["pv/core/utils.py"]) + "\nclass helper:\n    pass\n",
    }
    result = run_check(provider, consumer(KEPT_OFF + change))
    assert [f.severity.value for f in result.findings if f.symbol == "pv.core.utils:gone"] == severities


def test_a_flag_the_consumer_sets_to_a_computed_value_may_be_on(run_check):
    provider = {
        **PROVIDER,
        "pv/core/utils.py": textwrap.dedent(PROVIDER["pv/core/utils.py"]) + "\nclass helper:\n    pass\n",
    }
    computed = KEPT_OFF.replace("self.aiter_enabled = False", "self.aiter_enabled = is_rocm()")
    result = run_check(provider, consumer(computed))
    assert [f.severity.value for f in result.findings if f.symbol == "pv.core.utils:gone"] == ["error"]


def test_a_table_reached_only_in_code_that_cannot_run_here_is_not_changed_by_it(run_check):
    """ROLL reads vLLM's `envs.environment_variables` only in its patch package for vLLM 0.8.4,
    imported only under `if Version("0.8.4") == Version(vllm.__version__):`: at another release
    that code does not run, so the table keeps its keys, and a read of a name it lacks is an error.
    Where the gate holds, the table may be changed, and the name stays unknown."""
    files = {
        "plug/__init__.py": "",
        "plug/setup.py": (
            "import pv\nfrom packaging.version import Version\n\n"
            "if Version('0.1.0') == Version(pv.__version__):\n    import plug.old_patch\n"
        ),
        "plug/old_patch.py": "import pv.envs as envs\n\nKNOWN = [v for v in envs.environment_variables]\n",
        "plug/worker.py": "import pv.envs as envs\n\nUSE_OLD = envs.VLLM_GONE\n",
    }
    provider = {**PROVIDER, "pv/__init__.py": '__version__ = "0.2.0"\n', "pv/envs.py": ENVS}
    result = run_check(provider, files, version="0.2.0")
    assert [(f.symbol, f.severity.value) for f in result.findings if f.severity.value == "error"] == [
        ("pv.envs:VLLM_GONE", "error")
    ]
    at_old = run_check({**provider, "pv/__init__.py": '__version__ = "0.1.0"\n'}, files, version="0.1.0")
    assert not [f for f in at_old.findings if f.severity.value == "error"]
