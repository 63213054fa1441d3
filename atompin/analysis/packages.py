"""Which packages of a tree a check reads: the provider's import name, the consumer's packages.

Light on purpose (a tree's listing only): the cached-result path reads it without the
analysis core.
"""

from __future__ import annotations

from atompin.errors import InputError
from atompin.sources.tree import SourceTree


class MissingPackage(InputError):
    """A package named for a check is not in its tree: `option` says which (`--package`: the
    provider's, `--consumer-package`: the consumer's), for a caller that names it elsewhere
    (`lock` says it at the pairs.toml line)."""

    def __init__(self, tree: SourceTree, package: str, option: str) -> None:
        self.package, self.option = package, option
        self.found = ", ".join(tree.top_level_packages()) or "none"
        super().__init__(
            f"{tree.label}: no package {package!r} here (top-level packages: {self.found}); pass {option} NAME"
        )


def _packages(tree: SourceTree, package: str | None, option: str, exclude: str = "") -> list[str]:
    """The package given (checked), else every top-level package of the tree but `exclude`."""
    if package:
        if tree.find_module(package) is None:
            raise MissingPackage(tree, package, option)
        return [package]
    packages = [p for p in tree.top_level_packages() if p != exclude]
    if not packages:
        raise InputError(f"{tree.label}: no Python package found; point at the folder that holds the package folder")
    return packages


def provider_package(tree: SourceTree, package: str | None) -> str:
    """The provider's import name: the one given (checked), or the single top-level package."""
    packages = _packages(tree, package, "--package")
    if len(packages) > 1:
        raise InputError(f"{tree.label}: several top-level packages ({', '.join(packages)}); pass --package NAME")
    return packages[0]


def consumer_packages(tree: SourceTree, package: str | None, provider: str) -> list[str]:
    """The consumer packages to scan: the one given (checked), else every top-level package."""
    return _packages(tree, package, "--consumer-package", exclude=provider)
