"""The pure analysis core: trees in, findings out.

- `syntax` (questions about AST nodes) and `names` (module and symbol names) serve both visitors;
- `indexer` (provider visitor) fills `moduleinfo`; `provider` loads and resolves (`mro`, `signature`);
- `scanner` (consumer visitor) evaluates to `values`, reads try/except ladders and hasattr tests
  through `guards` and version gates through `gates`, and fills `usage` (each use with the
  conditions of its branch);
- `checks` judges usage against the provider index, deciding those conditions with `conditions`,
  consulting the names the consumer puts into the provider itself (`own`) and the provider's own
  calls of what the consumer replaces (`callsites`); `relocation_checks`, `overrides`, `arity`,
  `pinning` and `archs` add the other rules; `suggest` drafts relocation tables;
- `reach` says which consumer modules the plugin's entry points reach;
- `contact` judges the contact surface beyond names: `method_overrides`, `protocols`, `returns`,
  `shadows` and `method_calls`, over mixed consumer/provider MROs (`hierarchy`), provider call
  sites found by name (`name_sites`) and the provider the consumer was written against (`baseline`);
  `param_types` first types what an override's unannotated parameters hold, from the provider's
  method;
- `results` reads a check's cached result (without importing the rest); `engine` runs one
  consumer -> provider edge on the packages `packages` chooses; `cache` keeps per-file indexes
  by content; `prefetch` forks the second processes of a cold check.
- `definitions` says whether a change touched a symbol's definition (for `bisect`'s report).
"""
