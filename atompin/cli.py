"""The command line: a thin typer layer over the pipeline.

Exit statuses (everywhere): 0 pass, 1 findings that fail the gate,
2 bad input, 3 git or network failure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from atompin import __version__
from atompin.errors import AtompinError, InputError

app = typer.Typer(
    name="atompin",
    help="Keep a ROCm inference stack's pins honest: ATOM <-> vLLM <-> aiter.\n\n"
    "Exit statuses: 0 pass, 1 findings fail the gate, 2 bad input, 3 git or network failure.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


class DiffFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


class TextOrJson(str, Enum):
    text = "text"
    json = "json"


class _State:
    """Options of the root command that every command honours."""

    verbose = False
    debug = False


STATE = _State()


def _fail(err: AtompinError) -> NoReturn:
    typer.echo(f"atompin: error: {err}", err=True)
    raise typer.Exit(err.exit_code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"atompin {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show info findings and progress lines.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback when something unexpected fails.")] = False,
) -> None:
    """atompin: pinned pairs, checked statically, locked. Colour follows NO_COLOR."""
    STATE.verbose = verbose
    STATE.debug = debug


@app.command()
def check(
    consumer: Annotated[
        str,
        typer.Argument(
            help="Folder that holds the consumer's package folder (e.g. an ATOM checkout), or with --consumer-installed a distribution name."
        ),
    ],
    provider: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(
            help="Folder that holds the provider's package folder (e.g. a vLLM checkout); omit with --installed."
        ),
    ] = None,
    package: Annotated[
        str | None, typer.Option(help="Provider import name (default: the single top-level package).")
    ] = None,  # noqa: UP045
    consumer_package: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Consumer package to scan, dotted names allowed (default: every top-level package)."),
    ] = None,
    format: Annotated[CheckFormat, typer.Option("--format", help="Output format.")] = CheckFormat.text,
    cache_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Index cache folder (default: $ATOMPIN_CACHE_DIR or the per-user cache dir)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the index cache.")] = False,
    relocations: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="A relocation table, or a folder of them (<folder>/<package>/*.toml, chosen by provider version)."
        ),
    ] = None,
    baseline: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="The provider the consumer was written against (a source folder): signatures of moved symbols are compared with it."
        ),
    ] = None,
    provider_version: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="The provider's version for choosing tables (default: read from its version file)."),
    ] = None,
    installed: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Check against this installed distribution (found through its metadata, never imported) instead of PROVIDER."
        ),
    ] = None,
    consumer_installed: Annotated[
        bool, typer.Option("--consumer-installed", help="CONSUMER names an installed distribution.")
    ] = False,
    site: SiteOpt = None,
    pair: Annotated[
        str | None,
        typer.Option(
            "--pair", help="With --installed: also confirm the installed version and commit are this locked pair's pin."
        ),
    ] = None,  # noqa: UP045
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
) -> None:
    """Check statically that everything CONSUMER imports or patches from PROVIDER exists.

    Nothing from either tree is imported or executed. Exit 0 when no error-level
    finding (and, with --installed --pair, the installed pin matches the lock),
    1 when there is one, 2 on bad input.

    Example:

        atompin check ./ATOM ./vllm --package vllm --consumer-package atom.plugin.vllm --format json

        atompin check ./ATOM ./vllm-0.33 --relocations relocations --baseline ./vllm-0.31

        atompin check /opt/atom --installed vllm --consumer-package atom.plugin.vllm --pair atom-0.1.5+vllm-0.31
    """
    from atompin.analysis.cache import IndexCache, SqliteIndexCache, default_cache_dir
    from atompin.analysis.engine import check_trees, provider_package
    from atompin.lock import read_lock, select_pair
    from atompin.manifest import load_manifest
    from atompin.relocations import Relocation, entries_from
    from atompin.report import json as json_report
    from atompin.report import text as text_report
    from atompin.sources.tree import FolderTree, SourceTree
    from atompin.sources.version import version_from_tree
    from atompin.verify import VerifyReport, component_for, verify_installed_pin

    pin_problems: list[str] = []
    try:
        if (provider is None) == (installed is None):
            raise InputError("give either PROVIDER (a source folder) or --installed NAME, not both or neither")
        consumer_tree: SourceTree
        if consumer_installed:
            from atompin.sources.installed import load_installed

            consumer_tree = load_installed(consumer, site).tree
        else:
            if not Path(consumer).is_dir():
                raise InputError(
                    f"{consumer}: consumer folder does not exist; pass the folder that holds the package folder"
                )
            consumer_tree = FolderTree(consumer)
        provider_tree: SourceTree
        if installed is not None:
            from atompin.sources.installed import load_installed

            dist = load_installed(installed, site)
            provider_tree = dist.tree
            package = package or (installed if dist.tree.find_module(installed) else None)
            if pair is not None:
                spec, _ = load_manifest(manifest)
                pins = VerifyReport()
                locked = select_pair(read_lock(lock_path or manifest.parent / "atompin.lock"), pair)
                verify_installed_pin(locked, component_for(spec, installed), dist, pins)
                pin_problems = pins.failures
        else:
            assert provider is not None
            if not provider.is_dir():
                raise InputError(
                    f"{provider}: provider folder does not exist; pass the folder that holds the package folder"
                )
            provider_tree = FolderTree(provider)
        for label, path in (("baseline", baseline), ("relocations", relocations)):
            if path is not None and not path.exists():
                raise InputError(f"{path}: {label} does not exist")
        cache: IndexCache = IndexCache() if no_cache else SqliteIndexCache(cache_dir or default_cache_dir())
        entries: list[tuple[str, Relocation]] = []
        if relocations is not None:
            package = provider_package(provider_tree, package)
            version = provider_version or version_from_tree(provider_tree, package)
            entries = entries_from(relocations, package, version)
        result = check_trees(
            consumer_tree, provider_tree, package, consumer_package, cache, entries,
            FolderTree(baseline) if baseline else None,
        )  # fmt: skip
    except AtompinError as err:
        _fail(err)
    for problem in pin_problems:
        typer.echo(f"FAIL  {problem}", err=True)
    from atompin.report import markdown as markdown_report
    from atompin.report import sarif as sarif_report

    render = {
        CheckFormat.text: text_report.render_check,
        CheckFormat.json: json_report.render_check,
        CheckFormat.markdown: markdown_report.render_check,
        CheckFormat.sarif: sarif_report.render_check,
    }[format]
    sys.stdout.write(render(result))
    raise typer.Exit(1 if result.errors or pin_problems else 0)


SiteOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--site", help="Where to look for installed distributions (repeatable; default: sys.path)."),
]
ManifestOpt = Annotated[Path, typer.Option("--manifest", help="The pairs manifest.")]
LockOpt = Annotated[
    Path | None, typer.Option("--lock", help="The lock file (default: atompin.lock beside the manifest).")
]  # noqa: UP045
CacheOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--cache-dir",
        help="Cache folder for git repositories and indexes (default: $ATOMPIN_CACHE_DIR or the per-user cache dir).",
    ),
]


class ExportFormat(str, Enum):
    bake = "bake"
    env = "env"
    github = "github"
    json = "json"


@contextmanager
def _progress(quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A live status line on a terminal; silent otherwise."""
    if quiet or not sys.stderr.isatty():
        if STATE.verbose and not quiet:
            yield lambda msg: typer.echo(f"atompin: {msg}", err=True)
        else:
            yield lambda _msg: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("starting") as status:
        yield lambda msg: status.update(msg)


def _locker(
    manifest_path: Path,
    cache_dir: Path | None,
    offline: bool,
    progress: Callable[[str], None],
    baseline: str | None = None,
):  # type: ignore[no-untyped-def]  # noqa: UP045
    from atompin.analysis.cache import SqliteIndexCache, default_cache_dir
    from atompin.locking import Locker
    from atompin.manifest import load_manifest
    from atompin.sources.git import GitCache

    manifest, _ = load_manifest(manifest_path)
    root = cache_dir or default_cache_dir()
    git_cache = GitCache(root, offline=offline, progress=progress)
    return manifest, Locker(
        manifest, manifest_path.resolve().parent, git_cache, SqliteIndexCache(root), progress, baseline
    )


@app.command()
def lock(
    pair: Annotated[
        list[str] | None, typer.Option("--pair", help="Lock only this pair (repeatable); others keep their entry.")
    ] = None,  # noqa: UP045
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the cache only; fail clearly when something is not cached.")
    ] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--baseline",
            help="Provider ref to compare relocated signatures with (default: the consumer's declared target).",
        ),
    ] = None,
    format: Annotated[
        CheckFormat, typer.Option("--format", help="How to print the result (the lock file is TOML either way).")
    ] = CheckFormat.text,
) -> None:
    """Resolve every pair of pairs.toml through git, check each declared edge, and write atompin.lock.

    The lock is written even when a gated pair fails (exit 1), so the PR shows the
    failing verdict. Exit 2 on bad input, 3 on git or network failure (nothing written).

    Example:

        atompin lock --pair atom-0.1.9+vllm-0.33
    """
    from atompin.lock import read_lock, render_lock, write_atomically

    target = lock_path or manifest.parent / "atompin.lock"
    try:
        with _progress(quiet) as progress:
            spec, locker = _locker(manifest, cache_dir, offline, progress, baseline)
            previous = read_lock(target) if (pair and target.exists()) else None
            result = locker.lock(spec.digest(), pair, previous)
        before = target.read_text() if target.exists() else None
        text = render_lock(result)
        if text != before:
            write_atomically(target, text)
    except AtompinError as err:
        _fail(err)
    if not quiet:
        sys.stdout.write(_render_lock(result, format, manifest.name))
        typer.echo(f"{target}: {'unchanged' if text == before else 'written'}", err=format is not CheckFormat.text)
    judged = [p for p in result.pairs if not pair or p.name in pair]
    raise typer.Exit(1 if any(p.gated_failures() for p in judged) else 0)


@app.command()
def verify(
    remote: Annotated[
        bool, typer.Option("--remote", help="Also check that every locked tag still points at its commit.")
    ] = False,
    bake: Annotated[
        list[Path] | None,
        typer.Option("--bake", help="A bake file (HCL or JSON) whose pin variables must match the lock (repeatable)."),
    ] = None,  # noqa: UP045
    pair: Annotated[
        str | None, typer.Option("--pair", help="The pair the bake files build (default: the only pair).")
    ] = None,  # noqa: UP045
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    installed: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="An installed distribution (e.g. vllm) that must be the pair's pin, checked statically against the consumer."
        ),
    ] = None,
    consumer: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="With --installed: the consumer's source folder (default: the consumer's installed distribution)."
        ),
    ] = None,
    site: SiteOpt = None,
) -> None:
    """Gate CI and image builds on the lock: it is current, and every gated verdict passes.

    Offline by default. Exit 0 pass, 1 fail (stale lock, failing verdict, moved tag,
    bake mismatch), 2 bad input, 3 git or network failure.

    Example:

        atompin verify --bake docker/rocm-bake.hcl --pair atom-0.1.9+vllm-0.33

        atompin verify --installed vllm --pair atom-0.1.9+vllm-0.33   (inside the image)
    """
    from atompin.lock import read_lock, select_pair
    from atompin.relocations import digests
    from atompin.verify import VerifyReport, verify_bake, verify_installed, verify_lock, verify_remote

    target = lock_path or manifest.parent / "atompin.lock"
    report = VerifyReport()
    try:
        with _progress() as progress:
            spec, locker = _locker(manifest, cache_dir, False, progress)
            locked = read_lock(target)
            verify_lock(locked, spec, report, digests(locker.tables))
            if remote:
                verify_remote(locked, spec, locker.git, locker.fetch_url, report)
            for path in bake or []:
                verify_bake(path, select_pair(locked, pair), spec, report)
            if installed is not None:
                verify_installed(spec, select_pair(locked, pair), installed, consumer, site, locker.index_cache, report)
    except AtompinError as err:
        _fail(err)
    for line in report.passes:
        typer.echo(f"ok    {line}")
    for line in report.warnings:
        typer.echo(f"warn  {line}", err=True)
    for line in report.failures:
        typer.echo(f"FAIL  {line}", err=True)
    raise typer.Exit(0 if report.ok else 1)


def _render_lock(lock, format: CheckFormat, manifest_name: str) -> str:  # type: ignore[no-untyped-def]
    from atompin.report import markdown, sarif, text

    if format is CheckFormat.json:
        import json

        return json.dumps(lock.model_dump(by_alias=True), indent=2) + "\n"
    if format is CheckFormat.markdown:
        return markdown.render_lock(lock)
    if format is CheckFormat.sarif:
        return sarif.render_lock(lock, manifest_name)
    return text.render_lock(lock, show_info=STATE.verbose) + "\n"


def _diff_renderer(format: DiffFormat):  # type: ignore[no-untyped-def]
    from atompin.report import json as json_report
    from atompin.report import markdown, text

    return {
        DiffFormat.text: text.render_diff,
        DiffFormat.markdown: markdown.render_diff,
        DiffFormat.json: json_report.render_diff,
    }[format]


@app.command()
def diff(
    old: Annotated[Path | None, typer.Argument(help="The old lock (default: the lock at git HEAD, or --base).")] = None,  # noqa: UP045
    new: Annotated[Optional[Path], typer.Argument(help="The new lock (default: the working tree's).")] = None,  # noqa: UP045
    base: Annotated[str, typer.Option("--base", help="The git revision the default OLD is read at.")] = "HEAD",
    format: Annotated[
        DiffFormat, typer.Option("--format", help="text, markdown (for a PR comment) or json.")
    ] = DiffFormat.text,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Compare two locks: pins, verdicts, findings that appeared or were resolved, counts.

    Exit 1 when a gated verdict got worse, so a CI job can fail on it.

    Example:

        atompin diff --base origin/main --format markdown > comment.md
    """
    from atompin.analysis.cache import default_cache_dir
    from atompin.lock import lock_at_revision, read_lock
    from atompin.lockdiff import diff_locks
    from atompin.sources.git import GitCache

    default = lock_path or manifest.parent / "atompin.lock"
    try:
        new_lock = read_lock(new or default)
        old_lock = read_lock(old) if old else lock_at_revision(base, new or default)
        git_cache = GitCache(cache_dir or default_cache_dir(), offline=True)
        base_dir = manifest.resolve().parent

        def distance(repo: str, a: str, b: str) -> int | None:
            local = base_dir / repo
            return git_cache.commits_between(str(local.resolve()) if local.exists() else repo, a, b)

        result = diff_locks(old_lock, new_lock, distance)
    except AtompinError as err:
        _fail(err)
    sys.stdout.write(_diff_renderer(format)(result))
    raise typer.Exit(1 if result.worse else 0)


@app.command()
def bump(
    component: Annotated[str, typer.Argument(help="The component to re-pin (a key of [components]).")],
    ref: Annotated[str, typer.Argument(help="The new ref: a tag, branch or commit.")],
    pair: Annotated[
        list[str] | None,
        typer.Option("--pair", help="Only this pair (repeatable; default: every pair that pins COMPONENT)."),
    ] = None,  # noqa: UP045
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing; show what would change.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Use the cache only.")] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    format: Annotated[DiffFormat, typer.Option("--format", help="How to print the lock diff.")] = DiffFormat.text,
) -> None:
    """Re-pin COMPONENT to REF in pairs.toml (comments and layout kept), re-lock the
    affected pairs, and print what changed.

    Exit 1 when a gated verdict got worse; 2 on bad input; 3 on git failure (nothing written).

    Example:

        atompin bump vllm v0.33.0 --dry-run
    """
    import difflib

    from atompin.lock import read_lock, write_atomically, write_lock
    from atompin.lockdiff import diff_locks
    from atompin.manifest import load_manifest, parse_manifest, set_ref
    from atompin.sources.git import check_ref

    target = lock_path or manifest.parent / "atompin.lock"
    try:
        spec, source = load_manifest(manifest)
        if component not in spec.components:
            raise InputError(f"{manifest}: no component {component!r} (components: {', '.join(spec.components)})")
        problem = check_ref(ref)
        if problem:
            raise InputError(f"ref {ref!r} refused: {problem}")
        for name in pair or []:
            spec.pair(name)
        edited, changed = set_ref(source, component, ref, pair)
        if not changed:
            typer.echo(f"{manifest}: every selected pair already pins {component} = {ref!r}; nothing to do")
            raise typer.Exit(0)
        new_spec = parse_manifest(edited, manifest)
        with _progress() as progress:
            _, locker = _locker(manifest, cache_dir, offline, progress)
            locker.manifest = new_spec
            previous = read_lock(target) if target.exists() else None
            relocked = locker.lock(new_spec.digest(), changed, previous)
        result = diff_locks(previous, relocked)
    except AtompinError as err:
        _fail(err)
    patch = "".join(
        difflib.unified_diff(source.splitlines(True), edited.splitlines(True), str(manifest), str(manifest))
    )
    typer.echo(patch, err=format is not DiffFormat.text)
    sys.stdout.write(_diff_renderer(format)(result))
    if dry_run:
        typer.echo("dry run: nothing written", err=True)
    else:
        write_atomically(manifest, edited)
        write_lock(target, relocked)
        typer.echo(f"{manifest} and {target}: written ({', '.join(changed)})", err=True)
    raise typer.Exit(1 if result.worse else 0)


@app.command()
def export(
    pair: Annotated[Optional[str], typer.Option("--pair", help="The pair to export (default: the only pair).")] = None,  # noqa: UP045
    format: Annotated[
        ExportFormat, typer.Option("--format", help="bake (JSON override file), env, github, json.")
    ] = ExportFormat.bake,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (atomically) instead of stdout.")
    ] = None,  # noqa: UP045
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
) -> None:
    """Export a locked pair's pins for a build: a bake override, env lines, GitHub outputs or JSON.

    Variable names default to <COMPONENT>_REPO, _REF, _COMMIT, _VERSION (renamable per
    component in pairs.toml), plus ATOMPIN_PAIR and ATOMPIN_VERDICT.

    Example:

        atompin export --pair atom-0.1.9+vllm-0.33 --format bake -o atompin.bake.json
        docker buildx bake -f rocm-bake.hcl -f atompin.bake.json
    """
    from atompin.lock import read_lock, select_pair, write_atomically
    from atompin.manifest import load_manifest
    from atompin.report import export as exporters
    from atompin.verify import pin_variables

    target = lock_path or manifest.parent / "atompin.lock"
    try:
        spec, _ = load_manifest(manifest)
        locked = select_pair(read_lock(target), pair)
        variables = pin_variables(locked, spec)
        if format is ExportFormat.json:
            text = exporters.full_json(locked, variables)
        else:
            text = {"bake": exporters.bake, "env": exporters.env, "github": exporters.github}[format.value](variables)
        if output:
            write_atomically(output, text)
        else:
            sys.stdout.write(text)
    except AtompinError as err:
        _fail(err)


relocations_app = typer.Typer(
    help="Relocation tables: where provider symbols moved between releases.", no_args_is_help=True
)
app.add_typer(relocations_app, name="relocations")


@relocations_app.command("suggest")
def relocations_suggest(
    source: Annotated[str, typer.Argument(help="The provider's git repository (URL or path); '-' with two folders.")],
    old: Annotated[str, typer.Argument(help="The old release: a ref (tag, branch, commit) or a source folder.")],
    new: Annotated[str, typer.Argument(help="The new release: a ref or a source folder.")],
    consumer: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="A consumer source folder: only the symbols it uses are considered (default: every definition)."
        ),
    ] = None,
    consumer_package: Annotated[Optional[str], typer.Option(help="The consumer package to scan.")] = None,  # noqa: UP045
    package: Annotated[
        str | None, typer.Option(help="The provider's import name (default: the single top-level package).")
    ] = None,  # noqa: UP045
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the draft here (atomically) instead of stdout.")
    ] = None,  # noqa: UP045
    offline: Annotated[bool, typer.Option("--offline", help="Use the git cache only.")] = False,
    cache_dir: CacheOpt = None,
) -> None:
    """Draft a relocation table: for each symbol at OLD that is gone at NEW, where did it go?

    Candidates are ranked (same name in another module, same class elsewhere, a new
    name with the same parameters) and printed in the relocations/ format with the
    parameters at the new place and a note on each signature change. Review it
    against the sources before committing it. When OLD and NEW are folders they are
    read as source trees; otherwise SOURCE is a git repository and OLD and NEW are refs.

    Example:

        atompin relocations suggest https://github.com/vllm-project/vllm v0.31.0 v0.33.0 --consumer ./ATOM --consumer-package atom.plugin.vllm
    """
    from atompin.analysis.cache import SqliteIndexCache, default_cache_dir
    from atompin.analysis.checks import UsageChecker
    from atompin.analysis.engine import consumer_packages, provider_package, scan_consumer
    from atompin.analysis.provider import ProviderIndex
    from atompin.analysis.suggest import draft_entries, suggest
    from atompin.lock import write_atomically
    from atompin.relocations import render_draft
    from atompin.sources.git import GitCache
    from atompin.sources.tree import FolderTree, SourceTree
    from atompin.sources.version import normalize_version, version_from_tree

    try:
        root = cache_dir or default_cache_dir()
        index_cache = SqliteIndexCache(root)
        with _progress() as progress:
            old_tree: SourceTree
            new_tree: SourceTree
            if Path(old).is_dir() and Path(new).is_dir():
                old_tree, new_tree = FolderTree(old), FolderTree(new)
            else:
                git_cache = GitCache(root, offline=offline, progress=progress)
                url = source if not Path(source).exists() else str(Path(source).resolve())
                old_tree, new_tree = (git_cache.tree(git_cache.resolve(url, ref)) for ref in (old, new))
            package = provider_package(new_tree, package)
            old_index, new_index = (
                ProviderIndex(old_tree, package, index_cache),
                ProviderIndex(new_tree, package, index_cache),
            )
            symbols = None
            if consumer is not None:
                if not consumer.is_dir():
                    raise InputError(f"{consumer}: consumer folder does not exist")
                tree = FolderTree(consumer)
                usage = scan_consumer(tree, consumer_packages(tree, consumer_package, package), package, index_cache)
                symbols = list(UsageChecker(usage, old_index).sites_by_symbol())
            suggestions, removed = suggest(old_index, new_index, symbols, progress)
            index_cache.flush()
    except AtompinError as err:
        _fail(err)
    entries = draft_entries(suggestions)
    version = normalize_version(new) or version_from_tree(new_tree, package) or new
    header = [
        f"Draft relocation table for {package}: {old} -> {new}, made by `atompin relocations suggest`.",
        "Review every entry against the provider's sources before committing it.",
    ]
    text = render_draft(package, f">={version}", entries, removed, header)
    if output:
        write_atomically(output, text)
        typer.echo(f"{output}: {len(entries)} entries, {len(removed)} removed without a candidate", err=True)
    else:
        sys.stdout.write(text)


@app.command()
def doctor(
    consumer: Annotated[str, typer.Argument(help="The consumer's installed distribution (e.g. atom).")],
    provider: Annotated[str, typer.Option("--provider", help="The provider's import name.")] = "vllm",
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="Entry-point group the host loads (repeatable; default: vllm.platform_plugins, vllm.general_plugins).",
        ),
    ] = None,  # noqa: UP045
    consumer_package: Annotated[str | None, typer.Option(help="The consumer package to scan for patch sites.")] = None,  # noqa: UP045
    site: SiteOpt = None,
    format: Annotated[TextOrJson, typer.Option("--format", help="text or json.")] = TextOrJson.text,
) -> None:
    """The runtime half. WARNING: this is the one command that IMPORTS AND RUNS CODE.

    Run it deliberately, in a live environment with the whole stack installed (on
    a supported GPU for real use). It finds the consumer's patch sites statically,
    records every patched provider attribute, loads the consumer's entry points in
    the host's plugin groups and calls them as the host does (each isolated), then
    prints one row per patch: installed, stood down (with the reason), or raised;
    plus a row per entry point that failed. Exit 1 when a patch did not install and
    nothing explains why, or an entry point failed.

    Example:

        atompin doctor atom --provider vllm --consumer-package atom.plugin.vllm --format json
    """
    import json

    from atompin.doctor import ensure_on_path, render_text, run_doctor
    from atompin.sources.installed import load_installed

    try:
        dist = load_installed(consumer, site)
        if site:
            ensure_on_path(site)
        groups = tuple(group or (f"{provider}.platform_plugins", f"{provider}.general_plugins"))
        report = run_doctor(dist, provider, groups, [consumer_package] if consumer_package else None)
    except AtompinError as err:
        _fail(err)
    if format is TextOrJson.json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(report))
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def demo() -> None:
    """Run the built-in example offline: a miniature provider with two releases and a
    plugin that shows the loud and the silent failure modes.

    Example:

        atompin demo
    """
    from atompin.demo import run_demo

    raise typer.Exit(run_demo(typer.echo))


def main() -> None:
    """The console script: no Python traceback unless --debug."""
    try:
        app()  # standalone: usage errors exit 2 with the usage line, typer.Exit keeps its status
    except KeyboardInterrupt:
        typer.echo("atompin: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # an unexpected failure is a bug: one line unless --debug
        if STATE.debug:
            raise
        typer.echo(
            f"atompin: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", err=True
        )
        sys.exit(4)
