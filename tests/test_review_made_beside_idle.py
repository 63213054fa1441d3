"""The review of the made-only-beside and idle-hook changes: each case failed before its mend."""

from __future__ import annotations

from tests.test_contact import check, found
from tests.test_idle_hooks import CONSUMER as IDLE_CONSUMER
from tests.test_idle_hooks import idle
from tests.test_made_only_beside import (
    AFTER,
    COMMUNICATOR_AFTER,
    COMMUNICATOR_BEFORE,
    CONSUMER,
    MANAGER,
    drift,
)

# A consumer class deriving from the maker (the GPU Worker) and keeping its __init__ runs the
# maker's method: the class is made beside the consumer, and its calls reach the consumer.
GPU = """
    from pv.gpu_worker import Worker

    class MyGpuWorker(Worker):
        def load_model(self):
            return 2
"""


def test_made_beside_a_consumer_class_running_the_making_method_makes_the_class():
    consumer = {**CONSUMER, "plug/gpu.py": GPU}
    # Worker.__init__ runs for MyGpuWorker: Elastic(self) is made, reload() calls
    # MyGpuWorker.load_model(load_dummy_weights=True): TypeError.
    assert ("error", "plug.gpu:MyGpuWorker.load_model") in [(s, sym) for s, sym, _ in drift(consumer)]


def test_made_beside_protocol_drift_a_consumer_class_running_the_making_method():
    platform = CONSUMER["plug/platform.py"] + '    MANAGER = "plug.manager.NpuAll2AllManager"\n'
    consumer = {**CONSUMER, "plug/manager.py": MANAGER, "plug/platform.py": platform, "plug/gpu.py": GPU}
    result = check(consumer, COMMUNICATOR_AFTER, baseline=COMMUNICATOR_BEFORE)
    assert ("error", "plug.manager:NpuAll2AllManager.commit_ep_size", "plug/manager.py:1") in found(
        result, "protocol-drift"
    )


def test_idle_hook_an_unrelated_class_of_the_same_simple_name_does_not_keep_the_hook_called():
    # plug.legacy:MyModel is no MyModel of plug.model's line: its own self-call keeps nothing of
    # plug.model:MyModel called (a lost warning).
    legacy = (
        "class MyModel:\n"
        "    def get_encoder_tokens(self, n):\n"
        "        return n\n\n"
        "    def go(self, n):\n"
        "        return self.get_encoder_tokens(n)\n"
    )
    warnings, _ = idle({**IDLE_CONSUMER, "plug/legacy.py": legacy})
    assert [w[1] for w in warnings] == ["plug.model:MyModel.get_encoder_tokens", "plug.backend:MyBackend.get_block_dim"]


def test_idle_hook_a_closure_self_read_in_a_method_local_class_is_the_methods_class():
    # `self` here is Sub's (a closure): Sub derives from MyModel, so MyModel's hook is called.
    # reading_classes files the read under the innermost class, Helper, outside MyModel's line.
    sub = (
        "from plug.model import MyModel\n\n"
        "class Sub(MyModel):\n"
        "    def go(self, n):\n"
        "        class Helper:\n"
        "            def run(inner):\n"
        "                return self.get_encoder_tokens(n)\n"
        "        return Helper().run()\n"
    )
    warnings, _ = idle({**IDLE_CONSUMER, "plug/sub.py": sub})
    assert [w[1] for w in warnings] == ["plug.backend:MyBackend.get_block_dim"]


def test_made_beside_the_consumer_naming_the_class_by_dotted_path_may_have_it_made():
    # The provider may make a class named by a path string (its config's `*_cls` fields).
    named = {**CONSUMER, "plug/config.py": 'EXECUTOR_CLS = "pv.elastic.Elastic"\n'}
    assert [f[0] for f in drift(named)] == ["error"]


def test_made_beside_a_static_maker_called_on_the_class_as_written_runs_without_a_worker():
    # Worker.make_elastic is the one place making Elastic, but the provider calls it on the class
    # as written, with whatever worker it has (the consumer's): the stand-in's own make_elastic
    # never replaces it.
    gpu = (
        "from pv.worker_base import WorkerBase\n\n"
        "class Worker(WorkerBase):\n"
        "    @staticmethod\n"
        "    def make_elastic(worker):\n"
        "        from pv.elastic import Elastic\n"
        "        return Elastic(worker)\n\n"
        "    def load_model(self, *, load_dummy_weights=False):\n"
        "        pass\n"
    )
    engine = "from pv.gpu_worker import Worker\n\ndef scale(worker):\n    Worker.make_elastic(worker).reload()\n"
    worker = CONSUMER["plug/worker.py"] + (
        "\n            @staticmethod\n            def make_elastic(worker):\n                return None\n"
    )
    consumer = {**CONSUMER, "plug/worker.py": worker}
    after = {**AFTER, "pv/gpu_worker.py": gpu, "pv/engine.py": engine}
    assert [f[0] for f in drift(consumer, after)] == ["error"]


def test_made_beside_a_stand_in_calling_the_making_method_itself_makes_the_class():
    # MyWorker reuses the GPU Worker's constructor unbound: Elastic(self) is made with MyWorker.
    worker = CONSUMER["plug/worker.py"].replace("super().__init__(config)", "Worker.__init__(self, config)")
    worker = worker.replace(
        "from pv.worker_base import WorkerBase",
        "from pv.worker_base import WorkerBase\n        from pv.gpu_worker import Worker",
    )
    assert [f[0] for f in drift({**CONSUMER, "plug/worker.py": worker})] == ["error"]


def test_names_role_a_code_mention_after_a_docstring_holding_the_other_triple_quote_counts():
    import textwrap

    from tests.test_contact import ROLE_A, ROLE_B, STAND_IN, WORKSPACES

    shared = {**ROLE_B, "pv/workspace.py": WORKSPACES}
    # ProseFinder counts each kind of triple quote apart: the ''' inside the """ docstring leaves
    # every later line "inside a docstring", the import of the role included.
    runner = (
        '"""Runs backends (write \'\'\' in examples)."""\n'
        + "from pv.backend import AttentionBackend\n"
        + textwrap.dedent(ROLE_B["pv/runner.py"])
    )
    result = check(STAND_IN, {**shared, "pv/runner.py": runner}, baseline=ROLE_A)
    assert ("error", "plug.backend:MyBackend.indexes_kv_by_block_stride", "plug/backend.py:1") in found(
        result, "protocol-drift"
    )
