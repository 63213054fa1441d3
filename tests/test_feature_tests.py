"""Feature tests a plugin writes to run on several provider releases, decided at each provider.

Each shape comes from a real plugin (NVIDIA Dynamo 1.6.1 at vLLM 0.31.0, where it works): the
branch or operand that cannot run at the pin is not a finding, and at a provider where it is the
one that runs, a break there is still reported.
"""

from __future__ import annotations

import pytest
from conftest import brief

NEW = {
    "pv/__init__.py": "",
    "pv/protocol/__init__.py": "",
    "pv/protocol/base.py": "class Delta:\n    pass\n",
    "pv/engine.py": "class Core:\n    def step(self):\n        pass\n",
    "pv/request.py": "import enum\n\nclass Status(enum.IntEnum):\n    WAITING_FOR_GRAMMAR = 1\n",
}
# The provider before the move: the old places, nothing at the new ones.
OLD = {
    "pv/__init__.py": "",
    "pv/legacy.py": "class Delta:\n    pass\n",
    "pv/engine.py": "class Core:\n    def step(self):\n        pass\n",
    "pv/request.py": "import enum\n\nclass Status(enum.IntEnum):\n    WAITING_FOR_FSM = 1\n",
}


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source}


FIND_SPEC = """
    from importlib.util import find_spec

    try:
        _HAS_NEW = find_spec("pv.protocol.base") is not None
    except ModuleNotFoundError:  # a parent package is missing
        _HAS_NEW = False

    if _HAS_NEW:
        from pv.protocol.base import Delta
    else:
        from pv.legacy import Delta
"""


def test_a_find_spec_flag_decides_which_import_runs(run_check):
    assert run_check(NEW, consumer(FIND_SPEC)).findings == ()
    assert run_check(OLD, consumer(FIND_SPEC)).findings == ()
    # Where neither is there, the branch that runs is checked.
    gone = {"pv/__init__.py": ""}
    assert brief(run_check(gone, consumer(FIND_SPEC))) == [
        ("unresolved-import", "error", "pv.legacy:Delta", ["plug/mod.py:11"])
    ]


def test_a_find_spec_test_written_in_the_if_and_negated(run_check):
    source = """
        import importlib.util

        if not importlib.util.find_spec("pv.protocol.base"):
            from pv.legacy import Delta
        else:
            from pv.protocol.base import Delta
    """
    assert run_check(NEW, consumer(source)).findings == ()
    assert run_check(OLD, consumer(source)).findings == ()


def test_an_or_after_getattr_with_a_default_is_a_fallback(run_check):
    source = """
        from pv.request import Status

        WAITING = getattr(Status, "WAITING_FOR_GRAMMAR", None) or getattr(Status, "WAITING_FOR_FSM")
    """
    at_new = run_check(NEW, consumer(source))
    assert brief(at_new) == [("unresolved-import", "info", "pv.request:Status.WAITING_FOR_FSM", ["plug/mod.py:3"])]
    assert "a fallback" in at_new.findings[0].message
    assert run_check(OLD, consumer(source)).findings == ()
    neither = {**NEW, "pv/request.py": "import enum\n\nclass Status(enum.IntEnum):\n    RUNNING = 1\n"}
    assert brief(run_check(neither, consumer(source))) == [
        ("unresolved-import", "error", "pv.request:Status.WAITING_FOR_FSM", ["plug/mod.py:3"])
    ]


POLYFILL = """
    from pv.engine import Core

    def install():
        if hasattr(Core, "set_worker_id"):
            return

        def set_worker_id(self, worker_id):
            self.worker_id = worker_id

        Core.set_worker_id = set_worker_id

    install()

    def use(core):
        return getattr(Core, "set_worker_id")
"""


def test_a_method_installed_only_where_the_provider_lacks_it_is_an_addition(run_check):
    found = run_check(NEW, consumer(POLYFILL))
    assert brief(found) == [("patch-addition", "info", "pv.engine:Core.set_worker_id", ["plug/mod.py:10"])]
    assert "only where it lacks it" in found.findings[0].message
    # Had the baseline had it, the addition would still only be installed where it is missing.
    with_method = {**NEW, "pv/engine.py": NEW["pv/engine.py"] + "\n    def set_worker_id(self, w):\n        pass\n"}
    assert run_check(NEW, consumer(POLYFILL), baseline=with_method).findings == found.findings
    # Without the early return it is installed whatever the provider has: the consumer's own read
    # in `use` gets it (a read in `install` before the assignment would keep an original: an error).
    plain = POLYFILL.replace('        if hasattr(Core, "set_worker_id"):\n            return\n', "")
    [addition] = run_check(NEW, consumer(plain)).findings
    assert (addition.rule.value, addition.severity.value) == ("patch-addition", "info")
    keeping = plain.replace("        Core.set_worker_id = ", "        orig = Core.set_worker_id\n        Core.set_worker_id = ")
    assert [f.severity.value for f in run_check(NEW, consumer(keeping)).findings] == ["error"]


VERSION_RELEASE = """
    import importlib.metadata
    import sys
    from packaging.version import Version

    def load():
        try:
            if Version(importlib.metadata.version("pv")).release >= (0, 29):
                from pv.protocol.base import Delta
            else:
                from pv.legacy import Delta
        except ModuleNotFoundError:
            sys.exit(1)
        return Delta
"""


def test_a_gate_on_the_release_tuple_inside_an_import_ladder(run_check):
    # The branch the gate does not take is no alternative of the ladder at this provider.
    assert run_check(NEW, consumer(VERSION_RELEASE), version="0.31.0").findings == ()
    assert run_check(OLD, consumer(VERSION_RELEASE), version="0.27.0").findings == ()
    # The branch it takes is checked.
    at_027 = run_check(NEW, consumer(VERSION_RELEASE), version="0.27.0")
    # Its handler exits: the program stops there, which is no fallback.
    assert brief(at_027) == [("unresolved-import", "error", "pv.legacy:Delta", ["plug/mod.py:10"])]
    assert "its handler exits" in at_027.findings[0].message


# vllm-tgis-adapter 0.10 at vLLM 0.11, which dropped `get_tokenizer`'s `lora_request`.
ENGINE_OLD = {
    "pv/__init__.py": "",
    "pv/protocol.py": "class Engine:\n    def get_tokenizer(self, lora_request=None):\n        pass\n",
}
ENGINE_NEW = {"pv/__init__.py": "", "pv/protocol.py": "class Engine:\n    def get_tokenizer(self):\n        pass\n"}
SIGNATURE_TEST = """
    import inspect
    from functools import lru_cache

    from pv.protocol import Engine

    @lru_cache
    def _has_argument(func, name):
        signature = inspect.signature(func)
        return name in signature.parameters

    class Server:
        def __init__(self, engine: Engine):
            self.engine: Engine = engine

        def tokenizer(self, lora):
            if _has_argument(self.engine.get_tokenizer, "lora_request"):
                return self.engine.get_tokenizer(lora)
            return self.engine.get_tokenizer()

        def inline(self, lora):
            if "lora_request" not in inspect.signature(self.engine.get_tokenizer).parameters:
                return self.engine.get_tokenizer()
            return self.engine.get_tokenizer(lora)
"""


def test_a_signature_test_of_a_provider_method_decides_which_call_runs(run_check):
    # Each release runs the call its signature takes; the other is not judged there.
    assert run_check(ENGINE_NEW, consumer(SIGNATURE_TEST)).findings == ()
    assert run_check(ENGINE_OLD, consumer(SIGNATURE_TEST)).findings == ()
    # Without the tests, the call that does not fit is an error at each release.
    plain = SIGNATURE_TEST.replace('_has_argument(self.engine.get_tokenizer, "lora_request")', "lora")
    assert brief(run_check(ENGINE_NEW, consumer(plain))) == [
        ("arity-drift", "error", "pv.protocol:Engine.get_tokenizer", ["plug/mod.py:17"])
    ]


# NVIDIA ModelOpt 0.47 registers vLLM's `FusedMoE` class only where the module still has one
# (vLLM 0.24 made it a factory function): a flag set from a helper's class test of
# `getattr(module, "FusedMoE", None)`, beside runtime tests, then `if flag:`.
CLASS_TEST = """
    import pv.engine as engine

    def _is_class(obj) -> bool:
        \"\"\"Whether obj is a class.\"\"\"
        return isinstance(obj, type) and issubclass(obj, object)

    OTHER = None
    HAS_CORE = OTHER is None and _is_class(getattr(engine, "Core", None))
    if HAS_CORE:
        REGISTRY = {engine.Core: "core"}
"""


@pytest.mark.parametrize(
    "source",
    [
        CLASS_TEST,
        CLASS_TEST.replace('_is_class(getattr(engine, "Core", None))', 'isinstance(getattr(engine, "Core", None), type)'),
        CLASS_TEST.replace('_is_class(getattr(engine, "Core", None))', 'callable(getattr(engine, "Core", None))'),
        CLASS_TEST.replace("    if HAS_CORE:\n        REGISTRY", "    def register():\n        if not HAS_CORE:\n            return\n        REGISTRY"),
    ],
)
def test_a_class_test_of_getattr_with_a_default_guards_what_it_holds_for(run_check, source):
    """`isinstance(getattr(X, "n", None), type)` (or `callable(...)`, also in a helper, also in an
    `and` of runtime tests, kept in a flag) holds only where X has n: what it guards is guarded."""
    lacking = {**NEW, "pv/engine.py": "def make_core():\n    pass\n"}
    # As under `if hasattr(engine, "Core"):`, the read is skipped there: a warning, not an error.
    assert [(f.severity.value, f.symbol, f.message) for f in run_check(lacking, consumer(source)).findings] == [
        ("warning", "pv.engine:Core", "pv.engine has no attribute 'Core'; the access is skipped (hasattr)")
    ]
    assert run_check(NEW, consumer(source)).findings == ()
    # Unguarded, the read is an error where the class is gone.
    bare = "import pv.engine as engine\n\nREGISTRY = {engine.Core: 'core'}\n"
    assert [f.severity.value for f in run_check(lacking, consumer(bare)).findings] == ["error"]


def test_an_and_with_a_class_test_tells_nothing_about_its_other_branch(run_check):
    """Where `OTHER is None and isinstance(getattr(X, "n", None), type)` fails, X may have n: the
    `else` is no fallback for providers without it, and its read of what is gone is an error."""
    source = CLASS_TEST.replace(
        '        REGISTRY = {engine.Core: "core"}\n',
        '        REGISTRY = {engine.Core: "core"}\n    else:\n        OLD = engine.Legacy\n',
    )
    result = run_check(NEW, consumer(source))
    assert [(f.severity.value, f.symbol) for f in result.findings] == [("error", "pv.engine:Legacy")]


ENVS_OLD = {"pv/__init__.py": "", "pv/envs.py": "USE_V1 = True\n", "pv/v1.py": "class W:\n    pass\n", "pv/v0.py": "class W:\n    pass\n"}
ENVS_NEW = {"pv/__init__.py": "", "pv/envs.py": "OTHER = 1\n", "pv/v1.py": "class W:\n    pass\n", "pv/newmod.py": "class N:\n    pass\n"}


@pytest.mark.parametrize(
    "source",
    [
        "from pv import envs\n\nif hasattr(envs, 'USE_V1'):\n    from pv.v0 import W\n",
        "from pv import envs\n\ndef f():\n    if not hasattr(envs, 'USE_V1'):\n        return None\n    from pv.v0 import W\n    return W\n",
    ],
)
def test_an_import_where_a_hasattr_test_holds_does_not_run_where_the_attribute_is_gone(run_check, source):
    """Where the provider lacks what `hasattr` tests, the branch where it holds never runs: its
    imports are no error there. Where the provider has it, they are judged."""
    assert run_check(ENVS_NEW, consumer(source)).findings == ()
    gone = {**ENVS_OLD}
    del gone["pv/v0.py"]
    assert [(f.severity.value, f.symbol) for f in run_check(gone, consumer(source)).findings] == [("error", "pv.v0:W")]


# ROLL's `get_vllm_worker_class`: vLLM's V0 worker only where `envs` still has `VLLM_USE_V1`
# (and it is off); the handler re-raises.
WORKER_CLASS = """
    from pv import envs

    def get_worker_class():
        try:
            if not hasattr(envs, "USE_V1") or envs.USE_V1:
                from pv.v1 import W
                return W
            else:
                from pv.v0 import W
                return W
        except ImportError as e:
            raise RuntimeError("pv is not installed") from e
"""


def test_the_other_branch_of_an_or_with_a_negated_hasattr_runs_only_where_the_attribute_is(run_check):
    # What follows `not hasattr(...) or` is read as under `if hasattr(...)`: skipped, a warning.
    assert [(f.severity.value, f.symbol, f.message) for f in run_check(ENVS_NEW, consumer(WORKER_CLASS)).findings] == [
        ("warning", "pv.envs:USE_V1", "pv.envs has no attribute 'USE_V1'; the access is skipped (hasattr)")
    ]
    assert run_check(ENVS_OLD, consumer(WORKER_CLASS)).findings == ()
    gone = {**ENVS_OLD}
    del gone["pv/v0.py"]
    [finding] = run_check(gone, consumer(WORKER_CLASS)).findings
    assert (finding.severity.value, finding.symbol) == ("error", "pv.v1:W + pv.v0:W")


def test_a_guarded_patch_of_what_is_gone_stays_the_silent_case(run_check):
    """Only imports are dead where the test fails: a patch there still installs nothing, silently."""
    source = "from pv import envs\n\nif hasattr(envs, 'USE_V1'):\n    envs.USE_V1 = len\n"
    [finding] = run_check(ENVS_NEW, consumer(source)).findings
    assert (finding.rule.value, finding.severity.value) == ("missing-patch-target", "error")


# vllm-ascend 0.24 backports vLLM's usage accounting: where vLLM has the class (and the field), it
# uses it; else it sets its own in its place. At vLLM 0.24, which lacks it, the else branch runs.
BACKPORT = """
    from pv import engine as engine_protocol

    class _MyUsage:
        reasoning_tokens = 0

    if hasattr(engine_protocol, "UsageDetails") and "details" in engine_protocol.Core.__dict__:
        usage_cls = engine_protocol.UsageDetails
    else:
        engine_protocol.UsageDetails = _MyUsage
        usage_cls = _MyUsage
"""


def test_a_backport_set_in_the_else_of_a_feature_test_is_an_addition(run_check):
    found = run_check(NEW, consumer(BACKPORT))
    assert brief(found) == [("patch-addition", "info", "pv.engine:UsageDetails", ["plug/mod.py:9"])]
    assert "wherever it lacks it" in found.findings[0].message
    # Where the provider has it, the first branch reads it and the else may still set it: no finding.
    having = {**NEW, "pv/engine.py": NEW["pv/engine.py"] + "\nclass UsageDetails:\n    pass\n"}
    assert [f for f in run_check(having, consumer(BACKPORT)).findings if f.severity.value != "info"] == []
