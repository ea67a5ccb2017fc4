"""The threshold trigger: its serialised form round-trips, it polls without blocking the event loop, and reports
errors as events."""

from __future__ import annotations

import asyncio
import json

from airflow_acid.services.thresholds import ThresholdCheck, ThresholdKind
from airflow_acid.triggers.threshold import AcidThresholdTrigger
from tests.airflow_support import first_event, insert_rows


def test_trigger_serialize_round_trips():
    check = ThresholdCheck(ThresholdKind.ABORTED_TXNS, "db.t", "ds=1", 7, 60.0).to_dict()
    trigger = AcidThresholdTrigger(check, acid_conn_id="other", poll_interval=5)
    path, kwargs = trigger.serialize()
    assert path == "airflow_acid.triggers.threshold.AcidThresholdTrigger"
    again = AcidThresholdTrigger(**json.loads(json.dumps(kwargs)))
    assert again.serialize() == (path, kwargs)
    assert ThresholdCheck.from_dict(again.check) == ThresholdCheck.from_dict(check)


def test_trigger_polls_without_blocking_the_loop(table_t):
    insert_rows(table_t, "db.t", 1)
    trigger = AcidThresholdTrigger(ThresholdCheck(ThresholdKind.DELTA_COUNT, "db.t", None, 1).to_dict(),
                                   poll_interval=0.02)

    async def scenario():
        ticks = 0
        task = asyncio.create_task(first_event(trigger))
        while not task.done():
            ticks += 1
            if ticks == 20:
                await asyncio.to_thread(insert_rows, table_t, "db.t", 1)
            await asyncio.sleep(0.005)
        return ticks, task.result()

    ticks, event = asyncio.run(scenario())
    assert event.payload["result"]["stats"]["delta_count"] == 2
    assert ticks >= 20  # the loop kept running while the trigger checked and slept


def test_trigger_reports_errors_as_events(table_t):
    trigger = AcidThresholdTrigger(ThresholdCheck(ThresholdKind.DELTA_COUNT, "db.gone").to_dict())
    event = asyncio.run(first_event(trigger))
    assert event.payload["status"] == "error" and "db.gone does not exist" in event.payload["message"]
