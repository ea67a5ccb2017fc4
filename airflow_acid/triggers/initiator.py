"""The trigger behind the deferrable Initiator sensor: runs an Initiator cycle every ``poll_interval`` seconds until
compactions wait in the queue.

A cycle reads the metastore and lists directories (blocking I/O), so it runs in a worker thread
(``asyncio.to_thread``) and the triggerer's event loop stays free. Its metrics go out from the triggerer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

if TYPE_CHECKING:  # the compactor is imported when the trigger runs, not when a DAG file is parsed
    from airflow_acid.services.reports import InitiatorCycle


class AcidInitiatorTrigger(BaseTrigger):
    """Fires ``{"status": "waiting", "compactions": [...]}`` once rows wait in the queue (of ``pool_name``), or
    ``{"status": "error", "message": …}`` when a cycle fails (the sensor fails with that message)."""

    def __init__(self, *, acid_conn_id: str = "acid_metastore_default", pool_name: str | None = None,
                 budgets: dict[str, Any] | None = None, poll_interval: float = 60.0) -> None:
        super().__init__()
        self.budgets = budgets
        self.acid_conn_id = acid_conn_id
        self.pool_name = pool_name
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("airflow_acid.triggers.initiator.AcidInitiatorTrigger",
                {"acid_conn_id": self.acid_conn_id, "pool_name": self.pool_name,
                 "budgets": self.budgets, "poll_interval": self.poll_interval})

    def cycle(self) -> InitiatorCycle:
        """One synchronous cycle (runs in a thread); its metrics are sent from here."""
        from airflow_acid.airflow_config import acid_config
        from airflow_acid.airflow_stats import emit_metrics
        from airflow_acid.config import Budgets
        from airflow_acid.hooks.metastore import AcidMetastoreHook
        from airflow_acid.services.reports import initiator_cycle, initiator_failure_metrics

        hook = AcidMetastoreHook(self.acid_conn_id)
        started = time.monotonic()
        try:
            metastore = hook.get_metastore()
            try:
                config = acid_config()
                budgets = config.budgets if self.budgets is None else Budgets(**self.budgets)
                poke = initiator_cycle(metastore, self.pool_name, budgets, shadow=config.shadow, scope=config.scope,
                                       hive_active_window_s=config.takeover_hive_active_window_s)
            except Exception:
                emit_metrics(initiator_failure_metrics(metastore, time.monotonic() - started), self.log)
                raise
            emit_metrics(poke.metrics, self.log)
            return poke
        finally:
            hook.close()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            try:
                poke = await asyncio.to_thread(self.cycle)
            except Exception as exc:  # noqa: BLE001 - reported to the sensor, which fails with the message
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            for line in poke.lines:
                self.log.info("%s", line)
            if poke.waiting:
                yield TriggerEvent({"status": "waiting", "compactions": poke.to_xcom()})
                return
            await asyncio.sleep(self.poll_interval)
