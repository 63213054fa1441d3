"""Compatibility blocks: a hasattr test with a fallback, names used in a try/except ImportError block,
a ladder whose first alternative is the consumer's own module. The fallback that cannot run at this
provider is information; a break on the path that does run is still an error."""

from __future__ import annotations

from conftest import brief

PROVIDER = {
    "pv/__init__.py": "",
    "pv/fused_moe.py": "class FusedMoEFactory:\n    pass\n",
    "pv/pooler/__init__.py": "",
    "pv/pooler/activations.py": "def get_act_fn(config):\n    return config\n",
    "pv/adapter.py": """
        class SchedulerAdapter:
            def __init__(self, server_url, context):
                pass
    """,
}


def consumer(source: str, **more: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source, **{f"plug/{k}.py": v for k, v in more.items()}}


FALLBACK = """
    import pv.fused_moe as fm

    if hasattr(fm, "FusedMoEFactory"):
        Factory = fm.FusedMoEFactory
    else:
        Factory = fm.FusedMoE
"""


def test_a_hasattr_fallback_for_older_providers_is_information(run_check):
    [finding] = run_check(PROVIDER, consumer(FALLBACK)).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == (
        "unresolved-import",
        "info",
        "pv.fused_moe:FusedMoE",
    )
    assert "a fallback for older providers: it runs only when `FusedMoEFactory` is absent" in finding.message
    # Where the new name is gone too, the fallback runs, and its break is an error.
    neither = {**PROVIDER, "pv/fused_moe.py": "class Other:\n    pass\n"}
    assert [f for f in brief(run_check(neither, consumer(FALLBACK))) if f[1] == "error"] == [
        ("unresolved-import", "error", "pv.fused_moe:FusedMoE", ["plug/mod.py:6"])
    ]
    # The negated form is the same test.
    negated = FALLBACK.replace('if hasattr(fm, "FusedMoEFactory"):', 'if not hasattr(fm, "FusedMoEFactory"):')
    negated = negated.replace(
        "Factory = fm.FusedMoEFactory\n    else:\n        Factory = fm.FusedMoE",
        "Factory = fm.FusedMoE\n    else:\n        Factory = fm.FusedMoEFactory",
    )
    assert [f.severity.value for f in run_check(PROVIDER, consumer(negated)).findings] == ["info"]


COMPAT = """
    def build(config):
        try:
            from pv.pooler.activations import get_act_fn
            act = get_act_fn(config)
        except ImportError:
            from pv.pooler import ClassifierPooler
            act = ClassifierPooler.act_fn_for_cross_encoder(config)
        return act
"""


def test_names_used_in_the_handler_of_a_compat_block(run_check):
    assert run_check(PROVIDER, consumer(COMPAT)).findings == ()
    # When the new import fails, the handler runs: its own break is the error.
    old = {**PROVIDER, "pv/pooler/activations.py": "X = 1\n"}
    assert [(f.rule.value, f.severity.value) for f in run_check(old, consumer(COMPAT)).findings] == [
        ("unresolved-import", "error")
    ]


def test_uses_after_a_failing_import_in_the_same_try_never_run(run_check):
    src = """
        class Worker:
            def __init__(self, config):
                try:
                    from pv.legacy import LegacyWorkerBase
                    LegacyWorkerBase.__init__(self, config=config)
                except ImportError:
                    super().__init__(config=config)
    """
    # Only the import is reported: a degraded path, since the handler falls back without importing.
    assert brief(run_check(PROVIDER, consumer(src))) == [
        ("unresolved-import", "warning", "pv.legacy:LegacyWorkerBase", ["plug/mod.py:4"])
    ]
    assert "the fallback calls __init__()" in run_check(PROVIDER, consumer(src)).findings[0].message


LADDER = """
    try:
        from plug.own_adapter import SchedulerAdapter
    except ImportError:
        from pv.adapter import SchedulerAdapter

    adapter = SchedulerAdapter(server_urls=["a"], context=None, extra_config={})
"""


def test_a_ladder_whose_first_alternative_is_the_consumers_own_module(run_check):
    own = "class SchedulerAdapter:\n    def __init__(self, server_urls, context, extra_config=None):\n        pass\n"
    assert run_check(PROVIDER, consumer(LADDER, own_adapter=own)).findings == ()
    # Without the consumer's module, the provider's class is what is built, and the call does not fit it.
    assert [(f.rule.value, f.severity.value) for f in run_check(PROVIDER, consumer(LADDER)).findings] == [
        ("arity-drift", "error")
    ]
