"""The Initiator as a sensor: each poke runs one Initiator cycle; it fires with the compactions waiting in the
queue (just queued, left from earlier runs, or requested by hand) as a JSON list for dynamic task mapping."""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.hooks.metrics import emit_metrics
from airflow_acid.operations.compact import compaction_payload
from airflow_acid.operations.metrics import initiator_cycle_metrics


class AcidInitiatorSensor(BaseSensorOperator):
    """Runs one Initiator cycle per poke; fires when compactions wait in the queue (XCom: list of
    :func:`compaction_payload` dicts, oldest first), otherwise keeps waiting. ``pool`` limits the rows to one
    compaction pool (``hive.compactor.worker.pool``)."""

    def __init__(self, *, acid_conn_id: str = AcidMetastoreHook.default_conn_name, pool_name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.acid_conn_id = acid_conn_id
        self.pool_name = pool_name

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def poke(self, context: Context) -> PokeReturnValue | bool:
        metastore = self.hook.get_metastore()
        started = time.monotonic()
        try:
            report = Initiator(metastore).run_cycle()
        except Exception:
            emit_metrics(initiator_cycle_metrics(time.monotonic() - started, metastore.conf, failed=True), self.log)
            raise
        emit_metrics(initiator_cycle_metrics(report.seconds or time.monotonic() - started, metastore.conf,
                                             ran=report.ran), self.log)
        if not report.ran:
            self.log.info("Initiator cycle skipped: %s", report.message)
        for declined in report.declined:
            self.log.info("not queued: %s — %s", declined.name, declined.reason)
        reasons = {r.compaction_id: r.reason for r in report.queued}
        waiting = sorted(metastore.compactions.find(state=CompactionState.INITIATED, pool=self.pool_name),
                         key=lambda i: i.id)
        if not waiting:
            self.log.info("nothing to compact (%d candidate(s) looked at)", report.candidates)
            return False
        payload = [compaction_payload(info, reasons.get(info.id)) for info in waiting]
        for item in payload:
            self.log.info("to compact: #%s %s%s", item["compaction_id"], item["label"],
                          f" — {item['reason']}" if item["reason"] else "")
        return PokeReturnValue(True, xcom_value=payload)
