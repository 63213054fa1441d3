"""Where source trees come from: a local folder, a git commit, an installed distribution."""

from atompin.sources.tree import FolderTree, ModuleFile, ModuleKind, SourceTree, blob_id

__all__ = ["FolderTree", "ModuleFile", "ModuleKind", "SourceTree", "blob_id"]
