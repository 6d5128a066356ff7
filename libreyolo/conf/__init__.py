"""Packaged Hydra defaults (`pkg://libreyolo.conf`): YAML only, shipped as package data."""
