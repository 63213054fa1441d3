"""The pure analysis core: trees in, findings out.

- `syntax` (questions about AST nodes) and `names` (module and symbol names) serve both visitors;
- `indexer` (provider visitor) fills `moduleinfo`; `provider` loads and resolves (`mro`, `signature`);
- `scanner` (consumer visitor) evaluates to `values`, reads try/except ladders and hasattr tests
  through `guards`, and fills `usage`;
- `checks` judges usage against the provider index; `relocation_checks`, `overrides`, `arity`,
  `pinning` and `archs` add the other rules; `suggest` drafts relocation tables;
- `contact` judges the contact surface beyond names: `method_overrides`, `protocols`, `returns`,
  `shadows` and `method_calls`, over mixed consumer/provider MROs (`hierarchy`), provider call
  sites found by name (`callsites`) and the provider the consumer was written against (`baseline`);
- `engine` runs one consumer -> provider edge; `cache` keeps per-file indexes by content.
"""
