"""The command line: a thin typer layer over the pipeline.

Exit statuses (everywhere): 0 pass, 1 findings that fail the gate,
2 bad input, 3 git or network failure.
"""

from __future__ import annotations

import sys
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
) -> None:
    """atompin: pinned pairs, checked statically, locked."""


@app.command()
def check(
    consumer: Annotated[
        Path, typer.Argument(help="Folder that holds the consumer's package folder (e.g. an ATOM checkout).")
    ],
    provider: Annotated[
        Path, typer.Argument(help="Folder that holds the provider's package folder (e.g. a vLLM checkout).")
    ],
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
) -> None:
    """Check statically that everything CONSUMER imports or patches from PROVIDER exists.

    Nothing from either tree is imported or executed. Exit 0 when no error-level
    finding, 1 when there is one, 2 on bad input.

    Example:

        atompin check ./ATOM ./vllm --package vllm --consumer-package atom.plugin.vllm --format json
    """
    from atompin.analysis.cache import IndexCache, SqliteIndexCache, default_cache_dir
    from atompin.analysis.engine import check_trees
    from atompin.report import json as json_report
    from atompin.report import text as text_report
    from atompin.sources.tree import FolderTree

    try:
        for label, path in (("consumer", consumer), ("provider", provider)):
            if not path.is_dir():
                raise InputError(
                    f"{path}: {label} folder does not exist; pass the folder that holds the package folder"
                )
        cache: IndexCache = IndexCache() if no_cache else SqliteIndexCache(cache_dir or default_cache_dir())
        result = check_trees(FolderTree(consumer), FolderTree(provider), package, consumer_package, cache)
    except AtompinError as err:
        _fail(err)
    render = json_report.render_check if format is CheckFormat.json else text_report.render_check
    sys.stdout.write(render(result))
    raise typer.Exit(1 if result.errors else 0)


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
    app()
