"""`python -m libreyolo`."""

from libreyolo.cli.main import run

if __name__ == "__main__":
    run()
