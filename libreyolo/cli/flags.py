"""argparse `type=` validators: bad values fail at parse time with one line and exit 2."""

from __future__ import annotations

import argparse
import math
import re

from libreyolo.document.limits import parse_size


def positive_int(text: str) -> int:
    """An integer ≥ 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An integer ≥ 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def positive_or_auto(text: str) -> int:
    """A batch size ≥ 1, or -1 for auto-fit."""
    value = _int(text)
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"must be a positive batch size or -1 (auto), got {text}")
    return value


def probability(text: str) -> float:
    """A float in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text}")
    return value


def _positive_number(text: str, what: str) -> float:
    """A finite number > 0, or ArgumentTypeError naming `what` it must be."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be {what} above 0, got {text}")
    return value


def positive_percent(text: str) -> float:
    """A finite number of percent > 0."""
    return _positive_number(text, "a percentage")


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    return _positive_number(text, "a number of seconds")


_TRAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def train_word(text: str) -> str:
    """One `key=value` word for libreyolo 1.x's `libreyolo train` (`mosaic=0.0`)."""
    if not _TRAIN_KEY.match(text) or "\n" in text or "\x00" in text:
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, e.g. mosaic=0.0; got {text!r}")
    return text


def regex(text: str) -> re.Pattern[str]:
    """A case-insensitive regular expression."""
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"invalid regex {text!r}: {err}") from None


def byte_size(text: str) -> int:
    """A positive number of bytes: `123`, or with a binary suffix (`512K`, `64M`, `8G`)."""
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text}") from None
