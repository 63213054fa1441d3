"""Patches: does every target the consumer patches exist, and does the patch still do what it did?"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from atompin.analysis.callsites import caller_key
from atompin.analysis.conditions import Reach
from atompin.analysis.gates import is_older
from atompin.analysis.limits import parse_limited
from atompin.analysis.names import word_pattern
from atompin.analysis.own import installed_when_absent, is_addition
from atompin.analysis.patch_readers import FunctionKey, PatchedName, readers
from atompin.analysis.provider import Resolution, TargetKind
from atompin.analysis.usage import ConditionKind, Guard, PatchSite, ReadKind, effective_guard
from atompin.analysis.usage_checks.common import at_baseline_too, via_of
from atompin.analysis.usage_checks.state import BaselinePatches
from atompin.model import Rule, Severity, Site, Status

if TYPE_CHECKING:
    from atompin.analysis.checks import UsageChecker


class PatchChecks:
    """Patches: does every target the consumer patches exist, and does the patch still do what it did?"""

    # Set here, made in `UsageChecker.__init__` (declared so the type is that one).
    _baseline_patches: BaselinePatches | None
    _baseline_words: set[str] | None

    def _patch(self: UsageChecker, patch: PatchSite, alternatives: list[PatchSite]) -> None:
        owner_ref, owner = self.first(patch.owner)
        target = self.symbol(owner_ref.attr(patch.attr))
        reads = self._read_kinds.get((patch.owner, patch.attr), set())
        guard = effective_guard(patch, reads)
        if owner.status is Status.UNKNOWN:
            self._unknown(target, owner, [patch.site])
            return
        if owner.found and owner.target is None:
            return  # an object of the consumer's own (a module it registered, an attribute it added)
        if owner.status is Status.MISSING or owner.target is None:
            if patch.guard is not Guard.GETATTR_DEFAULT:
                return  # the failing import or attribute access is reported where it happens
            message = f"the patched object is gone ({owner.reason}); {_effect(guard)}{via_of(patch)}"
            later = self._came_after() if self._baseline_owner(patch) is not None else ""
            severity = Severity.WARNING if later else Severity.ERROR
            self.findings.add(Rule.MISSING_PATCH_TARGET, severity, target, [patch.site], message + later)
            return
        res = self.index.getattr(owner.target, patch.attr)
        if res.status is Status.FOUND:
            self._replacement_drift(patch, target, res)
            return
        if res.status is Status.UNKNOWN:
            self._unknown(target, res, [patch.site])
            return
        if patch.alternative_group and any(
            p is not patch and self.index.getattr(o.target, p.attr).found
            for p in alternatives
            for _, o in [self.first(p.owner)]
            if o.target is not None
        ):
            return  # a `for name in (...): ... break` loop: another name is patched instead
        read_sites = self._original_reads.get(patch.key(), [])
        # Reads only where the patch has run call the name it installs (`m.f = mine` here, `m.f(...)`
        # in the consumer's runner): they keep no original.
        elsewhere = bool(read_sites) and all(self._gets_installed(patch, site) for site in read_sites)
        if is_addition(patch, reads - {ReadKind.PLAIN} if elsewhere else reads) or patch.key() in self._set_to_literal:
            self._addition(patch, target, res, guard, read_sites if elsewhere else [])
            return
        message = f"{res.reason}; {_effect(guard)}{via_of(patch)}"
        if not patch.declared and self._missing_at_baseline(patch):
            # Inert at the provider the consumer was written against too, where it works: a patch
            # for another release (vllm-ascend's `if hasattr(m, "f"): m.f = mine` for vLLM main);
            # unguarded, it would raise there too: code that does not run (vllm-mindspore's
            # patch of `cli.serve.run_api_server_worker_proc`, which no vLLM it ran on had).
            if guard is Guard.NONE:
                message += f"; {at_baseline_too()}"
            else:
                message += "; the same at the baseline, where the consumer works: a patch for another release"
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message)
            return
        later = self._came_after() if guard is not Guard.NONE and self._at_baseline(patch) is not None else ""
        if later and not patch.declared:
            self.findings.add(
                Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message + later
            )
            return
        # Only a module's name can have moved onto a class (a class's method is judged as an override).
        moved = guard is not Guard.NONE and not patch.declared and owner.target.kind is TargetKind.MODULE
        covered = self._covered_elsewhere(patch.attr) if moved else ""
        if covered:
            # The name moved onto a provider class whose method the consumer overrides: the
            # provider's code now asks that class, and the consumer answers there.
            message += f"; but {covered}: the name lives on that class now, and the consumer's override answers there"
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message)
            return
        if patch.declared:
            message = (
                f"{res.reason}; the consumer names it as a patch target by its dotted path, and a registry that "
                "sets it anyway installs the replacement under a name nothing calls: the provider's code runs "
                f"unpatched{via_of(patch)}"
            )
        # Unguarded, reading the original raises (an assignment alone raises nothing).
        raises = (read_sites or [patch.site]) if guard is Guard.NONE and not patch.declared else []
        self.findings.add(
            Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site, *read_sites], message, stops=raises
        )

    def _gets_installed(self: UsageChecker, patch: PatchSite, read: Site) -> bool:
        """Does the consumer's read of a name it patches get what the patch installs, rather than
        keep the original? In another file, or in a function of the patch's file other than the one
        installing it (vllm-gaudi's helper calling the `torch_utils.make_tensor_with_pad` it installs
        at import); not at the patch's own level (`orig = m.f` before `m.f = mine`)."""
        if read.path != patch.site.path:
            return True
        function = self._read_functions.get(read, "")
        return bool(function) and function != patch.function and not function.startswith(f"{patch.function}.")

    def _addition(
        self: UsageChecker, patch: PatchSite, target: str, res: Resolution, guard: Guard, uses: list[Site] | None = None
    ) -> None:
        """An attribute the provider does not have: the consumer's own, unless the baseline had it.
        `uses`: where the consumer reads it itself, through the same object, in other files."""
        absent = installed_when_absent(patch)
        if absent is not None and not patch.stash:
            where = "only where it lacks it" if absent.kind is ConditionKind.ATTR_ABSENT else "wherever it lacks it"
            message = (
                f"adds an attribute the provider does not have ({res.reason}), and {where} "
                f"(`{absent.text}` at {absent.site}): the consumer's own, for providers without it"
            )
            self.findings.add(Rule.PATCH_ADDITION, Severity.INFO, target, [patch.site], message)
            return
        before = None if patch.stash or patch.literal_value else self._at_baseline(patch)
        if before is not None and uses:
            where = ", ".join(str(site) for site in uses[:3]) + (f" and {len(uses) - 3} more" if len(uses) > 3 else "")
            if not (patch.function or patch.nested or patch.when):
                # Installed whenever the module is imported: the consumer's reads get its value.
                message = (
                    f"{res.reason}, but {before} existed at the baseline: this assignment adds the name back, "
                    f"and the consumer's own reads of it ({where}) get the replacement; the provider's code "
                    f"that used it at the baseline no longer does{via_of(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *uses], message)
                return
            message = (
                f"{res.reason}, but {before} existed at the baseline: the consumer reads it itself ({where}), "
                "which raises AttributeError wherever this assignment did not run (it runs only under a "
                f"condition, or when its function is called){via_of(patch)}"
            )
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site, *uses], message)
            return
        if before is not None:
            origin = self._origin_patched(patch, before)
            if origin is not None:
                # At the baseline the name was an import of `before`, which the consumer patches too
                # (vllm-mindspore sets `current_platform` on `vllm.platforms` and on every module that
                # imported it): the provider's code that reads it where it is defined gets the consumer's.
                message = (
                    f"{res.reason}; at the baseline it was {before}, imported there, and the consumer patches "
                    f"{before} itself ({origin.site}): the provider's code that reads it there gets what the "
                    f"consumer sets, and this assignment adds a name nothing reads any more{via_of(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                self.idle_installs.add(patch.site)
                return
            self.idle_installs.add(patch.site)
            message = (
                f"{res.reason}, but {before} existed at the baseline: the assignment installs the replacement "
                "under a name nothing calls any more, and the provider's code runs unpatched "
                f"({guard.value}){via_of(patch)}"
            )
            inert = self._inert_at_baseline(patch)
            if inert:
                message = (
                    f"{res.reason}; at the baseline, which had {before}, the assignment reached no code that "
                    f"runs ({inert}): it did nothing there either, and does nothing now; a line to "
                    f"remove{via_of(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                return
            successor = self._successor(patch)
            if successor is not None:
                # vllm-ascend 0.28.0rc1 patches vLLM's `_allocate_kv_cache` (gone at 0.29) and, where
                # `vllm_version_is("0.28.0")` fails, the `allocate_kv_cache` that took its place.
                message += (
                    f"; the same file also patches {successor.attr}, new on that object since the baseline "
                    f"({successor.site}): probably what took its place, already patched"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                return
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site], message)
            return
        if patch.stash:
            message = (
                f"keeps a provider object under a name the provider does not have ({res.reason}): "
                "an addition of the consumer's own"
            )
        else:
            message = (
                f"adds an attribute the provider does not have ({res.reason}); nothing of the "
                "provider is replaced. If this was meant to replace a provider function, it has moved"
            )
            if self.baseline is None and not patch.literal_value:
                message += " (no baseline: a baseline would tell whether it vanished)"
        self.findings.add(Rule.PATCH_ADDITION, Severity.INFO, target, [patch.site], message)

    def _inert_at_baseline(self: UsageChecker, patch: PatchSite) -> str:
        """Why no code that runs at the baseline read the name `patch` installs where the patch
        reached it (`patch_readers`): "no provider code reads the name", or which functions the
        consumer replaces hold every read, or which modules read a name the consumer sets there
        too; "" when some code may read it, or when that cannot be told (a file unparseable)."""
        baseline = self.baseline
        before = self._baseline_attr(patch)
        owner = self._baseline_owner(patch)
        if baseline is None or before is None or before.target is None or owner is None or owner.target is None:
            return ""
        module, _, qualname = before.target.symbol.partition(":")
        definition = caller_key(module, qualname) if qualname else None
        on_module = owner.target.kind is TargetKind.MODULE
        # A copy of the module (`PatchSite.on_copy`) is not the globals its own functions read.
        patched = PatchedName(patch.attr, owner.target.symbol if on_module and not patch.on_copy else "", definition)
        replaced = self._replaced_at_baseline()
        # Only a patch that runs wherever this one does stands for it (one in the same `if` branch,
        # not in its `else`: vllm-ascend replaces `do_mamba_copy_block` only where it cannot launch
        # the Triton kernel its `batch_memcpy` patch is for).
        installed = {
            symbol
            for (symbol, attr), others in replaced.installed.items()
            if attr == patch.attr and any(_runs_with(other, patch) for other in others)
        }

        def replaced_here(key: FunctionKey) -> bool:
            return any(_runs_with(other, patch) for other in replaced.without_original.get(key, ()))

        tree = baseline.index.tree
        held: list[FunctionKey] = []
        covered: list[str] = []
        for path in self._baseline_holding(patch.attr):
            parsed = self._baseline_tree(path)
            if parsed is None:
                return ""
            file_module, _ = tree.module_name(path)
            found = readers(parsed, file_module, patched, replaced_here, file_module in installed)
            if found.lines:
                return ""
            held += found.held
            covered += [file_module] if found.covered else []
        why = []
        if held:
            where = ", ".join(f"{symbol.replace(':', '.')}.{name}" for symbol, name in sorted(set(held)))
            why.append(f"its reads are in {where}, which the consumer replaces without calling the original")
        if covered:
            where = ", ".join(sorted(covered))
            why.append(f"{where} reads the name it binds itself, where the consumer sets its replacement too")
        return "; ".join(why) if why else "no provider code reads the name"

    def _came_after(self: UsageChecker) -> str:
        """What a finding says of a name the baseline has and this release lacks, when this
        release is older than the baseline: the name, and the provider code a patch of it
        changes, came after it, so a guard skipping the patch here does what it was written for
        (kvcached's `getattr(utils, "TransferTopology", None)`, a class of vLLM 0.23, at 0.18).
        "" when not older, or a version is not known (a name gone since stays an error)."""
        baseline = self.baseline
        if baseline is None or not is_older(self.version, baseline.version):
            return ""
        return (
            f"; the baseline ({baseline.version}) has it: it came after {self.version}, and the guard skips "
            "the patch here, as it was written to"
        )

    def _baseline_owner(self: UsageChecker, patch: PatchSite) -> Resolution | None:
        """The patched object at the baseline (None: no baseline, or it is not there)."""
        if self.baseline is None:
            return None
        for ref in patch.owner:
            owner = self.baseline.index.resolve(ref.module, ref.path)
            if owner.found and owner.target is not None:
                return owner
        return None

    def _replaced_at_baseline(self: UsageChecker) -> BaselinePatches:
        """What the consumer's patches replace at the baseline (see `BaselinePatches`)."""
        if self._baseline_patches is None:
            # A replacement may reach the original through a name the consumer keeps it under on the
            # patched object (vllm-ascend's `self._ascend_glm_original_chat_completion_stream_generator`):
            # any member of that object it reads that a patch of the consumer's stashes counts.
            stashed = {(p.owner, p.attr) for p in self.usage.patches if p.stash}
            calls_original = {
                (r.site, r.attr)
                for r in self.usage.contact.replacements
                if r.calls_original or any((r.owner, name) in stashed for name, _ in r.self_reads)
            }
            found = BaselinePatches()
            for patch in self.usage.patches:
                owner = self._baseline_owner(patch)
                if owner is None or owner.target is None or patch.literal_value or patch.stash:
                    continue
                key = (owner.target.symbol, patch.attr)
                if owner.target.kind is TargetKind.MODULE:
                    found.installed.setdefault(key, []).append(patch)
                if patch.replacement is not None and (patch.site, patch.attr) not in calls_original:
                    found.without_original.setdefault(key, []).append(patch)
            self._baseline_patches = found
        return self._baseline_patches

    def _baseline_holding(self: UsageChecker, name: str) -> list[str]:
        """The baseline provider's files whose text holds `name`. Their texts are read once, for the
        names of every patch that adds a name the provider lacks (`ConsumerOwn.additions`: where
        `_inert_at_baseline` is asked), and for another name when it is asked."""
        if self._baseline_words is None:
            self._baseline_words = {attr for _, attr in self.own.additions}
            self._read_baseline(self._baseline_words | {name})
        elif name not in self._baseline_words:
            self._read_baseline({name})
        self._baseline_words.add(name)
        needle = name.encode()
        return [path for path, text in self._baseline_texts.items() if needle in text]

    def _read_baseline(self: UsageChecker, names: set[str]) -> None:
        """Read the baseline's files holding one of `names` (one search, one batch of reads)."""
        assert self.baseline is not None
        tree = self.baseline.index.tree
        files = tree.python_files(self.baseline.index.package)
        holding = tree.files_containing(files, sorted(n.encode() for n in names))
        self._baseline_texts.update(tree.read_many([p for p in holding if p not in self._baseline_texts]))

    def _baseline_tree(self: UsageChecker, path: str) -> ast.Module | None:
        """A baseline file's syntax tree, parsed once (None: it does not parse)."""
        if path not in self._baseline_trees:
            try:
                self._baseline_trees[path] = parse_limited(self._baseline_texts[path])
            except (SyntaxError, ValueError):
                self._baseline_trees[path] = None
        return self._baseline_trees[path]

    def _missing_at_baseline(self: UsageChecker, patch: PatchSite) -> bool:
        """Was the patched attribute surely missing at the baseline provider too, where the patch's
        patch ran (`Baseline.kept_from`)?"""
        if self.baseline is not None and self.baseline.kept_from(patch.site.path, patch.when):
            return False
        found = self._baseline_attr(patch)
        return found is not None and found.status is Status.MISSING

    def _origin_patched(self: UsageChecker, patch: PatchSite, before: str) -> PatchSite | None:
        """Another patch of the consumer's that sets `before` itself, where the pin defines it: what
        `patch` set at the baseline was a module's import of `before` (its symbol is another module's),
        and the module still writes the name at the pin (it imports it where it is used now). One
        that no longer does uses something else instead (vLLM 0.30's GPU attention utilities call
        `bind_kv_cache_to_layers`, not the `bind_kv_cache` vllm-ascend patches): that code runs
        unpatched."""
        module = self.symbol(patch.owner[0]).partition(":")[0]
        if before.partition(":")[0] == module:
            return None  # defined in the patched module itself at the baseline: no import of another's
        found = self.index.find(module)
        if found is None or not found.path or word_pattern(patch.attr).search(self.index.tree.read(found.path)) is None:
            return None
        origin_module, _, name = before.partition(":")
        for other in self.usage.patches:
            if other is patch or other.attr != name:
                continue
            _, owner = self.first(other.owner)
            # Where `before` is defined, not another module importing it (vllm-ascend sets
            # `gumbel_sample` on vLLM's sampler too, which imported it from `gumbel`).
            if owner.found and owner.target is not None and owner.target.symbol == origin_module:
                res = self.index.getattr(owner.target, other.attr)
                if res.found and res.target is not None and res.target.symbol == before:
                    return other
        return None

    def _successor(self: UsageChecker, patch: PatchSite) -> PatchSite | None:
        """A patch with a function, in the same file and on the same object, of a name that object
        has here and lacked at the baseline, installed where the provider checked runs it: the
        consumer's adaptation to the name that replaced the one `patch` sets."""
        for other in self.usage.patches:
            if (
                other.attr == patch.attr
                or other.owner != patch.owner
                or other.site.path != patch.site.path
                or other.replacement is None
                or self.judge(other.when).reach is Reach.DEAD
            ):
                continue
            owner = self.first(other.owner)[1]
            now = self.index.getattr(owner.target, other.attr) if owner.found and owner.target else None
            then = self._baseline_attr(other)
            if now is not None and now.found and then is not None and not then.found:
                return other
        return None

    def _at_baseline(self: UsageChecker, patch: PatchSite) -> str | None:
        """The patched attribute's symbol at the baseline provider, when it was there."""
        found = self._baseline_attr(patch)
        return found.target.symbol if found is not None and found.found and found.target is not None else None

    def _baseline_attr(self: UsageChecker, patch: PatchSite) -> Resolution | None:
        """The patched attribute looked up on its owner at the baseline (None: no baseline, or the
        owner is not there)."""
        owner = self._baseline_owner(patch)
        if self.baseline is None or owner is None or owner.target is None:
            return None
        return self.baseline.index.getattr(owner.target, patch.attr)


def _runs_with(other: PatchSite, patch: PatchSite) -> bool:
    """Does `other` run wherever `patch` does: in the same file and function, under conditions
    `patch` is under too? Inside an `if`, a try or a loop, only on the same side of the same
    `if`/`else` (other blocks cannot be told apart)."""
    same_place = other.site.path == patch.site.path and other.function == patch.function
    if not same_place or patch.when[: len(other.when)] != other.when:
        return False
    return not other.nested or (bool(other.branch) and other.branch == patch.branch and other.when == patch.when)


def _effect(guard: Guard) -> str:
    if guard is Guard.NONE:
        return "unguarded: the installer raises AttributeError at start-up"
    return f"guarded ({guard.value}): the installer silently installs nothing and the provider's unpatched code runs"
