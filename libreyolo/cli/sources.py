"""Open what a reader was given: a profile (any schema) or a Chrome trace analysed on the fly."""

from __future__ import annotations

from libreyolo import __version__
from libreyolo.analysis.build import profile_from_trace, refresh_legacy_verdict
from libreyolo.document.files import load, sniff
from libreyolo.document.model import Profile


def open_profile(path: str) -> Profile:
    """The profile at `path`; a Chrome trace is reduced once and turned into a profile."""
    if sniff(path) == "profile":
        return refresh_legacy_verdict(load(path))
    from libreyolo.kineto import analyse_trace  # only traces pay for the analyser's import

    return profile_from_trace(analyse_trace(path), trace_path=path, created=None,
                              version=__version__)
