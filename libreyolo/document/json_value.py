"""JSON as read from or written to a file, typed: what `json.loads` returns, nothing wider.

Raw documents (before conversion into the typed model, during migrations, free-form config)
are `JsonObject`, never a dict of `Any`: a reader must narrow a value (`isinstance`) before it
uses it, so a mistyped file cannot reach arithmetic or attribute access unchecked.
"""

JsonScalar = str | int | float | bool | None
JsonValue = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject = dict[str, JsonValue]
