"""missing-member: more of what may serve a name, found by a second review; each case
gives no error (a hook handed on through `super(Cls, self)` gives a warning)."""

from __future__ import annotations

from tests.test_contact import check, found
from tests.test_members import CONFIG_CONSUMER, PV_A, PV_B

HOOK_A = {
    "pv/proc.py": "class Proc:\n    def get_dummy(self):\n        return 1\n\n    def run(self):\n        return self.get_dummy()\n"
}
HOOK_B = {"pv/proc.py": "class Proc:\n    def run(self):\n        return 0\n"}


def mm(consumer, provider, baseline=PV_A):
    return found(check(consumer, provider, baseline), "missing-member")


# The consumer itself hands the name to a class that sets attributes by computed names.
def test_consumer_keyword_to_a_class_setting_computed_names():
    a = {
        "pv/config.py": "class Config:\n    def __init__(self, **kw):\n        self.compute_hash = kw.get('compute_hash')\n"
    }
    b = {
        "pv/config.py": "class Config:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n            setattr(self, k, v)\n"
    }
    consumer = {
        "plug/cache.py": """
        from pv.config import Config

        class Mine(Config):
            def __init__(self):
                super().__init__(compute_hash=str)

            def sig(self):
                return self.compute_hash()
    """
    }
    assert mm(consumer, b, a) == []


# Lambda parameters do not shadow `self`, an annotated parameter, or a local holding a chain.
def test_lambda_parameter_shadows_the_receiver():
    consumer = {
        "plug/cache.py": """
        from pv.config import Config

        class Other:
            def compute_hash(self):
                return ""

        def signature(config: Config):
            f = lambda config: config.compute_hash()
            return f(Other())
    """
    }
    assert mm(consumer, PV_B) == []


# Other ways of setting attributes by computed names, provider side and consumer side.
def test_dict_subscript_and_dunder_setattr_set_computed_names():
    for body in ("self.__dict__[k] = v", "self.__setattr__(k, v)"):
        b = {
            **PV_B,
            "pv/config.py": f"""
            class Config:
                def __init__(self, **kw):
                    for k, v in kw.items():
                        {body}

            def make():
                return Config(compute_hash=str)
        """,
        }
        assert mm(CONFIG_CONSUMER, b) == [], body
    consumer = {
        "plug/spec.py": """
        from pv.spec import Spec

        class MySpec(Spec):
            def __init__(self):
                self.__dict__["ratio"] = 2

            def size(self):
                return self.block_size // self.ratio
    """
    }
    assert mm(consumer, PV_B) == []


# An annotation naming a Protocol (or an ABC with registered virtual subclasses): the object
#    is of a class that is no nominal subclass, and it has the name.
def test_protocol_or_registered_abc_annotation():
    a = {
        "pv/config.py": "from typing import Protocol\n\nclass Config(Protocol):\n    def compute_hash(self) -> str: ...\n"
    }
    b = {
        "pv/config.py": "from typing import Protocol\n\nclass Config(Protocol):\n    def compile_factors(self) -> list: ...\n\nclass Impl:\n    def compile_factors(self):\n        return []\n\n    def compute_hash(self):\n        return ''\n"
    }
    assert mm(CONFIG_CONSUMER, b, a) == []
    a = {
        "pv/config.py": "import abc\n\nclass Config(abc.ABC):\n    @abc.abstractmethod\n    def compute_hash(self): ...\n"
    }
    b = {
        "pv/config.py": "import abc\n\nclass Config(abc.ABC):\n    pass\n\nclass Impl:\n    def compute_hash(self):\n        return ''\n\nConfig.register(Impl)\n"
    }
    assert mm(CONFIG_CONSUMER, b, a) == []


# A dropped hook's `super(Cls, self).m()` inside `m` is the same as `super().m()`: a warning.
def test_hook_delegation_through_two_argument_super():
    consumer = {
        "plug/proc.py": """
        from pv.proc import Proc

        class MyProc(Proc):
            def get_dummy(self):
                return super(MyProc, self).get_dummy() + 1
    """
    }
    assert mm(consumer, HOOK_B, HOOK_A) == [("warning", "pv.proc:Proc.get_dummy", "plug/proc.py:5")]


# A docstring naming the hook it overrides ("Override Base.m for ...") is no call of it.
def test_a_dropped_hook_named_in_its_docstring_is_still_dropped():
    consumer = {
        "plug/proc.py": """
        from pv.proc import Proc

        class MyProc(Proc):
            def get_dummy(self):
                \"\"\"Override Proc.get_dummy for this device.\"\"\"
                return super().get_dummy() + 1
    """
    }
    assert mm(consumer, HOOK_B, HOOK_A) == [("warning", "pv.proc:Proc.get_dummy", "plug/proc.py:6")]
    called = {**consumer, "plug/use.py": "def run(p):\n    return p.get_dummy()\n"}
    assert mm(called, HOOK_B, HOOK_A) == [("error", "pv.proc:Proc.get_dummy", "plug/proc.py:6")]
    # Triple quotes inside a one-line string open no docstring: the call after them counts.
    quoted = {**consumer, "plug/use.py": 'QUOTE = \'"""\'\n\ndef run(p):\n    return p.get_dummy()\n'}
    assert mm(quoted, HOOK_B, HOOK_A) == [("error", "pv.proc:Proc.get_dummy", "plug/proc.py:6")]


# A class-body annotation names a nested class (class scope), not the module's.
def test_annotation_naming_a_nested_class():
    body = "\n\nclass Runner:\n    class Config:\n        def compute_hash(self):\n            return ''\n    cfg: Config\n"
    a = {"pv/config.py": "class Config:\n    def compute_hash(self):\n        return ''\n" + body}
    b = {"pv/config.py": "class Config:\n    pass\n" + body}
    consumer = {
        "plug/r.py": "from pv.config import Runner\n\nclass R(Runner):\n    def go(self):\n        return self.cfg.compute_hash()\n"
    }
    assert mm(consumer, b, a) == []
