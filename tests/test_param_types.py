"""Unannotated parameters of a consumer method typed by the provider method it overrides.

The provider's runner annotates what it hands to `load` and `step`; at the baseline (A) its
`Config` has `compute_hash` and its `Spec` a `ratio`, at the pin (B) neither. A consumer override
that leaves the parameters unannotated reads them all the same: judged as if it had annotated them.
"""

from __future__ import annotations

import pytest

from atompin.model import CheckResult
from tests.test_contact import check, found


def _release(method: str, field: str) -> dict[str, str]:
    return {
        "pv/config.py": f"""
            class Config:
                def {method}(self):
                    return ""
        """,
        "pv/spec.py": f"""
            from dataclasses import dataclass

            @dataclass
            class Spec:
                {field}: int = 1
        """,
        "pv/runner.py": """
            from typing import TYPE_CHECKING, Optional, TypeVar

            from pv.spec import Spec

            if TYPE_CHECKING:
                from pv.config import Config

            T = TypeVar("T")

            class Runner:
                def load(self, config: "Config", count: int = 0) -> None:
                    pass

                def step(self, spec: Optional[Spec] = None, other: T = None, loose=None) -> None:
                    pass
        """,
    }


PV_A = _release("compute_hash", "ratio")
PV_B = _release("compile_factors", "tokens_per_state")


def _consumer(body: str, bases: str = "Runner", head: str = "") -> dict[str, str]:
    return {"plug/runner.py": f"{head}from pv.runner import Runner\n\n\nclass MyRunner({bases}):\n{body}"}


def _bump(consumer: dict[str, str]) -> CheckResult:
    return check(consumer, PV_B, baseline=PV_A)


def test_a_read_through_an_unannotated_parameter_of_an_override_is_judged_as_the_provider_annotates_it():
    consumer = _consumer("    def load(self, config, count=0):\n        return config.compute_hash()\n")
    assert found(check(consumer, PV_A, baseline=PV_A), "missing-member") == []
    assert found(_bump(consumer), "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/runner.py:6")]


def test_a_renamed_parameter_is_typed_by_its_position_as_the_provider_passes_it():
    """`def load(self, cfg)` overriding `load(self, config: Config)`: the provider hands its
    Config in that place, whatever the override calls it (as a type checker matches them)."""
    consumer = _consumer("    def load(self, cfg, n=0):\n        return cfg.compute_hash()\n")
    assert found(check(consumer, PV_A, baseline=PV_A), "missing-member") == []
    assert found(_bump(consumer), "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/runner.py:6")]


def test_an_optional_annotation_types_it_too_and_a_field_read_is_judged():
    consumer = _consumer("    def step(self, spec=None, other=None, loose=None):\n        return spec.ratio\n")
    assert found(_bump(consumer), "missing-member") == [("error", "pv.spec:Spec.ratio", "plug/runner.py:6")]


@pytest.mark.parametrize(
    "body",
    [
        # renamed, and in another place than the provider's parameter of the same position
        "    def load(self, count, cfg=None):\n        return cfg.compute_hash()\n",
        # renamed, where the provider's parameter of that position the override has elsewhere
        "    def load(self, cfg, config=None):\n        return cfg.compute_hash()\n",
        # renamed, and keyword-only: the provider cannot pass it by position
        "    def load(self, *, cfg, count=0):\n        return cfg.compute_hash()\n",
        # a method of the consumer's own: nothing of the provider calls it
        "    def reload(self, config):\n        return config.compute_hash()\n",
        # a type variable, and a parameter the provider does not annotate
        "    def step(self, spec=None, other=None, loose=None):\n        return other.ratio, loose.ratio\n",
        # a staticmethod's first parameter is no receiver, and none of the provider's
        "    @staticmethod\n    def load(config, count=0):\n        return config.compute_hash()\n",
    ],
)
def test_no_type_where_the_provider_method_does_not_say_one(body: str):
    assert found(_bump(_consumer(body)), "missing-member") == []


def test_a_consumer_class_between_the_override_and_the_provider_is_passed_over():
    consumer = {
        "plug/base.py": "from pv.runner import Runner\n\n\nclass Base(Runner):\n    def load(self, config, count=0):\n        pass\n",
        "plug/runner.py": (
            "from plug.base import Base\n\n\nclass MyRunner(Base):\n"
            "    def load(self, config, count=0):\n        return config.compute_hash()\n"
        ),
    }
    assert found(_bump(consumer), "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/runner.py:6")]


def test_an_outside_base_before_the_provider_class_may_define_the_method_itself():
    consumer = _consumer(
        "    def load(self, config, count=0):\n        return config.compute_hash()\n",
        bases="Loader, Runner",
        head="from otherlib import Loader\n",
    )
    assert found(_bump(consumer), "missing-member") == []


def test_a_call_through_such_a_parameter_is_judged_against_the_method_it_lands_on():
    """At the pin `compute_hash` requires a seed, which the override's call does not pass."""
    seeded = {**PV_A, "pv/config.py": PV_A["pv/config.py"].replace("compute_hash(self)", "compute_hash(self, seed)")}
    consumer = _consumer("    def load(self, config, count=0):\n        return config.compute_hash()\n")
    result = check(consumer, seeded, baseline=PV_A)
    assert found(result, "arity-drift") == [("error", "pv.config:Config.compute_hash", "plug/runner.py:6")]
    assert found(result, "missing-member") == []


def test_the_index_keeps_what_a_type_checking_block_imports_for_annotations_only():
    from atompin.analysis.indexer import index_module

    source = (
        b"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        b"    from .config import Config\n    import pv.spec as spec\n    import os.path\n    from pv import *\n"
    )
    info = index_module(source, "pv.runner", False)
    assert info.type_only == {"Config": "pv.config:Config", "spec": "pv.spec", "os": "os"}
    assert "Config" not in info.bindings  # never bound at run time


def test_an_attribute_every_store_of_which_keeps_such_a_parameter_is_typed_so():
    """`self.config = config` in a `load` overriding the provider's: a read of `self.config` in
    another method is judged as the provider's `load` annotates `config`."""
    body = "    def load(self, config, count=0):\n        {store}\n\n    def go(self):\n        return self.config.compute_hash()\n"
    result = _bump(_consumer(body.format(store="self.config = config")))
    assert found(result, "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/runner.py:9")]
    # Stored from something else too, or the parameter bound again first: not known.
    for store in ("self.config = config if count else None", "config = config or None; self.config = config"):
        assert found(_bump(_consumer(body.format(store=store))), "missing-member") == [], store


TYPED_ONLY = """
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from pv import config
        from pv.config import Config

    class Worker:
        config: "Config"

    def make_config() -> "config.Config":
        from pv.config import Config
        return Config()
"""


def test_a_class_attribute_annotated_with_a_name_imported_for_type_checkers_only_is_typed():
    consumer = {
        "plug/mine.py": "from pv.worker import Worker\n\n\nclass Mine(Worker):\n    def go(self):\n"
        "        return self.config.compute_hash()\n"
    }
    result = check(consumer, {**PV_B, "pv/worker.py": TYPED_ONLY}, {**PV_A, "pv/worker.py": TYPED_ONLY})
    assert found(result, "missing-member") == [("error", "pv.config:Config.compute_hash", "plug/mine.py:6")]


def test_what_a_provider_function_annotated_so_returns_is_typed():
    seeded = {**PV_A, "pv/config.py": PV_A["pv/config.py"].replace("compute_hash(self)", "compute_hash(self, seed)")}
    consumer = {
        "plug/mine.py": "from pv.worker import make_config\n\n\nclass Mine:\n    def __init__(self):\n"
        "        self.config = make_config()\n\n    def go(self):\n        return self.config.compute_hash()\n"
    }
    result = check(consumer, {**seeded, "pv/worker.py": TYPED_ONLY}, {**PV_A, "pv/worker.py": TYPED_ONLY})
    assert found(result, "arity-drift") == [("error", "pv.config:Config.compute_hash", "plug/mine.py:9")]


@pytest.mark.parametrize(
    ("written", "named"),
    [
        ("C", "C"),
        ("m.C", "m.C"),
        ('"C"', "C"),
        ("C | None", "C"),
        ("None | C", "C"),
        ("Optional[C]", "C"),
        ("typing.Optional[C]", "C"),
        ('"C | None"', "C"),
        ('"Optional[m.C]"', "m.C"),
        ("int", ""),
        ("list[C]", ""),
        ("A | B", ""),
        ('"A | B"', ""),
        ('"None"', ""),
        ('"a b"', ""),
    ],
)
def test_the_class_a_parameter_annotation_names_is_read_without_parsing_strings(written: str, named: str):
    import ast

    from atompin.analysis.signature import annotation_class

    assert annotation_class(ast.parse(written, mode="eval").body) == named


@pytest.mark.parametrize(
    ("body", "site"),
    [
        # handed to a helper function of the module
        ("    def load(self, config, count=0):\n        return helper(config)\n", "plug/runner.py:2"),
        # handed to a method of the class's own (not one of the provider's)
        (
            "    def load(self, config, count=0):\n        return self._inner(1, c=config)\n\n"
            "    def _inner(self, n, c=None):\n        return c.compute_hash()\n",
            "plug/runner.py:13",
        ),
        # a staticmethod called through `self` takes no receiver: its first parameter is what is handed
        (
            "    def load(self, config, count=0):\n        return self._inner(config)\n\n"
            "    @staticmethod\n    def _inner(c):\n        return c.compute_hash()\n",
            "plug/runner.py:14",
        ),
    ],
)
def test_such_a_parameter_handed_to_a_helper_is_judged_where_the_helper_reads_it(body: str, site: str):
    consumer = _consumer(body, head="def helper(c):\n    return c.compute_hash()\n\n\n")
    assert found(check(consumer, PV_A, baseline=PV_A), "missing-member") == []
    assert found(_bump(consumer), "missing-member") == [("error", "pv.config:Config.compute_hash", site)]
