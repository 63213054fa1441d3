"""The pure analysis core: trees in, findings out.

- `indexer` (provider visitor) fills `moduleinfo`; `provider` loads and resolves (`mro`, `signature`);
- `scanner` (consumer visitor) fills `usage`;
- `checks` judges usage against the provider index; `relocation_checks`, `overrides`, `arity`,
  `pinning` and `archs` add the other rules; `suggest` drafts relocation tables;
- `engine` runs one consumer -> provider edge; `cache` keeps per-file indexes by content.
"""
