"""libreyolo's Hydra launcher plug-in, `hydra/launcher=ray` (Hydra finds plug-ins only in the
`hydra_plugins` namespace package, which therefore has no `__init__.py` of its own)."""
