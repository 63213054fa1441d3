"""Where source trees come from: a local folder (`tree`), a git commit (`git`), an installed
distribution (`installed`); `version` reads a component's version from its tree."""
