"""How long MLflow may wait on a tracking server, and how to say it could not reach one.

Role: MLflow's own HTTP settings (7 retries, backoff factor 2, 120 s a request) keep a client
retrying a server that refuses connections for about 4 minutes, and one that never answers for
far longer. For the span of an export, `bounded_http` sets each of MLflow's variables the user
has not set to a bound: 3 tries of at most 4 s with at most 3 s of backoff between them, so a
request gives up within 15 s; a variable the user set wins, and all are put back afterwards
(the sweep process goes on). `unreachable` tells a server that could not be reached from one
that answered with an error, and states the bound that applied.

Must not: import MLflow or requests at module level (a reader imports the sink).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# The bounds, as MLflow reads them (environment_variables.py, MLflow 3): with urllib3 2 the
# first retry comes at once and the n-th after factor * 2**(n-1) s, each plus up to the jitter.
# A Retry-After header is not obeyed: a proxy's `Retry-After: 3600` would wait an hour.
HTTP_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "4",
    "MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER": "false",
}
MAX_BACKOFF_S = 120.0  # urllib3's cap on one backoff
REACH_HINT = (
    "start the server or fix the URI; set MLFLOW_HTTP_REQUEST_TIMEOUT or "
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES to wait longer"
)


@contextmanager
def bounded_http() -> Iterator[None]:
    """MLflow's HTTP settings bounded where the user set none, for the span of the block."""
    added = [name for name in HTTP_BOUNDS if name not in os.environ]
    for name in added:
        os.environ[name] = HTTP_BOUNDS[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def unreachable(err: BaseException) -> str | None:
    """Why no answer came ("connection refused, gave up after 3 tries within 15 s"), or None
    when the error is not a failure to reach the server (it answered, or there is none)."""
    from requests.exceptions import ConnectionError as NoConnection
    from requests.exceptions import Timeout

    chain = _chain(err)
    if not any(isinstance(e, (NoConnection, Timeout)) for e in chain):
        return None
    tries, timeout_s, bound_s = _http_limits()
    # A read timeout that outlived the retries reaches requests as a ConnectionError: the
    # socket's TimeoutError beneath it tells. (urllib3's own timeout class is no test: its
    # refused-connection error derives from it.)
    if any(isinstance(e, (Timeout, TimeoutError)) for e in chain):
        why = f"no answer within {timeout_s} s"
    elif any(isinstance(e, ConnectionRefusedError) for e in chain):
        why = "connection refused"
    else:
        why = "no connection"
    return f"{why}, gave up after {tries} {'try' if tries == 1 else 'tries'} within {bound_s:.0f} s"


def _http_limits() -> tuple[int, int, float]:
    """(tries, timeout of each in s, longest the whole request may take in s) under the
    settings in force now."""
    from mlflow.environment_variables import (
        MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR,
        MLFLOW_HTTP_REQUEST_BACKOFF_JITTER,
        MLFLOW_HTTP_REQUEST_MAX_RETRIES,
        MLFLOW_HTTP_REQUEST_TIMEOUT,
    )

    retries = int(MLFLOW_HTTP_REQUEST_MAX_RETRIES.get())
    timeout_s = int(MLFLOW_HTTP_REQUEST_TIMEOUT.get())
    factor = float(MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR.get())
    jitter = float(MLFLOW_HTTP_REQUEST_BACKOFF_JITTER.get())
    waits_s = sum(
        min(MAX_BACKOFF_S, (factor * 2 ** (n - 1) if n > 1 else 0.0) + jitter)
        for n in range(1, retries + 1)
    )
    return retries + 1, timeout_s, (retries + 1) * timeout_s + waits_s


def _chain(err: BaseException) -> list[BaseException]:
    """`err` and what caused it, outermost first (MLflow wraps requests' error, which wraps
    urllib3's, which wraps the socket's)."""
    found: list[BaseException] = []
    at: BaseException | None = err
    while at is not None and at not in found:
        found.append(at)
        at = at.__cause__ or at.__context__
    return found
