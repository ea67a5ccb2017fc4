"""acid_housekeeping: abort transactions whose heartbeat stopped, retire locks, purge compaction history; then send
Hive's ACID metrics (``acid.*``) through Airflow's metrics interface and log the figures past their thresholds; with
``[acid] alert_max_*`` limits set, ``backlog_check`` fails (firing Airflow's failure alerts) when one is passed."""

from __future__ import annotations

from airflow.sdk import DAG

from airflow_acid.operators.alerts import AcidBacklogCheckOperator
from airflow_acid.operators.defaults import START_DATE, TAGS, backlog_limits, default_args, interval, settings
from airflow_acid.operators.maintenance import AcidHouseKeeperOperator
from airflow_acid.operators.metrics import AcidMetricsOperator

SETTINGS = settings()
LIMITS = backlog_limits()

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
    if LIMITS.any:  # [acid] alert_max_*: fails when a limit is passed, so Airflow's failure alerts fire
        AcidBacklogCheckOperator(task_id="backlog_check", max_backlog=LIMITS.max_backlog,
                                 max_ready_for_cleaning_age=LIMITS.max_ready_for_cleaning_age_s,
                                 max_initiated_age=LIMITS.max_initiated_age_s, retries=0)
