"""Read older v2 files whose run facts sit in `run.config`: lift them into `RunInfo`'s fields.

Until RunInfo had typed fields for what a run found out (the family that built the model,
random weights, fusion, image counts, the used workers), the collectors wrote them into
`run.config` beside a flat copy of their settings (`model_family`, `random_init`,
`device_resolved`, ...) and put the composed config under `run.config.resolved`. Such a file
reads as a current one: each fact goes to its field unless the file already sets that field.
`run.config` stays as written, so what `summary --json` shows of it does not change.

The schema tag stays v2 (the change is additive), so this runs on every v2 document on read,
after the version upgrades. Must not: write files, modify its input, or lift a value of the
wrong type (the field stays null: a file that read before must still read).
"""

from __future__ import annotations

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.mode import Mode

# Keys only the settings copy of an older v2 collector wrote; 1.6.0 configs have none of them,
# so a v1 file's config (user settings, not facts) is never read as facts.
_MARKERS = ("model_family", "device_resolved", "amp_effective")

# (key in the old run.config, RunInfo field, the JSON types the field takes)
_FACTS: tuple[tuple[str, str, tuple[type, ...]], ...] = (
    ("model_family", "family", (str,)),
    ("random_init", "random_init", (bool,)),
    ("fused", "fused", (bool,)),
    ("num_images", "num_images", (int,)),
    ("dataset_yaml", "dataset_yaml", (str,)),
    ("batches_per_epoch", "batches_per_epoch", (int,)),
    # Facts that had a field already; readers once fell back to the config when it was null.
    ("device_resolved", "device", (str,)),
    ("amp_effective", "amp", (bool,)),
    ("imgsz_input", "imgsz", (int,)),
    ("batch", "batch", (int,)),
)
# Training copies recorded the workers the run started (capped to the batches it loads).
_TRAINING_FACTS = (("workers", "num_workers", (int,)),)


def _fits(value: JsonValue, types: tuple[type, ...]) -> bool:
    # bool is an int in Python: a count must not take `true`, a flag never takes a number.
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def lift_run_facts(raw: JsonObject) -> JsonObject:
    """`raw` with the run facts of an older v2 `run.config` in their `run` fields; `raw`
    itself when there is nothing to lift."""
    run = raw.get("run")
    config = run.get("config") if isinstance(run, dict) else None
    if not isinstance(run, dict) or not isinstance(config, dict):
        return raw
    if not any(key in config for key in _MARKERS):
        return raw
    facts = _FACTS + (_TRAINING_FACTS if run.get("mode") == Mode.TRAIN.noun else ())
    lifted = dict(run)
    for key, name, types in facts:
        value = config.get(key)
        if lifted.get(name) is None and value is not None and _fits(value, types):
            lifted[name] = value
    return raw | {"run": lifted}
