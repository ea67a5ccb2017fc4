"""The Initiator as a sensor: each poke runs one Initiator cycle; it fires with the compactions waiting in the
queue (just queued, left from earlier runs, or requested by hand) as a JSON list for dynamic task mapping.
Poke, reschedule or deferrable (``[operators] default_deferrable`` by default)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from airflow_acid.airflow_compat import AirflowException
from airflow_acid.airflow_config import acid_config
from airflow_acid.airflow_stats import emit_metrics
from airflow_acid.config import Budgets
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.triggers.initiator import AcidInitiatorTrigger


class AcidInitiatorSensor(BaseSensorOperator):
    """Runs one Initiator cycle per poke; fires when compactions wait in the queue, otherwise keeps waiting. Each
    cycle's figures go out as ``acid.compaction_initiator_*`` metrics.

    :param pool_name: only rows of this compaction pool (``hive.compactor.worker.pool``); None: every row.
    :param acid_conn_id: the ``acid_metastore`` connection.
    :param deferrable: wait in the triggerer (:class:`AcidInitiatorTrigger`) between cycles instead of a worker
        slot; default ``[operators] default_deferrable``.
    :param budgets: the compaction budgets of this run (rows run highest benefit per cost first, those that do not
        fit wait for a later run); default the ``[acid]`` ``compaction_budget_*`` options.
    :return: (XCom) the waiting compactions in running order, as
        :class:`~airflow_acid.compactor.messages.QueuedCompaction` items (``to_xcom``).
    """

    template_fields: Sequence[str] = ("pool_name",)

    def __init__(self, *, acid_conn_id: str = AcidMetastoreHook.default_conn_name, pool_name: str | None = None,
                 deferrable: bool | None = None, budgets: Budgets | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.acid_conn_id = acid_conn_id
        self.pool_name = pool_name
        self.deferrable = acid_config().default_deferrable if deferrable is None else deferrable
        self.budgets = budgets

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def poke(self, context: Context) -> PokeReturnValue | bool:
        from airflow_acid.services.reports import initiator_cycle, initiator_failure_metrics  # not at DAG parse

        metastore = self.hook.get_metastore()
        started = time.monotonic()
        try:
            config = acid_config()
            poke = initiator_cycle(metastore, self.pool_name or None,
                                  self.budgets if self.budgets is not None else config.budgets, shadow=config.shadow,
                                  scope=config.scope, hive_active_window_s=config.takeover_hive_active_window_s)
        except Exception:
            emit_metrics(initiator_failure_metrics(metastore, time.monotonic() - started), self.log)
            raise
        emit_metrics(poke.metrics, self.log)
        for line in poke.lines:
            self.log.info("%s", line)
        return PokeReturnValue(True, xcom_value=poke.to_xcom()) if poke.waiting else False

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        fired = self.poke(context)
        if isinstance(fired, PokeReturnValue) and fired.is_done:
            return fired.xcom_value
        self.defer(trigger=AcidInitiatorTrigger(acid_conn_id=self.acid_conn_id, pool_name=self.pool_name or None,
                                                budgets=None if self.budgets is None else asdict(self.budgets),
                                                poll_interval=float(self.poke_interval)),
                   method_name="execute_complete", timeout=timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The trigger's event: the waiting compactions as XCom, or the cycle's error as a task failure."""
        if event.get("status") == "waiting":
            return list(event["compactions"])
        raise AirflowException(f"Initiator cycle failed: {event.get('message')}")
