"""acid_housekeeping: abort transactions whose heartbeat stopped, retire locks, purge compaction history; then send
Hive's ACID metrics (``acid.*``) through Airflow's metrics interface and log the figures past their thresholds."""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_acid.operators.defaults import START_DATE, TAGS, default_args, interval, settings
from airflow_acid.operators.maintenance import AcidHouseKeeperOperator
from airflow_acid.operators.metrics import AcidMetricsOperator

SETTINGS = settings()

with DAG(
    dag_id="acid_housekeeping",
    description="HouseKeeper: timed-out transactions, locks, history retention",
    schedule=interval(SETTINGS.acid_housekeeper_interval_s),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=TAGS,
    doc_md=__doc__,
) as dag:
    AcidHouseKeeperOperator(task_id="housekeeping") >> AcidMetricsOperator(task_id="metrics", trigger_rule="all_done")
