"""Hooks the provider stopped calling (override-drift (e), protocol-drift).

vLLM 0.27 asked a multimodal model for `get_num_mm_encoder_tokens` and an attention backend
for `get_kv_cache_block_dim`; 0.33 asks neither, anywhere: ATOM's answers are silently
ignored after the bump. A warning, only with a baseline that read the name."""

from __future__ import annotations

import pytest

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.results import check_trees
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files
from tests.test_contact import check, found

MODEL = "class ModelBase:\n    def forward(self, x):\n        return x\n"
REGISTRY = "def register_backend(name, cls):\n    pass\n"
RUNNER_A = """
def run(model, n):
    tokens = model.get_encoder_tokens(n)
    return model.forward(tokens)

def pick(backend):
    return backend.get_block_dim(16)
"""
RUNNER_B = "def run(model, n):\n    return model.forward(n)\n\ndef pick(backend):\n    return 16\n"
BASELINE = {"pv/model.py": MODEL, "pv/registry.py": REGISTRY, "pv/runner.py": RUNNER_A}
PIN = {"pv/model.py": MODEL, "pv/registry.py": REGISTRY, "pv/runner.py": RUNNER_B}

CONSUMER = {
    "plug/model.py": """
        from pv.model import ModelBase

        class MyModel(ModelBase):
            def get_encoder_tokens(self, n):
                return self.inner.get_encoder_tokens(n)

            def forward(self, x):
                return x
    """,
    "plug/backend.py": """
        from pv.registry import register_backend

        class MyBackend:
            def get_block_dim(self, n):
                return n * 2

        register_backend("mine", MyBackend)
    """,
}


def idle(consumer=CONSUMER, pin=PIN, baseline=BASELINE):
    result = check(consumer, pin, baseline)
    return [f for f in found(result, "override-drift") + found(result, "protocol-drift") if f[0] == "warning"], result


def test_a_hook_the_provider_read_at_the_baseline_and_reads_nowhere_now_is_a_warning():
    warnings, result = idle()
    assert warnings == [
        ("warning", "plug.model:MyModel.get_encoder_tokens", "plug/model.py:4"),
        ("warning", "plug.backend:MyBackend.get_block_dim", "plug/backend.py:4"),
    ]
    message = next(f.message for f in result.findings if f.symbol.endswith("get_block_dim"))
    assert "read `get_block_dim` at 1.0 (pv/runner.py:6)" in message and "silently gone" in message


def test_nothing_without_a_baseline_or_while_the_provider_still_reads_the_name():
    assert idle(baseline=None)[0] == []
    assert idle(pin=BASELINE)[0] == []


def test_a_name_the_provider_writes_as_a_string_may_still_be_called():
    runner = (
        RUNNER_B + '\ndef tokens(model, n):\n    fn = getattr(model, "get_encoder_tokens", None)\n    return fn(n)\n'
    )
    warnings, _ = idle(pin={**PIN, "pv/runner.py": runner})
    assert [w[1] for w in warnings] == ["plug.backend:MyBackend.get_block_dim"]


def test_a_hook_the_consumer_calls_itself_is_not_idle_but_a_wrapper_handing_on_is():
    calling = {**CONSUMER, "plug/use.py": "def count(model):\n    return model.get_block_dim(4)\n"}
    assert [w[1] for w in idle(calling)[0]] == ["plug.model:MyModel.get_encoder_tokens"]
    # The wrapper's own `self.inner.get_encoder_tokens(n)` does not keep it called (the first test).


def test_a_method_that_does_nothing_or_a_name_the_baseline_never_read_is_left_out():
    inert = {**CONSUMER, "plug/backend.py": CONSUMER["plug/backend.py"].replace("return n * 2", "return None")}
    assert [w[1] for w in idle(inert)[0]] == ["plug.model:MyModel.get_encoder_tokens"]
    # Assigning the name at the baseline is no read of it.
    assigning = RUNNER_B + "\ndef set_it(backend):\n    backend.get_block_dim = None\n"
    baseline = {
        **BASELINE,
        "pv/runner.py": assigning.replace("return model.forward(n)", "return model.get_encoder_tokens(n)"),
    }
    assert [w[1] for w in idle(baseline=baseline)[0]] == ["plug.model:MyModel.get_encoder_tokens"]


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        # torch calls its own members (`extra_repr`); any other name is still the provider's to call.
        ("nn.Module", ["plug.model:MyModel.get_encoder_tokens"]),
        # An unknown outside base may call anything.
        ("transformers.PreTrainedModel", []),
    ],
)
def test_outside_bases(base, expected):
    model = f"""
        import torch.nn as nn
        import transformers
        from pv.model import ModelBase

        class MyModel(ModelBase, {base}):
            def get_encoder_tokens(self, n):
                return n

            def extra_repr(self):
                return "mine"
    """
    baseline = {**BASELINE, "pv/runner.py": RUNNER_A + "\ndef show(m):\n    return m.extra_repr()\n"}
    assert [w[1] for w in idle({"plug/model.py": model}, baseline=baseline)[0]] == expected


def test_files_containing_many_words_finds_what_one_search_per_word_finds():
    tree = MemoryTree({f"f{i}.py": f"x.name{i}()\n" for i in range(12)})
    paths = sorted(tree.list_files())
    words = [b"name3", b"name7(", b"nope", b"name1", b"x.name11", b"absent"]
    assert tree.files_containing(paths, words) == ["f1.py", "f10.py", "f11.py", "f3.py", "f7.py"]
    assert tree.files_containing(paths, words[:2]) == ["f3.py", "f7.py"]


def test_the_read_cited_is_one_in_a_base_s_module_where_there_is_one():
    # Another model's processor calls its own hook first in file order; the base calls the
    # consumer's: that is the read that reached it.
    model = "class ModelBase:\n    def forward(self, x):\n        return self.get_encoder_tokens(x)\n"
    baseline = {**BASELINE, "pv/model.py": model, "pv/a_other.py": "def f(m):\n    return m.get_encoder_tokens(1)\n"}
    _, result = idle(baseline=baseline)
    message = next(f.message for f in result.findings if f.symbol.endswith("get_encoder_tokens"))
    assert "at 1.0 (pv/model.py:3)" in message


def test_a_read_in_a_file_defining_the_name_is_cited_last():
    # vLLM's own block table hands `add_row` on to its parts inside `def add_row`; the input
    # batch's call is the one that reached the consumer's stand-in.
    table = "class Table:\n    def get_block_dim(self, n):\n        return self.inner.get_block_dim(n)\n"
    _, result = idle(baseline={**BASELINE, "pv/a_table.py": table})
    message = next(f.message for f in result.findings if f.symbol.endswith("get_block_dim"))
    assert "at 1.0 (pv/runner.py:6)" in message


def test_a_baseline_whose_identifiers_are_cached_is_searched_through_them(monkeypatch):
    # A bump's baseline is the pin it moves away from: its identifiers were read by the last lock.
    def tree(files, label):
        return MemoryTree(dedent_files({"pv/__init__.py": "", **files}), label)

    consumer = MemoryTree(dedent_files({"plug/__init__.py": "", **CONSUMER}), "consumer")
    answers = []
    readers = NameSearch.cached_readers
    monkeypatch.setattr(
        NameSearch,
        "cached_readers",
        lambda self, names, paths: answers.append(readers(self, names, paths)) or answers[-1],
    )
    cache = AnalysisCache()
    NameSearch(tree(BASELINE, "baseline"), "pv", cache).load()  # as the lock at the old pin did
    result = check_trees(
        consumer, tree(PIN, "pin"), "pv", "plug", cache, baseline=tree(BASELINE, "baseline"), baseline_label="1.0"
    )
    assert answers == [{"get_block_dim": ["pv/runner.py"], "get_encoder_tokens": ["pv/runner.py"]}]
    assert [(f.symbol, f.message) for f in result.findings if "silently gone" in f.message] == [
        (f.symbol, f.message) for f in idle()[1].findings if "silently gone" in f.message
    ]


def test_a_mention_in_a_comment_or_docstring_at_the_baseline_is_no_read():
    runner = (
        RUNNER_B
        + '\ndef old(model):\n    # model.get_encoder_tokens(n) was asked here\n    """Asked model.get_encoder_tokens once."""\n'
    )
    warnings, _ = idle(
        baseline={**BASELINE, "pv/runner.py": runner.replace("return 16", "return backend.get_block_dim(16)")}
    )
    assert [w[1] for w in warnings] == ["plug.backend:MyBackend.get_block_dim"]


def test_a_hook_inherited_from_a_consumer_base_or_mixin_is_judged_where_it_is_defined():
    backend = """
        from pv.registry import register_backend

        class CommonBackend:
            def get_block_dim(self, n):
                return n * 2

        class MyBackend(CommonBackend):
            pass

        register_backend("mine", MyBackend)
    """
    model = """
        from pv.model import ModelBase

        class TokensMixin:
            def get_encoder_tokens(self, n):
                return n + 1

        class MyModel(TokensMixin, ModelBase):
            def forward(self, x):
                return x
    """
    warnings, _ = idle({"plug/backend.py": backend, "plug/model.py": model})
    assert warnings == [
        ("warning", "plug.model:TokensMixin.get_encoder_tokens", "plug/model.py:4"),
        ("warning", "plug.backend:CommonBackend.get_block_dim", "plug/backend.py:4"),
    ]


@pytest.mark.parametrize("stray", ['QUOTE = \'"""\'\n', '# strip """ from the prompt\n'])
def test_triple_quotes_in_a_one_line_string_or_on_a_comment_line_open_no_docstring(stray):
    warnings, _ = idle(baseline={**BASELINE, "pv/runner.py": stray + RUNNER_A})
    assert [w[1] for w in warnings] == ["plug.model:MyModel.get_encoder_tokens", "plug.backend:MyBackend.get_block_dim"]


def test_a_name_written_apart_from_its_dot_is_no_read_whatever_else_the_file_holds():
    # `backend. get_block_dim(16)` is picked by neither the identifiers nor the text search.
    spaced = RUNNER_A.replace("backend.get_block_dim", "backend. get_block_dim")
    warnings, _ = idle(baseline={**BASELINE, "pv/runner.py": spaced})
    assert [w[1] for w in warnings] == ["plug.model:MyModel.get_encoder_tokens"]


def test_a_non_ascii_hook_name_is_not_judged():
    # The identifiers hold ASCII words only: such a name would always look unread at the pin.
    consumer = {"plug/model.py": CONSUMER["plug/model.py"].replace("get_encoder_tokens", "größe")}
    baseline = {**BASELINE, "pv/runner.py": RUNNER_A.replace("get_encoder_tokens", "größe")}
    pin = {**PIN, "pv/runner.py": RUNNER_B.replace("model.forward(n)", "model.forward(model.größe(n))")}
    assert idle(consumer, pin=pin, baseline=baseline)[0] == []


def test_a_consumer_file_too_deep_to_read_counts_as_reading_the_hook():
    deep = "def f(m):\n    return m.get_block_dim(1)" + " + 1" * 3000 + "\n"
    warnings, result = idle({**CONSUMER, "plug/deep.py": deep})
    assert [w[1] for w in warnings] == ["plug.model:MyModel.get_encoder_tokens"]


OTHER_MODEL = """
    from pv.model import ModelBase

    class OtherModel(ModelBase):
        def get_encoder_tokens(self, n):
            return n + 3

        def forward(self, x):
            return self.get_encoder_tokens(x)
"""


def test_a_hook_a_class_calls_on_self_stays_called_for_its_own_line_only():
    # vllm-omni 0.28: one model's processor calls its own `_call_hf_processor` on `self`; vLLM 0.29
    # calls it nowhere, so the other models' overrides of it are silently lost all the same.
    warnings, _ = idle({**CONSUMER, "plug/other.py": OTHER_MODEL})
    assert [w[1] for w in warnings] == ["plug.model:MyModel.get_encoder_tokens", "plug.backend:MyBackend.get_block_dim"]
    # A subclass of MyModel calling it on `self` keeps MyModel's called; so does a call on any object.
    sub = "from plug.model import MyModel\n\nclass Sub(MyModel):\n    def go(self, n):\n        return self.get_encoder_tokens(n)\n"
    assert [w[1] for w in idle({**CONSUMER, "plug/other.py": OTHER_MODEL, "plug/sub.py": sub})[0]] == [
        "plug.backend:MyBackend.get_block_dim"
    ]
    on_object = OTHER_MODEL.replace("self.get_encoder_tokens(x)", "x.get_encoder_tokens(3)")
    assert [w[1] for w in idle({**CONSUMER, "plug/other.py": on_object})[0]] == ["plug.backend:MyBackend.get_block_dim"]


def test_a_self_call_in_a_mixin_keeps_the_hook_of_a_class_deriving_from_both_called():
    mixin = "class Calls:\n    def go(self, n):\n        return self.get_encoder_tokens(n)\n"
    both = "from plug.mixin import Calls\nfrom plug.model import MyModel\n\nclass Both(Calls, MyModel):\n    pass\n"
    consumer = {**CONSUMER, "plug/mixin.py": mixin, "plug/both.py": both}
    assert [w[1] for w in idle(consumer)[0]] == ["plug.backend:MyBackend.get_block_dim"]
