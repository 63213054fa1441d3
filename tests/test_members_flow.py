"""missing-member: provider objects kept on the consumer's own instances and handed to helpers,
and the provider's strings that only read a name (which do not serve it)."""

from __future__ import annotations

import pytest

from tests.test_contact import check, found
from tests.test_members import PV_A, PV_B


def mm(consumer, provider, baseline=PV_A):
    return found(check(consumer, provider, baseline), "missing-member")


KEPT = """
from pv.config import Config

class Runner:
    def __init__(self, config: Config, other):
        self.config = config
        self.other = other

    def sig(self):
        return self.config.compute_hash()
"""


def test_an_annotated_parameter_kept_on_the_instance_is_read_as_its_class():
    assert mm({"plug/run.py": KEPT}, PV_B) == [("error", "pv.config:Config.compute_hash", "plug/run.py:9")]


def test_an_attribute_set_from_two_sources_is_not_typed():
    consumer = KEPT.replace(
        "        self.other = other\n",
        "        self.other = other\n\n    def reset(self, c):\n        self.config = c\n",
    )
    assert mm({"plug/run.py": consumer}, PV_B) == []


# The helper's module names the provider, so it is scanned (a module outside the scan is not
# loaded to follow a receiver's member: it would cost more than it finds).
HELPER = {
    "plug/sig.py": """
        import pv.config

        def signature(config):
            return _hash(config)

        def _hash(config):
            return config.compute_hash()
    """,
}


def test_a_kept_provider_object_handed_to_an_untyped_helper_is_followed():
    runner = KEPT.replace("return self.config.compute_hash()", "return signature(self.config)")
    consumer = {**HELPER, "plug/run.py": "from plug.sig import signature\n" + runner}
    assert mm(consumer, PV_B) == [("error", "pv.config:Config.compute_hash", "plug/sig.py:7")]
    assert mm(consumer, PV_A) == []


def test_a_member_the_provider_annotates_handed_to_an_untyped_helper_is_followed():
    a = {**PV_A, "pv/worker.py": "from pv.config import Config\n\nclass Worker:\n    config: Config\n"}
    b = {**PV_B, "pv/worker.py": "from pv.config import Config\n\nclass Worker:\n    config: Config\n"}
    consumer = {
        **HELPER,
        "plug/run.py": """
            from pv.worker import Worker
            from plug.sig import signature

            class Mine(Worker):
                def sig(self):
                    return signature(self.config)
        """,
    }
    assert mm(consumer, b, a) == [("error", "pv.config:Config.compute_hash", "plug/sig.py:7")]


CONSUMER = {"plug/run.py": KEPT}


@pytest.mark.parametrize(
    "text",
    [
        'def probe(cls):\n    return "compute_hash" in cls.__dict__\n',
        'def probe(obj):\n    return hasattr(obj, "compute_hash")\n',
        'def probe(obj):\n    return getattr(obj, "compute_hash", None)\n',
    ],
)
def test_a_provider_string_that_only_reads_the_name_does_not_serve_it(text: str):
    assert mm(CONSUMER, {**PV_B, "pv/probe.py": text}) == [("error", "pv.config:Config.compute_hash", "plug/run.py:9")]


@pytest.mark.parametrize(
    "text",
    [
        'def install(obj, f):\n    setattr(obj, "compute_hash", f)\n',
        'HOOKS = ["compute_hash"]\n',
        'def install(obj, name, f):\n    if name == "compute_hash":\n        setattr(obj, name, f)\n',
        "def install(obj, f):\n    obj.compute_hash = f\n",
    ],
)
def test_a_provider_string_or_store_that_may_set_the_name_serves_it(text: str):
    assert mm(CONSUMER, {**PV_B, "pv/probe.py": text}) == []


def test_a_parameter_assigned_again_is_not_typed_by_its_annotation():
    rebound = KEPT.replace(
        "        self.config = config\n", "        config = Wrapper(config)\n        self.config = config\n"
    )
    rebound += "\n\nclass Wrapper:\n    def __init__(self, c):\n        self.c = c\n\n    def compute_hash(self):\n        return 1\n"
    assert mm({"plug/run.py": rebound}, PV_B) == []


def test_reads_for_a_receiver_s_members_do_not_use_up_those_for_provider_objects(monkeypatch):
    # Many helpers handed `self.x` come first; the helper handed a provider class must still be read.
    import atompin.analysis.scanner as scanner

    monkeypatch.setattr(scanner, "_MAX_RESCANS", 1)
    helpers = "".join(f"def h{i}(x):\n    return x.value\n\n" for i in range(5))
    calls = "".join(f"        h{i}(self.config)\n" for i in range(5))
    source = (
        "from pv.config import Config\n\n" + helpers + "def sig(cls):\n    return cls.compute_hash(None)\n\n"
        "class Runner(Config):\n    def run(self):\n" + calls + "\n\ndef last():\n    return sig(Config)\n"
    )
    result = check({"plug/run.py": source}, PV_B, PV_A)
    assert [(f.severity.value, f.symbol) for f in result.findings if f.rule.value == "unresolved-import"] == [
        ("error", "pv.config:Config.compute_hash")
    ]


def test_a_helper_past_the_scan_s_bound_is_said_not_silently_skipped(monkeypatch: pytest.MonkeyPatch):
    """The scan reads a helper again with the provider objects handed to it, up to a bound that
    keeps it finite; a read skipped past it is an `analysis-bound` warning, not a silent miss."""
    import atompin.analysis.scanner as scanner

    provider_a = {"pv/config.py": "class Config:\n    def compute_hash(self):\n        return ''\n"}
    provider_b = {"pv/config.py": "class Config:\n    def compile_factors(self):\n        return ''\n"}
    consumer = {
        "plug/mine.py": (
            "from pv.config import Config\n\n\ndef helper(config):\n    return config.compute_hash()\n\n\n"
            "def go(config: Config):\n    return helper(config)\n"
        )
    }
    result = check(consumer, provider_b, provider_a)
    assert found(result, "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/mine.py:5")]
    assert found(result, "analysis-bound") == []
    monkeypatch.setattr(scanner, "_MAX_MEMBER_RESCANS", 0)
    monkeypatch.setattr(scanner, "_MAX_RESCANS", 0)
    result = check(consumer, provider_b, provider_a)
    assert found(result, "missing-member") == []
    [bound] = [f for f in result.findings if f.rule.value == "analysis-bound"]
    assert (bound.severity.value, str(bound.sites[0])) == ("warning", "plug/mine.py:4")
    assert "1 such read(s) were skipped, the first of plug/mine.py:4" in bound.message


@pytest.mark.parametrize(
    ("call", "judged"),
    [
        ("self._hash(config)", True),
        ("self._hash(c=config)", True),
        ("self._hash(None)", False),  # nothing of the provider's handed: the body read once says nothing
    ],
)
def test_a_provider_object_handed_to_a_method_of_the_class_s_own_is_read_there(call: str, judged: bool):
    """`self._hash(config)`: the method is read again with what it is handed, as a helper
    function is, so its unannotated parameter holds the Config."""
    consumer = (
        "from pv.config import Config\n\nclass Runner:\n"
        f"    def go(self, config: Config):\n        return {call}\n\n"
        "    def _hash(self, c):\n        return c.compute_hash()\n"
    )
    expected = [("error", "pv.config:Config.compute_hash", "plug/run.py:8")] if judged else []
    assert mm({"plug/run.py": consumer}, PV_B) == expected


@pytest.mark.parametrize(
    "call",
    ["return Helper().use(config)", "h = Helper()\n        return h.use(config)", "return self.helper.use(config)"],
)
def test_a_provider_object_handed_to_a_method_of_an_instance_the_consumer_made_is_read_there(call: str):
    consumer = (
        "from pv.config import Config\n\nclass Helper:\n    def use(self, c):\n        return c.compute_hash()\n\n"
        "class Runner:\n    def __init__(self):\n        self.helper = Helper()\n\n"
        f"    def go(self, config: Config):\n        {call}\n"
    )
    assert mm({"plug/run.py": consumer}, PV_B) == [("error", "pv.config:Config.compute_hash", "plug/run.py:5")]
