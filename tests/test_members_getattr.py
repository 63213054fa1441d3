"""`missing-member` reads through `getattr` chains, and stores a test makes on its stubs.

ai-dynamo 1.5.1's `InstrumentedScheduler` (a subclass of vLLM's `AsyncScheduler`) reads
`self.skipped_waiting`, gone in vLLM 0.31; only its tests set that name, on a stub. It reads
`getattr(getattr(self, "kv_cache_manager", None), "coordinator", None)` and on from there."""

from __future__ import annotations

import pytest

from tests.test_contact import check, found

BEFORE = {
    "pv/mgr.py": "class Manager:\n    def __init__(self):\n        self._cap = 1\n",
    "pv/coord.py": (
        "from pv.mgr import Manager\n\n\nclass Coordinator:\n    def __init__(self):\n"
        "        self.one: Manager = Manager()\n"
    ),
    "pv/sched.py": (
        "from pv.coord import Coordinator\n\n\nclass Scheduler:\n    def __init__(self):\n"
        "        self.coordinator: Coordinator = Coordinator()\n        self.skipped_waiting = []\n"
    ),
}
AFTER = {
    **BEFORE,
    "pv/mgr.py": BEFORE["pv/mgr.py"].replace("_cap", "cap"),
    "pv/sched.py": BEFORE["pv/sched.py"].replace("        self.skipped_waiting = []\n", ""),
}
SCHEDULER = "from pv.sched import Scheduler\n\n\nclass Mine(Scheduler):\n    def count(self):\n"


def mine(body: str, **more: str) -> dict[str, str]:
    return {"plug/sched.py": SCHEDULER + body, **more}


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("        return getattr(self.coordinator.one, '_cap', None)\n", 6),
        (
            "        c = getattr(self, 'coordinator', None)\n        one = getattr(c, 'one', None)\n"
            "        return getattr(one, '_cap', None)\n",
            8,
        ),
    ],
)
def test_a_read_with_a_default_through_getattr_chains_is_a_warning(body: str, line: int):
    result = check(mine(body), AFTER, baseline=BEFORE)
    assert found(result, "missing-member") == [("warning", "pv.mgr:Manager._cap", f"plug/sched.py:{line}")]
    [finding] = [f for f in result.findings if f.rule.value == "missing-member"]
    assert "read with getattr(..., default) through self.coordinator.one in plug.sched.Mine" in finding.message


def test_a_read_through_a_getattr_without_default_then_an_attribute_is_an_error():
    body = "        c = getattr(self, 'coordinator')\n        return c.one._cap\n"
    assert found(check(mine(body), AFTER, baseline=BEFORE), "missing-member") == [
        ("error", "pv.mgr:Manager._cap", "plug/sched.py:7")
    ]


TEST_STUB = "from types import SimpleNamespace\n\n\ndef test_count():\n    stub = SimpleNamespace()\n    stub.skipped_waiting = []\n"


def test_a_name_only_tests_set_on_their_stubs_is_still_judged_outside_tests():
    body = "        return len(self.skipped_waiting)\n"
    consumer = mine(body, **{"plug/tests/test_sched.py": "import pv\n" + TEST_STUB})
    assert found(check(consumer, AFTER, baseline=BEFORE), "missing-member") == [
        ("error", "pv.sched:Scheduler.skipped_waiting", "plug/sched.py:6")
    ]
    # Set from outside by the package's own code: what it holds is not known (as before).
    consumer = mine(body, **{"plug/setup.py": "import pv\n\n\ndef setup(s):\n    s.skipped_waiting = []\n"})
    assert found(check(consumer, AFTER, baseline=BEFORE), "missing-member") == []
    # A test reading it beside its own stubs: not judged either.
    test_read = "import pv\n" + TEST_STUB + "\n\ndef test_read(s: 'Mine'):\n    return s.skipped_waiting\n"
    consumer = {"plug/tests/test_sched.py": test_read}
    assert found(check(consumer, AFTER, baseline=BEFORE), "missing-member") == []


ELEMENTS = {
    **BEFORE,
    "pv/coord.py": BEFORE["pv/coord.py"]
    + "        self.managers: tuple[Manager, ...] = (Manager(),)\n"
    + "        self.made = tuple(make_manager(i) for i in range(2))\n"
    + "        self.mixed = [Manager(), None]\n\n\ndef make_manager(i) -> Manager:\n    return Manager()\n",
}
ELEMENTS_AFTER = {**ELEMENTS, "pv/mgr.py": AFTER["pv/mgr.py"]}


@pytest.mark.parametrize(
    ("collection", "severity"),
    [
        ("managers", "error"),  # annotated `tuple[Manager, ...]`
        ("made", "error"),  # made by a function annotated to return a Manager
        ("mixed", None),  # a list of anything: not known
    ],
)
def test_a_read_on_each_element_of_a_provider_collection(collection: str, severity: str | None):
    body = f"        for m in self.coordinator.{collection}:\n            return m._cap\n"
    result = check(mine(body), ELEMENTS_AFTER, baseline=ELEMENTS)
    expected = [(severity, "pv.mgr:Manager._cap", "plug/sched.py:7")] if severity else []
    assert found(result, "missing-member") == expected
    if severity:
        [finding] = [f for f in result.findings if f.rule.value == "missing-member"]
        assert f"read through self.coordinator.{collection}[…] in plug.sched.Mine" in finding.message


def test_a_member_stored_from_a_factory_is_of_the_class_it_is_annotated_to_return():
    """vLLM's `KVCacheManager` keeps `self.coordinator = get_kv_cache_coordinator(...)`, annotated
    to return a `KVCacheCoordinator`; ai-dynamo reads its managers' members through it."""
    factory = {
        **BEFORE,
        "pv/sched.py": BEFORE["pv/sched.py"].replace("Coordinator = Coordinator()", "Coordinator = make_coordinator()")
        + "\n\ndef make_coordinator() -> Coordinator:\n    return Coordinator()\n",
    }
    factory["pv/sched.py"] = factory["pv/sched.py"].replace("self.coordinator: Coordinator =", "self.coordinator =")
    body = "        return self.coordinator.one._cap\n"
    after = {**factory, "pv/mgr.py": AFTER["pv/mgr.py"]}
    assert found(check(mine(body), after, baseline=factory), "missing-member") == [
        ("error", "pv.mgr:Manager._cap", "plug/sched.py:6")
    ]
    # A factory annotated with no class: not known.
    untyped = {p: t.replace(" -> Coordinator", "") for p, t in factory.items()}
    after = {**untyped, "pv/mgr.py": AFTER["pv/mgr.py"]}
    assert found(check(mine(body), after, baseline=untyped), "missing-member") == []


def test_a_name_written_in_a_comment_tests_nothing():
    """tpu-inference 0.27's `initialize_kv_cache` writes `"shared_by"` in a comment only, and reads
    `kv_cache_tensor.shared_by` as it is: nothing handles its absence."""
    body = '        # read "_cap" of the first manager\n        return self.coordinator.one._cap\n'
    assert found(check(mine(body), AFTER, baseline=BEFORE), "missing-member") == [
        ("error", "pv.mgr:Manager._cap", "plug/sched.py:7")
    ]
    tested = "        if hasattr(self.coordinator.one, '_cap'):\n            return self.coordinator.one._cap\n"
    assert [s for s, _, _ in found(check(mine(tested), AFTER, baseline=BEFORE), "missing-member")] == ["warning"]


# LMCache's connector tests `hasattr(cached_reqs, "resumed_req_ids")`, then `elif hasattr(...,
# "resumed_from_preemption")`, and raises its own AttributeError in the last `else`: vLLM 0.34 has
# neither, so the chain raises all the same.
LADDER = """
        if hasattr(self, "skipped_waiting"):
            return self.skipped_waiting
        elif hasattr(self, "waiting_skipped"):
            return self.waiting_skipped
        else:
            raise AttributeError("unsupported provider")
"""


def test_a_hasattr_chain_whose_else_raises_fails_where_every_name_it_tests_is_gone():
    result = check(mine(LADDER), AFTER, baseline=BEFORE)
    assert found(result, "missing-member") == [("error", "pv.sched:Scheduler.skipped_waiting", "plug/sched.py:8")]
    [finding] = [f for f in result.findings if f.rule.value == "missing-member"]
    assert (
        "(it tests for it with `hasattr`, and for waiting_skipped in the same chain, and none of them is there "
        "at the pin: the chain's last `else` raises)"
    ) in finding.message


@pytest.mark.parametrize(
    ("body", "after"),
    [
        # The other name is there at the pin: that branch runs instead.
        (LADDER, {**AFTER, "pv/sched.py": AFTER["pv/sched.py"] + "        self.waiting_skipped = []\n"}),
        # The last `else` goes on instead of raising, or there is none.
        (LADDER.replace('raise AttributeError("unsupported provider")', "return []"), AFTER),
        (
            "        if self.coordinator is None:\n            raise RuntimeError\n"
            + LADDER.replace('raise AttributeError("unsupported provider")', "return None"),
            AFTER,
        ),
        (LADDER.replace('        else:\n            raise AttributeError("unsupported provider")\n', ""), AFTER),
        # Another kind of test in the chain: what it covers is not known.
        (LADDER.replace('elif hasattr(self, "waiting_skipped")', "elif self.coordinator is None"), AFTER),
    ],
    ids=["other-name-there", "else-goes-on", "else-returns-none", "no-else", "other-test"],
)
def test_a_hasattr_chain_that_may_go_on_is_handled(body: str, after: dict[str, str]):
    assert [sev for sev, *_ in found(check(mine(body), after, baseline=BEFORE), "missing-member")] == ["warning"]
