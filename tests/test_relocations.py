"""Relocation tables, relocation-state, arity-drift, and `relocations suggest`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import brief
from typer.testing import CliRunner

from atompin.analysis.arity import (
    CallShape,
    call_problem,
    describe_change,
    params_problem,
    render_shift,
    replacement_problem,
    shifted_arguments,
)
from atompin.analysis.provider import ProviderIndex
from atompin.analysis.relocation_checks import check_relocations
from atompin.analysis.signature import signature_of
from atompin.analysis.suggest import suggest
from atompin.cli import app
from atompin.errors import InputError
from atompin.model import CheckResult
from atompin.relocations import Relocation, parse_table
from atompin.sources.tree import FolderTree
from atompin.testing import write_files

runner = CliRunner()


def sig(source: str):  # type: ignore[no-untyped-def]
    import ast

    node = ast.parse(source).body[0]
    return signature_of(node)  # type: ignore[arg-type]


OLD = {
    "pv/__init__.py": "",
    "pv/utils.py": """
        def pool_bytes(groups):
            return 0
        def stays(a, b):
            return a
        def old_name(x, y):
            return x
        def removed(z):
            return z
        class Runner:
            def step(self, batch):
                return batch
    """,
}
NEW = {
    "pv/__init__.py": "",
    "pv/utils.py": """
        def stays(a, b):
            return a
        def new_name(x, y):
            return x
    """,
    "pv/planning.py": """
        def pool_bytes(config, groups):
            return 0
        class Runner:
            def step(self, batch):
                return batch
    """,
}


def index(tmp_path: Path, name: str, files: dict[str, str]) -> ProviderIndex:
    return ProviderIndex(FolderTree(write_files(tmp_path / name, files)), "pv")


# -- relocation-state -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "state", "severity"),
    [
        ("pv.utils:pool_bytes", "pv.planning:pool_bytes", "relocated", "info"),
        ("pv.utils:stays", "pv.utils:stays", "both", "info"),
        ("pv.utils:stays", "pv.planning:stays", "pending", "warning"),
        ("pv.utils:gone", "pv.planning:gone", "broken", "error"),
    ],
)
def test_every_relocation_state(tmp_path: Path, old: str, new: str, state: str, severity: str):
    [finding] = check_relocations([("t.toml", Relocation(old=old, new=new))], index(tmp_path, "new", NEW))
    assert (finding.rule.value, finding.severity.value, finding.symbol) == ("relocation-state", severity, old)
    assert finding.message.startswith(f"{state}: ")


def test_table_params_mismatch_is_arity_drift(tmp_path: Path):
    new = index(tmp_path, "new", NEW)
    wrong = Relocation(old="pv.utils:pool_bytes", new="pv.planning:pool_bytes", params=["groups"])
    findings = check_relocations([("t.toml", wrong)], new)
    assert [(f.rule.value, f.severity.value) for f in findings] == [
        ("relocation-state", "info"),
        ("arity-drift", "error"),
    ]
    assert "the table expects (groups), the provider has (config, groups)" in findings[1].message
    right = Relocation(old="pv.utils:pool_bytes", new="pv.planning:pool_bytes", params=["config", "groups"])
    assert [f.rule.value for f in check_relocations([("t.toml", right)], new)] == ["relocation-state"]


def test_without_params_the_baseline_signature_is_compared(tmp_path: Path):
    new, old = index(tmp_path, "new", NEW), index(tmp_path, "old", OLD)
    entry = Relocation(old="pv.utils:pool_bytes", new="pv.planning:pool_bytes")
    findings = check_relocations([("t.toml", entry)], new, baseline=old)
    assert findings[1].rule.value == "arity-drift"
    assert "gained config as first parameter" in findings[1].message
    same = Relocation(old="pv.utils:Runner.step", new="pv.planning:Runner.step")
    assert [f.rule.value for f in check_relocations([("t.toml", same)], new, baseline=old)] == ["relocation-state"]


def test_table_applicability_by_version():
    table = parse_table('package = "pv"\napplies = ">=0.33"\n', "t.toml")
    assert not table.applies_to("0.32.9")
    assert table.applies_to("0.33.0") and table.applies_to("0.33.1") and table.applies_to("0.34.0rc1")
    assert not table.applies_to("") and not table.applies_to("not-a-version")
    window = parse_table('package = "pv"\napplies = ">=0.32,<0.33"\n', "t.toml")
    assert window.applies_to("0.32.0") and not window.applies_to("0.33.0")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('package = "pv"\napplies = "0.33+"\n', "t.toml:2: applies: '0.33+' is not a version specifier"),
        (
            'package = "pv"\napplies = ">=1"\n[[moved]]\nold = "pv.a:f"\nnew = "pv.b"\n',
            "t.toml:5: moved[0].new: 'pv.b' is not a symbol",
        ),
        (
            'package = "pv"\napplies = ">=1"\n[[moved]]\nold = "pv.a:f"\nnew = "pv.b:f"\nwhy = "x"\n',
            "t.toml:6: moved[0].why: unknown key 'why'",
        ),
        ('package = "pv"\n[[moved]]\n', "t.toml:1: applies: missing required key 'applies'"),
    ],
)
def test_malformed_tables_name_file_line_and_key(text: str, expected: str):
    with pytest.raises(InputError) as err:
        parse_table(text, "t.toml")
    assert str(err.value).startswith(expected)


def test_check_cli_with_a_bad_table_is_exit_2(tmp_path: Path):
    provider = write_files(tmp_path / "p", NEW)
    consumer = write_files(tmp_path / "c", {"plug/__init__.py": "from pv.utils import stays\n"})
    table = tmp_path / "table.toml"
    table.write_text('package = "pv"\napplies = "soon"\n')
    result = runner.invoke(app, ["check", str(consumer), str(provider), "--relocations", str(table), "--no-cache"])
    assert result.exit_code == 2 and "table.toml:2: applies" in result.output


def test_check_cli_chooses_tables_by_provider_version(tmp_path: Path):
    provider = write_files(tmp_path / "p", {**NEW, "pv/__init__.py": '__version__ = "0.33.0"\n'})
    consumer = write_files(tmp_path / "c", {"plug/__init__.py": "from pv.utils import stays\n"})
    tables = write_files(
        tmp_path / "relocations",
        {
            "pv/0.33.toml": 'package = "pv"\napplies = ">=0.33"\n[[moved]]\nold = "pv.utils:pool_bytes"\nnew = "pv.planning:pool_bytes"\n',
            "pv/0.40.toml": 'package = "pv"\napplies = ">=0.40"\n[[moved]]\nold = "pv.utils:stays"\nnew = "pv.x:stays"\n',
        },
    )
    result = runner.invoke(
        app, ["check", str(consumer), str(provider), "--relocations", str(tables), "--format", "json", "--no-cache"]
    )
    assert result.exit_code == 0, result.output
    assert '"symbol": "pv.utils:pool_bytes"' in result.output and "pv.x:stays" not in result.output


# -- arity: the pure rules ---------------------------------------------------------------


def test_call_shapes():
    s = sig("def f(vllm_config, kv_cache_groups, *, flag=False): pass")
    assert call_problem(s, CallShape(2)) is None
    assert call_problem(s, CallShape(1, ("kv_cache_groups",))) is None
    assert "required kv_cache_groups (its positional arguments bind to vllm_config)" in call_problem(
        s, CallShape(1)
    )  # type: ignore[operator]
    assert "at most 2" in call_problem(s, CallShape(3))  # type: ignore[operator]
    assert "flg=" in call_problem(s, CallShape(2, ("flg",)))  # type: ignore[operator]
    assert call_problem(s, CallShape(0, star=True)) is None
    method = sig("def m(self, batch): pass")
    assert call_problem(method, CallShape(1), bound=True) is None
    assert call_problem(method, CallShape(2), bound=False) is None
    assert call_problem(method, CallShape(2), bound=True) is not None
    kw = sig("def g(a, **kw): pass")
    assert call_problem(kw, CallShape(1, ("anything",))) is None


def test_shifted_arguments():
    """aiter's `mla_reduce_v1` gained `num_kv_splits` before `final_output`: a call passing eight
    arguments by position still binds, with two of them in other parameters."""
    old = sig("def f(out, lse, indptr, tile_q, final_output, final_lse=None): pass")
    new = sig("def f(out, lse, indptr, tile_q, num_kv_splits, final_output, final_lse=None): pass")
    assert shifted_arguments(old, new, CallShape(6)) == [
        ("final_output", "num_kv_splits"),
        ("final_lse", "final_output"),
    ]
    assert shifted_arguments(old, new, CallShape(4, ("final_output",))) == []  # the rest passed by keyword
    assert shifted_arguments(old, new, CallShape(6, star=True)) == []  # `*args`: not known
    # A parameter renamed in place moves nothing; one removed before the call's last does.
    renamed = sig("def f(x_fp4, lse, indptr, tile_q, final_output, final_lse=None): pass")
    assert shifted_arguments(old, renamed, CallShape(6)) == []
    removed = sig("def f(out, lse, tile_q, final_output, final_lse=None): pass")
    assert shifted_arguments(old, removed, CallShape(4)) == [("indptr", "tile_q"), ("tile_q", "final_output")]
    method = sig("def m(self, a, b): pass")
    assert shifted_arguments(method, sig("def m(self, b, a): pass"), CallShape(2), bound=True) == [
        ("a", "b"),
        ("b", "a"),
    ]
    assert "the argument that filled a now fills b" in render_shift([("a", "b")])
    # Into or out of `*args` is no shift: such a function mostly forwards them (vLLM 0.34's
    # `finalize_layerwise_reload(model, model_config)` was a `(*args, **kwargs)` shim at 0.29).
    shim, real = sig("def f(*args, **kwargs): pass"), sig("def f(model, model_config): pass")
    assert shifted_arguments(shim, real, CallShape(2)) == shifted_arguments(real, shim, CallShape(2)) == []


def test_replacement_rules():
    original = sig("def f(self, request, max_cache_hit_length=None): pass")
    assert replacement_problem(original, sig("def w(self, request, max_cache_hit_length=None): pass")) is None
    assert replacement_problem(original, sig("def w(self, *args, **kwargs): pass")) is None
    short = replacement_problem(original, sig("def w(self, request): pass"))
    assert short is not None and short.definite and "3 positional" in short.message
    renamed = replacement_problem(original, sig("def w(self, req, max_cache_hit_length=None): pass"))
    assert renamed is not None and not renamed.definite and "request=" in renamed.message
    swapped = replacement_problem(sig("def f(vllm_config, groups): pass"), sig("def w(groups, vllm_config): pass"))
    assert (
        swapped is not None
        and swapped.definite
        and "groups is parameter 1 of the replacement but parameter 2" in swapped.message
    )


def test_params_and_change_notes():
    s = sig("def f(self, vllm_config, groups): pass")
    assert params_problem(s, ["vllm_config", "groups"]) is None
    assert params_problem(s, ["self", "vllm_config", "groups"]) is None
    assert params_problem(s, ["groups"]) is not None
    gained = describe_change(sig("def f(groups): pass"), sig("def f(vllm_config, groups): pass"))
    assert gained.added == ("vllm_config",) and not gained.removed and not gained.unchanged
    assert gained.render() == "gained vllm_config as first parameter"
    middle = describe_change(sig("def f(a, c, d): pass"), sig("def f(a, b, c, d): pass"))
    assert middle.render() == "gained b as parameter 2"
    lost = describe_change(sig("def f(a, b): pass"), sig("def f(a): pass"))
    assert lost.removed == ("b",) and lost.render() == "lost b"
    swapped = describe_change(sig("def f(a, b): pass"), sig("def f(b, a): pass"))
    assert swapped.reordered and swapped.render().startswith("parameters reordered")
    assert describe_change(sig("def f(self, a): pass"), sig("def g(a): pass")).unchanged


# -- arity: through the consumer ------------------------------------------------------

PROVIDER = {
    "pv/__init__.py": "",
    "pv/m.py": """
        def pool(vllm_config, groups):
            return 0
        class Registry:
            def register(self, arch, qualname):
                pass
            @classmethod
            def build(cls, config):
                return cls()
            @staticmethod
            def util(x):
                return x
        REGISTRY = Registry()
        class Proj:
            def __init__(self, config, out_size, prefix=""):
                pass
        class Runner:
            def step(self, batch, max_len=None):
                return batch
    """,
}


def consumer(src: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": src}


def test_consumer_calls_that_no_longer_fit(run_check):
    src = """
        from pv.m import pool, REGISTRY, Registry, Proj
        pool(groups)
        REGISTRY.register("A", "m:C", "extra")
        Registry.build(cfg, 1)
        Registry.util(1, 2)
        Proj(config=c, prefix="p")
    """
    result = run_check(PROVIDER, consumer(src))
    assert brief(result) == [
        ("arity-drift", "error", "pv.m:Proj", ["plug/mod.py:6"]),
        ("arity-drift", "error", "pv.m:REGISTRY.register", ["plug/mod.py:3"]),
        ("arity-drift", "error", "pv.m:Registry.build", ["plug/mod.py:4"]),
        ("arity-drift", "error", "pv.m:Registry.util", ["plug/mod.py:5"]),
        ("arity-drift", "error", "pv.m:pool", ["plug/mod.py:2"]),
    ]
    ok = """
        from pv.m import pool, REGISTRY, Registry, Proj
        pool(cfg, groups)
        REGISTRY.register("A", "m:C")
        Registry.build(cfg)
        Registry.util(1)
        Proj(c, 4, prefix="p")
        pool(*args)
    """
    assert run_check(PROVIDER, consumer(ok)).findings == ()


def test_dataclass_constructor_calls_are_not_judged_by_a_base_init(run_check):
    provider = {
        "pv/__init__.py": "",
        "pv/m.py": """
            from dataclasses import dataclass
            class Base:
                def __init__(self):
                    pass
            @dataclass
            class Config(Base):
                size: int
                name: str = ""
        """,
    }
    assert run_check(provider, consumer("from pv.m import Config\nConfig(4, name='x')\n")).findings == ()


def test_patch_replacement_and_wrapper_call_of_the_original(run_check):
    src = """
        from pv.m import Runner
        original = Runner.step
        def step(self, batch):
            return original(self, batch, 1, 2)
        Runner.step = step
    """
    result = run_check(PROVIDER, consumer(src))
    assert [(f.rule.value, f.severity.value, f.symbol, [str(s) for s in f.sites]) for f in result.findings] == [
        ("arity-drift", "error", "pv.m:Runner.step", ["plug/mod.py:4"]),
        ("arity-drift", "warning", "pv.m:Runner.step", ["plug/mod.py:5"]),
    ]
    finding, narrow = result.findings
    # The wrapper's own call of the original is what fails; a narrower replacement that no real call
    # misses is only a warning (each site keeps its own verdict).
    assert "passes 4 positional argument(s); the signature takes at most 3" in finding.message
    assert "no call found in the provider or the consumer fails" in narrow.message
    narrower = src.replace("original(self, batch, 1, 2)", "original(self, batch)")
    [warning] = run_check(PROVIDER, consumer(narrower)).findings
    assert (warning.rule.value, warning.severity.value, [str(s) for s in warning.sites]) == (
        "arity-drift",
        "warning",
        ["plug/mod.py:5"],
    )
    assert "Original (self, batch, max_len=…); replacement (self, batch)" in warning.message
    ok = """
        from pv.m import Runner
        original = Runner.step
        def step(self, batch, max_len=None):
            return original(self, batch, max_len)
        Runner.step = step
    """
    assert run_check(PROVIDER, consumer(ok)).findings == ()


# -- suggest --------------------------------------------------------------------------


def test_suggest_on_two_small_releases(tmp_path: Path):
    suggestions, removed = suggest(index(tmp_path, "old", OLD), index(tmp_path, "new", NEW))
    best = {s.old: (s.best[1].symbol, s.best[2]) for s in suggestions}  # type: ignore[index]
    assert best == {
        "pv.utils:pool_bytes": ("pv.planning:pool_bytes", "same name in another module"),
        "pv.utils:old_name": ("pv.utils:new_name", "renamed to new_name with the same parameters"),
        "pv.utils:Runner": ("pv.planning:Runner", "same name in another module"),
        "pv.utils:Runner.step": ("pv.planning:Runner.step", "same name in another module"),
    }
    assert removed == ["pv.utils:removed"]


def test_suggest_moves_no_method_to_a_class_of_that_name_that_was_there_before(tmp_path: Path):
    """vLLM 0.33 had two `GPUModelRunner`s (`v1.worker.gpu_model_runner` and the rewrite in
    `v1.worker.gpu.model_runner`); 0.34 removed the first. Its class was rightly not said to have
    moved to the second, which stood there before, but its methods were ("same class in another
    module"): a table taking that would judge the consumer's patches against another class."""
    runner = "class Runner:\n    def step(self, batch):\n        return batch\n"
    old = {"pv/__init__.py": "", "pv/old_runner.py": runner, "pv/runner.py": runner.replace("batch", "b")}
    new = {"pv/__init__.py": "", "pv/runner.py": runner.replace("batch", "b")}
    suggestions, removed = suggest(index(tmp_path, "old", old), index(tmp_path, "new", new))
    assert suggestions == [] and removed == ["pv.old_runner:Runner", "pv.old_runner:Runner.step"]


def test_suggest_for_a_consumers_symbols_reads_only_the_files_that_can_answer(tmp_path: Path):
    """Asked about some symbols (a consumer's), the suggestions are those every definition gives
    for them, but only files that write a vanished symbol's first name, and its module, are
    parsed (vLLM 0.33 to 0.34 for ATOM: 3.2 s instead of 40 s, cold, the same table)."""
    filler = {f"pv/filler_{i}.py": f"def f{i}(x):\n    return x\n" for i in range(30)}
    old, new = {**OLD, **filler}, {**NEW, **filler}
    full, full_removed = suggest(index(tmp_path, "old_a", old), index(tmp_path, "new_a", new))
    asked = ["pv.utils:pool_bytes", "pv.utils:Runner.step", "pv.utils:removed", "pv.utils:stays", "pv.filler_3:f3"]
    old_index, new_index = index(tmp_path, "old_b", old), index(tmp_path, "new_b", new)
    some, some_removed = suggest(old_index, new_index, asked)
    assert some == [s for s in full if s.old in asked] and some_removed == [r for r in full_removed if r in asked]
    assert [s.old for s in some] == ["pv.utils:Runner.step", "pv.utils:pool_bytes"]
    assert old_index.parsed + new_index.parsed < 10  # of 66 modules


def test_suggest_cli_prints_a_table_that_parses(tmp_path: Path):
    old = write_files(tmp_path / "old", OLD)
    new = write_files(tmp_path / "new", {**NEW, "pv/__init__.py": '__version__ = "0.33.0"\n'})
    result = runner.invoke(
        app, ["relocations", "suggest", "-", str(old), str(new), "--cache-dir", str(tmp_path / "cache")]
    )
    assert result.exit_code == 0, result.output
    table = parse_table(result.output, "draft.toml")
    assert table.applies == ">=0.33.0"
    entry = next(e for e in table.moved if e.old == "pv.utils:pool_bytes")
    assert (entry.new, entry.params) == ("pv.planning:pool_bytes", ("config", "groups"))
    assert "gained config as first parameter" in entry.note
    assert "#   pv.utils:removed" in result.output


def test_suggest_cli_on_a_git_repository_with_a_consumer(tmp_path: Path):
    from atompin.testing import git_repo

    repo = git_repo(tmp_path / "repo", [("v1.0", OLD), ("v2.0", NEW)])
    plug = write_files(tmp_path / "plug", {"plug/__init__.py": "from pv.utils import pool_bytes, stays\n"})
    result = runner.invoke(
        app,
        [
            "relocations",
            "suggest",
            str(repo),
            "v1.0",
            "v2.0",
            "--consumer",
            str(plug),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 0, result.output
    table = parse_table(result.output, "draft.toml")
    assert [e.old for e in table.moved] == ["pv.utils:pool_bytes"]
    assert table.applies == ">=2.0"


def test_the_shipped_tables_parse_and_cover_the_moves():
    root = Path(__file__).parent.parent / "relocations" / "vllm"
    t33 = parse_table((root / "0.33.toml").read_text(), "0.33.toml")
    assert t33.applies_to("0.33.0") and not t33.applies_to("0.32.0")
    names = {e.old.split(":")[1] for e in t33.moved}
    assert names == {
        "get_kv_cache_groups",
        "get_kv_cache_config_from_groups",
        "_max_memory_usage_bytes_from_groups",
        "_pool_bytes_per_block",
        "get_kv_cache_configs",
        "_auto_fit_max_model_len",
        "may_override_num_blocks",
    }
    pool = next(e for e in t33.moved if e.old.endswith(":_pool_bytes_per_block"))
    assert pool.params == ("vllm_config", "kv_cache_groups")
    t32 = parse_table((root / "0.32.toml").read_text(), "0.32.toml")
    assert t32.applies_to("0.32.0") and not t32.applies_to("0.33.0")


# ATOM's shape: a helper handed each class patches it with a wrapper closing over the original.
HANDED = """
    import functools

    def _patch(layer):
        orig = layer.step

        @functools.wraps(orig)
        def wrapped(self, batch, max_len=None):
            return orig(self, batch, max_len)

        layer.step = wrapped

    def register():
        from pv.m import Runner
        _patch(Runner)
"""


def test_a_wrapper_made_in_a_helper_for_the_class_handed_to_it_calls_that_class_original(run_check):
    narrower = {**PROVIDER, "pv/m.py": "class Runner:\n    def step(self, batch):\n        return batch\n"}
    [finding] = run_check(narrower, consumer(HANDED)).findings
    assert (finding.rule.value, finding.severity.value, finding.symbol) == ("arity-drift", "error", "pv.m:Runner.step")
    assert [str(s) for s in finding.sites] == ["plug/mod.py:8"]
    assert "passes 3 positional argument(s); the signature takes at most 2" in finding.message
    # Where the original takes what the wrapper passes, nothing is said.
    assert run_check(PROVIDER, consumer(HANDED)).findings == ()


def test_a_call_whose_positional_arguments_fill_other_parameters_since_the_baseline_is_an_error(run_check):
    """No TypeError: the values land in the wrong parameters (a parameter inserted before them).
    Judged against the baseline: without one nothing says which binding was meant."""
    before = {
        "pv/__init__.py": "",
        "pv/m.py": """
            def reduce(out, lse, final_output, final_lse=None):
                pass
            def renamed(x, lse):
                pass
            class Runner:
                def step(self, batch, max_len=None):
                    return batch
        """,
    }
    after = {
        "pv/__init__.py": "",
        "pv/m.py": """
            def reduce(out, lse, num_splits=1, final_output=None, final_lse=None):
                pass
            def renamed(x_fp4, lse):
                pass
            class Runner:
                def step(self, batch, num_tokens, max_len=None):
                    return batch
        """,
    }
    src = """
        from pv.m import reduce, renamed, Runner

        def run(runner: Runner, o, l, f, s):
            reduce(o, l, f, s)
            reduce(o, l, final_output=f)
            renamed(o, l)
            runner.step(o, 8)
    """
    assert brief(run_check(after, consumer(src))) == []
    result = run_check(after, consumer(src), baseline=before)
    assert brief(result) == [
        ("arity-drift", "error", "pv.m:Runner.step", ["plug/mod.py:7"]),
        ("arity-drift", "error", "pv.m:reduce", ["plug/mod.py:4"]),
    ]
    [direct] = [f for f in result.findings if f.symbol == "pv.m:reduce"]
    assert "the argument that filled final_output now fills num_splits" in direct.message
    assert "the argument that filled final_lse now fills final_output" in direct.message
    [receiver] = [f for f in result.findings if f.symbol == "pv.m:Runner.step"]
    assert "the argument that filled max_len now fills num_tokens" in receiver.message


def test_aiter_kernel_stubs_keep_their_signature(run_check):
    """aiter's `@compile_ops(...)` wrapper binds each call to the stub's signature before it runs
    the compiled op: a call that does not fit it fails. Another decorator leaves it unknown."""
    provider = {
        "pv/__init__.py": "",
        "pv/ops.py": """
            from pv.jit import compile_ops, jit_other

            @compile_ops("module_mla_reduce", develop=True)
            def mla_reduce(partial_output, partial_lse, final_output):
                ...

            @jit_other("module_other")
            def other(x):
                ...
        """,
        "pv/jit.py": "def compile_ops(name, develop=False):\n    return lambda f: f\n\njit_other = compile_ops\n",
    }
    src = """
        from pv.ops import mla_reduce, other
        mla_reduce(1, 2)
        other(1, 2)
    """
    assert brief(run_check(provider, consumer(src))) == [
        ("arity-drift", "error", "pv.ops:mla_reduce", ["plug/mod.py:2"])
    ]


def test_a_call_under_a_version_gate_false_at_the_baseline_is_not_judged_against_it(run_check):
    """vllm-ascend 0.23 defines its MoE runner for later vLLMs under `else:` of `if
    vllm_version_is("0.23.0")`, with the later signature's order: that code never ran at the
    baseline, so the baseline's binding says nothing of what it means. With no baseline version
    known the gate is undecided there: not judged either."""

    def provider(version: str, params: str) -> dict[str, str]:
        return {
            "pv/__init__.py": f'__version__ = "{version}"\n',
            "pv/m.py": f"""
                def reduce({params}):
                    pass
                class Runner:
                    def __init__(self, {params}):
                        pass
            """,
        }

    before, after = provider("1.0.0", "out, final=None"), provider("2.0.0", "out, splits=1, final=None")
    src = """
        import pv
        from pv.m import Runner, reduce

        if pv.__version__ == "1.0.0":
            pass
        else:
            class MyRunner(Runner):
                def __init__(self, out, splits):
                    super().__init__(out, splits)

            def run(o, s):
                reduce(o, s)
    """

    def drift(result: CheckResult) -> list[str]:
        return [symbol for rule, _, symbol, _ in brief(result) if rule == "arity-drift"]

    gated = run_check(after, consumer(src), version="2.0.0", baseline=before, baseline_version="1.0.0")
    assert drift(gated) == []
    assert drift(run_check(after, consumer(src), version="2.0.0", baseline=before)) == []
    # The same code with no gate ran at the baseline: both calls shift.
    plain = src.replace('if pv.__version__ == "1.0.0":\n            pass\n        else:\n', "if True:\n")
    result = run_check(after, consumer(plain), version="2.0.0", baseline=before, baseline_version="1.0.0")
    assert drift(result) == ["pv.m:Runner.__init__", "pv.m:reduce"]


def test_calls_of_one_function_failing_differently_are_told_apart(run_check):
    """ATOM calls aiter's `moe_gemm_a4w4` twice with eight positional arguments, then
    `gather_indx=` in one call and `scatter_indx=` in the other: each message says its own."""
    src = """
        from pv.m import pool
        pool(1, 2, vllm_config=3)
        pool(1, 2, groups=3)
        pool(4, 5, groups=6)
    """
    result = run_check(PROVIDER, consumer(src))
    found = sorted((f.sites, f.message.split(":")[0]) for f in result.findings if f.rule.value == "arity-drift")
    assert [(tuple(str(s) for s in sites), why) for sites, why in found] == [
        (("plug/mod.py:2",), "the call passes 'vllm_config' both by position and by keyword"),
        (("plug/mod.py:3", "plug/mod.py:4"), "the call passes 'groups' both by position and by keyword"),
    ]
