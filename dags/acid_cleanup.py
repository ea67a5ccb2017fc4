"""acid_cleanup: the Cleaner deletes directories compaction made obsolete (and aborted writes) once no open
transaction can still read them; what stays blocked is logged with the transaction that blocks it."""

from __future__ import annotations

from airflow.sdk import DAG, Param

from airflow_acid.operators.defaults import START_DATE, TAGS, default_args, interval, settings
from airflow_acid.operators.maintenance import AcidCleanerOperator

SETTINGS = settings()

with DAG(
    dag_id="acid_cleanup",
    description="Cleaner: remove obsolete and aborted directories no reader can see",
    schedule=interval(SETTINGS.cleaner_run_interval_ms / 1000),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=TAGS,
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={"dry_run": Param(False, type="boolean", title="Dry run", description="Only report what would go")},
) as dag:
    AcidCleanerOperator(task_id="clean", dry_run="{{ params.dry_run }}")
