"""The built-in example: a miniature provider with two releases and a plugin
that shows the design brief's failure modes. Needs no network.

`write_demo(root)` lays the files out; `run_demo()` checks the plugin against
both releases and says what was caught and why.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from atompin.analysis.results import check_trees
from atompin.model import CheckResult, Rule, Severity, Verdict
from atompin.relocations import parse_table
from atompin.sources.tree import FolderTree
from atompin.testing import git_repo, write_files

PROVIDER = "minivllm"
CONSUMER = "miniplug"

# The provider before the move: the kv-cache helpers live in kv_cache_utils.
PROVIDER_031 = {
    "minivllm/__init__.py": '__version__ = "0.31.0"\n',
    "minivllm/v1/__init__.py": "",
    "minivllm/v1/core/__init__.py": "",
    "minivllm/v1/core/kv_cache_utils.py": """
        def get_kv_cache_groups(vllm_config, kv_cache_spec):
            return []

        def _pool_bytes_per_block(kv_cache_groups):
            return sum(g.page_size for g in kv_cache_groups)

        def may_override_num_blocks(vllm_config, num_blocks):
            return num_blocks
    """,
    "minivllm/v1/worker/__init__.py": "",
    "minivllm/v1/worker/gpu_model_runner.py": """
        class GPUModelRunner:
            def _dummy_run(self, num_tokens):
                return num_tokens
    """,
    "minivllm/v1/attention/__init__.py": "",
    "minivllm/v1/attention/prefill.py": """
        class PrefillBackend:
            def run_prefill(self, q, k, v):
                return q


        def forward_prefill(layer, q, k, v):
            return layer.prefill_backend.run_prefill(q, k, v)
    """,
}

# Two releases later: the helpers moved to kv_cache_planning (the module they
# left still exists), and _pool_bytes_per_block gained a leading parameter.
PROVIDER_033 = {
    "minivllm/__init__.py": '__version__ = "0.33.0"\n',
    "minivllm/v1/__init__.py": "",
    "minivllm/v1/core/__init__.py": "",
    "minivllm/v1/core/kv_cache_utils.py": """
        class KVCacheBlock:
            block_id: int
    """,
    "minivllm/v1/core/kv_cache_planning.py": """
        def get_kv_cache_groups(vllm_config, kv_cache_spec):
            return []

        def _pool_bytes_per_block(vllm_config, kv_cache_groups):
            return sum(g.page_size for g in kv_cache_groups)

        def may_override_num_blocks(vllm_config, num_blocks):
            return num_blocks
    """,
    "minivllm/v1/worker/__init__.py": "",
    "minivllm/v1/worker/gpu_model_runner.py": """
        class GPUModelRunnerBase:
            def _dummy_run(self, num_tokens):
                return num_tokens

        class GPUModelRunner(GPUModelRunnerBase):
            pass
    """,
    "minivllm/v1/attention/__init__.py": "",
    "minivllm/v1/attention/prefill.py": """
        class PrefillBackend:
            def run_prefill(self, q, k, v, out=None):
                return q


        def forward_prefill(layer, q, k, v, out):
            # New in 0.33: the output buffer is passed down to every prefill backend.
            return layer.prefill_backend.run_prefill(q, k, v, out=out)
    """,
}

# The plugin, written against 0.31.
CONSUMER_FILES = {
    "miniplug/__init__.py": "",
    "miniplug/register.py": """
        def register_platform():
            from miniplug.patches import install_kv_patches, install_runner_patch
            from miniplug.pool import bytes_per_block  # noqa: F401  (the platform sizes its KV cache with it)
            from miniplug.prefill import AiterPrefillBackend  # noqa: F401  (the platform's attention backend)
            install_kv_patches()
            install_runner_patch()
            return "miniplug.platform.Platform"
    """,
    "miniplug/patches.py": '''
        # Loud: an unguarded import of a name that moved. Start-up raises.
        from minivllm.v1.core.kv_cache_utils import may_override_num_blocks


        def install_kv_patches():
            """Silent: the module still imports, the names are gone, getattr(..., None) skips."""
            try:
                import minivllm.v1.core.kv_cache_utils as kcu
            except ImportError:
                return
            for name in ("get_kv_cache_groups", "_pool_bytes_per_block"):
                original = getattr(kcu, name, None)
                if original is None:
                    continue
                setattr(kcu, name, _wrap(original))


        def install_runner_patch():
            """Fine in both: the method is inherited from a new base class in 0.33."""
            from minivllm.v1.worker.gpu_model_runner import GPUModelRunner

            original = GPUModelRunner._dummy_run
            GPUModelRunner._dummy_run = _wrap(original)


        def _wrap(fn):
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper
    ''',
    "miniplug/pool.py": """
        # Arithmetic: someone fixed the import path for 0.33 and nothing else.
        try:
            from minivllm.v1.core.kv_cache_planning import _pool_bytes_per_block
        except ImportError:
            from minivllm.v1.core.kv_cache_utils import _pool_bytes_per_block


        def bytes_per_block(kv_cache_groups):
            # At 0.33 the first parameter is vllm_config: the groups land there, nothing raises.
            return _pool_bytes_per_block(kv_cache_groups)
    """,
    "miniplug/prefill.py": """
        # Override: the plugin's own prefill backend, written against 0.31's signature.
        from minivllm.v1.attention.prefill import PrefillBackend


        class AiterPrefillBackend(PrefillBackend):
            def run_prefill(self, q, k, v):
                return q
    """,
}

# The relocation table the demo ships for its provider.
DEMO_TABLE = """\
package = "minivllm"
applies = ">=0.33"

[[moved]]
old = "minivllm.v1.core.kv_cache_utils:_pool_bytes_per_block"
new = "minivllm.v1.core.kv_cache_planning:_pool_bytes_per_block"
params = ["vllm_config", "kv_cache_groups"]
note = "gained vllm_config as first parameter"

[[moved]]
old = "minivllm.v1.core.kv_cache_utils:get_kv_cache_groups"
new = "minivllm.v1.core.kv_cache_planning:get_kv_cache_groups"
params = ["vllm_config", "kv_cache_spec"]
"""


def write_demo(root: Path) -> dict[str, Path]:
    """Lay out the two provider releases and the consumer under `root`."""
    return {
        "0.31.0": write_files(root / "provider-0.31.0", PROVIDER_031),
        "0.33.0": write_files(root / "provider-0.33.0", PROVIDER_033),
        "consumer": write_files(root / "consumer", CONSUMER_FILES),
    }


DEMO_MANIFEST = """\
# The demo's pairs: one plugin release against two provider releases.
[components.miniplug]
repo = "repos/miniplug"
package = "miniplug"
declares = { minivllm = "miniplug/vllm-version.env" }

[components.minivllm]
repo = "repos/minivllm"
package = "minivllm"

[[checks]]
consumer = "miniplug"
provider = "minivllm"
gate = true

[[pairs]]
name = "miniplug-0.1.0+minivllm-0.31"
miniplug = "v0.1.0"
minivllm = "v0.31.0"

[[pairs]]
name = "miniplug-0.1.0+minivllm-0.33"
miniplug = "v0.1.0"
minivllm = "v0.33.0"
"""

CONSUMER_PYPROJECT = """\
[project]
name = "miniplug"
version = "0.1.0"
dependencies = ["packaging"]

[project.entry-points."minivllm.platform_plugins"]
miniplug = "miniplug.register:register_platform"
"""


def write_demo_repos(root: Path) -> Path:
    """Git repositories with tagged releases plus a pairs.toml under `root`; returns the manifest path."""
    provider = git_repo(root / "repos/minivllm", [("v0.31.0", PROVIDER_031), ("v0.33.0", PROVIDER_033)])
    import git

    commit_031 = git.Repo(provider).git.rev_parse("v0.31.0^{commit}")
    declares = f"VLLM_COMMIT={commit_031}\nVLLM_VERSION=0.31.0\nMINIVLLM_COMMIT={commit_031}\nMINIVLLM_VERSION=0.31.0\n"
    consumer_files = {**CONSUMER_FILES, "miniplug/vllm-version.env": declares, "pyproject.toml": CONSUMER_PYPROJECT}
    git_repo(root / "repos/miniplug", [("v0.1.0", consumer_files)])
    manifest = root / "pairs.toml"
    manifest.write_text(DEMO_MANIFEST)
    write_files(root, {"relocations/minivllm/0.33.toml": DEMO_TABLE})
    return manifest


def run_demo(echo: Callable[[str], None] = print) -> int:
    """Check the plugin against both releases, then lock, verify and export the pairs.

    Returns 0 when the demo caught what it should.
    """
    from atompin.report.text import render_findings, severity_counts

    with tempfile.TemporaryDirectory(prefix="atompin-demo-") as tmp:
        paths = write_demo(Path(tmp))
        consumer = FolderTree(paths["consumer"])
        consumer.label = "miniplug (the plugin, written against 0.31)"
        results: dict[str, CheckResult] = {}
        table = parse_table(DEMO_TABLE, "relocations/minivllm/0.33.toml")
        for version in ("0.31.0", "0.33.0"):
            provider = FolderTree(paths[version])
            provider.label = f"minivllm {version}"
            entries = [("relocations/minivllm/0.33.toml", e) for e in table.moved] if table.applies_to(version) else []
            # The plugin was written against 0.31: the drift rules compare with it.
            baseline = FolderTree(paths["0.31.0"])
            results[version] = check_trees(
                consumer, provider, PROVIDER, CONSUMER, relocations=entries, baseline=baseline, baseline_label="0.31.0"
            )
        echo("atompin demo: a miniature vLLM with two releases and a plugin written against the first.\n")
        echo("1. atompin check: the plugin's source against each provider release\n")
        for version, result in results.items():
            echo(f"== miniplug -> minivllm {version}: {severity_counts(result.findings)}")
            for line in render_findings(result.findings, indent="   "):
                echo(line)
            if not result.findings:
                echo("")
        after = results["0.33.0"]
        loud = [f for f in after.findings if f.rule is Rule.UNRESOLVED_IMPORT]
        silent = [f for f in after.findings if f.rule is Rule.MISSING_PATCH_TARGET]
        echo("What was caught, and why it matters:")
        echo(f"  loud:   {len(loud)} import(s) that raise at start-up; someone reads a traceback.")
        echo(f"  silent: {len(silent)} patch target(s) that vanished while their module survived; the guarded")
        echo("          installer skips them without a word and the engine runs unpatched code.")
        arithmetic = [f for f in after.findings if f.rule is Rule.ARITY_DRIFT]
        moved = [f for f in after.findings if f.rule is Rule.RELOCATION_STATE]
        echo(f"  arithmetic: {len(arithmetic)} call(s) that fixed only the import path of a function that also")
        echo("          gained a parameter: the groups land in vllm_config and the bytes come out wrong.")
        echo(f"  relocations: {len(moved)} table entr(ies) checked directly against the provider.")
        overrides = [f for f in after.findings if f.rule is Rule.OVERRIDE_DRIFT and f.severity is Severity.ERROR]
        echo(f"  override: {len(overrides)} method(s) the plugin overrides that the provider now calls with a keyword")
        echo("          they cannot take (out=): TypeError the first time that path runs.")
        echo("  The inherited GPUModelRunner._dummy_run is still found through its new base class: no false alarm.\n")
        checked = (
            bool(loud) and len(silent) == 2 and bool(arithmetic) and bool(overrides) and not results["0.31.0"].findings
        )
        locked = _demo_lock_flow(Path(tmp), echo)
    return 0 if checked and locked else 1


def _demo_lock_flow(root: Path, echo: Callable[[str], None]) -> bool:
    """Part 2: pairs.toml -> git -> atompin.lock -> verify -> export, on local repositories."""
    from atompin import lockfile
    from atompin.analysis.cache import SqliteAnalysisCache
    from atompin.locking import Locker
    from atompin.manifest import load_manifest
    from atompin.report import export
    from atompin.report.text import render_lock
    from atompin.sources.git import GitCache
    from atompin.verify import VerifyReport, pin_variables, verify_lock

    demo_root = root / "pinned"
    manifest_path = write_demo_repos(demo_root)
    manifest, _ = load_manifest(manifest_path)
    cache = demo_root / "cache"
    with Locker(manifest, demo_root, GitCache(cache), SqliteAnalysisCache(cache)) as locker:
        lock = locker.lock(manifest.digest())
    lock_path = demo_root / "atompin.lock"
    lockfile.write(lock_path, lock)
    echo("2. atompin lock: pairs.toml resolved through git (local repositories with tagged releases)\n")
    echo(render_lock(lock))
    report = VerifyReport()
    verify_lock(lockfile.read(lock_path), manifest, report)
    echo("3. atompin verify: the gate for CI and the image build")
    for line in report.passes:
        echo(f"   ok    {line}")
    for line in report.failures:
        echo(f"   FAIL  {line}")
    good = lock.pair("miniplug-0.1.0+minivllm-0.31")
    assert good is not None
    echo("\n4. atompin export --pair miniplug-0.1.0+minivllm-0.31 --format env\n")
    for line in export.env(pin_variables(good, manifest)).splitlines():
        echo(f"   {line}")
    bad = lock.pair("miniplug-0.1.0+minivllm-0.33")
    return good.verdict is not Verdict.FAIL and bad is not None and bad.verdict is Verdict.FAIL and not report.ok
