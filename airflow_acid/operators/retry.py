"""Which failures of a compaction task a retry can fix, as Airflow's exception-aware retry policy (Airflow 3.3's
``retry_policy``) or, on older Airflow, as the operator's own handling (:func:`fail_unless_retryable`).

No retry for what only a person can fix: authorisation (``PermissionError``, what fsspec raises for an access
denied by the store), a schema mismatch, a corrupt or foreign file, a plan the compactor refuses — every
:class:`~airflow_acid.errors.AcidUserError` that is not :attr:`~airflow_acid.errors.AcidUserError.retryable`.
Retries for the transient: the metastore database unreachable (``retryable`` errors), storage timeouts and dropped
connections (``TimeoutError``, ``ConnectionError``). Anything else keeps the task's ordinary retry behaviour.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_acid.airflow_compat import AirflowFailException
from airflow_acid.errors import AcidUserError

log = logging.getLogger(__name__)


def retry_verdict(exc: BaseException) -> bool | None:
    """True: a retry may succeed; False: it cannot; None: no opinion (the task's retries apply)."""
    if isinstance(exc, AcidUserError):
        return exc.retryable
    if isinstance(exc, PermissionError):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    return None


def fail_unless_retryable(exc: BaseException) -> None:
    """The operator's own handling where Airflow has no retry policy: raise :class:`AirflowFailException` (no
    retry) for an error a retry cannot fix; return for the others, which the caller re-raises."""
    if retry_verdict(exc) is False:
        raise AirflowFailException(f"{type(exc).__name__}: {exc} (a retry cannot fix this)") from exc


try:
    from airflow.sdk import RetryDecision, RetryPolicy
except ImportError:  # Airflow before 3.3: the operator handles it (fail_unless_retryable)
    RetryPolicy = None  # type: ignore[assignment,misc]


def compaction_retry_policy() -> Any | None:
    """The retry policy of compaction tasks, or None (with a log line) when this Airflow has no retry policies."""
    if RetryPolicy is None:
        log.info("this Airflow has no exception-aware retry policy (Airflow 3.3+): compaction tasks fail errors a "
                 "retry cannot fix themselves and leave the rest to their retries")
        return None
    return AcidRetryPolicy()


if RetryPolicy is not None:

    class AcidRetryPolicy(RetryPolicy):
        """:func:`retry_verdict` as Airflow's retry decision (evaluated in the worker with the real exception)."""

        def evaluate(self, exception: BaseException, try_number: int, max_tries: int,
                     context: Any = None) -> RetryDecision:
            verdict = retry_verdict(exception)
            if verdict is None:
                return RetryDecision.default()
            name = type(exception).__name__
            if verdict:
                return RetryDecision.retry(reason=f"{name} is transient: retrying")
            return RetryDecision.fail(reason=f"{name} cannot be fixed by a retry: {exception}")

        def serialize(self) -> dict[str, Any]:
            return {"__type": "AcidRetryPolicy"}

        @classmethod
        def deserialize(cls, data: dict[str, Any]) -> AcidRetryPolicy:
            return cls()


__all__ = ["compaction_retry_policy", "fail_unless_retryable", "retry_verdict"]
