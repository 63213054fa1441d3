"""A Triton launch of a provider kernel, `kernel[grid](...)`, binds its arguments to the kernel's
parameters (vllm-ascend 0.24.0rc1 launches vLLM's `_compute_slot_mapping_kernel` with two constants
only vLLM main's kernel takes, added to the launch's `**kwargs` where a version gate fails)."""

from __future__ import annotations

from test_version_gates import HELPER, PROVIDER

KERNEL = """
import triton
import triton.language as tl

@triton.jit(do_not_specialize=["n"])
def slot_kernel(n, ptr, PAD_ID: tl.constexpr, BLOCK: tl.constexpr = 1024):
    pass

@triton.autotune(configs=[], key=["n"])
@triton.jit
def tuned_kernel(n, ptr, BLOCK: tl.constexpr):
    pass

def plain(n, ptr):
    pass
"""
PROVIDER_AT = {**PROVIDER, "pv/kernels.py": KERNEL}
BASELINE = {**PROVIDER_AT, "pv/version.py": '__version__ = "0.25.0"\n__version_tuple__ = (0, 25, 0)\n'}


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/utils.py": HELPER, "plug/mod.py": source}


def arity(found) -> list[tuple[str, str, str]]:
    return sorted((f.severity.value, str(f.sites[0]), f.message) for f in found.findings if f.rule.value == "arity-drift")


LAUNCHES = """
    from plug.utils import pv_version_is
    from pv.kernels import slot_kernel, tuned_kernel

    def compute(n, ptr):
        kw = {"PAD_ID": -1}
        if not pv_version_is("0.25.0"):
            kw.update(KV_BLOCK=16)
        slot_kernel[(n,)](n, ptr, **kw)
"""


def test_a_launch_passing_a_constant_the_kernel_lacks_is_an_error_where_it_runs(run_check):
    found = run_check(PROVIDER_AT, consumer(LAUNCHES), version="0.25.1", baseline=BASELINE, baseline_version="0.25.0")
    [(severity, site, message)] = arity(found)
    assert (severity, site) == ("error", "plug/mod.py:8")
    assert message.startswith("the launch passes KV_BLOCK=, which the kernel does not take")
    assert arity(run_check(BASELINE, consumer(LAUNCHES), version="0.25.0")) == []


def test_a_launch_is_bound_like_a_call_but_launch_options_pass(run_check):
    source = """
        from pv import kernels
        from pv.kernels import slot_kernel, tuned_kernel

        def compute(n, ptr, grid):
            slot_kernel[grid](n, ptr, PAD_ID=0, num_warps=4, num_stages=2)   # options: fine
            slot_kernel[grid](n, ptr)                                        # PAD_ID missing
            kernels.slot_kernel[grid](n, ptr, 0, 64, 5)                      # one too many
            tuned_kernel[grid](n, ptr)                                       # BLOCK from its configs
            tuned_kernel[grid](n, ptr, GROUP=8)                              # not a parameter
    """
    problems = [(site, message.split(":")[0]) for _, site, message in arity(run_check(PROVIDER_AT, consumer(source)))]
    assert problems == [
        ("plug/mod.py:6", "the launch does not pass the required PAD_ID (its positional arguments bind to n, ptr)"),
        ("plug/mod.py:7", "the launch passes 5 positional argument(s); the kernel takes at most 4"),
        ("plug/mod.py:9", "the launch passes GROUP=, which the kernel does not take"),
    ]


def test_what_is_not_a_jit_kernel_is_not_judged_as_a_launch(run_check):
    source = """
        from pv.kernels import plain
        from pv import kernels

        def compute(n, ptr, grid, table):
            plain[grid](n, ptr, EXTRA=1)     # not a kernel: what a subscript of it is, is not known
            table[0](n)
    """
    assert arity(run_check(PROVIDER_AT, consumer(source))) == []
