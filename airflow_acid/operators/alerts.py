"""Backlog alerts as an Airflow task: fails, with a message naming what is late and which open transaction blocks
cleanup, when the compaction backlog or the oldest 'ready for cleaning' age passes its limit — so Airflow's own
alerting (``on_failure_callback`` with a Notifier: Slack, SMTP, PagerDuty …, or ``email_on_failure``) pages someone."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_acid.airflow_compat import AirflowFailException
from airflow_acid.config import BacklogLimits
from airflow_acid.errors import AcidUserError
from airflow_acid.hooks.metastore import AcidMetastoreHook


def _seconds(value: timedelta | float | str | None) -> float | None:
    if value in (None, "", "None"):
        return None
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class AcidBacklogCheckOperator(BaseOperator):
    """Checks the compaction backlog against limits; fails (no retries) when one is passed. The failure message —
    ``context["exception"]`` in a failure callback — lists every limit passed; for rows waiting to be cleaned it
    names the blocking transaction (id, user@host, how long open). Unset limits are not checked.

    :param max_backlog: most rows 'initiated' + 'working' + 'ready for cleaning'; templated.
    :param max_ready_for_cleaning_age: longest a compaction may stay 'ready for cleaning' (seconds or timedelta);
        templated.
    :param max_initiated_age: longest a compaction may wait 'initiated' (seconds or timedelta); templated.
    :param acid_conn_id: the ``acid_metastore`` connection.
    :return: (XCom) ``{"alerts": []}`` when every limit holds.
    """

    template_fields: Sequence[str] = ("max_backlog", "max_ready_for_cleaning_age", "max_initiated_age")
    ui_color = "#f0b0a0"

    def __init__(self, *, max_backlog: int | str | None = None,
                 max_ready_for_cleaning_age: timedelta | float | str | None = None,
                 max_initiated_age: timedelta | float | str | None = None,
                 acid_conn_id: str = AcidMetastoreHook.default_conn_name, **kwargs: Any) -> None:
        kwargs.setdefault("retries", 0)
        super().__init__(**kwargs)
        self.max_backlog = max_backlog
        self.max_ready_for_cleaning_age = max_ready_for_cleaning_age
        self.max_initiated_age = max_initiated_age
        self.acid_conn_id = acid_conn_id

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def limits(self) -> BacklogLimits:
        try:
            backlog = None if self.max_backlog in (None, "", "None") else int(self.max_backlog)
            return BacklogLimits(backlog, _seconds(self.max_ready_for_cleaning_age), _seconds(self.max_initiated_age))
        except (ValueError, AcidUserError) as exc:
            raise AirflowFailException(f"bad backlog limit: {exc}") from None

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_acid.services.alerts import check_backlog  # the compactor: when the task runs, not at parse

        limits = self.limits()
        warehouse = self.hook.get_warehouse()
        alerts = check_backlog(warehouse.metastore, limits, filesystem=warehouse.filesystem)
        if not alerts:
            self.log.info("compaction backlog within limits (%s)", limits)
            return {"alerts": []}
        for alert in alerts:
            self.log.error("%s", alert.message)
        raise AirflowFailException("ACID backlog alert: " + " | ".join(a.message for a in alerts))
