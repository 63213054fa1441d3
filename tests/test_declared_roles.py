"""A consumer class returned to the provider stands in for the provider classes of the role the
provider's method declares (`declared_roles`), and a class returned that way counts as handed
over for `Hierarchy.standing_in`.

Modelled on ATOM against vLLM 0.33: ATOM's MLA layer class, which derives from vLLM's layer and
not from its `MLACommonBaseImpl`, is what its attention backend's `get_impl_cls` returns
(vLLM's `AttentionBackend.get_impl_cls() -> type["AttentionImplBase"]`). ATOM's layer implements
`_compute_prefill_context` itself, so vLLM's `MLACommonBaseImpl._compute_prefill_context`, which
calls `prefill_backend.run_prefill_context_chunk(chunk=...)` in a nested function, never runs on
ATOM's layers, and ATOM's prefill backend, whose override still takes `chunk_idx`, is not
called that way.
"""

from __future__ import annotations

import ast
import textwrap

from atompin.analysis.name_sites import sites_in
from atompin.analysis.platform_gates import PlatformGates
from tests.test_contact import check, found

BEFORE = {
    "pv/backend.py": """
        class AttentionImplBase:
            def forward(self, layer, q):
                raise NotImplementedError

        class Backend:
            @staticmethod
            def get_impl_cls() -> type["AttentionImplBase"]:
                raise NotImplementedError
    """,
    "pv/layer.py": """
        class LayerBase:
            def forward(self, q):
                raise NotImplementedError

        class MLALayer(LayerBase):
            def forward(self, q):
                return q
    """,
    "pv/prefill.py": """
        class PrefillBackend:
            def run_chunk(self, chunk_idx, q):
                raise NotImplementedError
    """,
    "pv/mla_impl.py": """
        from pv.backend import AttentionImplBase

        class CommonImpl(AttentionImplBase):
            def _compute_context(self, meta, q):
                return meta.prefill_backend.run_chunk(0, q)
    """,
}
AFTER = {
    **BEFORE,
    "pv/prefill.py": """
        class PrefillBackend:
            def run_chunk(self, chunk, q, out=None):
                raise NotImplementedError
    """,
    "pv/mla_impl.py": """
        from pv.backend import AttentionImplBase

        class CommonImpl(AttentionImplBase):
            def _compute_context(self, meta, q):
                def one(i):
                    return meta.prefill_backend.run_chunk(chunk=i, q=q)

                return [one(i) for i in range(2)]
    """,
}
CONSUMER = {
    "plug/prefill.py": """
        from pv.prefill import PrefillBackend

        class MyPrefill(PrefillBackend):
            def run_chunk(self, chunk_idx, q):
                return q
    """,
    "plug/layer.py": """
        from pv.layer import MLALayer
        from plug.prefill import MyPrefill

        class MyLayer(MLALayer):
            def __init__(self):
                self.prefill_backend = MyPrefill()

            def _compute_context(self, meta, q):
                return meta.prefill_backend.run_chunk(0, q)
    """,
    "plug/backend.py": """
        class MyBackend:
            @staticmethod
            def get_impl_cls():
                from plug.layer import MyLayer

                return MyLayer
    """,
    "plug/platform.py": """
        BACKEND = "plug.backend.MyBackend"
    """,
}
SYMBOL = "plug.prefill:MyPrefill.run_chunk"


def _override_drift(consumer: dict[str, str], provider: dict[str, str]) -> list[str]:
    return [severity for severity, symbol, _ in found(check(consumer, provider, baseline=BEFORE), "override-drift")]


def test_a_class_returned_in_a_declared_role_stands_in_for_that_roles_classes():
    [finding] = [f for f in check(CONSUMER, AFTER, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning" and finding.symbol == SYMBOL
    assert (
        "the provider passes them at pv/mla_impl.py:6, inside CommonImpl._compute_context, which plug.layer:MyLayer, "
        "returned by plug.backend:MyBackend.get_impl_cls (the provider's get_impl_cls returns a "
        "type[AttentionImplBase]), handed to the provider in that role, implements itself"
    ) in finding.message
    # Not named by the platform, but a subclass of the provider's backend: the provider calls its
    # `get_impl_cls` as the override of its own.
    derived = {k: v for k, v in CONSUMER.items() if k != "plug/platform.py"}
    derived["plug/backend.py"] = """
        from pv.backend import Backend

        class MyBackend(Backend):
            @staticmethod
            def get_impl_cls():
                from plug.layer import MyLayer

                return MyLayer
    """
    assert _override_drift(derived, AFTER) == ["warning"]


def test_without_the_role_or_the_method_the_call_may_reach_the_override():
    # The backend is not handed to the provider: nothing calls its `get_impl_cls`.
    alone = {k: v for k, v in CONSUMER.items() if k != "plug/platform.py"}
    assert _override_drift(alone, AFTER) == ["error"]
    # The provider declares another role, one the calling class is not of.
    elsewhere = {**AFTER, "pv/backend.py": AFTER["pv/backend.py"].replace('type["AttentionImplBase"]', "type[int]")}
    assert _override_drift(CONSUMER, elsewhere) == ["error"]
    # The returned class does not implement the calling method: the provider's may run on it.
    other = {**CONSUMER, "plug/layer.py": CONSUMER["plug/layer.py"].replace("_compute_context", "_compute_rest")}
    assert _override_drift(CONSUMER | other, AFTER) == ["error"]
    # No annotation: no declared role.
    bare = {**AFTER, "pv/backend.py": AFTER["pv/backend.py"].replace(' -> type["AttentionImplBase"]', "")}
    assert _override_drift(CONSUMER, bare) == ["error"]


def test_a_returned_class_counts_as_handed_over_beside_a_shared_base():
    """vLLM 0.33's kimi_k3 NVIDIA layer, a `LayerBase` like ATOM's, makes the same call in its own
    `_compute_context`: ATOM's layer, returned to the provider, shares that base and implements the
    method (`Hierarchy.standing_in`, with returned classes now counted as handed over)."""
    kimi = {
        "pv/kimi.py": """
            from pv.layer import LayerBase

            class KimiLayer(LayerBase):
                def _compute_context(self, q):
                    backend = self.prefill_backend

                    def one(i):
                        return backend.run_chunk(chunk=i, q=q, out=None)

                    return one(0)
        """
    }
    only_kimi = {**AFTER, "pv/mla_impl.py": BEFORE["pv/mla_impl.py"], **kimi}
    [finding] = [f for f in check(CONSUMER, only_kimi, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert (
        "inside KimiLayer._compute_context, which plug.layer:MyLayer, handed to the provider in that class's place"
    ) in finding.message
    # Not handed over (no platform names the backend): MyLayer, which keeps the prefill backend, is
    # no KimiLayer, so the call on KimiLayer's own `prefill_backend` cannot be on it either.
    alone = {k: v for k, v in CONSUMER.items() if k != "plug/platform.py"}
    [finding] = [f for f in check(alone, only_kimi, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert (
        "at pv/kimi.py:8, in a call that cannot be on it: plug.prefill:MyPrefill reaches the provider only as "
        "stored as plug.layer:MyLayer.prefill_backend"
    ) in finding.message
    # Called on any layer's `prefill_backend`, the call may be on it.
    anywhere = {
        **only_kimi,
        "pv/kimi.py": "def run_all(layers, q):\n"
        "    return [layer.prefill_backend.run_chunk(chunk=0, q=q, out=None) for layer in layers]\n",
    }
    assert _override_drift(alone, anywhere) == ["error"]


def test_a_site_in_a_nested_function_tells_the_method_it_is_in():
    source = textwrap.dedent(
        """
        class Impl:
            def compute(self, meta):
                def one(i):
                    return meta.backend.run_chunk(chunk=i)
                return one(0)

        def free(meta):
            def inner():
                return meta.backend.run_chunk(chunk=1)
            return inner()
        """
    )
    sites = [s for s in sites_in(ast.parse(source), PlatformGates([]), "pv/impl.py", {"run_chunk"}) if s.kind.value == "call"]
    assert [(s.cls, s.function, s.method) for s in sites] == [("Impl", "one", "compute"), ("", "inner", "")]


def test_the_role_told_is_the_nearest_of_the_calling_class_order():
    """vLLM declares both `type[AttentionImplBase]` (its backend base) and `type[MLAAttentionImpl]`
    (its MLA backends): the message names the nearer one, whatever order the files are read in."""
    provider = {
        **AFTER,
        "pv/mla_backend.py": """
            from pv.backend import AttentionImplBase, Backend

            class MLAImpl(AttentionImplBase):
                pass

            class MLABackend(Backend):
                @staticmethod
                def get_impl_cls() -> type[MLAImpl]:
                    return MLAImpl
        """,
        "pv/mla_impl.py": AFTER["pv/mla_impl.py"]
        .replace("from pv.backend import AttentionImplBase", "from pv.mla_backend import MLAImpl")
        .replace("CommonImpl(AttentionImplBase)", "CommonImpl(MLAImpl)"),
    }
    [finding] = [f for f in check(CONSUMER, provider, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert "(the provider's get_impl_cls returns a type[MLAImpl])" in finding.message


def test_a_new_provider_method_called_only_where_a_declared_stand_in_stands_is_a_warning():
    """(a): a provider method new since the baseline calls the override in a way it cannot take,
    and the provider calls that method only inside `CommonImpl._compute_context`, which the class
    returned in the declared role implements itself."""
    provider = {
        **AFTER,
        "pv/prefill.py": """
            class PrefillBackend:
                def run_chunk(self, chunk, q, out=None):
                    raise NotImplementedError

                def warm(self, q):
                    return self.run_chunk(0, q, 1)
        """,
        "pv/mla_impl.py": """
            from pv.backend import AttentionImplBase

            class CommonImpl(AttentionImplBase):
                def _compute_context(self, meta, q):
                    return meta.prefill_backend.warm(q)
        """,
    }
    [finding] = [f for f in check(CONSUMER, provider, baseline=BEFORE).findings if f.rule.value == "override-drift"]
    assert finding.severity.value == "warning"
    assert "the provider's get_impl_cls returns a type[AttentionImplBase]), handed to the provider in that role" in (
        finding.message
    )
    alone = {k: v for k, v in CONSUMER.items() if k != "plug/platform.py"}
    assert _override_drift(alone, provider) == ["error"]
