"""acid_manual_compaction: ALTER TABLE … [PARTITION …] COMPACT 'minor'|'major' [WITH OVERWRITE TBLPROPERTIES …]
from a trigger form. With *wait* on, the compaction runs in this DAG run; otherwise it is only queued and the
acid_compaction DAG picks it up.

The outcome is the run's state and note: a request the Worker would refuse (nothing to compact) is not queued and
fails ``request`` (unless *queue anyway*); a compaction the Worker refused or that failed fails ``compact``; a
compaction already scheduled skips the run's tasks, naming its id. The note (Grid view, REST API) says which.
Kept cheap to parse: the operators import the compactor when a task runs."""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Param, task

from airflow_acid.operators.compaction import COMPACTED_TABLES, AcidCompactionOperator, AcidRequestCompactionOperator
from airflow_acid.operators.defaults import START_DATE, TAGS, compaction_pool, default_args

with DAG(
    dag_id="acid_manual_compaction",
    description="Request a compaction (ALTER TABLE ... COMPACT) and optionally run it now",
    schedule=None,
    start_date=START_DATE,
    catchup=False,
    default_args=default_args(retries=0),
    tags=TAGS,
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={
        "database": Param("default", type="string", minLength=1, title="Database"),
        # No default table: null validates, so `airflow tasks test … -t '{"table": …}'` can supply it; the
        # request task refuses a missing table, naming the param.
        "table": Param(None, type=["null", "string"], minLength=1, title="Table (required)",
                       description="The ACID table to compact (required)"),
        "partition": Param(None, type=["null", "string"], title="Partition",
                           description="e.g. ds=2024-01-01; empty on a partitioned table: every partition is "
                                       "checked against the thresholds"),
        "type": Param("major", type="string", enum=["minor", "major"], title="Compaction type"),
        "properties": Param({}, type="object", title="WITH OVERWRITE TBLPROPERTIES",
                            description="compactor.<spark conf> or tblprops.<table property> keys"),
        "wait": Param(True, type="boolean", title="Run now and wait",
                      description="Run the compaction in this DAG run (otherwise only queue it)"),
        "queue_anyway": Param(False, type="boolean", title="Queue anyway",
                              description="Queue even a compaction the Worker would refuse (nothing to compact, e.g. "
                                          "MINOR on fewer than two deltas), as Hive's ALTER TABLE … COMPACT does"),
    },
) as dag:
    request = AcidRequestCompactionOperator(
        task_id="request",
        table="{{ params.database }}.{{ params.table or '' }}",
        partition="{{ params.partition }}",
        compaction_type="{{ params.type }}",
        properties="{{ params.properties }}",
        queue_anyway="{{ params.queue_anyway }}",
    )

    @task
    def to_run(result: dict[str, Any], params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The queued compactions when the form asked to run them now, else none (the mapped task is skipped)."""
        return result["compactions"] if params and params.get("wait") else []

    AcidCompactionOperator.partial(
        task_id="compact",
        pool=compaction_pool(),
        map_index_template="{{ task.compaction['label'] }}",
        outlets=[COMPACTED_TABLES],
    ).expand(compaction=to_run(request.output))
