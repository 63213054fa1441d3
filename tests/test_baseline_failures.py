"""A consumer module whose top-level import fails at the baseline too: what follows it never runs
there, so what the pin breaks there is no change since (`baseline_failures`)."""

from __future__ import annotations

from conftest import brief

from atompin.analysis.baseline_failures import ImportFailure, demote_after_failures, first_failures
from atompin.model import Finding, Rule, Severity, Site

BASE = {
    "pv/__init__.py": "",
    "pv/builder.py": """
        class Builder:
            def inputs(self, seq_len, counts):
                return self.dummy(seq_len, counts)
            def dummy(self, seq_len, counts):
                return None
    """,
}
# The pin passes a third argument to the method the consumer's subclass overrides.
PIN = {
    **BASE,
    "pv/builder.py": """
        class Builder:
            def inputs(self, seq_len, counts, options=None):
                return self.dummy(seq_len, counts, options)
            def dummy(self, seq_len, counts, options=None):
                return None
    """,
}


def _consumer(head: str, tail: str = "") -> dict[str, str]:
    return {
        "plug/__init__.py": "from plug import model\n",
        "plug/model.py": head
        + """
from pv.builder import Builder

class MyBuilder(Builder):
    def dummy(self, seq_len, counts):
        return None
"""
        + tail,
    }


def _errors(result) -> list[tuple[str, str, str, list[str]]]:
    return [b for b in brief(result) if b[1] == "error"]


def test_an_override_after_an_import_failing_at_the_baseline_too_is_a_warning(run_check):
    """vllm-kunlun's `interns1.py` imports `vllm.model_executor.sampling_metadata`, gone before its
    baseline: its dummy-inputs builder, which vLLM 0.11.2 calls with one more argument, never
    loaded there."""
    result = run_check(PIN, _consumer("from pv.sampling_metadata import SamplingMetadata\n"), baseline=BASE)
    assert _errors(result) == []
    drift = [f for f in result.findings if f.rule is Rule.OVERRIDE_DRIFT]
    assert [f.severity for f in drift] == [Severity.WARNING]
    assert (
        "(after plug/model.py:1, whose import of pv.sampling_metadata:SamplingMetadata fails at the baseline too"
        in (drift[0].message)
    )
    imports = [f for f in result.findings if f.rule is Rule.UNRESOLVED_IMPORT]
    assert [(f.severity, "fails at the baseline too" in f.message) for f in imports] == [(Severity.WARNING, True)]


def test_the_override_stays_an_error_where_the_module_imports_at_the_baseline(run_check):
    # The same override, with no failing import: the bump breaks it.
    assert [(b[0], b[2]) for b in _errors(run_check(PIN, _consumer(""), baseline=BASE))] == [
        ("override-drift", "plug.model:MyBuilder.dummy")
    ]
    # The import fails at the pin only: the module ran at the baseline, and the import's own error says so.
    gained = {**BASE, "pv/sampling_metadata.py": "class SamplingMetadata:\n    pass\n"}
    result = run_check(PIN, _consumer("from pv.sampling_metadata import SamplingMetadata\n"), baseline=gained)
    assert [(b[0], b[1]) for b in _errors(result)] == [("override-drift", "error"), ("unresolved-import", "error")]


def test_an_import_that_may_not_fail_or_may_not_run_stops_nothing(run_check):
    caught = "try:\n    from pv.sampling_metadata import SamplingMetadata\nexcept ImportError:\n    SamplingMetadata = None\n"
    in_function = "def load():\n    from pv.sampling_metadata import SamplingMetadata\n    return SamplingMetadata\n"
    typing_only = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pv.sampling_metadata import SamplingMetadata\n"
    )
    for head in (caught, in_function, typing_only):
        result = run_check(PIN, _consumer(head), baseline=BASE)
        assert [(b[0], b[2]) for b in _errors(result)] == [("override-drift", "plug.model:MyBuilder.dummy")], head
    # Without a baseline nothing says the module stopped where the consumer works.
    result = run_check(PIN, _consumer("from pv.sampling_metadata import SamplingMetadata\n"))
    assert ("unresolved-import", "error") in [(b[0], b[1]) for b in brief(result)]
    assert not [f for f in result.findings if "fails at the baseline too" in f.message]


def test_what_comes_before_the_failing_import_still_runs_at_the_baseline(run_check):
    # The override is defined first, the failing import after it: the class was defined at the baseline.
    consumer = _consumer("", "\nfrom pv.sampling_metadata import SamplingMetadata\n")
    assert [(b[0], b[1]) for b in _errors(run_check(PIN, consumer, baseline=BASE))] == [("override-drift", "error")]


def test_demotion_needs_every_site_after_a_failure_of_its_own_file():
    failures = first_failures([ImportFailure(Site("a.py", 9), "pv.x:X"), ImportFailure(Site("a.py", 3), "pv.y:Y")])
    assert failures == {"a.py": ImportFailure(Site("a.py", 3), "pv.y:Y")}

    def finding(*sites: Site, severity: Severity = Severity.ERROR) -> Finding:
        return Finding(Rule.MISSING_MEMBER, severity, "pv.z:Z.m", sites, "gone")

    after, before, elsewhere = Site("a.py", 4), Site("a.py", 2), Site("b.py", 5)
    out = demote_after_failures(
        [finding(after), finding(after, before), finding(after, elsewhere), finding(after, severity=Severity.INFO)],
        failures,
    )
    assert [f.severity for f in out] == [Severity.WARNING, Severity.ERROR, Severity.ERROR, Severity.INFO]
    assert out[0].message == (
        "gone (after a.py:3, whose import of pv.y:Y fails at the baseline too: that part of the module never "
        "runs there; not a change since)"
    )


def test_a_ladder_every_alternative_of_which_fails_at_the_baseline_too_is_a_warning(run_check):
    """vllm-spyre 1.10's pooling runner tries `pooler_for_classify` (which vLLM has) with
    `get_cross_encoder_act_fn` (gone before its 0.22 baseline), then `ClassifierPooler` (gone as
    well): the ladder raised at the baseline too. Not every name it imports is missing there, but
    every alternative has one that is."""
    provider = {
        "pv/__init__.py": "",
        "pv/poolers.py": "def pooler_for_classify(): pass\n",
        "pv/activations.py": "def get_act_fn(): pass\n",
    }
    consumer = {
        "plug/__init__.py": "",
        "plug/runner.py": """
def load_model():
    try:
        from pv.poolers import pooler_for_classify
        from pv.activations import get_cross_encoder_act_fn
    except ImportError:
        from pv.activations import ClassifierPooler
    return pooler_for_classify
""",
    }
    at_pin = run_check(provider, consumer, baseline=provider)
    imports = [f for f in at_pin.findings if f.rule is Rule.UNRESOLVED_IMPORT]
    assert [(f.severity, "fails at the baseline too" in f.message) for f in imports] == [(Severity.WARNING, True)]
    # Where the baseline had one of the alternatives whole, the ladder is a change since.
    had_it = {**provider, "pv/activations.py": "def get_cross_encoder_act_fn(): pass\n"}
    bumped = run_check(provider, consumer, baseline=had_it)
    assert [f.severity for f in bumped.findings if f.rule is Rule.UNRESOLVED_IMPORT] == [Severity.ERROR]


def test_an_installer_whose_ladder_failed_at_the_baseline_too_leaves_its_patches_a_warning(run_check):
    """The installer returns when its ladder fails, so its patches are never made; where every
    alternative failed at the baseline too (one name missing in each), they were never made there
    either, even when a name the pin lost was there then."""
    baseline = {
        "pv/__init__.py": "",
        "pv/ops.py": "def renamed(): pass\ndef target(): pass\n",
    }
    pin = {**baseline, "pv/ops.py": "def target(): pass\n"}
    consumer = {
        "plug/__init__.py": "",
        "plug/install.py": """
import pv.ops


def install():
    try:
        from pv.ops import renamed, never_there
    except ImportError:
        try:
            from pv.ops import never_there_either
        except ImportError:
            return
    pv.ops.target = lambda: None
""",
    }
    result = run_check(pin, consumer, baseline=baseline)
    imports = [f for f in result.findings if f.rule is Rule.UNRESOLVED_IMPORT]
    assert [(f.severity, "never installed" in f.message) for f in imports] == [(Severity.WARNING, True)]
    assert "fails at the baseline too" in imports[0].message
