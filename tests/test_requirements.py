"""A consumer function that raises its own error unless the provider's callable takes some
parameters (verl 0.9.1's `require_vllm_delta_support`: `if not {"config", "vllm_config",
"device", "model"}.issubset(inspect.signature(WeightTransferEngine.__init__).parameters): raise
RuntimeError(...)`, called before its delta backend is set up). Where the test fails, the
module's own calls of that callable are refused first, with the consumer's error: they are
warnings that say so. Where it holds, they are judged as any call."""

from __future__ import annotations

from conftest import brief

OLD_ENGINE = """
    class Engine:
        def __init__(self, config, parallel_config, model):
            self.config = config
"""

NEW_ENGINE = """
    class Engine:
        def __init__(self, config, vllm_config, device, model):
            self.config = config
"""


def provider(engine: str = OLD_ENGINE) -> dict[str, str]:
    return {"pv/__init__.py": "", "pv/engine.py": engine}


DELTA = """
    import inspect

    from pv.engine import Engine


    def require_delta_support():
        params = inspect.signature(Engine.__init__).parameters
        if not {"config", "vllm_config", "device", "model"}.issubset(params):
            raise RuntimeError("delta updates need the engine-owned Engine API")


    class DeltaEngine(Engine):
        def __init__(self, config, vllm_config, device, model):
            super().__init__(config, vllm_config, device, model)
"""

SERVER = """
    from plug.delta import require_delta_support


    def start(settings):
        if settings.delta:
            require_delta_support()
"""


def consumer(delta: str = DELTA) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/delta.py": delta, "plug/server.py": SERVER}


def test_a_call_the_module_requires_a_signature_for_is_a_warning_where_the_requirement_fails(run_check):
    [finding] = run_check(provider(), consumer()).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == (
        "arity-drift",
        "warning",
        "pv.engine:Engine.__init__",
    )
    assert [str(s) for s in finding.sites] == ["plug/delta.py:14"]
    assert (
        "refused first at this provider: plug.delta:require_delta_support raises its own error at "
        "plug/delta.py:9, where its test `not {'config', 'vllm_config', 'device', 'model'}.issubset(params)` "
        "holds" in finding.message
    )


def test_where_the_requirement_holds_the_calls_are_judged_as_any_call(run_check):
    assert run_check(provider(NEW_ENGINE), consumer()).findings == ()
    wrong = consumer(DELTA.replace("super().__init__(config, vllm_config, device, model)", "super().__init__(config)"))
    assert brief(run_check(provider(NEW_ENGINE), wrong)) == [
        ("arity-drift", "error", "pv.engine:Engine.__init__", ["plug/delta.py:14"])
    ]


def test_a_single_parameter_requirement_counts_too(run_check):
    single = DELTA.replace(
        """params = inspect.signature(Engine.__init__).parameters
        if not {"config", "vllm_config", "device", "model"}.issubset(params):""",
        """if "device" not in inspect.signature(Engine.__init__).parameters:""",
    )
    [finding] = run_check(provider(), consumer(single)).findings
    assert finding.severity.value == "warning" and "require_delta_support raises its own error" in finding.message


def test_a_requirement_on_another_callable_or_in_another_module_leaves_the_error(run_check):
    other = provider(OLD_ENGINE + "\n    def build(config, device):\n        return config\n")
    on_build = DELTA.replace("Engine.__init__).parameters", "build).parameters").replace(
        "from pv.engine import Engine", "from pv.engine import Engine, build"
    )
    assert brief(run_check(other, consumer(on_build))) == [
        ("arity-drift", "error", "pv.engine:Engine.__init__", ["plug/delta.py:14"])
    ]
    # The requirement in a module of its own, the class elsewhere: nothing ties the two.
    split = {
        "plug/__init__.py": "",
        "plug/checks.py": DELTA.split("class DeltaEngine")[0],
        "plug/delta.py": "from pv.engine import Engine\n\nclass DeltaEngine(Engine):\n"
        "    def __init__(self, config, vllm_config, device, model):\n"
        "        super().__init__(config, vllm_config, device, model)\n",
        "plug/server.py": SERVER.replace("plug.delta", "plug.checks"),
    }
    assert brief(run_check(provider(), split)) == [
        ("arity-drift", "error", "pv.engine:Engine.__init__", ["plug/delta.py:5"])
    ]


def test_a_test_that_does_not_raise_is_no_requirement(run_check):
    warns = DELTA.replace('raise RuntimeError("delta updates need the engine-owned Engine API")', "print('old')")
    assert brief(run_check(provider(), consumer(warns))) == [
        ("arity-drift", "error", "pv.engine:Engine.__init__", ["plug/delta.py:14"])
    ]


def test_a_test_of_several_parameters_decides_its_branches(run_check):
    factory = """
        import inspect

        from pv.engine import Engine


        def make(config, vllm_config, device, model, parallel):
            if {"vllm_config", "device"}.issubset(inspect.signature(Engine.__init__).parameters):
                return Engine(config, vllm_config, device, model)
            return Engine(config, parallel, model)
    """
    files = {"plug/__init__.py": "", "plug/factory.py": factory}
    assert run_check(provider(), files).findings == ()
    assert run_check(provider(NEW_ENGINE), files).findings == ()
