"""The Initiator as a sensor: each poke runs one Initiator cycle; it fires with the compactions waiting in the
queue (just queued, left from earlier runs, or requested by hand) as a JSON list for dynamic task mapping."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.initiator import Initiator
from airflow_acid.compactor.scheduling import Budgets, schedule_queue
from airflow_acid.compactor.settings import budgets_from_mapping
from airflow_acid.hooks.metastore import CONFIG_SECTION, AcidMetastoreHook
from airflow_acid.operations.compact import compaction_payload


def compaction_budgets() -> Budgets:
    """The ``[acid]`` compaction budgets (compaction_budget_bytes, …_core_seconds, …_pool_bytes, …_table_bytes,
    compaction_aging)."""
    from airflow.configuration import conf

    section = conf.getsection(CONFIG_SECTION) or {}
    result: Budgets = budgets_from_mapping(section, source=f"Airflow config section [{CONFIG_SECTION}]")
    return result


class AcidInitiatorSensor(BaseSensorOperator):
    """Runs one Initiator cycle per poke; fires when compactions wait in the queue (XCom: list of
    :func:`compaction_payload` dicts, highest benefit per cost first, only those the ``[acid]`` compaction budgets
    admit — ``budgets`` overrides them), otherwise keeps waiting. ``pool`` limits the rows to one compaction pool
    (``hive.compactor.worker.pool``)."""

    def __init__(self, *, acid_conn_id: str = AcidMetastoreHook.default_conn_name, pool_name: str | None = None,
                 budgets: Budgets | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.acid_conn_id = acid_conn_id
        self.pool_name = pool_name
        self.budgets = budgets

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def _in_order(self, metastore: Any, waiting: list[Any]) -> list[Any]:
        """Cost-aware order (highest benefit per core-second first, with aging) of the rows this run admits
        within the ``[acid]`` compaction budgets (:mod:`airflow_acid.compactor.scheduling`); held rows wait."""
        budgets = self.budgets if self.budgets is not None else compaction_budgets()
        order = schedule_queue(metastore, budgets, rows=waiting)
        for item in order.held:
            self.log.info("held for a later run: #%s %s — %s", item.plan.compaction_id, item.plan.name, item.held)
        by_id = {info.id: info for info in waiting}
        return [by_id[i.plan.compaction_id] for i in order.admitted]

    def poke(self, context: Any) -> PokeReturnValue | bool:
        metastore = self.hook.get_metastore()
        report = Initiator(metastore).run_cycle()
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
        waiting = self._in_order(metastore, waiting)
        if not waiting:
            return False
        payload = [compaction_payload(info, reasons.get(info.id)) for info in waiting]
        for item in payload:
            self.log.info("to compact: #%s %s%s", item["compaction_id"], item["label"],
                          f" — {item['reason']}" if item["reason"] else "")
        return PokeReturnValue(True, xcom_value=payload)
