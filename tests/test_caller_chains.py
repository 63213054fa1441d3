"""A provider call made in a function that only methods the consumer's classes take the place of
ever run (`caller_chains`). vLLM 0.29 calls `runner._dummy_run(..., randomize_inputs=True)` in a
FlashInfer autotune helper that only its `kernel_warmup` calls, which only the GPU Worker's
`compile_or_warm_up_model` calls; vllm-ascend's worker, named in the GPU Worker's place, implements
that method itself and warms up with its own `kernel_warmup`."""

from __future__ import annotations

from tests.test_contact import check, found, severities

BASE = "class WorkerBase:\n    def compile_or_warm_up_model(self):\n        raise NotImplementedError\n"
GPU_WORKER = """
from pv.worker_base import WorkerBase
from pv.warmup import kernel_warmup


class Worker(WorkerBase):
    def compile_or_warm_up_model(self):
        kernel_warmup(self)
"""
WARMUP = """
def _autotune(runner):
    runner._dummy_run(8, randomize_inputs=True)


def kernel_warmup(worker):
    _autotune(worker.model_runner)
"""
RUNNER_A = "class GPUModelRunner:\n    def _dummy_run(self, num_tokens):\n        return num_tokens\n"
RUNNER_B = RUNNER_A.replace("(self, num_tokens)", "(self, num_tokens, randomize_inputs=False)")
BEFORE = {"pv/worker_base.py": BASE, "pv/gpu_worker.py": GPU_WORKER, "pv/warmup.py": WARMUP, "pv/runner.py": RUNNER_A}
BEFORE["pv/warmup.py"] = WARMUP.replace(", randomize_inputs=True", "")
AFTER = {**BEFORE, "pv/warmup.py": WARMUP, "pv/runner.py": RUNNER_B}
CONSUMER = {
    "plug/runner.py": """
        from pv.runner import GPUModelRunner

        class MyRunner(GPUModelRunner):
            def _dummy_run(self, num_tokens):
                return 0
    """,
    "plug/worker.py": """
        from pv.worker_base import WorkerBase
        from plug.runner import MyRunner

        class MyWorker(WorkerBase):
            def __init__(self):
                self.model_runner = MyRunner()

            def compile_or_warm_up_model(self):
                return None
    """,
    "plug/platform.py": 'WORKER = "plug.worker.MyWorker"\n',
}
SYMBOL = "plug.runner:MyRunner._dummy_run"


def drift(consumer: dict[str, str] = CONSUMER, after: dict[str, str] = AFTER) -> list[str]:
    return severities(consumer, after, BEFORE, "override-drift")


def test_a_call_only_the_provider_s_own_worker_runs_does_not_reach_the_override():
    result = check(CONSUMER, AFTER, baseline=BEFORE)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert (finding.severity.value, finding.symbol) == ("warning", SYMBOL)
    assert (
        "the provider passes them at pv/warmup.py:2; _autotune runs only under methods the consumer's classes take "
        "the place of: Worker.compile_or_warm_up_model, which plug.worker:MyWorker, handed to the provider in that "
        "class's place, implements itself"
    ) in finding.message


def test_any_other_way_in_keeps_the_error():
    # The consumer's worker keeps the provider's method: the chain runs beside it.
    keeps = {**CONSUMER, "plug/worker.py": CONSUMER["plug/worker.py"].replace("compile_or_warm_up_model", "warm")}
    assert drift(keeps) == ["error"]
    # Another provider function calls the warmup, and nothing stands in for its callers.
    other = "from pv.warmup import kernel_warmup\n\n\ndef start(worker):\n    kernel_warmup(worker)\n"
    assert drift(after={**AFTER, "pv/start.py": other}) == ["error"]
    # Module-level code calls it.
    top = "from pv.warmup import kernel_warmup\n\nkernel_warmup(None)\n"
    assert drift(after={**AFTER, "pv/start.py": top}) == ["error"]
    # The function is handed on by name: who calls it is unknown.
    handed = "from pv.warmup import kernel_warmup\n\n\ndef hooks():\n    return [kernel_warmup]\n"
    assert drift(after={**AFTER, "pv/hooks.py": handed + "\n\ndef run(w):\n    kernel_warmup(w)\n"}) == ["error"]
    # The provider makes its Worker by name too (as every model makes vLLM's `Attention`): its
    # instances may run beside the consumer's, whatever stands in for it.
    made = "from pv.gpu_worker import Worker\n\n\ndef make():\n    return Worker()\n"
    assert drift(after={**AFTER, "pv/make.py": made}) == ["error"]
    # So does a provider class deriving from it, made by name.
    sub = "from pv.gpu_worker import Worker\n\n\nclass XWorker(Worker):\n    pass\n\n\ndef make():\n    return XWorker()\n"
    assert drift(after={**AFTER, "pv/xworker.py": sub}) == ["error"]
    # So does the consumer making one; naming it otherwise (an import, a type) makes none.
    makes = {**CONSUMER, "plug/mk.py": "from pv.gpu_worker import Worker\n\n\ndef make():\n    return Worker()\n"}
    assert drift(makes) == ["error"]
    names = {
        **CONSUMER,
        "plug/mk.py": "from pv.gpu_worker import Worker\n\n\ndef kind(w: Worker) -> str:\n    return 'w'\n",
    }
    assert drift(names) == ["warning"]
    # The consumer calls the provider's warmup itself.
    calls = {**CONSUMER, "plug/warm.py": "from pv.warmup import kernel_warmup\n\n\ndef go(w):\n    kernel_warmup(w)\n"}
    assert drift(calls) == ["error"]


def test_a_name_bound_to_something_else_is_no_caller():
    # The consumer's own function of the same name is not the provider's.
    own = {**CONSUMER, "plug/warm.py": "import pv\n\n\ndef kernel_warmup(w):\n    return w\n"}
    assert drift(own) == ["warning"]
    # A provider file calling its own `kernel_warmup` (a library's, imported from elsewhere) at the top level.
    other = "from outside.lib import kernel_warmup\n\nkernel_warmup(None)\n"
    assert drift(after={**AFTER, "pv/other.py": other}) == ["warning"]


def test_a_stand_in_lacking_a_method_only_such_a_chain_calls_is_a_warning():
    runner = (
        RUNNER_A
        + "\n    def execute_model(self, batch):\n        return batch\n\n    def profile_run(self):\n        return None\n"
    )
    after_runner = runner + "\n    def warm_kernels(self):\n        return None\n"
    warmup = WARMUP.replace("runner._dummy_run(8, randomize_inputs=True)", "runner.warm_kernels()")
    before = {**BEFORE, "pv/runner.py": runner}
    after = {**AFTER, "pv/runner.py": after_runner, "pv/warmup.py": warmup}
    stand_in = """
        class MyRunner:
            def _dummy_run(self, num_tokens):
                return 0

            def execute_model(self, batch):
                return batch

            def profile_run(self):
                return None
    """
    consumer = {**CONSUMER, "plug/runner.py": stand_in}
    severities = [sev for sev, _, _ in found(check(consumer, after, baseline=before), "protocol-drift")]
    assert severities == ["warning"]
    # Where the provider's warmup also runs from a caller nothing stands in for, it is an error.
    other = "from pv.warmup import kernel_warmup\n\n\ndef start(worker):\n    kernel_warmup(worker)\n"
    both = {**after, "pv/start.py": other + "\n\nclass Engine:\n    def run(self, w):\n        start(w)\n"}
    severities = [sev for sev, _, _ in found(check(consumer, both, baseline=before), "protocol-drift")]
    assert "error" in severities
