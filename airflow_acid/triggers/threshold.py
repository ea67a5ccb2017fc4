"""The trigger behind deferrable threshold sensors: re-runs a :class:`ThresholdCheck` until it is met.

The check reads the metastore and lists a directory (blocking I/O), so it runs in a worker thread
(``asyncio.to_thread``) and the triggerer's event loop stays free.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_acid.services.thresholds import CheckResult, ThresholdCheck


class AcidThresholdTrigger(BaseTrigger):
    """Fires ``{"status": "met", "result": …}`` once the check is met, ``{"status": "error", "message": …}`` when
    it cannot be evaluated (the sensor fails with that message)."""

    def __init__(self, check: dict[str, Any], *, acid_conn_id: str = "acid_metastore_default",
                 poll_interval: float = 60.0) -> None:
        super().__init__()
        self.check = dict(check)
        self.acid_conn_id = acid_conn_id
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("airflow_acid.triggers.threshold.AcidThresholdTrigger",
                {"check": self.check, "acid_conn_id": self.acid_conn_id, "poll_interval": self.poll_interval})

    def evaluate(self) -> CheckResult:
        """One synchronous check (runs in a thread)."""
        from airflow_acid.hooks.metastore import AcidMetastoreHook

        hook = AcidMetastoreHook(self.acid_conn_id)
        try:
            return ThresholdCheck.from_dict(self.check).evaluate(hook.get_metastore())
        finally:
            hook.close()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            try:
                result = await asyncio.to_thread(self.evaluate)
            except Exception as exc:  # noqa: BLE001 - reported to the sensor, which fails with the message
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            if result.met:
                yield TriggerEvent({"status": "met", "result": result.to_dict()})
                return
            self.log.info("%s", result.reason)
            await asyncio.sleep(self.poll_interval)
