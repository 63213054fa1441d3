"""protocol-drift: a namespace the consumer builds (`argparse.Namespace(**vars(engine_args))`),
handed to a provider function that reads an attribute it lacks. ai-dynamo hands vLLM's
`run_headless(args)` such a namespace; vLLM 0.34 reads `args.headless_client_handshake_address`,
an option of its own command line that no engine-argument field holds."""

from __future__ import annotations

import pytest

from tests.test_contact import check, found

ARGS = """
from dataclasses import dataclass

@dataclass
class EngineArgs:
    model: str = ""
    port: int = 0

    def __post_init__(self):
        self.resolved = True
"""
SERVE_A = """
def run_headless(args):
    return args.model, args.port, args.api_server_count
"""
SERVE_B = """
def run_headless(args):
    address = args.handshake_address
    return args.model, args.port, args.api_server_count, address, args.resolved
"""
PV_A = {"pv/args.py": ARGS, "pv/serve.py": SERVE_A}
PV_B = {"pv/args.py": ARGS, "pv/serve.py": SERVE_B}
HEADLESS = """
import argparse

from pv.args import EngineArgs


def build_namespace(engine_args: EngineArgs) -> argparse.Namespace:
    ns = argparse.Namespace(**vars(engine_args))
    if not hasattr(ns, "api_server_count"):
        ns.api_server_count = 0
    return ns


def run(engine_args: EngineArgs) -> None:
    from pv.serve import run_headless

    args = build_namespace(engine_args)
    run_headless(args)
"""


def drift(consumer: dict[str, str], provider=PV_B, baseline=PV_A) -> list[tuple[str, str, str]]:
    return found(check(consumer, provider, baseline), "protocol-drift")


def test_a_read_new_since_the_baseline_of_what_the_namespace_lacks_is_an_error():
    result = check({"plug/headless.py": HEADLESS}, PV_B, PV_A)
    assert found(result, "protocol-drift") == [("error", "pv.serve:run_headless", "plug/headless.py:17")]
    [finding] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert finding.message == (
        "the namespace built at plug/headless.py:7 holds the attributes of a pv.args:EngineArgs and "
        "api_server_count; it is handed to pv.serve:run_headless at plug/headless.py:17, which reads of it "
        ".handshake_address at pv/serve.py:2 (new since 1.0): AttributeError when that runs"
    )
    # Without a baseline, a warning.
    assert drift({"plug/headless.py": HEADLESS}, baseline=None) == [
        ("warning", "pv.serve:run_headless", "plug/headless.py:17")
    ]


@pytest.mark.parametrize(
    "consumer, provider",
    [
        # The consumer sets the name itself, by attribute or by `setattr`, or gives it as a keyword.
        (HEADLESS.replace("    return ns\n", "    ns.handshake_address = None\n    return ns\n"), PV_B),
        (HEADLESS.replace("    return ns\n", '    setattr(ns, "handshake_address", None)\n    return ns\n'), PV_B),
        (HEADLESS.replace("(**vars(engine_args))", "(**vars(engine_args), handshake_address=None)"), PV_B),
        # The provider reads it only with a default, tests it first, or under a try.
        (
            HEADLESS,
            {
                **PV_B,
                "pv/serve.py": SERVE_B.replace("args.handshake_address", 'getattr(args, "handshake_address", None)'),
            },
        ),
        (
            HEADLESS,
            {
                **PV_B,
                "pv/serve.py": SERVE_B.replace(
                    "    address =",
                    '    if not hasattr(args, "handshake_address"):\n        return None\n    address =',
                ),
            },
        ),
        (
            HEADLESS,
            {
                **PV_B,
                "pv/serve.py": SERVE_B.replace(
                    "    address = args.handshake_address\n",
                    "    try:\n        address = args.handshake_address\n    except AttributeError:\n        address = None\n",
                ),
            },
        ),
        # The provider sets it on the namespace itself first.
        (
            HEADLESS,
            {
                **PV_B,
                "pv/serve.py": SERVE_B.replace("    address =", "    args.handshake_address = None\n    address ="),
            },
        ),
        # The copied class holds it: a field.
        (
            HEADLESS,
            {
                **PV_B,
                "pv/args.py": ARGS.replace(
                    "    port: int = 0\n", "    port: int = 0\n    handshake_address: str = ''\n"
                ),
            },
        ),
        # The namespace spreads something not known besides: what it holds is not known.
        (
            HEADLESS.replace("(**vars(engine_args))", "(**vars(engine_args), **extra)").replace(
                "def build_namespace(engine_args: EngineArgs)",
                "def build_namespace(engine_args: EngineArgs, extra=None)",
            ),
            PV_B,
        ),
    ],
    ids=[
        "set",
        "setattr",
        "keyword",
        "getattr-default",
        "hasattr-test",
        "try",
        "provider-sets",
        "field",
        "unknown-spread",
    ],
)
def test_nothing_when_the_namespace_holds_it_or_the_read_is_guarded(consumer: str, provider: dict[str, str]):
    assert drift({"plug/headless.py": consumer}, provider) == []


def test_a_read_at_the_baseline_too_of_what_it_lacked_there_does_not_run():
    # The consumer works at the baseline, which read it as well: that read does not run.
    assert drift({"plug/headless.py": HEADLESS}, PV_B, {**PV_A, "pv/serve.py": SERVE_B}) == []


def test_a_field_the_copied_class_lost_is_an_error():
    with_field = {
        **PV_A,
        "pv/args.py": ARGS.replace("    port: int = 0\n", "    port: int = 0\n    handshake_address: str = ''\n"),
    }
    both = {**with_field, "pv/serve.py": SERVE_B}
    result = check({"plug/headless.py": HEADLESS}, {**PV_B, "pv/serve.py": SERVE_B}, both)
    [finding] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert finding.severity.value == "error"
    assert "reads of it .handshake_address at pv/serve.py:2 (a field the class lost since 1.0)" in finding.message


def test_a_stub_built_in_a_test_module_is_not_judged():
    stub = (
        "import argparse\n\nfrom pv.serve import run_headless\n\n\ndef test_run():\n"
        "    run_headless(argparse.Namespace(model='m', port=1, api_server_count=0))\n"
    )
    assert drift({"plug/tests/test_headless.py": stub}) == []
    # The same namespace in the package's own code is judged: it lacks what is read, new.
    result = check({"plug/direct.py": stub.replace("def test_run", "def run")}, PV_B, PV_A)
    [finding] = [f for f in result.findings if f.rule.value == "protocol-drift"]
    assert "holds only api_server_count, model, port; it is handed to" in finding.message
    assert (
        "reads of it .handshake_address at pv/serve.py:2 (new since 1.0); .resolved at pv/serve.py:3 (new since 1.0)"
    ) in finding.message


def test_a_read_the_function_makes_only_on_some_path_is_not_judged():
    """vLLM 0.34's `wait_for_engine_startup` reads more of its `parallel_config` only `if
    coordinated_dp and not (...)`, which vllm-omni's diffusion stage passes False."""
    for guarded in (
        "    if args.model and args.more:\n        return None\n",
        "    if args.model:\n        extra = args.more\n",
        "    for _ in range(2):\n        extra = args.more\n",
        "    extra = args.model or args.more\n",
        "    extra = args.more if args.model else None\n",
        "    extra = [x for x in args.model for y in args.more]\n",
        "    extra = lambda: args.more\n",
    ):
        serve = SERVE_A.replace("def run_headless(args):\n", "def run_headless(args):\n" + guarded)
        assert drift({"plug/headless.py": HEADLESS}, {**PV_A, "pv/serve.py": serve}) == [], guarded
    # In the test of an `if` (or its first operand), in a `with`: surely read.
    for sure in (
        "    if args.more:\n        return None\n",
        "    with open(args.more):\n        pass\n",
        "    with open('x'):\n        extra = args.more\n",
    ):
        serve = SERVE_A.replace("def run_headless(args):\n", "def run_headless(args):\n" + sure)
        assert drift({"plug/headless.py": HEADLESS}, {**PV_A, "pv/serve.py": serve}) == [
            ("error", "pv.serve:run_headless", "plug/headless.py:17")
        ], sure
