"""acid_compaction: every hive.compactor.check.interval, the Initiator sensor queues what crossed a threshold,
then one mapped compaction task per queued row runs it with Spark. Rows run in the Airflow pool
``[acid] compaction_pool``; compaction pools listed in ``[acid] compaction_pools`` get a mapped task of their own in
the Airflow pool of the same name (Hive's worker pools). With ``[acid] compaction_batch_size`` > 1 each mapped task
runs up to that many rows in one Spark application. Rows run highest benefit per cost first, within the ``[acid]``
compaction budgets (``compaction_budget_*``; rows that do not fit wait for the next run). Triggered with
``dry_run`` set, the run only plans: the ``dry_run`` task logs and returns what the next Initiator cycle would queue
and the Worker's plan of every waiting row in the order it would run them; nothing is queued or compacted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param, task

from airflow_acid.airflow_compat import AirflowSkipException
from airflow_acid.operators.compaction import COMPACTED_TABLES, AcidCompactionOperator
from airflow_acid.operators.defaults import (
    START_DATE,
    TAGS,
    batches_of,
    compaction_batch_size,
    compaction_budgets,
    compaction_pool,
    compaction_pools,
    default_args,
    interval,
    rows_for_pool,
    settings,
)
from airflow_acid.plugins.priority import ACID_QUEUE_ORDER
from airflow_acid.sensors.initiator import AcidInitiatorSensor

SETTINGS = settings()
CHECK_INTERVAL = interval(SETTINGS.check_interval_s)
DEDICATED_POOLS = compaction_pools()
BATCH_SIZE = compaction_batch_size()


@task
def select_rows(items: list[dict[str, Any]], pool: str | None, dedicated: list[str]) -> list[dict[str, Any]]:
    """The queued rows that run in one Airflow pool."""
    return rows_for_pool(items, pool, dedicated)


@task
def batch_rows(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """The rows in batches; each batch is compacted by one mapped task in one Spark application."""
    return batches_of(items, size)


def skip_on_dry_run(context: Any) -> None:
    """pre_execute of the Initiator sensor: a dry run neither queues nor compacts."""
    if (context.get("params") or {}).get("dry_run"):
        raise AirflowSkipException("dry run: nothing is queued or compacted; see the dry_run task")


@task(task_id="dry_run")
def plan_dry_run(params: dict[str, Any] | None = None) -> dict[str, Any]:
    """With the dry_run param: what the next Initiator cycle would queue and what the Worker would run, in order,
    within the compaction budgets (writes nothing); skipped otherwise."""
    if not (params or {}).get("dry_run"):
        raise AirflowSkipException("not a dry run")
    from airflow_acid.hooks.metastore import AcidMetastoreHook
    from airflow_acid.services.reports import next_run

    upcoming = next_run(AcidMetastoreHook().get_metastore(), compaction_budgets())
    for line in upcoming.lines:
        print(line)
    return upcoming.to_xcom()


def compaction_tasks(rows: Any, *, task_id: str, pool: str) -> Any:
    """One compaction task per row (mapped), labelled ``db.table/partition TYPE`` — or, with a batch size above 1,
    one task per batch of rows, labelled with the rows' labels."""
    common = dict(
        task_id=task_id,
        pool=pool,
        max_active_tis_per_dagrun=SETTINGS.worker_threads or None,  # 0 = workers off: the task skips
        job_timeout=timedelta(seconds=SETTINGS.worker_timeout_s),
        outlets=[COMPACTED_TABLES],  # each compacted table's Asset is added to this alias
        weight_rule=ACID_QUEUE_ORDER,  # rows come best first: map index 0 weighs most
    )
    if BATCH_SIZE == 1:
        return AcidCompactionOperator.partial(
            map_index_template="{{ task.compaction['label'] }}", **common).expand(compaction=rows)
    batches = batch_rows.override(task_id=f"batch_{task_id}")(rows, BATCH_SIZE)
    return AcidCompactionOperator.partial(
        map_index_template="{{ task.compactions | map(attribute='label') | join(' + ') }}", **common,
    ).expand(compactions=batches)


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
    params={"dry_run": Param(False, type="boolean", title="Dry run",
                             description="Only plan: show what would be queued and compacted, change nothing.")},
) as dag:
    plan_dry_run()
    initiator = AcidInitiatorSensor(
        task_id="initiator",
        mode="reschedule",
        poke_interval=max(30.0, CHECK_INTERVAL.total_seconds() / 5),
        timeout=CHECK_INTERVAL.total_seconds(),
        soft_fail=True,  # nothing to compact within one interval: skip, the next run looks again
        retries=1,
        pre_execute=skip_on_dry_run,
    )
    if not DEDICATED_POOLS:
        compaction_tasks(initiator.output, task_id="compact", pool=compaction_pool())
    else:
        rows = select_rows.override(task_id="select_default")(initiator.output, None, DEDICATED_POOLS)
        compaction_tasks(rows, task_id="compact", pool=compaction_pool())
        for name in DEDICATED_POOLS:
            pool_rows = select_rows.override(task_id=f"select_{name}")(initiator.output, name, DEDICATED_POOLS)
            compaction_tasks(pool_rows, task_id=f"compact_{name}", pool=name)
