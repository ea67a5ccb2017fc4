"""acid_approved_action: a destructive console action (abort a compaction, abort a transaction) waiting for a
second person, when ``[acid] action_approval = hitl``. The console triggers a run with the action as conf;
``describe`` lists its consequences, ``approve`` (Airflow's human-in-the-loop ApprovalOperator, Airflow 3.1+) shows
them and waits for Approve or Reject, and ``act`` performs the action in the approver's name. Rejected: ``act`` is
skipped and nothing changes. Kept cheap to parse: the tasks import the services when they run."""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Param, get_current_context, task

from airflow_acid.operators.defaults import START_DATE, TAGS, default_args

try:  # Airflow 3.1+ with the standard provider's human-in-the-loop; without it the console refuses hitl
    from airflow.providers.standard.operators.hitl import ApprovalOperator
except ImportError:  # pragma: no cover - AirflowOptionalProviderFeatureException is an ImportError too
    ApprovalOperator = None

if ApprovalOperator is not None:
    with DAG(
        dag_id="acid_approved_action",
        description="A destructive console action waiting for approval ([acid] action_approval = hitl)",
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        default_args=default_args(retries=0),
        tags=TAGS,
        doc_md=__doc__,
        params={
            "action": Param("abort_compaction", type="string", enum=["abort_compaction", "abort_transaction"],
                            title="Action"),
            "target_id": Param(1, type="integer", minimum=1, title="Compaction or transaction id"),
            "requested_by": Param("unknown", type="string", title="Asked by"),
        },
    ) as dag:

        @task
        def describe() -> dict[str, str]:
            from airflow_acid.operators.approval import describe_request

            return describe_request(get_current_context()["params"])

        @task
        def act() -> dict[str, Any]:
            from airflow_acid.operators.approval import act_on_answer

            context = get_current_context()
            return act_on_answer(context["params"], context["ti"].xcom_pull(task_ids="approve"))

        approve = ApprovalOperator(task_id="approve",
                                   subject="{{ ti.xcom_pull(task_ids='describe')['subject'] }}",
                                   body="{{ ti.xcom_pull(task_ids='describe')['body'] }}")
        describe() >> approve >> act()
