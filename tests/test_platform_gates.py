"""Tests of the platform in the provider's own code: a call it makes only on other platforms
cannot reach a consumer running on this one."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from atompin.analysis.import_gates import ImportGates
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.platform_gates import PlatformGates, platform_test
from atompin.analysis.platforms import PLATFORMS
from atompin.analysis.results import check_trees
from atompin.model import CheckResult
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files

ALL = frozenset(PLATFORMS)
IN_TREE = ALL - {"oot"}


@pytest.mark.parametrize(
    ("test", "holds", "fails"),
    [
        ("current_platform.is_cuda()", {"cuda"}, ALL - {"cuda"}),
        ("not current_platform.is_rocm()", ALL - {"rocm"}, {"rocm"}),
        ("vllm.platforms.current_platform.is_cuda_alike()", {"cuda", "rocm"}, ALL - {"cuda", "rocm"}),
        # ROCm names its device "cuda" too; one out of tree may name its own anything.
        ('current_platform.device_type == "cuda"', {"cuda", "rocm"}, IN_TREE - {"cuda", "rocm"}),
        ('"tpu" == current_platform.device_type', {"tpu"}, IN_TREE - {"tpu"}),
        ('current_platform.device_type != "tpu"', IN_TREE - {"tpu"}, {"tpu"}),
        ('current_platform.device_type in ("cpu", "xpu")', {"cpu", "xpu"}, IN_TREE - {"cpu", "xpu"}),
        ('current_platform.device_type == "npu"', set(), IN_TREE),
        ("torch.version.hip is not None", {"rocm"}, ALL - {"rocm"}),
        ("torch.version.cuda is None", ALL - {"cuda"}, {"cuda"}),
        ("torch.version.hip", {"rocm"}, ALL - {"rocm"}),
        # Beside a test of anything else: what the platform alone decides.
        ("current_platform.is_cuda() and use_fp8", set(), ALL - {"cuda"}),
        ("current_platform.is_rocm() or use_triton", {"rocm"}, set()),
        ("current_platform.is_cuda() or current_platform.is_rocm()", {"cuda", "rocm"}, ALL - {"cuda", "rocm"}),
        # Anything else says nothing.
        ("use_fp8", set(), set()),
        ("other.is_cuda()", set(), set()),
        ("current_platform.is_device_capability(90)", set(), set()),
        ("current_platform.is_cuda(0)", set(), set()),
        ("current_platform.device_type == kind", set(), set()),
        ("torch.version.git_version", set(), set()),
    ],
)
def test_what_a_test_of_the_provider_says_of_the_platform(test, holds, fails):
    found = platform_test(ast.parse(test, mode="eval").body)
    assert (found.holds, found.fails) == (frozenset(holds), frozenset(fails))


GATED = """
from vllm.platforms import current_platform

def a(x):
    if current_platform.is_cuda():
        x.cuda_only()
    elif current_platform.is_rocm():
        x.rocm_only()
    else:
        x.neither()
    x.anywhere()

def b(x):
    if not current_platform.is_rocm():
        return None
    x.after_return()
    for y in x:
        if current_platform.device_type != "tpu":
            continue
        y.tpu_only()
    x.after_loop()

def c(x):
    if torch.version.hip is None:
        raise RuntimeError("ROCm only")
    else:
        x.in_else()
    x.after_raise()

if current_platform.is_cuda_alike():
    def d(x):
        x.in_gated_def()

def e(x):
    if flag:
        return None
    x.after_other_test()
    return current_platform.is_cuda() and x.in_the_test()

def f(x):
    x.before_assert()
    assert current_platform.is_cuda_alike(), "CUDA or ROCm only"
    x.after_assert()
"""


def test_the_platforms_each_call_of_a_file_does_not_run_on():
    source = dedent(GATED)
    tree = ast.parse(source)
    gates = PlatformGates.read(tree, source.encode())
    never = {
        node.func.attr: set(gates.never(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("x", "y")
    }
    assert never == {
        "cuda_only": ALL - {"cuda"},
        "rocm_only": ALL - {"rocm"},
        "neither": {"cuda", "rocm"},
        "anywhere": set(),
        "after_return": ALL - {"rocm"},
        # The `if` inside the loop narrows what follows it there, under what narrowed the loop.
        "tpu_only": ALL - {"rocm"} | {"rocm"},
        "after_loop": ALL - {"rocm"},
        "in_else": ALL - {"rocm"},
        "after_raise": ALL - {"rocm"},
        "in_gated_def": ALL - {"cuda", "rocm"},
        "after_other_test": set(),
        # Only statements are narrowed: a call inside the test itself is not.
        "in_the_test": set(),
        "before_assert": set(),
        "after_assert": ALL - {"cuda", "rocm"},
    }
    # A file that never writes a test of the platform is not walked.
    assert PlatformGates.read(tree, b"def a(): pass\n").never(tree.body[0]) == ()


# The provider's pool gained `evict_first=`; the consumer's wrapper did not.
POOL_A = {"pv/pool.py": "class Pool:\n    def free(self, blocks):\n        return None\n"}
PLATFORMS_MODULE = {
    "pv/platforms.py": "class Platform:\n    def is_cuda(self):\n        return True\n\ncurrent_platform = Platform()\n"
}
DRAIN = """
from pv.platforms import current_platform

def drain(pools, blocks):
    if not current_platform.is_cuda():
        return
    for pool in pools:
        pool.free(blocks, evict_first=True)
"""
POOL_B = {
    **PLATFORMS_MODULE,
    "pv/pool.py": "class Pool:\n    def free(self, blocks, evict_first=False):\n        return None\n",
    "pv/drain.py": DRAIN,
}
WRAPPER = """
from pv.pool import Pool

original = Pool.free

def free(self, blocks):
    return original(self, blocks)

Pool.free = free
"""


def check(provider: dict[str, str], baseline: dict[str, str], platform: str | None) -> CheckResult:
    c = MemoryTree(dedent_files({"plug/__init__.py": "", "plug/mod.py": WRAPPER}), "consumer")
    p = MemoryTree(dedent_files({"pv/__init__.py": "", **provider}), "provider")
    b = MemoryTree(dedent_files({"pv/__init__.py": "", **baseline}), "baseline")
    return check_trees(c, p, "pv", "plug", baseline=b, baseline_label="1.0", platform=platform)


def errors(result: CheckResult) -> list[tuple[str, str]]:
    return [(f.rule.value, f.symbol) for f in result.findings if f.severity.value == "error"]


def test_a_call_the_provider_makes_only_on_other_platforms_breaks_nothing_here():
    broken = [("arity-drift", "pv.pool:Pool.free")]
    assert errors(check(POOL_B, POOL_A, None)) == broken
    assert errors(check(POOL_B, POOL_A, "cuda")) == broken
    assert errors(check(POOL_B, POOL_A, "rocm")) == []


# A subclass's call of the replaced method itself (found through the class, not by the name
# and the keyword), made only on the CPU.
CPU_POOL = """
    from pv.platforms import current_platform
    from pv.pool import Pool

    class CpuPool(Pool):
        def free(self, blocks, evict_first=False):
            if current_platform.is_cpu():
                return super().free(blocks, evict_first=evict_first)
            return None
"""
UNGATED_CPU_POOL = CPU_POOL.replace("if current_platform.is_cpu():\n                return", "return")


def test_a_call_of_the_replaced_method_itself_under_a_test_of_the_platform():
    provider = {**POOL_B, "pv/drain.py": "", "pv/cpu_pool.py": CPU_POOL}
    [finding] = [f for f in check(provider, POOL_A, None).findings if f.severity.value == "error"]
    assert "cannot take the real call at pv/cpu_pool.py:7" in finding.message
    assert errors(check(provider, POOL_A, "cpu")) == [("arity-drift", "pv.pool:Pool.free")]
    assert errors(check(provider, POOL_A, "rocm")) == []


def test_a_call_the_baseline_made_only_on_other_platforms_is_new_here():
    """At the baseline the provider passed `evict_first=` on the CPU alone, which the wrapper
    never took: on ROCm it worked. Now the call is made everywhere: on ROCm that is new."""
    baseline = {**POOL_B, "pv/drain.py": "", "pv/cpu_pool.py": CPU_POOL}
    pin = {**POOL_B, "pv/drain.py": "", "pv/cpu_pool.py": UNGATED_CPU_POOL}
    assert errors(check(pin, baseline, "rocm")) == [("arity-drift", "pv.pool:Pool.free")]
    # Without a platform, or on the CPU, the call was made at the baseline too, where the consumer works.
    for platform in (None, "cpu"):
        [finding] = check(pin, baseline, platform).findings
        assert finding.severity.value == "warning"
        assert "it fails at the baseline too" in finding.message


# vLLM's per-vendor model folders: the package's `__init__` imports one per platform.
VENDOR = {
    **POOL_B,
    "pv/drain.py": "",
    "pv/models/__init__.py": "",
    "pv/models/big/__init__.py": """
        from typing import TYPE_CHECKING

        from pv.platforms import current_platform

        if TYPE_CHECKING:
            from .nvidia.model import Model
        elif current_platform.is_cuda():
            from .nvidia.model import Model
        else:
            from .generic import Model
    """,
    "pv/models/big/generic.py": "class Model:\n    pass\n",
    "pv/models/big/nvidia/__init__.py": '"""The CUDA kernels of pv.models.big.nvidia.model."""\n',
    "pv/models/big/nvidia/model.py": """
        from .kernels import drain

        class Model:
            def free(self, pool, blocks):
                drain(pool, blocks)
    """,
    # Imported only by the CUDA model: not on ROCm either.
    "pv/models/big/nvidia/kernels.py": """
        def drain(pool, blocks):
            pool.free(blocks, evict_first=True)
    """,
}


def vendor_errors(platform: str | None, **changed: str) -> list[tuple[str, str]]:
    return errors(check({**VENDOR, **changed}, POOL_A, platform))


def test_a_call_in_a_module_imported_only_on_other_platforms_breaks_nothing_here():
    broken = [("arity-drift", "pv.pool:Pool.free")]
    assert vendor_errors(None) == broken
    assert vendor_errors("cuda") == broken
    assert vendor_errors("rocm") == []


@pytest.mark.parametrize(
    "changed",
    [
        # A registry naming the module by its dotted path may import it anywhere.
        {"pv/registry.py": 'MODELS = {"Big": "pv.models.big.nvidia.model:Model"}\n'},
        # So may a lazy `__getattr__` anywhere in the package (`import_module(f".{name}", ...)`).
        {
            "pv/models/big/nvidia/__init__.py": (
                "import importlib\n_LAZY = {'Model': 'model'}\n\n"
                "def __getattr__(name):\n    return importlib.import_module(f'.{_LAZY[name]}', __name__)\n"
            )
        },
        # An import on every platform, in a module imported on every platform.
        {"pv/models/big/generic.py": "from .nvidia.model import Model as Fast\n"},
        # One from a folder below the module's, which need not write the folder's name.
        {
            "pv/models/big/generic.py": "from .nvidia.ops.fast import drain\n",
            "pv/models/big/nvidia/ops/__init__.py": "",
            "pv/models/big/nvidia/ops/fast.py": "from ..kernels import drain\n",
        },
    ],
)
def test_a_module_that_may_be_imported_elsewhere_counts_everywhere(changed):
    assert vendor_errors("rocm", **changed) == [("arity-drift", "pv.pool:Pool.free")]


def test_a_module_the_consumer_imports_itself_counts_everywhere():
    c = MemoryTree(
        dedent_files(
            {"plug/__init__.py": "", "plug/mod.py": WRAPPER + "\nfrom pv.models.big.nvidia.model import Model\n"}
        ),
        "consumer",
    )
    p = MemoryTree(dedent_files({"pv/__init__.py": "", **VENDOR}), "provider")
    b = MemoryTree(dedent_files({"pv/__init__.py": "", **POOL_A}), "baseline")
    result = check_trees(c, p, "pv", "plug", baseline=b, baseline_label="1.0", platform="rocm")
    assert errors(result) == [("arity-drift", "pv.pool:Pool.free")]


def test_the_platforms_that_never_import_a_module():
    tree = MemoryTree(dedent_files({"pv/__init__.py": "", **VENDOR}), "provider")
    search = NameSearch(tree, "pv")
    gates = ImportGates(tree, lambda word: search.files_reading([word]))
    not_cuda = ALL - {"cuda"}
    assert gates.never("pv/models/big/nvidia/model.py") == not_cuda
    assert gates.never("pv/models/big/nvidia/kernels.py") == not_cuda
    assert gates.never("pv/models/big/generic.py") == {"cuda"}
    # Neither a package nor a module outside a package testing the platform is asked about.
    assert gates.never("pv/models/big/nvidia/__init__.py") == frozenset()
    assert gates.never("pv/pool.py") == frozenset()


def test_a_provider_in_the_src_layout_has_its_importers_found():
    files = {f"src/{path}": text for path, text in {"pv/__init__.py": "", **VENDOR}.items()}
    tree = MemoryTree(dedent_files({"pyproject.toml": "[project]\nname = 'pv'\n", **files}), "provider")
    assert tree.package_root == "src/"
    search = NameSearch(tree, "pv")
    gates = ImportGates(tree, lambda word: search.files_reading([word]))
    # Its own folder's imports (`from .kernels import drain`) are found there too.
    assert gates.never("src/pv/models/big/nvidia/kernels.py") == ALL - {"cuda"}


def test_a_string_naming_a_module_counts_where_it_is_written():
    """A table of dotted paths in a module imported only on CUDA names the kernels there alone."""
    gated = {
        "pv/models/big/nvidia/model.py": VENDOR["pv/models/big/nvidia/model.py"].replace(
            "from .kernels import drain", "from .kernels import drain\n        from .table import KERNELS"
        ),
        "pv/models/big/nvidia/table.py": 'KERNELS = ["pv.models.big.nvidia.kernels"]\n',
    }
    assert vendor_errors("rocm", **gated) == []
    # Held in a module imported everywhere, it may be imported anywhere.
    everywhere = {"pv/models/big/generic.py": 'class Model:\n    KERNELS = ["pv.models.big.nvidia.kernels"]\n'}
    assert vendor_errors("rocm", **everywhere) == [("arity-drift", "pv.pool:Pool.free")]


def test_a_star_import_of_the_folder_may_import_the_module():
    """`from .nvidia import *` imports what `nvidia/__init__.py`'s `__all__` names, submodules too."""
    star = {"pv/models/big/generic.py": "from .nvidia import *\n"}
    assert vendor_errors("rocm", **star) == [("arity-drift", "pv.pool:Pool.free")]
