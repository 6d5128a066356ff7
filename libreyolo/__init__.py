"""libreyolo: the `libreyolo profile` command group. Imports no torch, numpy or hydra."""

__version__ = "2.0.0.dev0"
