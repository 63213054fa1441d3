"""Names the consumer puts into the provider itself: stashed originals, its own helper methods and
ordering checks on them, modules it registers in sys.modules, a patched __init__, classes it hands
the provider under a name. Each with the fitting variant and a real break of the same shape."""

from __future__ import annotations

from conftest import brief, only

PROVIDER = {
    "pv/__init__.py": "",
    "pv/utils.py": "def merge(a, b):\n    return a\n",
    "pv/serving.py": """
        class Serving:
            def full_generator(self, request):
                return request
    """,
    "pv/configs/__init__.py": "",
    "pv/configs/base.py": "class BaseConfig:\n    pass\n",
    "pv/norm.py": """
        class Norm:
            def __init__(self, hidden_size, eps=1e-6):
                self.hidden_size = hidden_size
    """,
    "pv/custom_op.py": """
        class CustomOp:
            op_registry_oot = {}

            def __new__(cls, *args, **kwargs):
                return super().__new__(cls.op_registry_oot.get(cls.__name__, cls))

            @classmethod
            def register_oot(cls, op_cls=None, name=None):
                cls.op_registry_oot[name] = op_cls

        class FusedMoE(CustomOp):
            def __init__(self, num_experts, top_k):
                self.num_experts = num_experts
    """,
}


def consumer(**files: str) -> dict[str, str]:
    return {"plug/__init__.py": "", **{f"plug/{name}.py": text for name, text in files.items()}}


STASH = """
    import pv.utils as u

    def merge(a, b):
        return u._original_merge(a, b)

    if not hasattr(u, "_original_merge"):
        u._original_merge = u.merge
    u.merge = merge
"""


def test_a_stash_of_the_original_under_a_new_name_is_the_consumers_own(run_check):
    result = run_check(PROVIDER, consumer(mod=STASH))
    assert brief(result) == [("patch-addition", "info", "pv.utils:_original_merge", ["plug/mod.py:7"])]
    assert "keeps a provider object under a name the provider does not have" in result.findings[0].message
    # The real target is `merge`: when it is gone, the stash (the read of the original) is the error.
    gone = {**PROVIDER, "pv/utils.py": "def other(a):\n    return a\n"}
    assert [f[:3] for f in brief(run_check(gone, consumer(mod=STASH))) if f[1] == "error"] == [
        ("missing-patch-target", "error", "pv.utils:merge")
    ]


def test_an_ordering_check_on_the_consumers_own_addition(run_check):
    plug = consumer(
        a="""
            from pv.serving import Serving

            def _make_usage(self, n):
                return n

            Serving._make_usage = _make_usage
        """,
        b="""
            from pv.serving import Serving

            if not hasattr(Serving, "_make_usage"):
                raise RuntimeError("install plug.a first")
        """,
    )
    assert brief(run_check(PROVIDER, plug)) == [
        ("patch-addition", "info", "pv.serving:Serving._make_usage", ["plug/a.py:6"])
    ]
    # The same check on a name the consumer does not add requires the provider's: it raises when gone.
    required = consumer(b=plug["plug/b.py"].replace("_make_usage", "_make_usage_info"))
    assert brief(run_check(PROVIDER, required)) == [
        ("unresolved-import", "error", "pv.serving:Serving._make_usage_info", ["plug/b.py:3"])
    ]
    # A wrapper that reads the original is a replacement: the original gone is an error.
    wrapper = consumer(
        a="""
            from pv.serving import Serving
            _orig = Serving._make_usage
            Serving._make_usage = lambda self, n: _orig(self, n)
        """
    )
    assert only(run_check(PROVIDER, wrapper), "missing-patch-target")[0].severity.value == "error"


INJECT = """
    import importlib
    import sys
    from plug import newcfg as _cfg

    sys.modules.setdefault("pv.configs.newcfg", _cfg)
    setattr(importlib.import_module("pv.configs"), "newcfg", _cfg)
"""


def test_a_module_the_consumer_registers_in_the_providers_namespace(run_check):
    plug = consumer(
        newcfg="class NewConfig:\n    pass\n",
        register=INJECT,
        model="from pv.configs.newcfg import NewConfig\nfrom pv.configs import newcfg\n",
    )
    assert brief(run_check(PROVIDER, plug)) == [("patch-addition", "info", "pv.configs:newcfg", ["plug/register.py:6"])]
    broken = {**plug, "plug/model.py": "from pv.configs.othercfg import NewConfig\n"}
    assert ("unresolved-import", "error", "pv.configs.othercfg:NewConfig", ["plug/model.py:1"]) in brief(
        run_check(PROVIDER, broken)
    )


def test_a_module_registered_through_a_helper_with_a_module_level_name(run_check):
    plug = consumer(
        loader="""
            import sys

            def alias_module(canonical_name, module):
                sys.modules.setdefault(canonical_name, module)
        """,
        config="""
            from plug.loader import alias_module

            CANONICAL = "pv.configs.axk"
            alias_module(CANONICAL, object())
        """,
        model="from pv.configs.axk import AXKConfig\n",
    )
    assert run_check(PROVIDER, plug).findings == ()


def test_a_module_registered_by_sys_modules_update_in_a_helper(run_check):
    # vllm-mindspore's `update_modules(name, module)`: `sys.modules.update({name: module})`, called
    # with a provider module's name; the consumer's later imports from that name read its module.
    plug = consumer(
        utils="""
            import sys

            def update_modules(name, module):
                sys.modules.update({name: module})
        """,
        patch="""
            import sys

            from plug.utils import update_modules
            from plug import ms_attn

            update_modules("pv.attn", ms_attn)
            sys.modules.update({"pv.kernels": ms_attn})
        """,
        ms_attn="class AttentionMetadata:\n    pass\n",
        model="from pv.attn import AttentionMetadata\nfrom pv.kernels import AttentionMetadata as M\n",
    )
    assert run_check(PROVIDER, plug).findings == ()
    elsewhere = {**plug, "plug/model.py": "from pv.other import AttentionMetadata\n"}
    assert brief(run_check(PROVIDER, elsewhere)) == [
        ("unresolved-import", "error", "pv.other:AttentionMetadata", ["plug/model.py:1"])
    ]


NAMESPACE_COPY = """
    import sys
    from types import SimpleNamespace

    import pv.utils as _orig

    def fast_merge(a, b):
        return b

    _wrapped = SimpleNamespace(**_orig.__dict__)
    _wrapped.fast_merge = fast_merge
    sys.modules["pv.utils"] = _wrapped
"""


def test_a_copy_of_a_provider_module_served_under_its_own_name(run_check):
    # vllm-kunlun's `sys.modules["vllm.utils"] = SimpleNamespace(**vllm.utils.__dict__)` with its
    # own functions set on the copy: those import from it, and so does all the module has; a name
    # the module lacks fails to import as it would from the module itself.
    plug = consumer(wrapper=NAMESPACE_COPY, model="from pv.utils import merge, fast_merge\n")
    assert [f for f in brief(run_check(PROVIDER, plug)) if f[1] != "info"] == []
    read = consumer(wrapper=NAMESPACE_COPY, model="import pv.utils as u\n\ndef run():\n    return u.fast_merge(1, 2)\n")
    assert [f for f in brief(run_check(PROVIDER, read)) if f[1] != "info"] == []
    gone = {**plug, "plug/model.py": "from pv.utils import merge, cdiv\n"}
    cdiv = [("unresolved-import", "error", "pv.utils:cdiv", ["plug/model.py:1"])]
    assert [f for f in brief(run_check(PROVIDER, gone)) if f[1] != "info"] == cdiv
    by_vars = {
        **gone,
        "plug/wrapper.py": NAMESPACE_COPY.replace("from types import SimpleNamespace", "import types")
        .replace("SimpleNamespace(**_orig.__dict__)", "types.SimpleNamespace(**vars(_orig))"),
    }
    assert [f for f in brief(run_check(PROVIDER, by_vars)) if f[1] != "info"] == cdiv
    # A namespace of something else served there is the consumer's module, as before.
    other = {**gone, "plug/wrapper.py": NAMESPACE_COPY.replace("**_orig.__dict__", "merge=fast_merge")}
    assert [f for f in brief(run_check(PROVIDER, other)) if f[1] != "info"] == []


def test_what_a_copy_of_a_module_sets_reaches_only_its_importers(run_check):
    # vllm-kunlun sets `_get_open_port` and `direct_register_custom_op` on its copy of `vllm.utils`:
    # vLLM 0.11.0 read the first only inside `vllm.utils` (its globals, not the copy) and imported
    # the second into other modules. Both left `vllm.utils` in 0.11.1: the first assignment did
    # nothing at the baseline either, the second no longer reaches vLLM's code.
    baseline = {
        "pv/__init__.py": "",
        "pv/utils.py": """
            def _pick(ports):
                return ports[0]

            def open_port():
                return _pick([1])

            def register_op(name, fn):
                return fn
        """,
        "pv/layers.py": "from pv.utils import register_op\n\nop = register_op('x', abs)\n",
    }
    pin = {
        "pv/__init__.py": "",
        "pv/utils.py": "def open_port():\n    return 1\n",
        "pv/torch_utils.py": "def register_op(name, fn):\n    return fn\n",
        "pv/layers.py": "from pv.torch_utils import register_op\n\nop = register_op('x', abs)\n",
    }
    plug = consumer(
        wrapper="""
            import sys
            from types import SimpleNamespace

            import pv.utils as _orig

            def _pick(ports):
                return ports[-1]

            def register_op(name, fn):
                return fn

            _wrapped = SimpleNamespace(**_orig.__dict__)
            _wrapped._pick = _pick
            _wrapped.register_op = register_op
            sys.modules["pv.utils"] = _wrapped
        """
    )
    found = {(f.symbol, f.severity.value) for f in run_check(pin, plug, baseline=baseline).findings}
    assert found == {("pv.utils:_pick", "warning"), ("pv.utils:register_op", "error")}


PATCHED_INIT = """
    from pv.norm import Norm

    _orig_init = Norm.__init__

    def _patched_init(self, hidden_size, eps=1e-6, *, shard_world_size=None):
        _orig_init(self, hidden_size, eps)

    Norm.__init__ = _patched_init
"""


def test_calls_bind_to_the_consumers_replacement_init(run_check):
    plug = consumer(patch=PATCHED_INIT, model="from pv.norm import Norm\nnorm = Norm(128, shard_world_size=2)\n")
    assert run_check(PROVIDER, plug).findings == ()
    bad = {**plug, "plug/model.py": "from pv.norm import Norm\nnorm = Norm(128, shard_rank=2)\n"}
    [finding] = run_check(PROVIDER, bad).findings
    assert (finding.rule.value, finding.severity.value, [str(s) for s in finding.sites]) == (
        "arity-drift",
        "error",
        ["plug/model.py:2"],
    )
    assert "the consumer's replacement at plug/patch.py:8" in finding.message


def test_a_call_of_a_class_whose_name_the_consumer_registers_out_of_tree(run_check):
    ops = """
        from pv.custom_op import CustomOp, FusedMoE

        class MyFusedMoE(FusedMoE):
            def __init__(self, *args, hash=None, **kwargs):
                pass

        def register():
            for name, op_cls in {"FusedMoE": MyFusedMoE}.items():
                CustomOp.register_oot(op_cls=op_cls, name=name)
    """
    model = "from pv.custom_op import FusedMoE\nmoe = FusedMoE(8, 2, hash='x')\n"
    assert run_check(PROVIDER, consumer(ops=ops, model=model)).findings == ()
    # Registered under another name, the provider's own class is built: the call does not fit it.
    other = ops.replace('{"FusedMoE": MyFusedMoE}', '{"SharedFusedMoE": MyFusedMoE}')
    assert [f[:2] for f in brief(run_check(PROVIDER, consumer(ops=other, model=model)))] == [("arity-drift", "error")]


def test_a_class_added_to_the_registered_table_before_the_loop_is_registered(run_check):
    # vllm-ascend's shape: a table built, then entries added under a branch or with update().
    ops = """
        from pv.custom_op import CustomOp, FusedMoE

        class MyFusedMoE(FusedMoE):
            def __init__(self, *args, hash=None, **kwargs):
                pass

        OPS = {}

        def register(moe=True):
            global OPS
            OPS = {}
            if moe:
                OPS["FusedMoE"] = MyFusedMoE
            OPS.update({"Other": MyFusedMoE}, Third=MyFusedMoE)
            for name, op_cls in OPS.items():
                CustomOp.register_oot(op_cls=op_cls, name=name)
    """
    model = "from pv.custom_op import FusedMoE\nmoe = FusedMoE(8, 2, hash='x')\n"
    assert run_check(PROVIDER, consumer(ops=ops, model=model)).findings == ()
    by_update = ops.replace('OPS["FusedMoE"] = MyFusedMoE', "pass").replace('{"Other"', '{"FusedMoE"')
    assert run_check(PROVIDER, consumer(ops=by_update, model=model)).findings == ()
    by_keyword = ops.replace('OPS["FusedMoE"] = MyFusedMoE', "pass").replace("Third=", "FusedMoE=")
    assert run_check(PROVIDER, consumer(ops=by_keyword, model=model)).findings == ()
    never = ops.replace('OPS["FusedMoE"] = MyFusedMoE', "pass")
    assert [f[:2] for f in brief(run_check(PROVIDER, consumer(ops=never, model=model)))] == [("arity-drift", "error")]


def test_an_enum_member_added_with_extend_enum_is_the_consumers_own(run_check):
    # vllm-omni's shape: aenum's extend_enum adds members the consumer then reads elsewhere.
    provider = {**PROVIDER, "pv/request.py": "import enum\n\nclass Status(enum.Enum):\n    RUNNING = 1\n"}
    plug = consumer(
        patch="""
            from aenum import extend_enum
            from pv.request import Status

            if not hasattr(Status, "WAITING_FOR_CHUNK"):
                extend_enum(Status, "WAITING_FOR_CHUNK", -1)
        """,
        sched="from pv.request import Status\n\ndef waiting(s):\n    return s == Status.WAITING_FOR_CHUNK\n",
    )
    assert brief(run_check(provider, plug)) == [
        ("patch-addition", "info", "pv.request:Status.WAITING_FOR_CHUNK", ["plug/patch.py:5"])
    ]
    # Without the addition, the read is the provider's, and it is gone.
    [gone] = run_check(provider, {**plug, "plug/patch.py": ""}).findings
    assert (gone.rule.value, gone.severity.value) == ("unresolved-import", "error")
