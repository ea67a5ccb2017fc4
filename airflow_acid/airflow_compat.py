"""Airflow names whose module moved between the supported releases (3.1 to the newest 3.x), imported from where the
running Airflow has them, so a DAG file never fails to parse on an older release.

Airflow 3.1's task SDK has no ``airflow.sdk.exceptions.AirflowFailException`` (nor Skip/NotFound): they live in
``airflow.exceptions`` there, which newer releases keep as aliases of the SDK's classes. Metrics go through
``airflow.sdk.observability.stats`` from 3.2 on, ``airflow.stats.Stats`` before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSkipException,
    )
else:
    try:
        from airflow.sdk.exceptions import (
            AirflowException,
            AirflowFailException,
            AirflowNotFoundException,
            AirflowSkipException,
        )
    except ImportError:  # Airflow 3.1
        from airflow.exceptions import (
            AirflowException,
            AirflowFailException,
            AirflowNotFoundException,
            AirflowSkipException,
        )


def airflow_stats() -> Any:
    """Airflow's metrics interface (``gauge``, ``incr``, ``timing`` with ``tags``) of this release."""
    try:
        from airflow.sdk.observability import stats
    except ImportError:  # Airflow 3.1
        from airflow.stats import Stats

        return Stats
    return stats


__all__ = ["AirflowException", "AirflowFailException", "AirflowNotFoundException", "AirflowSkipException",
           "airflow_stats"]
