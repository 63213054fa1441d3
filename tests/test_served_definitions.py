"""Definitions of a module an import hook serves in a provider module's place that nothing reads
(`served_definitions`): an error only inside them is a warning."""

from __future__ import annotations

import ast
import textwrap

from atompin.analysis.served_definitions import definitions, reads_served
from tests.test_reach import HOOK, PROVIDER, plugin

# vllm-kunlun's `vllm_kunlun/v1/worker/utils.py`, served in place of `vllm.v1.worker.utils`: its
# copy of `MultiModalBudget` names vLLM's `get_mm_limits_per_prompt`, which 0.34 dropped, and
# vLLM 0.34 reads `MultiModalBudget` from `vllm.multimodal.encoder_budget` instead.
SERVED = """
    from pv.utils import helper

    LIMIT = 1


    class Budget:
        KIND = "budget"

        def __init__(self, registry):
            self.limits = registry.get_limits()
            from pv.utils import gone_in_init
            gone_in_init()


    def scattered(config):
        from pv.utils import gone_in_function
        return gone_in_function(config)
"""


def severities(result) -> dict[tuple[str, int], str]:
    return {(f.sites[0].path, f.sites[0].line): f.severity.value for f in result.findings}


def test_errors_inside_served_definitions_nothing_reads_are_warnings(run_check):
    files = plugin(live=HOOK, own_utils=SERVED)
    provider = {**PROVIDER, "pv/runner.py": "import pv.utils\n\ndef run():\n    return pv.utils.helper()\n"}
    result = run_check(provider, files)
    assert severities(result) == {("plug/own_utils.py", 11): "warning", ("plug/own_utils.py", 16): "warning"}
    [inside] = [f for f in result.findings if f.sites[0].line == 11]
    assert (
        "(in plug.own_utils.Budget, which an import hook serves in place of pv.utils.Budget: no provider file "
        "reads Budget from pv.utils here, and the plugin names it nowhere else)"
    ) in inside.message


def test_a_served_definition_the_provider_reads_from_that_module_stays_judged(run_check):
    files = plugin(live=HOOK, own_utils=SERVED)
    for reader in (
        "from pv.utils import Budget\n\ndef make(r):\n    return Budget(r)\n",
        "from pv.utils import *\n\ndef make(r):\n    return Budget(r)\n",
        "import pv.utils\n\ndef make(r):\n    return pv.utils.Budget(r)\n",
        "from pv import utils as u\n\ndef make(r):\n    return u.Budget(r)\n",
        "import pv.utils as wu\n\ndef make(r):\n    return wu.Budget(r)\n",
        "NAME = 'pv.utils.Budget'\n",
    ):
        provider = {**PROVIDER, "pv/runner.py": reader}
        assert severities(run_check(provider, files))[("plug/own_utils.py", 11)] == "error", reader
    # Read from another module of the same name: not this one.
    moved = {**PROVIDER, "pv/budget.py": "class Budget:\n    pass\n", "pv/runner.py": "from pv.budget import Budget\n"}
    assert severities(run_check(moved, files))[("plug/own_utils.py", 11)] == "warning"


def test_a_served_definition_the_plugin_names_elsewhere_stays_judged(run_check):
    user = "from plug.own_utils import scattered\n\ndef go(c):\n    return scattered(c)\n"
    files = plugin(live=HOOK, own_utils=SERVED, lazy=user)
    result = run_check(PROVIDER, files)
    assert severities(result)[("plug/own_utils.py", 16)] == "error"  # `scattered`, named in plug/lazy.py
    assert severities(result)[("plug/own_utils.py", 11)] == "warning"
    # Named only in a module the entry points do not reach: as good as nowhere.
    dead = plugin(live=HOOK, own_utils=SERVED, dead=user)
    assert severities(run_check(PROVIDER, dead))[("plug/own_utils.py", 16)] == "warning"


def test_what_runs_when_the_served_module_is_imported_stays_judged(run_check):
    # A class body, a decorator, a default: they run at import, whether or not anything uses them.
    at_import = SERVED.replace('KIND = "budget"', "from pv.utils import gone_in_body")
    result = run_check(PROVIDER, plugin(live=HOOK, own_utils=at_import))
    assert severities(result)[("plug/own_utils.py", 7)] == "error"


def test_definitions_keep_the_lines_that_run_only_when_used():
    tree = ast.parse(textwrap.dedent(SERVED))
    spans = {d.name: d.spans for d in definitions(tree)}
    assert spans == {"Budget": ((11, 13),), "scattered": ((17, 18),)}


def test_reads_served_reads_imports_attributes_and_strings():
    def reads(source: str, module: str = "pv.runner") -> bool:
        return reads_served(ast.parse(source), module, False, "pv.utils", "Budget")

    assert reads("from .utils import Budget\n")  # relative, from pv.runner
    assert reads("from pv.utils import Budget as B\n")
    assert reads("import pv.utils\nx = pv.utils.Budget\n")
    assert reads("x = getattr(m, 'Budget')\n")
    assert not reads("from pv.budget import Budget\nx = Budget()\n")
    assert not reads("import pv.utils\nx = pv.utils.Other\nclass Budget:\n    pass\n")
    assert not reads("x = other.Budget\n")


def test_a_module_served_in_place_of_two_is_unread_only_if_neither_name_is_read():
    from atompin.analysis.served_definitions import Definition, ServedModule, demote_unread_served
    from atompin.model import Finding, Rule, Severity, Site

    budget = (Definition("Budget", ((3, 5),)),)
    served = [
        ServedModule("plug.utils", "plug/utils.py", "pv.utils", budget),
        ServedModule("plug.utils", "plug/utils.py", "pv.old_utils", budget),
    ]
    error = Finding(Rule.UNRESOLVED_IMPORT, Severity.ERROR, "pv.x:gone", (Site("plug/utils.py", 4),), "gone")
    both_unread = demote_unread_served([error], served, lambda module, name: True)
    assert [f.severity for f in both_unread] == [Severity.WARNING]
    read_in_one = demote_unread_served([error], served, lambda module, name: module.provider_module == "pv.utils")
    assert [f.severity for f in read_in_one] == [Severity.ERROR]
