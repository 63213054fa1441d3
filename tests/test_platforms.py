"""Tests of the platform: code under a test of it runs only where the test holds."""

from __future__ import annotations

import pytest

from atompin.analysis.platforms import PLATFORMS, UNKNOWN, PlatformTest, platform_error
from atompin.analysis.results import check_trees
from atompin.model import CheckResult
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files

PROVIDER = {
    "pv/__init__.py": "",
    "pv/platforms/__init__.py": """
        class Platform:
            def is_cuda(self): return False
            def is_rocm(self): return False
            def is_cuda_alike(self): return False
        current_platform = Platform()
    """,
    "pv/kept.py": "def helper(): pass\n",
}

# Each import of a module the provider lacks sits under a test of the platform.
CONSUMER = {
    "plug/__init__.py": "",
    "plug/backends.py": """
        import torch
        from pv.platforms import current_platform

        if current_platform.is_rocm():
            from pv.kept import helper
        else:
            from pv.cuda_only import cuda_kernel

        if not current_platform.is_cuda_alike():
            from pv.cpu_only import cpu_kernel

        def _is_rocm() -> bool:
            \"\"\"Are we on ROCm?\"\"\"
            return torch.version.hip is not None

        def pick():
            if _is_rocm():
                return helper
            from pv.flashinfer_only import sparse
            return sparse

        def not_hip():
            if not torch.version.hip:
                from pv.not_hip import nothing
                return nothing
            return None

        def other():
            if torch.version.cuda:
                from pv.cuda_build import thing
                return thing
            if current_platform.is_rocm() or current_platform.is_cuda():
                return None
            from pv.neither import other_thing
            return other_thing

        def mixed(use_triton):
            if current_platform.is_cuda() and use_triton:
                from pv.cuda_triton import kernel
                return kernel
            if current_platform.is_rocm() or use_triton:
                return None
            from pv.not_rocm import fallback
            return fallback
    """,
}

ON_ANY = {
    "pv.cuda_only",
    "pv.cpu_only",
    "pv.flashinfer_only",
    "pv.cuda_build",
    "pv.neither",
    "pv.cuda_triton",
    "pv.not_rocm",
    "pv.not_hip",
}


def _errors(consumer: dict[str, str], platform: str | None) -> list[str]:
    """The symbols of the error findings of `consumer` checked against PROVIDER on `platform`."""
    result: CheckResult = check_trees(
        MemoryTree(dedent_files(consumer), "consumer"),
        MemoryTree(dedent_files(PROVIDER), "provider"),
        "pv",
        "plug",
        platform=platform,
    )
    return [f.symbol for f in result.findings if f.severity.value == "error"]


def _missing(platform: str | None) -> set[str]:
    return {symbol.split(":")[0] for symbol in _errors(CONSUMER, platform)}


@pytest.mark.parametrize(
    ("platform", "reported"),
    [
        (None, ON_ANY),  # any platform may run any branch: every missing module is an error, as before
        ("rocm", set()),
        (
            "cuda",
            {"pv.cuda_only", "pv.flashinfer_only", "pv.cuda_build", "pv.cuda_triton", "pv.not_rocm", "pv.not_hip"},
        ),
        ("cpu", {"pv.cuda_only", "pv.cpu_only", "pv.flashinfer_only", "pv.neither", "pv.not_rocm", "pv.not_hip"}),
    ],
)
def test_what_runs_only_on_other_platforms_is_not_reported(platform: str | None, reported: set[str]) -> None:
    assert _missing(platform) == reported


def test_a_platform_test_negates_and_combines_with_tests_of_anything_else() -> None:
    rocm = PlatformTest.exact(frozenset({"rocm"}), "is_rocm()")
    cuda = PlatformTest.exact(frozenset({"cuda"}), "is_cuda()")
    others = frozenset(PLATFORMS) - {"rocm"}
    assert rocm.negated("not is_rocm()") == PlatformTest(others, frozenset({"rocm"}), "not is_rocm()")
    assert rocm.either(cuda, "a or b").holds == {"rocm", "cuda"}
    assert rocm.both(cuda, "a and b").fails == frozenset(PLATFORMS)
    # `is_rocm() or use_triton` surely holds on ROCm, and nowhere surely fails;
    # `is_rocm() and use_triton` surely fails elsewhere, and nowhere surely holds.
    assert rocm.either(UNKNOWN, "") == PlatformTest(frozenset({"rocm"}), frozenset(), "")
    assert rocm.both(UNKNOWN, "") == PlatformTest(frozenset(), others, "")


def test_an_unknown_platform_is_refused_with_the_known_ones() -> None:
    assert platform_error("rocm") is None
    problem = platform_error("ROCm")
    assert problem is not None and "'ROCm'" in problem and "rocm" in problem and "cuda" in problem


def test_check_takes_the_platform_and_refuses_an_unknown_one(tmp_path) -> None:
    from typer.testing import CliRunner

    from atompin.cli import app
    from atompin.testing import write_files

    runner = CliRunner()
    provider, consumer = write_files(tmp_path / "p", PROVIDER), write_files(tmp_path / "c", CONSUMER)
    base = ["check", str(consumer), str(provider), "--package", "pv", "--cache-dir", str(tmp_path / "cache")]
    assert runner.invoke(app, base).exit_code == 1  # the imports of other platforms' modules
    on_rocm = runner.invoke(app, [*base, "--platform", "rocm"])
    assert on_rocm.exit_code == 0, on_rocm.output
    bad = runner.invoke(app, [*base, "--platform", "ROCm"])
    assert bad.exit_code == 2
    assert "--platform: unknown platform 'ROCm': expected one of cpu, cuda, oot, rocm, tpu, xpu" in bad.output


SMALL_MANIFEST = """\
[fleet]
gpu-archs = ["gfx942"]
{platform}
[components.plug]
repo = "repos/plug"
package = "plug"

[components.pv]
repo = "repos/pv"
package = "pv"

[[checks]]
consumer = "plug"
provider = "pv"

[[pairs]]
name = "p"
plug = "v0.1"
pv = "v1.0"
"""


def test_the_lock_judges_every_edge_on_the_fleet_s_platform(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from atompin import lockfile
    from atompin.cli import app
    from atompin.testing import git_repo

    runner = CliRunner()
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/pv", [("v1.0", dedent_files(PROVIDER))])
    git_repo(tmp_path / "repos/plug", [("v0.1", dedent_files(CONSUMER))])
    manifest = tmp_path / "pairs.toml"
    verdicts = {}
    for fleet in ("", 'platform = "rocm"\n', 'platform = "cuda"\n'):
        manifest.write_text(SMALL_MANIFEST.format(platform=fleet))
        result = runner.invoke(app, ["lock", "--manifest", str(manifest)])
        assert result.exit_code in (0, 1), result.output
        pair = lockfile.read(tmp_path / "atompin.lock").pair("p")
        assert pair is not None
        verdicts[fleet] = sorted(f.symbol for f in pair.findings if f.severity == "error")
    assert len(verdicts[""]) == len(ON_ANY)
    assert verdicts['platform = "rocm"\n'] == []
    assert [s.split(":")[0] for s in verdicts['platform = "cuda"\n']] == sorted(
        {"pv.cuda_only", "pv.flashinfer_only", "pv.cuda_build", "pv.cuda_triton", "pv.not_rocm", "pv.not_hip"}
    )
    manifest.write_text(SMALL_MANIFEST.format(platform='platform = "gfx942"\n'))
    bad = runner.invoke(app, ["lock", "--manifest", str(manifest)])
    assert bad.exit_code == 2
    assert "unknown platform 'gfx942'" in bad.output and "pairs.toml" in bad.output


def test_a_test_of_the_platform_beside_a_probe_leaves_the_probe_its_say() -> None:
    """`hasattr(m, "gone") and current_platform.is_rocm()` still guards what it opens by the
    probe: the provider lacks the name, so the branch never runs, on any platform."""
    consumer = {
        "plug/__init__.py": "",
        "plug/probe.py": """
            import pv.kept as kept
            from pv.platforms import current_platform

            if hasattr(kept, "gone") and current_platform.is_rocm():
                kept.gone()
        """,
    }
    assert _errors(consumer, None) == _errors(consumer, "rocm") == []


def test_a_manifest_without_a_platform_means_what_it_meant_before_the_key() -> None:
    """Locks made before `[fleet] platform` existed stay fresh: the manifest's digest and a pair's
    meaning are those atompin computed then (the values below, from the build before the key);
    a platform changes both."""
    import hashlib
    import json

    from atompin.manifest import parse_manifest

    def meaning(text: str) -> tuple[str, str]:
        m = parse_manifest(text)
        pair = hashlib.sha256(json.dumps(m.pair_meaning(m.pairs[0]), sort_keys=True).encode()).hexdigest()
        return m.digest(), pair

    before = (
        "sha256:49c5e7fa8d4fc2aef9dd8b549bec21393582c5d968b8998263b30747270adc37",
        "7893e265236f2b17daedee278d7834649e00f60297ef0d39a8206aec9097613b",
    )
    assert meaning(SMALL_MANIFEST.format(platform="")) == before
    on_rocm = meaning(SMALL_MANIFEST.format(platform='platform = "rocm"\n'))
    assert on_rocm[0] != before[0] and on_rocm[1] != before[1]


def test_a_helper_handed_a_test_of_the_platform_answers_with_it() -> None:
    consumer = {
        "plug/__init__.py": "",
        "plug/paths.py": """
            from pv.platforms import current_platform

            def _rocm_path(on_rocm):
                return on_rocm and current_platform.is_cuda_alike()

            if not _rocm_path(current_platform.is_rocm()):
                from pv.not_rocm import fallback
        """,
    }
    assert _errors(consumer, "rocm") == []
    assert _errors(consumer, "cuda") == _errors(consumer, None) == ["pv.not_rocm:fallback"]
