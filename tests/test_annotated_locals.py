"""A local typed by an annotation holds an instance of the provider class it names: the return
annotation of the consumer function it is assigned from (vllm-omni 0.31's `api_server_manager =
_start_api_server_process_manager(...)`, annotated `-> APIServerProcessManager`, then calls
`api_server_manager.gather_actual_addresses()`, which vLLM 0.32 removed), or its own
(`manager: Manager = make()`)."""

from __future__ import annotations

import pytest

PROVIDER = {
    "pv/__init__.py": "",
    "pv/utils.py": """
        class Manager:
            def __init__(self, target):
                self.target = target

            def stop(self, timeout):
                return timeout
    """,
}
# The release the consumer was written against also had `Manager.gather`.
BASELINE = {
    **PROVIDER,
    "pv/utils.py": PROVIDER["pv/utils.py"].replace(
        "            def stop", "            def gather(self):\n                return []\n\n            def stop"
    ),
}

STARTED = """
    from __future__ import annotations

    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from pv.utils import Manager

    def start(target) -> Manager:
        from pv.utils import Manager
        return Manager(target)

    def run():
        manager = None
        try:
            manager = start(print)
            return manager.gather()
        finally:
            pass
"""


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/serve.py": source}


def errors(found, rule: str) -> list[tuple[str, str]]:
    return sorted(
        (f.symbol, str(f.sites[0])) for f in found.findings if f.rule.value == rule and f.severity.value == "error"
    )


def test_a_member_gone_from_the_class_a_helper_is_annotated_to_return_is_an_error(run_check):
    found = run_check(PROVIDER, consumer(STARTED), baseline=BASELINE)
    assert errors(found, "missing-member") == [("pv.utils:Manager.gather", "plug/serve.py:16")]


def test_a_method_call_on_it_is_judged_by_its_signature(run_check):
    source = STARTED.replace("manager.gather()", "manager.stop(1, 2)")
    found = run_check(PROVIDER, consumer(source), baseline=BASELINE)
    assert errors(found, "arity-drift") == []  # the baseline took no more: not drift
    provider = {**PROVIDER, "pv/utils.py": PROVIDER["pv/utils.py"].replace("def stop(self, timeout)", "def stop(self)")}
    source = STARTED.replace("manager.gather()", "manager.stop(1)")
    assert errors(run_check(provider, consumer(source), baseline=BASELINE), "arity-drift") == [
        ("pv.utils:Manager.stop", "plug/serve.py:16")
    ]


@pytest.mark.parametrize(
    "change",
    [
        ("def start(target) -> Manager:", "def start(target):"),  # no annotation: not known
        ("def start(target) -> Manager:", "def start(target) -> list[Manager]:"),  # not an instance of it
        ("def start(target) -> Manager:", 'def start(target) -> "Manager | Other":'),  # one of two
        # The consumer's own class of that name, in the file of the function.
        (
            "    def start(target)",
            "    class Manager:\n        def gather(self):\n            return []\n\n    def start(target)",
        ),
    ],
)
def test_without_one_provider_class_named_nothing_is_said(run_check, change):
    source = STARTED.replace(*change)
    assert source != STARTED
    assert errors(run_check(PROVIDER, consumer(source), baseline=BASELINE), "missing-member") == []


def test_a_local_annotated_with_a_provider_class_holds_an_instance_of_it(run_check):
    source = """
        from pv.utils import Manager

        def run(make):
            manager: Manager = make()
            return manager.gather()
    """
    found = run_check(PROVIDER, consumer(source), baseline=BASELINE)
    assert errors(found, "missing-member") == [("pv.utils:Manager.gather", "plug/serve.py:5")]
    # What the value is known to be comes first: a consumer class's instance is not the provider's.
    own = source.replace("make()", "Own()") + "\n\nclass Own:\n    def gather(self):\n        return []\n"
    assert errors(run_check(PROVIDER, consumer(own), baseline=BASELINE), "missing-member") == []


def test_what_a_method_of_the_class_s_own_is_annotated_to_return(run_check):
    source = """
        from pv.utils import Manager

        class Base:
            def make(self) -> Manager:
                return Manager(print)

        class Server(Base):
            def run(self):
                manager = self.make()
                return manager.gather()
    """
    found = run_check(PROVIDER, consumer(source), baseline=BASELINE)
    assert errors(found, "missing-member") == [("pv.utils:Manager.gather", "plug/serve.py:10")]
    # A method of another object's is not the class's own: what it returns is not known here.
    other = source.replace("manager = self.make()", "manager = self.other.make()")
    assert errors(run_check(PROVIDER, consumer(other), baseline=BASELINE), "missing-member") == []


COLLECTIONS = """
    from pv.utils import Manager

    def run(managers: list[Manager], table: "dict[str, Manager]"):
        first = managers[0]
        first.gather()
        table["x"].gather()
        table.get("y").gather()
        for _, each in table.items():
            each.gather()
        for one in table.values():
            one.gather()
        for key in table:
            key.gather()
        rest = managers[1:]
        rest.gather()
"""


def test_an_item_of_an_annotated_collection_or_mapping_is_an_instance_of_its_class(run_check):
    found = run_check(PROVIDER, consumer(COLLECTIONS), baseline=BASELINE)
    [finding] = [f for f in found.findings if f.rule.value == "missing-member"]
    # Not the mapping's keys (line 14) nor a slice, which is a list again (line 16).
    assert [str(s) for s in finding.sites] == [f"plug/serve.py:{n}" for n in (5, 6, 7, 9, 11)]


def test_an_attribute_assigned_what_a_helper_is_annotated_to_return(run_check):
    source = """
        from pv.utils import Manager

        def start(target) -> Manager:
            return Manager(target)

        class Server:
            def __init__(self):
                self.manager = start(print)

            def run(self):
                return self.manager.gather()
    """
    found = run_check(PROVIDER, consumer(source), baseline=BASELINE)
    assert errors(found, "missing-member") == [("pv.utils:Manager.gather", "plug/serve.py:11")]
    # Another store of the attribute that holds something else: not known.
    other = source.replace(
        "self.manager = start(print)", "self.manager = start(print)\n        self.manager = object()"
    )
    assert errors(run_check(PROVIDER, consumer(other), baseline=BASELINE), "missing-member") == []


def test_a_conditional_construction_or_none_holds_an_instance(run_check):
    source = """
        from pv.utils import Manager

        def start(target) -> Manager:
            return Manager(target)

        def run(flag):
            made = Manager(print) if flag else None
            started = None if not flag else start(print)
            if made is not None and started is not None:
                made.gather()
                started.gather()
    """
    found = run_check(PROVIDER, consumer(source), baseline=BASELINE)
    [finding] = [f for f in found.findings if f.rule.value == "missing-member"]
    assert [str(s) for s in finding.sites] == ["plug/serve.py:10", "plug/serve.py:11"]
    # A call on each side: which one made it is not known.
    both = source.replace("Manager(print) if flag else None", "Manager(print) if flag else object()")
    [finding] = [
        f for f in run_check(PROVIDER, consumer(both), baseline=BASELINE).findings if f.rule.value == "missing-member"
    ]
    assert [str(s) for s in finding.sites] == ["plug/serve.py:11"]


MADE_THEN_KEPT = """
    from pv.utils import Manager

    class Server:
        def launch(self, target):
            made = Manager.create(target)
            self.manager = made

        def abort(self):
            return self.manager.stop(timeout=1, force=True)
"""


@pytest.mark.parametrize(
    ("change", "typed"),
    [
        ("", True),
        # Bound again (a loop's target): which of its values is kept is not known.
        ("            self.manager = made\n", False),
    ],
)
def test_a_local_assigned_once_then_kept_on_self_types_the_attribute(run_check, change: str, typed: bool):
    """verl 0.9 keeps `engine_client = AsyncLLM.from_vllm_config(...)` as `self.engine` and calls
    `self.engine.pause_generation(wait_for_inflight_requests=False, ...)` in another method; vLLM
    0.32 dropped the keyword."""
    provider = {
        **PROVIDER,
        "pv/utils.py": PROVIDER["pv/utils.py"]
        + """
            @classmethod
            def create(cls, target) -> "Manager":
                return cls(target)
    """,
    }
    source = MADE_THEN_KEPT
    if change:
        source = source.replace(change, "            for made in (made, None):\n                pass\n" + change)
    # The release the consumer was written against took `force`.
    baseline = {
        **provider,
        "pv/utils.py": provider["pv/utils.py"].replace("stop(self, timeout)", "stop(self, timeout, force=False)"),
    }
    found = run_check(provider, consumer(source), baseline=baseline)
    expected = [("pv.utils:Manager.stop", "plug/serve.py:9")] if typed else []
    assert errors(found, "arity-drift") == expected
