"""The POSIX front door: argparse, dispatch, exit statuses."""
