"""The platforms code can test for, and what each test says about them.

An image is built for one platform (a ROCm image runs on AMD GPUs). Code under a test of the
platform (`if current_platform.is_rocm():`, `if torch.version.hip is not None:`) runs only
where the test holds: given the platform (`atompin check --platform`, `[fleet] platform` in
`pairs.toml`), a branch the platform never takes is decided as a version gate is, and what is
found only there is not reported. Without one, such a branch may run, as any other.

Pure data: the scanner reads the tests (`PlatformTest`), `conditions.judge` decides them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The platforms a test can tell apart: vLLM's own (CUDA, ROCm, TPU, XPU, CPU) and any other,
# out of tree (a plugin's platform that is none of those: Ascend, Spyre, ...).
PLATFORMS = ("cpu", "cuda", "oot", "rocm", "tpu", "xpu")

# vLLM's `current_platform.<method>()` tests: the platforms each is true on.
PLATFORM_METHODS: dict[str, frozenset[str]] = {
    "is_cuda": frozenset({"cuda"}),
    "is_rocm": frozenset({"rocm"}),
    "is_cuda_alike": frozenset({"cuda", "rocm"}),
    "is_tpu": frozenset({"tpu"}),
    "is_xpu": frozenset({"xpu"}),
    "is_cpu": frozenset({"cpu"}),
    "is_out_of_tree": frozenset({"oot"}),
}

# `torch.version.<name>`: set (not None) only in a build of torch for these platforms.
TORCH_VERSIONS: dict[str, frozenset[str]] = {
    "hip": frozenset({"rocm"}),
    "cuda": frozenset({"cuda"}),
}


@dataclass(frozen=True)
class PlatformTest:
    """A test (as written: `text`) that surely holds on the platforms `holds`, surely fails on
    those of `fails`, and may go either way on the others: `current_platform.is_rocm() or
    use_triton` surely holds on ROCm, and elsewhere depends on `use_triton`."""

    holds: frozenset[str]
    fails: frozenset[str]
    text: str

    @classmethod
    def exact(cls, platforms: frozenset[str], text: str) -> PlatformTest:
        """A test true on `platforms` and false on every other."""
        return cls(platforms, frozenset(PLATFORMS) - platforms, text)

    def negated(self, text: str) -> PlatformTest:
        return PlatformTest(self.fails, self.holds, text)

    def both(self, other: PlatformTest, text: str) -> PlatformTest:
        return PlatformTest(self.holds & other.holds, self.fails | other.fails, text)

    def either(self, other: PlatformTest, text: str) -> PlatformTest:
        return PlatformTest(self.holds | other.holds, self.fails & other.fails, text)


# What a test of anything else says of the platform: nothing.
UNKNOWN = PlatformTest(frozenset(), frozenset(), "")


def combined(both: bool, tests: list[PlatformTest], text: str) -> PlatformTest:
    """`a and b` (`both`) or `a or b` of these tests (`UNKNOWN` for a test of anything else):
    where the whole surely holds or fails, whatever the others say."""
    result = tests[0]
    for test in tests[1:]:
        result = result.both(test, text) if both else result.either(test, text)
    return PlatformTest(result.holds, result.fails, text)


def platform_error(name: str) -> str | None:
    """Why `name` is no platform atompin knows (None: it is one)."""
    if name in PLATFORMS:
        return None
    return f"unknown platform {name!r}: expected one of {', '.join(PLATFORMS)}"
