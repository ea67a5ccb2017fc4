"""What a manual or scheduled compaction's tasks tell: a refused or failed compaction fails its task with the
Worker's reason as the last log line (ERROR), a duplicate request skips naming the scheduled compaction, a request
the Worker would refuse is not queued (unless queue_anyway), every outcome is pushed for the DAG run's note, and
the requester is the Airflow user who triggered the run. SQLite with the in-process LocalRunner."""

from __future__ import annotations

import re
import socket
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_acid.acid.codes import CompactionType
from airflow_acid.compactor.messages import OUTCOME_XCOM_KEY
from airflow_acid.operators.compaction import AcidCompactionOperator, AcidRequestCompactionOperator
from airflow_acid.plugins.run_notes import MAX_NOTE_CHARS, outcome_note
from airflow_acid.spark.runners import LocalRunner
from tests.airflow_support import insert_rows

ONE_DELTA_MAJOR = "major compaction needs original files or more than one of base + current deltas; found no base " \
                  "and 1 current delta(s)"


class RecordingTI:
    """The ``ti`` of a task context: keeps what the task pushed to XCom."""

    def __init__(self) -> None:
        self.xcom: dict[str, object] = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.xcom[key] = value


def task_context(user: str | None = None) -> dict:
    return {"ti": RecordingTI(), "dag_run": SimpleNamespace(triggering_user_name=user)}


def last_log_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.fixture
def one_delta(table_t):
    """``db.t`` with one delta and no base: a MAJOR or MINOR of it is refused by the Worker."""
    insert_rows(table_t, "db.t", 1)
    return table_t


def test_refused_compaction_fails_the_task_with_the_reason_last_at_error(one_delta, capsys):
    cq_id = one_delta.metastore.compactions.enqueue("db", "t", None, CompactionType.MAJOR).id
    context = task_context()
    with pytest.raises(AirflowFailException,
                       match=f"compaction {cq_id} of db.t refused: .*{re.escape(ONE_DELTA_MAJOR)}"):
        AcidCompactionOperator(task_id="compact", compaction=cq_id, runner=LocalRunner()).execute(context)
    line = last_log_line(capsys)
    assert "error" in line.lower() and ONE_DELTA_MAJOR in line
    [note] = context["ti"].xcom[OUTCOME_XCOM_KEY]
    assert note.startswith(f"compaction {cq_id} of db.t: refused — ") and note.endswith(ONE_DELTA_MAJOR)
    assert one_delta.metastore.compactions.get(cq_id).state.display == "refused"


def test_a_refusal_can_be_kept_green_with_a_warning(one_delta, capsys):
    cq_id = one_delta.metastore.compactions.enqueue("db", "t", None, CompactionType.MAJOR).id
    [outcome] = AcidCompactionOperator(task_id="compact", compaction=cq_id, runner=LocalRunner(),
                                       fail_on_refusal=False).execute(task_context())
    assert outcome["status"] == "refused"
    assert "warning" in last_log_line(capsys).lower()


def test_failed_compaction_records_its_outcome(table_t):
    class Broken:
        def run(self, plan, *, job_name, spark_conf):
            raise RuntimeError("executor lost")

    insert_rows(table_t, "db.t", 2)
    cq_id = table_t.metastore.compactions.enqueue("db", "t", None).id
    context = task_context()
    with pytest.raises(AirflowFailException, match="executor lost"):
        AcidCompactionOperator(task_id="compact", compaction=cq_id, runner=Broken()).execute(context)
    [line] = context["ti"].xcom[OUTCOME_XCOM_KEY]
    assert line.startswith(f"compaction {cq_id} of db.t: failed — ") and "executor lost" in line


def test_compacted_outcome_is_recorded(table_t):
    insert_rows(table_t, "db.t", 2)
    cq_id = table_t.metastore.compactions.enqueue("db", "t", None).id
    context = task_context()
    AcidCompactionOperator(task_id="compact", compaction=cq_id, runner=LocalRunner()).execute(context)
    assert context["ti"].xcom[OUTCOME_XCOM_KEY] == [f"compaction {cq_id} of db.t: compacted"]


@pytest.mark.parametrize(("ctype", "reason"), [
    ("minor", "minor compaction needs more than one current delta; found 1"),
    ("major", ONE_DELTA_MAJOR),
])
def test_request_the_worker_would_refuse_fails_unqueued(one_delta, capsys, ctype, reason):
    context = task_context()
    wanted = re.escape(f"would refuse this {ctype.upper()} compaction ({reason})")
    with pytest.raises(AirflowFailException, match=wanted):
        AcidRequestCompactionOperator(task_id="request", table="db.t", compaction_type=ctype).execute(context)
    assert one_delta.metastore.compactions.find() == []
    line = last_log_line(capsys)
    assert "error" in line.lower() and reason in line
    [note] = context["ti"].xcom[OUTCOME_XCOM_KEY]
    assert note.startswith("compaction of db.t not queued: the Worker would refuse")


@pytest.mark.parametrize("queue_anyway", [True, "True"])  # a bool, or the text of a non-native template
def test_queue_anyway_queues_what_the_worker_would_refuse(one_delta, queue_anyway):
    result = AcidRequestCompactionOperator(task_id="request", table="db.t", compaction_type="minor",
                                           queue_anyway=queue_anyway).execute(task_context())
    [item] = result["compactions"]
    assert one_delta.metastore.compactions.get(item["compaction_id"]).state.display == "initiated"


@pytest.mark.parametrize("wait", [False, True])
def test_duplicate_request_skips_naming_the_scheduled_compaction(table_t, capsys, wait):
    insert_rows(table_t, "db.t", 2)
    first = table_t.metastore.compactions.enqueue("db", "t", None).id
    context = task_context()
    with pytest.raises(AirflowSkipException, match=f"compaction {first} of db.t is already scheduled"):
        AcidRequestCompactionOperator(task_id="request", table="db.t", wait=wait).execute(context)
    line = last_log_line(capsys)
    assert "warning" in line.lower() and f"compaction {first} of db.t is already scheduled" in line
    assert str(first) in context["ti"].xcom[OUTCOME_XCOM_KEY][0]
    assert [r.id for r in table_t.metastore.compactions.find()] == [first]


@pytest.mark.parametrize(("user", "initiator"), [("alice", "dag:alice"), (None, "dag")])
def test_manual_request_records_the_user_who_triggered_the_run(table_t, user, initiator):
    insert_rows(table_t, "db.t", 2)
    context = task_context(user)
    result = AcidRequestCompactionOperator(task_id="request", table="db.t").execute(context)
    [item] = result["compactions"]
    info = table_t.metastore.compactions.get(item["compaction_id"])
    assert info.initiator_id == f"{socket.gethostname()}-{initiator}"
    [row] = table_t.metastore.compactions.show_compactions(db="db", table="t")
    assert (row.initiatorhost, row.initiatorid) == (socket.gethostname(), initiator)
    assert context["ti"].xcom[OUTCOME_XCOM_KEY] == [f"compaction {info.id} of db.t (MAJOR): queued"]


def test_outcome_note_keeps_the_lines_and_counts_what_does_not_fit():
    assert outcome_note([]) is None
    assert outcome_note(["compaction 1 of db.t: refused — nothing"]) == "compaction 1 of db.t: refused — nothing"
    lines = [f"compaction {i} of db.t/ds={i}: compacted" for i in range(200)]
    note = outcome_note(lines)
    assert note is not None and len(note) <= MAX_NOTE_CHARS + 60
    assert note.startswith(lines[0]) and note.endswith("more (see the task logs)")
