"""The design brief's named cases, on a small copy of the vLLM 0.31 -> 0.33 move."""

from __future__ import annotations

from conftest import brief

MOVED = [
    "get_kv_cache_groups",
    "get_kv_cache_config_from_groups",
    "_max_memory_usage_bytes_from_groups",
    "_pool_bytes_per_block",
    "get_kv_cache_configs",
    "_auto_fit_max_model_len",
    "may_override_num_blocks",
]


def _functions(names: list[str]) -> str:
    return "\n".join(f"def {n}(*args):\n    return None\n" for n in names)


V031 = {
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/core/__init__.py": "",
    "vllm/v1/core/kv_cache_utils.py": "class KVCacheBlock:\n    pass\n" + _functions(MOVED),
}
V033 = {
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/core/__init__.py": "",
    "vllm/v1/core/kv_cache_utils.py": "class KVCacheBlock:\n    pass\n",
    "vllm/v1/core/kv_cache_planning.py": _functions(MOVED),
}

# Two installers as ATOM v0.1.9 has them: one reads the originals directly,
# the other asks getattr(module, name, None) and returns when it finds nothing.
PLUGIN = {
    "atom/__init__.py": "",
    "atom/plugin/__init__.py": "",
    "atom/plugin/vllm/__init__.py": "",
    "atom/plugin/vllm/spec_decode_patch.py": """
        def apply_heterogeneous_patch():
            try:
                import vllm.v1.core.kv_cache_utils as vllm_kv_cache_utils
            except Exception:
                return
            orig_get_groups = vllm_kv_cache_utils.get_kv_cache_groups
            orig_config = vllm_kv_cache_utils.get_kv_cache_config_from_groups
            orig_max_mem = vllm_kv_cache_utils._max_memory_usage_bytes_from_groups
            vllm_kv_cache_utils.get_kv_cache_groups = lambda *a: orig_get_groups(*a)
            vllm_kv_cache_utils.get_kv_cache_config_from_groups = lambda *a: orig_config(*a)
            vllm_kv_cache_utils._max_memory_usage_bytes_from_groups = lambda *a: orig_max_mem(*a)
    """,
    "atom/plugin/vllm/max_model_len_patch.py": """
        _NAMES = ("_pool_bytes_per_block", "get_kv_cache_configs", "_auto_fit_max_model_len", "may_override_num_blocks")

        def apply_max_model_len_patch():
            try:
                from vllm.v1.core import kv_cache_utils
            except ImportError:
                return
            for name in _NAMES:
                original = getattr(kv_cache_utils, name, None)
                if original is None:
                    return
                setattr(kv_cache_utils, name, _wrap(original))

        def _wrap(fn):
            return fn
    """,
}


def test_clean_against_the_declared_release(run_check):
    assert run_check(V031, PLUGIN, package="vllm").findings == ()


def test_loud_case_unguarded_installer_raises(run_check):
    result = run_check(V033, PLUGIN, package="vllm")
    loud = [f for f in result.findings if f.sites[0].path.endswith("spec_decode_patch.py")]
    assert [(f.rule.value, f.severity.value, f.symbol) for f in loud] == [
        ("missing-patch-target", "error", f"vllm.v1.core.kv_cache_utils:{n}")
        for n in sorted(
            ["get_kv_cache_groups", "get_kv_cache_config_from_groups", "_max_memory_usage_bytes_from_groups"]
        )
    ]
    assert all("raises AttributeError at start-up" in f.message for f in loud)


def test_silent_case_guarded_installer_patches_nothing(run_check):
    result = run_check(V033, PLUGIN, package="vllm")
    silent = [f for f in result.findings if f.sites[0].path.endswith("max_model_len_patch.py")]
    assert len(brief(result)) == 7
    assert sorted(f.symbol.split(":")[1] for f in silent) == sorted(
        ["_pool_bytes_per_block", "get_kv_cache_configs", "_auto_fit_max_model_len", "may_override_num_blocks"]
    )
    assert all(f.rule.value == "missing-patch-target" and f.severity.value == "error" for f in silent)
    assert all("silently installs nothing" in f.message for f in silent)
    assert result.summary.patch_sites == 4  # three assignments and one setattr in a loop
    assert result.summary.patch_targets == 7
