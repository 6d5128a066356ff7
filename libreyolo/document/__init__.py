"""The Profile document: what profile.json is. Imports no torch, numpy or hydra."""
