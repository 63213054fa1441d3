"""missing-member: what else may serve a name, found by a review of the rule. Each case
gives no error: a member defined in a class body's branch, an attribute a mixin's other
base has, a `hasattr` flag, a provider class whose members are not all written where
they are read (computed names, decorators, expression bases), a consumer setting the
name by `setattr`, a `__getattribute__`; and a version helper handed an attribute chain
still decides its gate (it did before chains were followed)."""

from __future__ import annotations

from atompin.analysis.results import check_trees
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, found
from tests.test_members import CHAIN_A, CHAIN_B, CONFIG_CONSUMER, PV_A, PV_B, SPEC_CONSUMER


def mm(consumer, provider, baseline):
    return found(check(consumer, provider, baseline), "missing-member")


def at(consumer, provider, baseline, version="2.0"):
    pin = MemoryTree(dedent_files({**provider, "pv/__init__.py": "__version__ = '2.0'\n"}), "provider")
    before = MemoryTree(dedent_files({**baseline, "pv/__init__.py": "__version__ = '1.0'\n"}), "baseline")
    tree = MemoryTree(dedent_files({"plug/__init__.py": "", **consumer}), "consumer")
    return check_trees(tree, pin, "pv", "plug", baseline=before, provider_version=version)


# A consumer class-body member under if/try (a version-gated compat definition) is not seen.
def test_member_defined_in_a_class_body_branch():
    consumer = {
        "plug/spec.py": """
        import pv
        from pv.spec import Spec

        class MySpec(Spec):
            if pv.__version__ < "2.0":
                pass
            else:
                @property
                def ratio(self):
                    return self.tokens_per_state

            def size(self):
                return self.block_size // self.ratio
    """
    }
    assert found(at(consumer, PV_B, PV_A), "missing-member") == []


def test_class_attribute_in_try_or_import_in_class_body():
    for body in (
        "    try:\n        ratio = int('2')\n    except ValueError:\n        ratio = 1\n",
        "    from math import pi as ratio\n",
    ):
        source = SPEC_CONSUMER["plug/spec.py"].replace("class MySpec(Spec):\n", "class MySpec(Spec):\n" + body)
        assert mm({"plug/spec.py": source}, PV_B, PV_A) == [], body


# A consumer mixin deriving from a provider base, only ever mixed with the subclass that has it.
MOVED_A = {"pv/spec.py": "class BaseSpec:\n    block_size = 16\n    ratio = 1\n\nclass Spec(BaseSpec):\n    pass\n"}
MOVED_B = {"pv/spec.py": "class BaseSpec:\n    block_size = 16\n\nclass Spec(BaseSpec):\n    ratio = 1\n"}


def test_mixin_with_a_provider_base_mixed_into_the_subclass_that_has_it():
    consumer = {
        "plug/spec.py": """
        from pv.spec import BaseSpec, Spec

        class RatioMixin(BaseSpec):
            def size(self):
                return self.block_size // self.ratio

        class MySpec(RatioMixin, Spec):
            pass
    """
    }
    assert mm(consumer, MOVED_B, MOVED_A) == []


# A module-level hasattr flag (dead branch at the pin) is not seen.
def test_module_level_hasattr_flag():
    consumer = {
        "plug/spec.py": """
        from pv.spec import Spec

        HAS_RATIO = hasattr(Spec, "ratio")

        class MySpec(Spec):
            def size(self):
                if HAS_RATIO:
                    return self.block_size // self.ratio
                return self.block_size // self.tokens_per_state
    """
    }
    assert mm(consumer, PV_B, PV_A) == []


# Regression in another rule: a MemberChain argument stops a version helper being evaluated.
def test_version_helper_with_a_chained_argument_still_gates():
    consumer = {
        "plug/spec.py": """
        import pv
        from pv.spec import Spec

        def old_api(obj):
            return pv.__version__ < "2.0"

        class MySpec(Spec):
            def size(self):
                if old_api(self.cfg.x):
                    from pv.spec import OldThing
                    return OldThing
                return 0
    """
    }
    a = {"pv/spec.py": "class Spec:\n    pass\n\nclass OldThing:\n    pass\n"}
    b = {"pv/spec.py": "class Spec:\n    pass\n"}
    assert [f.rule.value for f in at(consumer, b, a).findings] == []


# Provider instances that take any attribute.
def test_provider_sets_attributes_dynamically():
    for init in ("for k, v in kw.items(): setattr(self, k, v)", "self.__dict__.update(kw)"):
        code = f"class Config:\n    def __init__(self, **kw):\n        {init}\n\ndef make():\n    return Config(compute_hash=str)\n"
        assert mm(CONFIG_CONSUMER, {**PV_B, "pv/config.py": code}, PV_A) == [], init


# Provider code outside a method that sets the member through `cls.`/`self.` (excluded by the regex).
def test_provider_class_decorator_or_helper_sets_the_member():
    decorated = """
        def add_hash(cls):
            cls.compute_hash = lambda self: ""
            return cls

        @add_hash
        class Config:
            pass
    """
    helper = """
        def _init(self):
            self.compute_hash = lambda: ""

        class Config:
            def __init__(self):
                _init(self)
    """
    for code in (decorated, helper):
        assert mm(CONFIG_CONSUMER, {**PV_B, "pv/config.py": code}, PV_A) == []


def test_provider_decorator_adds_a_base():  # vLLM's support_torch_compile does `cls.__bases__ += (...)`
    prov = {
        **PV_B,
        "pv/spec.py": """
        class Wrapper:
            def __init__(self):
                self.ratio = 1

        def support_compile(cls):
            cls.__bases__ = cls.__bases__ + (Wrapper,)
            return cls

        class BaseSpec:
            block_size: int = 16

        @support_compile
        class Spec(BaseSpec):
            tokens_per_state: int = 1
    """,
    }
    assert mm(SPEC_CONSUMER, prov, PV_A) == []


# Bases that are not dotted names are dropped: the order looks complete.
def test_provider_base_that_is_an_expression():
    prov = {
        **PV_B,
        "pv/spec.py": """
        from collections import namedtuple

        class BaseSpec:
            block_size = 16

        class Spec(BaseSpec, namedtuple("_Spec", "ratio tokens")):
            pass
    """,
    }
    assert mm(SPEC_CONSUMER, prov, PV_A) == []


def test_consumer_base_that_is_a_call():
    consumer = {
        "plug/spec.py": """
        from pv.spec import Spec

        def with_ratio(n):
            class M:
                ratio = n
            return M

        class MySpec(with_ratio(2), Spec):
            def size(self):
                return self.block_size // self.ratio
    """
    }
    assert mm(consumer, PV_B, PV_A) == []


# Consumer stores the rule does not see.
def test_consumer_setattr_forms():
    outside = {
        "plug/cache.py": """
        from pv.config import Config

        def prepare(config: Config):
            setattr(config, "compute_hash", lambda: "")

        def signature(config: Config) -> str:
            return config.compute_hash()
    """
    }
    assert mm(outside, PV_B, PV_A) == []
    frozen = {
        "plug/spec.py": """
        from pv.spec import Spec

        class MySpec(Spec):
            def __post_init__(self):
                object.__setattr__(self, "ratio", 2)

            def size(self):
                return self.block_size // self.ratio
    """
    }
    assert mm(frozen, PV_B, PV_A) == []


# A provider `__getattr__` bound as a class attribute, or `__getattribute__`.
def test_provider_getattr_forms():
    for body in ("__getattr__ = _lookup", "__getattribute__ = _lookup"):
        prov = {**PV_B, "pv/config.py": f"def _lookup(self, name):\n    return None\n\nclass Config:\n    {body}\n"}
        assert mm(CONFIG_CONSUMER, prov, PV_A) == [], body


def test_chain_attribute_a_consumer_subclass_sets_is_not_followed():
    consumer = {
        "plug/mine.py": """
        from pv.worker import Worker

        class Mine(Worker):
            def go(self):
                return self.config.compute_hash()

        class Sub(Mine):
            def __init__(self, config):
                super().__init__(config)
                self.config = object()
    """
    }
    assert mm(consumer, CHAIN_B, CHAIN_A) == []  # the direct `self.compute_hash()` analogue is silent
