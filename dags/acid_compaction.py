"""acid_compaction: every hive.compactor.check.interval, the Initiator sensor queues what crossed a threshold,
then one mapped compaction task per queued row runs it with Spark (pool ``[acid] compaction_pool``)."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import DAG

from airflow_acid.operators.compaction import AcidCompactionOperator
from airflow_acid.operators.defaults import START_DATE, TAGS, compaction_pool, default_args, interval, settings
from airflow_acid.sensors.initiator import AcidInitiatorSensor

SETTINGS = settings()
CHECK_INTERVAL = interval(SETTINGS.check_interval_s)

with DAG(
    dag_id="acid_compaction",
    description="Initiator thresholds -> Spark compaction, one mapped task per table/partition",
    schedule=CHECK_INTERVAL,
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=TAGS,
    doc_md=__doc__,
) as dag:
    initiator = AcidInitiatorSensor(
        task_id="initiator",
        mode="reschedule",
        poke_interval=max(30.0, CHECK_INTERVAL.total_seconds() / 5),
        timeout=CHECK_INTERVAL.total_seconds(),
        soft_fail=True,  # nothing to compact within one interval: skip, the next run looks again
        retries=1,
    )
    compact = AcidCompactionOperator.partial(
        task_id="compact",
        pool=compaction_pool(),
        max_active_tis_per_dagrun=SETTINGS.worker_threads or None,
        map_index_template="{{ task.compaction['label'] }}",
        job_timeout=timedelta(seconds=SETTINGS.worker_timeout_s),
    ).expand(compaction=initiator.output)
