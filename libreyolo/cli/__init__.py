"""The POSIX front door: argparse and dispatch (statuses and streams: `libreyolo.boundary`)."""
