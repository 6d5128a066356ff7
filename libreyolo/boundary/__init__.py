"""The process boundary: the one writer to stdout and stderr, and the one exit.

`output.Output` is the only code that writes to the standard streams; `status.exit_status`
maps whatever an entry point's body raised to an `ExitStatus` (one line through `Output`), and
`status.exit_process` is the only code that ends the process with a status. Every entry point
(`libreyolo`, `libreyolo-sweep`, `python -m libreyolo.sweep.point`, `python -m
libreyolo.sweep.report`, a sweep point's child process) goes through both; a test fails on any
`print(`, `sys.exit(`, `raise SystemExit` or write to a standard stream anywhere else.

Must not: import torch, numpy or Hydra (the readers' start goes through here), or decide what
a command means: it only writes what it is handed and maps errors to statuses.
"""
