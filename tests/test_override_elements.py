"""override-drift: calls on the elements of a collection a provider class keeps, and on a local
an `isinstance` test types.

vLLM 0.27.1's KV-cache coordinator keeps its managers in `self.single_type_managers =
tuple(get_manager_for_kv_cache_spec(...) for ...)`, a factory annotated `->
SingleTypeKVCacheManager`, and calls `manager.get_num_blocks_to_allocate(...)` in a loop over
them with one positional argument more than at 0.23: vllm-ascend 0.23's managers, which take one
fewer, fail there with "multiple values for apply_admission_cap". Other provider classes define
the name too, so the call counts only where its receiver is typed as one of the base's family.
Under `if isinstance(manager, CrossAttentionManager):` the loop makes another call, which only
that class's managers receive."""

from __future__ import annotations

import ast

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.name_sites import NameSearch, SiteKind
from atompin.analysis.syntax import element_makers
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, found

MANAGERS = """
class Manager:
    def allocate(self, request, tokens, local_tokens, main_tokens, cap=False):
        return 0

class CrossManager(Manager):
    pass

def make(spec) -> Manager:
    return Manager()
"""
MANAGERS_A = MANAGERS.replace("tokens, local_tokens, main_tokens", "tokens, main_tokens")
COORDINATOR = """
from pv.managers import CrossManager, make

class Coordinator:
    def __init__(self, specs):
        self.managers = tuple(make(spec) for spec in specs)

    def allocate(self, request, tokens, local_tokens, main_tokens, encoder_tokens, cap=False):
        total = 0
        for i, manager in enumerate(self.managers):
            if isinstance(manager, CrossManager):
                total += manager.allocate(request, encoder_tokens, 0, 0, cap=cap)
            else:
                total += manager.allocate(request, tokens, local_tokens, main_tokens, cap=cap)
        return total
"""
COORDINATOR_A = (
    COORDINATOR.replace("encoder_tokens, 0, 0,", "encoder_tokens, 0,")
    .replace("tokens, local_tokens, main_tokens, cap=cap", "tokens, main_tokens, cap=cap")
    .replace("local_tokens, main_tokens, encoder_tokens", "main_tokens, encoder_tokens")
)
CONSUMER = {
    "plug/managers.py": """
        from pv.managers import Manager

        class MyManager(Manager):
            def allocate(self, request, tokens, main_tokens, cap=False):
                return 1
    """
}
BASELINE = {"pv/managers.py": MANAGERS_A, "pv/coordinator.py": COORDINATOR_A}
SYMBOL = "plug.managers:MyManager.allocate"


def drift(coordinator: str, managers: str = MANAGERS) -> list[tuple[str, str, str]]:
    return found(
        check(CONSUMER, {"pv/managers.py": managers, "pv/coordinator.py": coordinator}, BASELINE), "override-drift"
    )


def test_a_call_on_the_elements_a_factory_makes_is_on_the_base_s_family():
    # Coordinator defines `allocate` too: a call found by the name alone may be its own.
    pin = {"pv/managers.py": MANAGERS, "pv/coordinator.py": COORDINATOR}
    result = check(CONSUMER, pin, BASELINE)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert (finding.severity.value, finding.symbol) == ("error", SYMBOL)
    # The call under the `isinstance` test reaches cross managers only, which MyManager is not.
    assert finding.message.startswith("the provider calls .allocate(4 positional, cap=) at pv/coordinator.py:13;")
    assert "more call" not in finding.message


def test_an_unannotated_factory_leaves_the_elements_untyped():
    assert drift(COORDINATOR, MANAGERS.replace("-> Manager", "")) == [("warning", SYMBOL, "plug/managers.py:4")]


def test_elements_changed_in_place_are_untyped():
    appended = COORDINATOR.replace(
        "        total = 0\n", "        total = 0\n        self.managers.append(object())\n"
    ).replace("tuple(make(spec) for spec in specs)", "[make(spec) for spec in specs]")
    assert drift(appended) == [("warning", SYMBOL, "plug/managers.py:4")]


def test_a_class_body_annotation_types_the_elements():
    annotated = COORDINATOR.replace(
        "class Coordinator:\n", "class Coordinator:\n    managers: tuple[Manager, ...]\n\n"
    ).replace("tuple(make(spec) for spec in specs)", "tuple(specs)")
    annotated = annotated.replace("import CrossManager, make", "import CrossManager, Manager, make")
    assert drift(annotated) == [("error", SYMBOL, "plug/managers.py:4")]


def test_a_subclass_of_the_tested_class_receives_the_call_under_the_test():
    # Only the cross managers' call fails where MyManager is one of them.
    cross = {"plug/managers.py": CONSUMER["plug/managers.py"].replace("(Manager)", "(CrossManager)")}
    cross["plug/managers.py"] = cross["plug/managers.py"].replace("import Manager", "import CrossManager")
    pin = {"pv/managers.py": MANAGERS, "pv/coordinator.py": COORDINATOR}
    result = check(cross, pin, BASELINE)
    [finding] = [f for f in result.findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "error"
    assert finding.message.startswith("the provider calls .allocate(4 positional, cap=) at pv/coordinator.py:11")
    assert "and 1 more call(s)" in finding.message


def test_a_local_bound_again_in_the_loop_is_untyped():
    rebound = COORDINATOR.replace(
        "            else:\n", "            else:\n                manager = self.fallback(manager)\n"
    )
    assert drift(rebound) == [("warning", SYMBOL, "plug/managers.py:4")]


def test_element_makers():
    source = """
class C:
    listed: list[A]

    def __init__(self, specs, other):
        self.made = tuple(make(s) for s in specs)
        self.comprehended = [pkg.make(s) for s in specs]
        self.changed = [make(s) for s in specs]
        self.changed[0] = other
        self.extended = [make(s) for s in specs]
        self.extended.extend(other)
        self.mixed = [make(s) for s in specs]
        self.plain = list(specs)
        self.annotated: tuple[B, ...] = tuple(specs)
        setattr(self, "mixed", other)
        self.by_name = {s: make(s) for s in specs}
        self.mapped: dict[str, D] = {}
        self.filled = {s: make(s) for s in specs}
        self.filled.setdefault("x", other)
"""
    [node] = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    assert element_makers(node) == {
        "listed": "A",
        "made": "make",
        "comprehended": "pkg.make",
        "annotated": "B",
        "by_name.values()": "make",
        "mapped.values()": "D",
    }
    anything = source + "        setattr(self, other, specs)\n"
    [node] = ast.parse(anything).body
    assert isinstance(node, ast.ClassDef)
    assert element_makers(node) == {"listed": "A", "annotated": "B", "mapped.values()": "D"}


def test_what_a_receiver_is_an_instance_of_is_kept_in_the_cache():
    cache = AnalysisCache()
    tree = MemoryTree(dedent_files({"pv/__init__.py": "", "pv/coordinator.py": COORDINATOR}), "provider")
    for _ in range(2):  # the second search reads what the first stored
        sites = NameSearch(tree, "pv", cache).find(["allocate"])["allocate"]
        assert [(s.line, s.instance_of, s.element_of) for s in sites if s.kind is SiteKind.CALL] == [
            (11, "CrossManager", "make"),
            (13, "", "make"),
        ]


def test_a_protocol_s_isinstance_test_keeps_nothing_out():
    # `isinstance(m, Checked)` of a runtime-checkable protocol holds for any class with its members.
    protocol = "from typing import Protocol\n\nclass Checked(Protocol):\n    def allocate(self, *args, **kwargs): ...\n"
    managers = MANAGERS.replace("class CrossManager(Manager):", "class CrossManager(Manager, Checked):")
    coordinator = COORDINATOR.replace("import CrossManager, make", "import Checked, make").replace(
        "isinstance(manager, CrossManager)", "isinstance(manager, Checked)"
    )
    pin = {"pv/managers.py": protocol + managers, "pv/coordinator.py": coordinator}
    [finding] = [f for f in check(CONSUMER, pin, BASELINE).findings if f.rule.value == "override-drift"]
    assert finding.message.startswith("the provider calls .allocate(4 positional, cap=) at pv/coordinator.py:11")


def test_the_values_of_a_mapping_a_factory_fills_are_typed_too():
    mapped = COORDINATOR.replace("tuple(make(spec) for spec in specs)", "{spec: make(spec) for spec in specs}")
    items = mapped.replace("for i, manager in enumerate(self.managers):", "for i, manager in self.managers.items():")
    assert drift(items) == [("error", SYMBOL, "plug/managers.py:4")]
    values = mapped.replace("for i, manager in enumerate(self.managers):", "for manager in self.managers.values():")
    assert drift(values) == [("error", SYMBOL, "plug/managers.py:4")]
    # The keys are not the managers.
    keys = mapped.replace("for i, manager in enumerate(self.managers):", "for manager, i in self.managers.items():")
    assert drift(keys) == [("warning", SYMBOL, "plug/managers.py:4")]
