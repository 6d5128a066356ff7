"""libreyolo 1.x's own trainer, measured in its own environment (`profile run --trainer`):
`settings.py` (what it is asked), `process.py` (the probe's process), `collect.py` (the
window and the profile). The probe itself is `libreyolo/probe/trainer_probe.py`."""
