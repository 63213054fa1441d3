"""Calls inside a provider class that only a class the consumer stands in for makes.

vLLM makes its elastic-EP executor only in its GPU Worker's `__init__`
(`self.elastic_ep_executor = ElasticEPScalingExecutor(self)`); the executor then calls
`self.worker.load_model(load_dummy_weights=True)` and its all2all manager's
`commit_ep_size()`. vllm-spyre's and vllm-ascend's workers derive from `WorkerBase`, are named
as their platform's worker class and define `__init__` themselves: the executor is never made
beside them, and its calls never reach their overrides or stand-ins."""

from __future__ import annotations

from tests.test_contact import check, found

BASE = """
    class WorkerBase:
        def __init__(self, config):
            self.config = config

        def load_model(self):
            raise NotImplementedError
"""
GPU_WORKER = """
    from pv.worker_base import WorkerBase

    class Worker(WorkerBase):
        def __init__(self, config):
            super().__init__(config)
            from pv.elastic import Elastic
            self.elastic = Elastic(self)

        def load_model(self):
            pass
"""
ELASTIC = """
    class Elastic(object):
        def __init__(self, worker):
            self.worker = worker

        def reload(self):
            self.worker.load_model(load_dummy_weights=True)
"""
BEFORE = {
    "pv/worker_base.py": BASE,
    "pv/gpu_worker.py": GPU_WORKER,
    "pv/elastic.py": ELASTIC.replace("load_dummy_weights=True", ""),
}
AFTER = {
    "pv/worker_base.py": BASE.replace("def load_model(self)", "def load_model(self, *, load_dummy_weights=False)"),
    "pv/gpu_worker.py": GPU_WORKER.replace("def load_model(self)", "def load_model(self, *, load_dummy_weights=False)"),
    "pv/elastic.py": ELASTIC,
}
CONSUMER = {
    "plug/worker.py": """
        from pv.worker_base import WorkerBase

        class MyWorker(WorkerBase):
            def __init__(self, config):
                super().__init__(config)

            def load_model(self):
                return 1
    """,
    "plug/platform.py": """
        WORKER = "plug.worker.MyWorker"
    """,
}


def drift(consumer=CONSUMER, after=AFTER):
    return found(check(consumer, after, baseline=BEFORE), "override-drift")


def test_a_call_inside_a_class_made_only_where_the_consumer_stands_in_does_not_reach_the_override():
    [(severity, symbol, _)] = drift()
    assert (severity, symbol) == ("warning", "plug.worker:MyWorker.load_model")
    result = check(CONSUMER, AFTER, baseline=BEFORE)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert "inside Elastic.reload; pv.elastic:Elastic is made only in Worker.__init__, which plug.worker:MyWorker" in (
        finding.message
    )


def test_the_call_counts_when_the_class_may_be_made_or_named_elsewhere():
    # Not handed over: the provider's own Worker may run, and make the executor.
    alone = {k: v for k, v in CONSUMER.items() if k != "plug/platform.py"}
    assert [f[0] for f in drift(alone)] == ["error"]
    # The stand-in does not define `__init__`: WorkerBase's runs, but so may the Worker's.
    no_init = {**CONSUMER, "plug/worker.py": CONSUMER["plug/worker.py"].replace("__init__", "setup")}
    assert [f[0] for f in drift(no_init)] == ["error"]
    # Made in a second place, or named other than by a call (a registry may make it anywhere).
    for extra in (
        "from pv.elastic import Elastic\n\ndef make(w):\n    return Elastic(w)\n",
        "from pv.elastic import Elastic\n\nKINDS = {'elastic': Elastic}\n",
        "from pv.elastic import Elastic\n\nclass Faster(Elastic):\n    pass\n",
        "FACTORY = 'pv.elastic.Elastic'\n",
        "from pv.elastic import Elastic as Fast\n\ndef make(w):\n    return Fast(w)\n",
        "import pv.elastic\n\ndef make(w):\n    return pv.elastic.Elastic(w)\n",
        "from pv.elastic import Elastic\n\ndef wrap(f, *a):\n    return f(*a)\n\ndef go(w):\n    return wrap(Elastic, w)\n",
    ):
        assert [f[0] for f in drift(after={**AFTER, "pv/other.py": extra})] == ["error"], extra
    # The consumer names the class itself: it may make one.
    making = {**CONSUMER, "plug/tools.py": "from pv.elastic import Elastic\n\ndef go(w):\n    Elastic(w).reload()\n"}
    assert [f[0] for f in drift(making)] == ["error"]


def test_a_comment_or_docstring_naming_the_class_is_no_other_use():
    noted = {**AFTER, "pv/other.py": '"""The Elastic executor is made by Worker."""\n# see Elastic\nX = 1\n'}
    assert [f[0] for f in drift(after=noted)] == ["warning"]


COMMUNICATOR_BEFORE = {
    "pv/worker_base.py": BASE,
    "pv/gpu_worker.py": GPU_WORKER,
    "pv/all2all.py": """
        class All2AllManagerBase:
            def dispatch(self, x):
                raise NotImplementedError

            def combine(self, x):
                raise NotImplementedError

            def destroy(self):
                pass
    """,
    "pv/communicator.py": """
        class DeviceCommunicatorBase:
            def __init__(self):
                self.all2all_manager = None

            def dispatch(self, x):
                return self.all2all_manager.dispatch(x)

        def get_ep_all2all_manager():
            return _COMM.all2all_manager
    """,
    "pv/elastic.py": """
        from pv.communicator import get_ep_all2all_manager

        class Elastic:
            def __init__(self, worker):
                self.worker = worker

            def reload(self):
                get_ep_all2all_manager().destroy()
    """,
}
COMMUNICATOR_AFTER = {
    **COMMUNICATOR_BEFORE,
    "pv/all2all.py": COMMUNICATOR_BEFORE["pv/all2all.py"]
    + "\n            def commit_ep_size(self):\n                pass\n",
    "pv/elastic.py": COMMUNICATOR_BEFORE["pv/elastic.py"]
    + "\n            def commit(self):\n                get_ep_all2all_manager().commit_ep_size()\n",
}
MANAGER = """
    class NpuAll2AllManager:
        def dispatch(self, x):
            return x

        def combine(self, x):
            return x

        def destroy(self):
            pass
"""


def test_a_stand_in_lacking_a_method_only_such_a_class_calls_is_a_warning():
    platform = CONSUMER["plug/platform.py"] + '    MANAGER = "plug.manager.NpuAll2AllManager"\n'
    consumer = {**CONSUMER, "plug/manager.py": MANAGER, "plug/platform.py": platform}
    result = check(consumer, COMMUNICATOR_AFTER, baseline=COMMUNICATOR_BEFORE)
    assert found(result, "protocol-drift") == [("warning", "plug.manager:NpuAll2AllManager", "plug/manager.py:1")]
    # No worker standing in for the provider's: the call may run on it.
    alone = {**consumer, "plug/platform.py": 'MANAGER = "plug.manager.NpuAll2AllManager"\n'}
    result = check(alone, COMMUNICATOR_AFTER, baseline=COMMUNICATOR_BEFORE)
    assert found(result, "protocol-drift") == [
        ("error", "plug.manager:NpuAll2AllManager.commit_ep_size", "plug/manager.py:1")
    ]


def test_an_annotation_in_a_method_or_a_signature_makes_nothing():
    """vLLM 0.27's GPU Worker writes `self.worker_sentinel: WorkerSentinel | None = None` before it
    makes one, and other functions take one annotated so: neither makes the class."""
    annotated = GPU_WORKER.replace(
        "            from pv.elastic import Elastic\n",
        "            from pv.elastic import Elastic\n            self.elastic: Elastic | None = None\n",
    )
    typed = "from pv.elastic import Elastic\n\n\ndef describe(e: Elastic) -> Elastic:\n    return e\n"
    after = {**AFTER, "pv/gpu_worker.py": annotated, "pv/typed.py": typed}
    assert [f[0] for f in drift(after=after)] == ["warning"]
    # A class body's field annotation may make it (a pydantic model builds its fields' classes).
    field = "from pv.elastic import Elastic\n\n\nclass Settings:\n    elastic: Elastic\n"
    assert [f[0] for f in drift(after={**AFTER, "pv/settings.py": field})] == ["error"]
    # A default value or a decorator naming it still does.
    default = "from pv.elastic import Elastic\n\n\ndef describe(kind=Elastic):\n    return kind\n"
    assert [f[0] for f in drift(after={**AFTER, "pv/typed.py": default})] == ["error"]
