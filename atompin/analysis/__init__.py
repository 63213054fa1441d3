"""The pure analysis core: trees in, findings out.

- `indexer` (provider visitor) fills `moduleinfo`; `provider` loads and resolves;
- `scanner` (consumer visitor) fills `usage`;
- `checks` judges usage against the provider index; `engine` runs one check.
"""
