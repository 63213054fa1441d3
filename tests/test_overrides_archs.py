"""model-override and arch-coverage: two more silent skews."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import brief
from typer.testing import CliRunner

from atompin import lockfile
from atompin.analysis.archs import arch_coverage, supported_archs
from atompin.analysis.provider import ProviderIndex
from atompin.cli import app
from atompin.sources.tree import FolderTree
from atompin.testing import git_repo, write_files

runner = CliRunner()

REGISTRY = """
    _TEXT_GENERATION_MODELS = {
        "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
        "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),
    }
    _MULTIMODAL_MODELS = {"KimiK25ForConditionalGeneration": ("kimi_k25", "KimiK25ForConditionalGeneration")}
    _VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS}

    class _ModelRegistry:
        def __init__(self, models):
            self.models = models
        def register_model(self, model_arch, model_cls):
            self.models[model_arch] = model_cls

    ModelRegistry = _ModelRegistry(_VLLM_MODELS)
"""
PROVIDER = {"pv/__init__.py": "", "pv/models/__init__.py": "", "pv/models/registry.py": REGISTRY}
BASELINE = {
    **PROVIDER,
    "pv/models/registry.py": REGISTRY.replace(
        '"Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),',
        '"Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),\n        "DeepseekV4ForCausalLM": ("deepseek_v4", "X"),',
    ),
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/models.py": "class Wrapper:\n    pass\nclass MoeWrapper(Wrapper):\n    pass\n",
    "plug/register.py": """
        WRAPPER = "plug.models:Wrapper"
        _OVERRIDES: dict[str, str] = {
            "LlamaForCausalLM": WRAPPER,
            "DeepseekV4ForCausalLM": "plug.models:MoeWrapper",
            "BrandNewForCausalLM": WRAPPER,
            "Qwen3ForCausalLM": "plug.models:Missing",
        }

        def register_model():
            import pv.models.registry as registry
            for arch, qual in _OVERRIDES.items():
                registry.ModelRegistry.register_model(arch, qual)
            registry.ModelRegistry.register_model("KimiK25ForConditionalGeneration", "plug.models:Wrapper")
    """,
}


def test_overrides_with_a_baseline(tmp_path: Path):
    from atompin.analysis.results import check_trees

    consumer = FolderTree(write_files(tmp_path / "c", CONSUMER))
    provider = FolderTree(write_files(tmp_path / "p", PROVIDER))
    baseline = FolderTree(write_files(tmp_path / "b", BASELINE))
    result = check_trees(consumer, provider, "pv", "plug", baseline=baseline)
    assert brief(result) == [
        ("model-override", "info", "BrandNewForCausalLM", ["plug/register.py:12"]),
        ("model-override", "warning", "DeepseekV4ForCausalLM", ["plug/register.py:12"]),
        ("model-override", "error", "plug.models:Missing", ["plug/register.py:12"]),
    ]
    messages = {f.symbol: f.message for f in result.findings}
    assert "silently inactive" in messages["DeepseekV4ForCausalLM"]
    assert "an addition" in messages["BrandNewForCausalLM"]
    # Llama, Qwen3 and Kimi are provider architectures the plugin replaces when enabled.
    assert result.summary.overrides == 3


def test_an_override_of_an_architecture_new_in_the_provider_since_the_baseline_is_told(run_check):
    """aleph-alpha-inference registers Kolibri1ForCausalLM, an addition at its vLLM 0.29; vLLM 0.33
    has one of its own, which the plugin's registration now replaces: said, as an info."""
    baseline = {
        **PROVIDER,
        "pv/models/registry.py": REGISTRY.replace(
            '_MULTIMODAL_MODELS = {"KimiK25ForConditionalGeneration": ("kimi_k25", "KimiK25ForConditionalGeneration")}',
            "_MULTIMODAL_MODELS = {}",
        ),
    }
    result = run_check(PROVIDER, CONSUMER, consumer_package="plug", baseline=baseline)
    found = [f for f in result.findings if f.symbol == "KimiK25ForConditionalGeneration"]
    assert [(f.severity.value, f.message) for f in found] == [
        (
            "info",
            "pv.models.registry has KimiK25ForConditionalGeneration of its own since the consumer's declared "
            "version: the override, an addition there, now replaces the provider's implementation",
        )
    ]
    assert result.summary.overrides == 3
    # Known at the baseline too (the provider's since before): nothing to say.
    assert not [
        f
        for f in run_check(PROVIDER, CONSUMER, consumer_package="plug", baseline=PROVIDER).findings
        if f.symbol.startswith("Kimi")
    ]


def test_overrides_without_a_baseline_cannot_tell_vanished_from_added(run_check):
    result = run_check(PROVIDER, CONSUMER, consumer_package="plug")
    by_symbol = {f.symbol: f for f in result.findings}
    assert by_symbol["DeepseekV4ForCausalLM"].severity.value == "info"
    assert "no baseline to tell" in by_symbol["DeepseekV4ForCausalLM"].message


def test_valid_overrides_produce_no_finding(run_check):
    ok = {
        **CONSUMER,
        "plug/register.py": CONSUMER["plug/register.py"]
        .replace('"DeepseekV4ForCausalLM": "plug.models:MoeWrapper",', "")
        .replace('"BrandNewForCausalLM": WRAPPER,', "")
        .replace('"plug.models:Missing"', '"plug.models:MoeWrapper"'),
    }
    result = run_check(PROVIDER, ok, consumer_package="plug")
    assert result.findings == () and result.summary.overrides == 3


def _registering(**paths: str) -> dict[str, str]:
    """A consumer whose `register_model` registers each architecture under its path."""
    lines = "".join(f"    ModelRegistry.register_model({arch!r}, {path!r})\n" for arch, path in paths.items())
    body = "def register_model():\n    from pv.models.registry import ModelRegistry\n" + lines
    return {"plug/__init__.py": "", "plug/register.py": body}


def test_an_alias_of_a_provider_class_is_looked_up_in_the_provider(run_check):
    """vllm-spyre's descendant registers "GraniteSWAForCausalLM" as vLLM's own GraniteForCausalLM by
    path: the path is the provider's, so the provider is where it must resolve (it did, and the
    pin worked; this was an error saying it does not resolve in the consumer). A path into a third
    package cannot be read: no finding either way."""
    provider = {**PROVIDER, "pv/models/llama.py": "class LlamaForCausalLM:\n    pass\n"}
    consumer = _registering(
        LlamaAlias="pv.models.llama:LlamaForCausalLM",
        GoneAlias="pv.models.llama:GoneForCausalLM",
        ThirdParty="fms.models.hf:Granite",
        OwnMissing="plug.models:Missing",
    )
    result = run_check(provider, consumer, consumer_package="plug")
    errors = {f.symbol: f.message for f in result.findings if f.severity.value == "error"}
    assert sorted(errors) == ["plug.models:Missing", "pv.models.llama:GoneForCausalLM"]
    assert "does not resolve in the provider" in errors["pv.models.llama:GoneForCausalLM"]
    assert "does not resolve in the consumer" in errors["plug.models:Missing"]


def test_an_override_path_broken_at_the_baseline_too_is_a_warning(run_check):
    """vllm-kunlun registers `vllm_kunlun.models.glm:GlmForCausalLM` and ships no `glm` module:
    loading a GLM model fails whatever the provider, at its baseline too, so a bump breaks nothing
    there. A class the consumer's module lacks, or one the provider lost since, stays an error."""
    provider = {**PROVIDER, "pv/models/llama.py": "class LlamaForCausalLM:\n    pass\n"}
    baseline = {**provider, "pv/models/llama.py": "class LlamaForCausalLM:\n    pass\nclass OldLlama:\n    pass\n"}
    consumer = {
        **_registering(
            Glm="plug.glm:GlmForCausalLM",
            OwnMissing="plug.models:Missing",
            GoneAlias="pv.models.llama:GoneForCausalLM",
            LostAlias="pv.models.llama:OldLlama",
        ),
        "plug/models.py": "class Wrapper:\n    pass\n",
    }
    result = run_check(provider, consumer, consumer_package="plug", baseline=baseline)
    severities = {f.symbol: f.severity.value for f in result.findings if f.rule.value == "model-override"}
    assert severities == {
        "plug.glm:GlmForCausalLM": "warning",
        "plug.models:Missing": "error",
        "pv.models.llama:GoneForCausalLM": "warning",
        "pv.models.llama:OldLlama": "error",
        "Glm": "info",
        "OwnMissing": "info",
        "GoneAlias": "info",
        "LostAlias": "info",
    }
    messages = {f.symbol: f.message for f in result.findings}
    assert messages["plug.glm:GlmForCausalLM"].endswith(
        "it fails at the baseline too (the consumer has no module plug.glm, whatever the provider): not a change since"
    )
    assert "(the baseline lacks it too)" in messages["pv.models.llama:GoneForCausalLM"]
    # Without a baseline: errors, as before.
    alone = run_check(provider, consumer, consumer_package="plug")
    assert sorted(f.symbol for f in alone.findings if f.severity.value == "error") == [
        "plug.glm:GlmForCausalLM",
        "plug.models:Missing",
        "pv.models.llama:GoneForCausalLM",
        "pv.models.llama:OldLlama",
    ]


@pytest.mark.parametrize("path", [":Foo", "pv.models.llama:", ".plug.models:Foo", "pv.models.llama"])
def test_an_override_path_not_module_colon_class_is_an_error(run_check, path):
    consumer = {
        "plug/__init__.py": "",
        "plug/register.py": f"""
            def register_model():
                from pv.models.registry import ModelRegistry
                ModelRegistry.register_model("LlamaForCausalLM", "{path}")
        """,
    }
    [finding] = run_check(PROVIDER, consumer, consumer_package="plug").findings
    assert finding.severity.value == "error" and "not module:Class" in finding.message


# -- arch coverage -------------------------------------------------------------------

ARCH_FILES = {
    "kx/__init__.py": "",
    "kx/ops/__init__.py": "",
    "kx/ops/topk.py": '_SUPPORTED_GFX = ("gfx942", "gfx950", "gfx1250")\n',
    "kx/ops/gemm.py": 'SUPPORTED_ARCHS = ["gfx942"]\n',
    "kx/ops/attn.py": 'ARCH_SET = frozenset({"gfx950", "gfx1250-strict"})\n',
    "kx/ops/alias.py": '_GFX_LIST = ("gfx90a",)\nSUPPORTED = _GFX_LIST\n',
    "kx/ops/noise.py": 'SUPPORTED_DTYPES = ("fp8", "gfx942")\nTARGETS = ("gfx942",)\n',
    "kx/ops/nogfx.py": 'SUPPORTED_THINGS = ("a", "b")\n',
}


def test_supported_archs_found_automatically_and_by_name(tmp_path: Path):
    index = ProviderIndex(FolderTree(write_files(tmp_path / "k", ARCH_FILES)), "kx")
    assert supported_archs(index) == {
        "kx.ops.alias:SUPPORTED": ("gfx90a",),
        "kx.ops.attn:ARCH_SET": ("gfx950", "gfx1250-strict"),
        "kx.ops.gemm:SUPPORTED_ARCHS": ("gfx942",),
        "kx.ops.topk:_SUPPORTED_GFX": ("gfx942", "gfx950", "gfx1250"),
    }
    named = supported_archs(index, ["kx/ops/topk.py:_SUPPORTED_GFX", "kx.ops.alias:SUPPORTED"])
    assert named == {
        "kx.ops.topk:_SUPPORTED_GFX": ("gfx942", "gfx950", "gfx1250"),
        "kx.ops.alias:SUPPORTED": ("gfx90a",),
    }


@pytest.mark.parametrize(
    ("fleet", "covered"), [(["gfx1151", "gfx1201"], False), (["gfx1201", "gfx950"], True), ([], True)]
)
def test_arch_coverage(fleet: list[str], covered: bool):
    supported = {"kx.ops.topk:_SUPPORTED_GFX": ("gfx942", "gfx950")}
    finding = arch_coverage("aiter", supported, fleet, named=True)
    assert (finding is None) == covered
    if finding is not None:
        assert (finding.rule.value, finding.severity.value) == ("arch-coverage", "warning")
        assert "named in arch-constants" in finding.message and "names only gfx942, gfx950" in finding.message
        assert "fleet has gfx1151, gfx1201" in finding.message and "these kernels cannot run here" in finding.message


def test_arch_coverage_of_lists_found_automatically_names_the_feature():
    """A list found automatically belongs to one feature: the warning says which, and where, and
    makes no claim about the whole component (a model's constant once made vLLM 'unrunnable')."""
    from atompin.model import Site

    supported = {"vllm.models.m3.amd.indexer:SUPPORTED_ARCHS": ("gfx950",)}
    sites = {"vllm.models.m3.amd.indexer:SUPPORTED_ARCHS": Site("vllm/models/m3/amd/indexer.py", 59)}
    finding = arch_coverage("vllm", supported, ["gfx1151"], named=False, sites=sites)
    assert finding is not None and finding.sites == (Site("vllm/models/m3/amd/indexer.py", 59),)
    assert finding.message.startswith(
        "the kernels of vllm.models.m3.amd.indexer (vllm/models/m3/amd/indexer.py:59) support only gfx950; "
        "the fleet has gfx1151: this feature cannot run on this fleet"
    )
    assert "every supported-architecture list" not in finding.message and "these kernels" not in finding.message


def test_lock_records_overrides_and_supported_sets_deterministically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    git_repo(tmp_path / "repos/pv", [("v1.0", PROVIDER)])
    git_repo(tmp_path / "repos/plug", [("v0.1", CONSUMER)])
    git_repo(tmp_path / "repos/kx", [("v2.0", ARCH_FILES)])
    manifest = tmp_path / "pairs.toml"
    manifest.write_text("""\
[fleet]
gpu-archs = ["gfx1151", "gfx1201"]

[components.plug]
repo = "repos/plug"
package = "plug"

[components.pv]
repo = "repos/pv"
package = "pv"

[components.kx]
repo = "repos/kx"
package = "kx"
arch-constants = ["kx/ops/topk.py:_SUPPORTED_GFX"]

[[checks]]
consumer = "plug"
provider = "pv"

[[pairs]]
name = "fleet"
plug = "v0.1"
pv = "v1.0"
kx = "v2.0"

[[pairs]]
name = "mi300"
gpu-archs = ["gfx942"]
plug = "v0.1"
pv = "v1.0"
kx = "v2.0"
""")
    result = runner.invoke(app, ["lock", "--manifest", str(manifest)])
    assert result.exit_code == 1, result.output  # the Missing wrapper is an error on the gate
    first = (tmp_path / "atompin.lock").read_bytes()
    runner.invoke(app, ["lock", "--manifest", str(manifest)])
    assert (tmp_path / "atompin.lock").read_bytes() == first
    locked = lockfile.read(tmp_path / "atompin.lock")
    fleet, mi300 = locked.pair("fleet"), locked.pair("mi300")
    assert fleet.components["kx"].supported_archs == {"kx.ops.topk:_SUPPORTED_GFX": ["gfx1250", "gfx942", "gfx950"]}  # type: ignore[union-attr]
    assert [f.symbol for f in fleet.findings if f.rule == "arch-coverage"] == ["kx"]  # type: ignore[union-attr]
    assert not [f for f in mi300.findings if f.rule == "arch-coverage"]  # type: ignore[union-attr]
    assert fleet.checks[0].overrides == 3  # type: ignore[union-attr]
    assert '"kx.ops.topk:_SUPPORTED_GFX" = ["gfx1250", "gfx942", "gfx950"]' in first.decode()
