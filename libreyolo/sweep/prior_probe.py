"""`python -m libreyolo.sweep.prior_probe BUDGET_MB`: a tune series' prior
(`measure.budget_prior.predict_prior`) in a process of its own, so its peak RSS is a fresh
process's, as a sweep point's is. The series' resolved config comes as JSON on stdin; the
`TunePrior` goes as JSON to stdout; otherwise one line on stderr and the exit status
(2: bad input, 3: the probe steps cannot predict, 1: a crash). `sweep.tune_prior` runs it.

Must not: write files.
"""

from __future__ import annotations

import sys

import msgspec

from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.config.compose import config_from_dict
from libreyolo.errors import ExitStatus, UsageError

USAGE = "python -m libreyolo.sweep.prior_probe"


def main(argv: list[str] | None = None) -> None:
    """The prior as JSON on stdout, or one line on stderr and its exit status."""
    out = Output.plain()
    words = sys.argv[1:] if argv is None else argv
    exit_process(exit_status(lambda: _answer(words, out), out), out)


def _answer(words: list[str], out: Output) -> ExitStatus:
    if len(words) != 1:
        raise UsageError(f"{USAGE} takes one memory budget in MB (got {len(words)} arguments)")
    try:
        budget_mb = float(words[0])
    except ValueError:
        raise UsageError(f"{USAGE}: {words[0]!r} is not a number of MB") from None
    try:
        data = msgspec.json.decode(sys.stdin.buffer.read())
        settings = config_from_dict(data) if isinstance(data, dict) else None
    except (msgspec.DecodeError, TypeError, ValueError) as err:
        raise UsageError(f"{USAGE}: the config on stdin is not a resolved config ({err})") from None
    if settings is None:
        raise UsageError(f"{USAGE}: the config on stdin is not a JSON object")
    from libreyolo.measure.budget_prior import predict_prior  # torch: in this process only

    out.lines(msgspec.json.encode(predict_prior(settings, budget_mb)).decode())
    return ExitStatus.OK


if __name__ == "__main__":
    main()
