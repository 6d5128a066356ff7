"""The schema tag of the document this version writes (stdlib only, imported by everything)."""

SCHEMA = "libreyolo.profile/v2"
