"""A provider call on what its own functions hand down from `self.x` of a provider class
(`ArgumentSources.origins`, `caller_chains.handed_down`). vLLM 0.27 calls
`runner._dummy_run(..., randomize_inputs=)` in `flashinfer_autotune(runner)`, given
`worker.model_runner` by `kernel_warmup(worker)`, which the GPU `Worker` calls with itself, and
its elastic-EP executor with the worker it keeps through a weak reference. vllm-omni's NPU runners,
whose `_dummy_run` cannot take the keyword, are kept only by NPU workers that derive from no such
Worker; its GPU workers keep its GPU runners."""

from __future__ import annotations

import textwrap

import pytest

from atompin.analysis.argument_sources import ArgumentSources, Origin
from tests.test_caller_chains import RUNNER_A, RUNNER_B, WARMUP  # vLLM's warm-up, as there
from tests.test_contact import check, found, one, severities

WORKER = """
import weakref

from pv.warmup import kernel_warmup


class Elastic:
    def __init__(self, worker):
        self.worker_ref = weakref.ref(worker)

    @property
    def worker(self):
        worker = self.worker_ref()
        if worker is None:
            raise RuntimeError("gone")
        return worker

    def warm_local(self):
        kernel_warmup(self.worker)


class Worker:
    def __init__(self):
        self.model_runner = None
        self.elastic = Elastic(self)

    def init_device(self, v2):
        if v2:
            from pv.runner_v2 import GPUModelRunner as RunnerV2

            self.model_runner = RunnerV2()
        else:
            self.model_runner = GPUModelRunner()

    def compile_or_warm_up_model(self):
        kernel_warmup(self)


from pv.runner import GPUModelRunner
"""
OTHER = """
from pv.tuning import autotune as kernel_warmup


def tune(x):
    kernel_warmup(x)
"""
V2 = "class GPUModelRunner:\n    def _dummy_run(self, num_tokens, randomize_inputs=False):\n        return 0\n"
BEFORE = {
    "pv/worker.py": WORKER,
    "pv/warmup.py": WARMUP.replace(", randomize_inputs=True", ""),
    "pv/other.py": OTHER,
    "pv/tuning.py": "def autotune(x):\n    return x\n",
    "pv/runner.py": RUNNER_A,
    "pv/runner_v2.py": V2,
}
AFTER = {**BEFORE, "pv/warmup.py": WARMUP, "pv/runner.py": RUNNER_B}
RUNNERS = """
from pv.runner import GPUModelRunner


class GpuRunner(GPUModelRunner):
    pass


class NpuRunner(GPUModelRunner):
    def _dummy_run(self, num_tokens):
        return 0
"""
WORKERS = """
from ext.npu import NPUWorker
from pv.worker import Worker
from plug.runners import GpuRunner, NpuRunner


class GpuWorkerBase(Worker):
    pass


class GpuWorker(GpuWorkerBase):
    def init_device(self, v2):
        self.model_runner = GpuRunner()


class NpuWorker(NPUWorker):
    def init_device(self):
        self.model_runner = NpuRunner()
"""
PLATFORM = 'WORKERS = ["plug.workers.GpuWorker", "plug.workers.NpuWorker"]\n'
CONSUMER = {"plug/runners.py": RUNNERS, "plug/workers.py": WORKERS, "plug/platform.py": PLATFORM}
SYMBOL = "plug.runners:NpuRunner._dummy_run"


def drift(consumer: dict[str, str] = CONSUMER, after: dict[str, str] = AFTER) -> list[str]:
    return severities(consumer, after, BEFORE, "override-drift")


def test_a_call_on_what_workers_that_keep_other_runners_hand_down_is_a_warning():
    result = check(CONSUMER, AFTER, baseline=BEFORE)
    assert found(result, "override-drift") == [("warning", SYMBOL, "plug/runners.py:9")]
    assert (
        "the provider passes them at pv/warmup.py:2, on what is handed down from self.model_runner in "
        "Worker.__init__, Worker.compile_or_warm_up_model; the consumer classes that run those "
        "(plug.workers:GpuWorker, plug.workers:GpuWorkerBase) keep other classes there (plug.runners:GpuRunner, "
        "pv.runner:GPUModelRunner, pv.runner_v2:GPUModelRunner)"
    ) in one(result, "override-drift").message


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # A worker running the warm-up keeps the runner.
        ("plug/workers.py", "self.model_runner = GpuRunner()", "self.model_runner = NpuRunner()"),
        # The worker base stores something the scan cannot tell.
        ("plug/workers.py", "class GpuWorkerBase(Worker):\n    pass", "class GpuWorkerBase(Worker):\n    r = 1"),
        # The consumer hands its own worker to the warm-up, or stores a runner on another object.
        ("plug/platform.py", PLATFORM, PLATFORM + "from pv.warmup import kernel_warmup\n\nkernel_warmup(W)\n"),
        ("plug/platform.py", PLATFORM, PLATFORM + "import pv\n\n\ndef f(w, r):\n    w.model_runner = r\n"),
    ],
)
def test_any_other_way_in_keeps_the_error(where: str, old: str, new: str):
    consumer = {**CONSUMER, where: CONSUMER[where].replace(old, new)}
    if "r = 1" in new:  # a base setting it by a way not read: `setattr`
        consumer[where] = consumer[where].replace("r = 1", "def f(self, r):\n        setattr(self, 'model_runner', r)")
    assert consumer != CONSUMER
    assert drift(consumer) == ["error"]


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # Another provider function hands the warm-up something it cannot read.
        ("pv/tuning.py", "return x", "from pv.warmup import kernel_warmup\n    kernel_warmup(make())"),
        # The executor is made with something else, or keeps it by other ways.
        ("pv/worker.py", "Elastic(self)", "Elastic(make())"),
        ("pv/worker.py", "kernel_warmup(self.worker)", "kernel_warmup(self.worker)\n        self.worker_ref = 1"),
        # A provider class derives from the executor.
        ("pv/tuning.py", "return x", "return x\n\n\nfrom pv.worker import Elastic\nclass Big(Elastic):\n    pass"),
        # The worker stores a runner it is handed.
        ("pv/worker.py", "self.model_runner = GPUModelRunner()", "self.model_runner = self.runner_cls()"),
    ],
)
def test_a_provider_way_not_read_keeps_the_error(where: str, old: str, new: str):
    after = {**AFTER, where: AFTER[where].replace(old, new)}
    assert after != AFTER
    assert drift(after=after) == ["error"]


def test_a_same_named_function_of_another_module_is_not_a_caller():
    # pv/other.py calls its own `kernel_warmup` (pv.tuning's `autotune`) with a name it cannot read.
    assert "kernel_warmup(x)" in AFTER["pv/other.py"]
    assert drift() == ["warning"]


def origins(files: dict[str, str], path: str, line: int, name: str) -> list[Origin] | None:
    texts = {p: textwrap.dedent(t) for p, t in files.items()}

    def module_name(p: str) -> tuple[str, bool]:
        parts = p.removesuffix(".py").split("/")
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts), parts[-1] == "__init__"

    sources = ArgumentSources(
        lambda p: texts[p].encode(), lambda n: [p for p, t in texts.items() if n in t], module_name
    )
    found = sources.origins(path, line, name)
    return sorted(found.places, key=lambda o: (o.cls, o.method)) if found is not None else None


def test_origins_follow_parameters_and_a_constructor_s_weak_reference():
    assert origins(AFTER, "pv/warmup.py", 3, "_dummy_run") == [
        Origin("pv/worker.py", "Worker", "__init__", "model_runner"),
        Origin("pv/worker.py", "Worker", "compile_or_warm_up_model", "model_runner"),
    ]
    # A plain attribute the constructor stores from its parameter, passed by keyword.
    plain = AFTER["pv/worker.py"].replace("self.worker_ref = weakref.ref(worker)", "self.worker = worker")
    plain = plain.replace("@property\n    def worker(self):", "def unused(self):").replace(
        "Elastic(self)", "Elastic(worker=self)"
    )
    assert [o.method for o in origins({**AFTER, "pv/worker.py": plain}, "pv/warmup.py", 3, "_dummy_run") or []] == [
        "__init__",
        "compile_or_warm_up_model",
    ]
    # Not a call with a receiver there; a receiver that is a local.
    assert origins(AFTER, "pv/warmup.py", 2, "_dummy_run") is None
    local = {**AFTER, "pv/warmup.py": WARMUP.replace("def _autotune(runner):", "def _autotune(r):\n    runner = r")}
    assert origins(local, "pv/warmup.py", 4, "_dummy_run") is None


def test_a_class_patched_in_place_runs_in_the_provider_s_own_instances():
    """arctic-inference's `GPUModelRunnerPatch(ArcticPatch[GPUModelRunner])` sets its methods on
    vLLM's runner itself: the runner the GPU Worker makes by name runs its narrower `_dummy_run`."""
    from tests.test_patch_classes import PATCHING

    patch = """
        from pv.runner import GPUModelRunner
        from plug.patching import Patch

        class RunnerPatch(Patch[GPUModelRunner]):
            def _dummy_run(self, num_tokens):
                return 0
    """
    consumer = {**CONSUMER, "plug/patching.py": PATCHING, "plug/runner_patch.py": patch}
    result = check(consumer, AFTER, baseline=BEFORE)
    severities = {symbol: severity for severity, symbol, _ in found(result, "override-drift")}
    assert severities == {SYMBOL: "error", "plug.runner_patch:RunnerPatch._dummy_run": "error"}


def test_a_worker_patched_in_place_may_store_anything():
    """A consumer class set on the provider's `Worker` itself (arctic-inference's `WorkerPatch`)
    may store any runner there: what the Worker's own source stores tells nothing."""
    from tests.test_patch_classes import PATCHING

    patch = """
        from pv.worker import Worker
        from plug.patching import Patch

        class WorkerPatch(Patch[Worker]):
            def warm(self):
                return None
    """
    consumer = {**CONSUMER, "plug/patching.py": PATCHING, "plug/worker_patch.py": patch}
    assert drift(consumer) == ["error"]
