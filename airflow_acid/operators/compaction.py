"""Compaction operators: run queued compactions through the Worker (Spark via SparkSubmitHook), and request
compactions the way ALTER TABLE … COMPACT does (optionally waiting for them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias, BaseOperator, Context

from airflow_acid.acid.codes import CompactionState
from airflow_acid.airflow_compat import AirflowException, AirflowFailException, AirflowSkipException
from airflow_acid.airflow_stats import emit_metrics
from airflow_acid.compactor.messages import QueuedCompaction, WorkerOutcome, WorkerStatus
from airflow_acid.errors import AcidUserError
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.operators.defaults import compaction_verify
from airflow_acid.operators.lineage import inject_parent_job_info_default, operator_lineage, parent_job_spark_conf
from airflow_acid.operators.outcome import record_outcome, triggering_user
from airflow_acid.operators.retry import compaction_retry_policy, fail_unless_retryable

if TYPE_CHECKING:  # the Worker, the request service and the Spark provider load when a task runs, not at DAG parse
    from airflow_acid.job.runner import Runner
    from airflow_acid.metastore.compactions import CompactionInfo
    from airflow_acid.metastore.store import Metastore
    from airflow_acid.services.compact import RequestedCompaction
    from airflow_acid.spark.submit import SparkSubmitOptions

WORKER_IDS_KEY = "acid_worker_ids"
"""Task state store key: the worker ids (CQ_WORKER_ID) of this task's tries."""
MAX_REMEMBERED_WORKERS = 20

COMPACTED_TABLES = AssetAlias("acid-compacted-tables")
"""Compaction operators add the Asset of every table they compacted to this alias (``acid://<db>/<table>``)."""


def table_asset(database: str, table: str, partition: str | None = None) -> Asset:
    """The Airflow Asset of an ACID table (``acid://<db>/<table>``) or of one of its partitions
    (``acid://<db>/<table>/<partition name>``, e.g. ``acid://sales/orders/ds=2024-01-01``)."""
    if partition:
        return Asset(uri=f"acid://{database}/{table}/{partition}", name=f"acid.{database}.{table}/{partition}",
                     group="acid")
    return Asset(uri=f"acid://{database}/{table}", name=f"acid.{database}.{table}", group="acid")


def _compaction_id(value: Any) -> int:
    if isinstance(value, dict):
        value = value.get("compaction_id")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise AirflowFailException(f"{value!r} is not a compaction id (an integer or an Initiator sensor item with "
                                   "compaction_id)") from None


class AcidCompactionOperator(BaseOperator):
    """Runs queued compactions through the Worker; Spark is launched through SparkSubmitHook on ``spark_conn_id``
    (``local[*]`` when that connection is not configured) unless ``runner`` is given. A failed compaction fails the
    task without retries (the row is in the history as 'failed'; the Initiator re-queues it under its failure
    rules); other errors, such as the metastore being unreachable, are retried with the task's back-off (Airflow
    3.3+: through :func:`~airflow_acid.operators.retry.compaction_retry_policy`). A retry that finds its row still
    'working' after its worker died waits for that attempt's Spark application and commits its output — never a
    second job on the same row (:mod:`airflow_acid.compactor.resume`). Each
    compacted table and partition is added as an Asset (``acid://<db>/<table>[/<partition>]``) to the
    :data:`COMPACTED_TABLES` alias, so downstream DAGs can be scheduled on "table compacted".

    :param compaction: one compaction id, or an item of the Initiator sensor's XCom; templated.
    :param compactions: several (ids or items), compacted in ONE Spark application; templated.
    :param pool_name: with neither given, the next queued row of this compaction pool runs; templated.
    :param acid_conn_id: the ``acid_metastore`` connection.
    :param spark_conn_id: the Spark connection (master, deploy mode, queue …).
    :param spark_options: Spark conf, code shipping and interpreter of the job (default: this interpreter).
    :param spark_hook_kwargs: more SparkSubmitHook arguments (``executor_memory``, ``num_executors`` …).
    :param job_timeout: kill a Spark job running longer than this (seconds or a timedelta).
    :param runner: run plans with this Runner instead of spark-submit (tests, notebooks).
    :param openlineage_inject_parent_job_info: give the Spark job this task's OpenLineage parent job information
        (``spark.openlineage.parent*`` conf), as the Spark provider's operators do; default ``[openlineage]
        spark_inject_parent_job_info``. OpenLineage events of the task list each compacted table/partition
        directory as input and output.
    :param fail_on_refusal: a compaction the Worker refused (nothing to compact, table or partition gone) fails
        the task, as a failed one does (default): a refused compaction did not happen, and a green task would hide
        that. False keeps the task green and only logs the refusal at WARNING — for a scheduled DAG whose
        Initiator may race with manual requests and where SHOW COMPACTIONS / the console is watched instead.
    :return: (XCom) one outcome per compaction: status, rows in/out, files, bytes, seconds, outputs. Each
        outcome is also pushed as XCom ``acid_outcome`` (one sentence each), which becomes the DAG run's note.
    """

    template_fields: Sequence[str] = ("compaction", "compactions", "pool_name")
    ui_color = "#e8c66b"

    def __init__(self, *, compaction: Any = None, compactions: Any = None, pool_name: str | None = None,
                 acid_conn_id: str = AcidMetastoreHook.default_conn_name, spark_conn_id: str = "spark_default",
                 spark_options: SparkSubmitOptions | None = None, spark_hook_kwargs: dict[str, Any] | None = None,
                 job_timeout: timedelta | float | None = None, runner: Runner | None = None,
                 openlineage_inject_parent_job_info: bool | None = None, fail_on_refusal: bool = True,
                 **kwargs: Any) -> None:
        kwargs.setdefault("outlets", [COMPACTED_TABLES])
        if kwargs.get("retry_policy") is None and (policy := compaction_retry_policy()) is not None:
            kwargs["retry_policy"] = policy  # Airflow 3.3+: no retry for what a retry cannot fix
        super().__init__(**kwargs)
        self.compaction = compaction
        self.compactions = compactions
        self.pool_name = pool_name
        self.acid_conn_id = acid_conn_id
        self.spark_conn_id = spark_conn_id
        self.spark_options = spark_options
        self.spark_hook_kwargs = spark_hook_kwargs or {}
        self.job_timeout = job_timeout.total_seconds() if isinstance(job_timeout, timedelta) else job_timeout
        self.runner = runner
        self.openlineage_inject_parent_job_info = (inject_parent_job_info_default()
                                                   if openlineage_inject_parent_job_info is None
                                                   else openlineage_inject_parent_job_info)
        self.fail_on_refusal = fail_on_refusal
        self._lineage_conf: dict[str, str] = {}
        self._compacted_ids: list[int] = []

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    @cached_property
    def job_runner(self) -> Runner:
        if self.runner is not None:
            return self.runner
        from airflow_acid.operators.spark import SparkSubmitHookRunner, default_spark_options

        options = self.spark_options or default_spark_options()
        if options.storage_options is None:
            options = dataclasses.replace(options, storage_options=self.hook.get_storage_options())
        if self._lineage_conf:  # the job's own OpenLineage events point at this task as their parent
            options = dataclasses.replace(options, conf={**self._lineage_conf, **dict(options.conf)})
        return self.runner or SparkSubmitHookRunner(self.spark_conn_id, options,
                                                    timeout_s=self.job_timeout, hook_kwargs=self.spark_hook_kwargs)

    def execute(self, context: Context) -> list[dict[str, Any]]:
        if self.openlineage_inject_parent_job_info and self.runner is None:
            self._lineage_conf = parent_job_spark_conf(context)
            self.log.info("OpenLineage parent job information for the Spark job: %s", self._lineage_conf)
        try:
            return self._execute(context)
        except AcidUserError as exc:
            if getattr(self, "retry_policy", None) is None:
                fail_unless_retryable(exc)  # older Airflow: the task's own handling
            raise
        except OSError as exc:
            if getattr(self, "retry_policy", None) is None:
                fail_unless_retryable(exc)
            raise

    def _execute(self, context: Context) -> list[dict[str, Any]]:
        from airflow_acid.compactor.worker import Worker
        from airflow_acid.metastore.attempts import CompactionAttempts
        from airflow_acid.operators.task_identity import task_identity
        from airflow_acid.services.reports import worker_batch

        metastore = self.hook.get_metastore()
        if metastore.conf.worker_threads == 0:
            raise AirflowSkipException(
                "hive.compactor.worker.threads=0: compaction workers are off in this deployment (Hive's meaning), so "
                "queued compactions stay 'initiated' for another worker; unset it or set it above 0 in [acid] to "
                "compact here")
        # On a retry, a row left 'working' by an earlier try whose worker died is taken over: its Spark application
        # is waited for, never submitted a second time (compactor.resume). A first try skips 'working' rows.
        ti = (context or {}).get("ti")
        retry = int(getattr(ti, "try_number", 1) or 1) > 1
        worker = Worker(metastore, runner=self.job_runner, reattach=retry, verify=compaction_verify(),
                        task=task_identity(context))
        earlier_workers = self._remember_worker(context, worker.worker_id)
        worker.reattach = retry or bool(earlier_workers)
        wanted = ([] if self.compactions in (None, "") else [_compaction_id(c) for c in self.compactions])
        if self.compaction not in (None, ""):
            wanted.insert(0, _compaction_id(self.compaction))
        if not wanted and earlier_workers:  # a pool's next row: the rows an earlier try claimed come first
            wanted = CompactionAttempts(metastore.db, metastore.conf).working_rows_of(earlier_workers)
            if wanted:
                self.log.info("compaction(s) %s were claimed by an earlier try of this task: taking them over", wanted)
        batch = worker_batch(worker, wanted, self.pool_name)
        emit_metrics(batch.metrics, self.log)
        for line in batch.lines:
            self.log.info("%s", line)
        if batch.nothing_waiting is not None:
            raise AirflowSkipException(batch.nothing_waiting)
        self._add_assets(context, metastore, batch.outcomes)
        record_outcome(context, batch.outcome_lines, self.log)
        if not self.fail_on_refusal:
            for o in batch.refused:
                self.log.warning("compaction %s of %s refused (fail_on_refusal=False: the task stays green): %s",
                                 o.compaction_id, o.entity, o.message)
        unsuccessful = batch.failed + (batch.refused if self.fail_on_refusal else [])
        if unsuccessful:
            # The row is already in the history as 'failed'/'refused' (or was taken over): a task retry could not
            # run it again — the Initiator re-queues failures under its failure rules. Retries are for errors
            # before that. The reason is the task's last log line, at ERROR.
            message = "; ".join(f"compaction {o.compaction_id} of {o.entity} {o.status}: {o.message}"
                                for o in unsuccessful)
            self.log.error("%s", message)
            raise AirflowFailException(message)
        return batch.to_xcom()

    def _remember_worker(self, context: Context, worker_id: str) -> list[str]:
        """Keep this try's worker id in the task's state store (Airflow 3.3+) and return those of earlier tries, so
        a retry given a pool (no row ids) finds the rows its predecessor claimed. Without a state store a retry
        finds its rows by the ids it was given."""
        store: Any = (context or {}).get("task_state_store")
        if store is None:
            self.log.info("no task state store (Airflow before 3.3, or not run as a task): a retry takes over the "
                          "rows it is given by id only")
            return []
        try:
            stored = store.get(WORKER_IDS_KEY)
            earlier = [str(w) for w in stored] if isinstance(stored, list) else []
            store.set(WORKER_IDS_KEY, [*earlier, worker_id][-MAX_REMEMBERED_WORKERS:])
        except Exception as exc:  # noqa: BLE001 - the state store is a help for pool retries, never a reason to fail
            self.log.warning("task state store unusable (%s): a retry takes over the rows it is given by id only",
                             exc)
            return []
        return earlier

    def _add_assets(self, context: Context, metastore: Metastore, outcomes: list[WorkerOutcome]) -> None:
        """Each compacted table and partition goes to the :data:`COMPACTED_TABLES` alias as an Asset event."""
        for outcome in outcomes:
            if outcome.status != WorkerStatus.COMPACTED:
                continue
            self._compacted_ids.append(outcome.compaction_id)
            info = metastore.compactions.get(outcome.compaction_id)
            events = (context or {}).get("outlet_events")
            if events is not None:
                extra: dict[str, Any] = {"compaction_id": info.id, "partition": info.partition,
                                         "type": info.type.display, "rows_out": outcome.rows_out,
                                         "bytes": outcome.bytes}
                events[COMPACTED_TABLES].add(table_asset(info.database, info.table), extra=extra)
                if info.partition:
                    events[COMPACTED_TABLES].add(table_asset(info.database, info.table, info.partition),
                                                 extra=extra)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: every compacted table/partition directory, read and rewritten in place (input and output)."""
        from airflow_acid.services.lineage import compaction_datasets

        datasets = compaction_datasets(self.hook.get_metastore(), self._compacted_ids)
        return operator_lineage(datasets, datasets)

    def on_kill(self) -> None:
        kill = getattr(self.job_runner, "kill", None)
        if callable(kill):
            kill()


class AcidRequestCompactionOperator(BaseOperator):
    """ALTER TABLE ``table`` [PARTITION (``partition``)] COMPACT ``compaction_type`` [POOL] [WITH OVERWRITE
    TBLPROPERTIES (``properties``)] [AND WAIT]. A partitioned table without a partition gets the Initiator's
    threshold logic for each of its partitions (Hive 4).

    Before queueing a named table/partition it asks the planner what the Worker would do, and does not queue what
    the Worker would refuse (nothing to compact: MINOR on fewer than two deltas, MAJOR on one delta and no base …):
    the task fails with the Worker's reason, unless ``queue_anyway`` (Hive's behaviour). A request Hive refuses
    because the compaction is already scheduled skips the task, naming the scheduled compaction's id. The
    requester (CQ_INITIATOR_ID) is ``<host>-dag:<user who triggered the DAG run>``.

    :param table: ``db.table``; templated.
    :param partition: ``ds=2024-01-01``; None on a partitioned table: every partition is checked; templated.
    :param compaction_type: ``major`` or ``minor``; templated.
    :param properties: WITH OVERWRITE TBLPROPERTIES (``compactor.<spark conf>`` / ``tblprops.<property>``); templated.
    :param wait: AND WAIT: poll until the compactions leave the queue, fail unless they succeeded; templated.
    :param pool_name: the compaction pool (default: the table's, then the database's ``hive.compactor.worker.pool``).
    :param wait_timeout: seconds to wait (default hive.compactor.wait.timeout).
    :param queue_anyway: queue even what the Worker would refuse, as Hive does (default False); templated.
    :param acid_conn_id: the ``acid_metastore`` connection.
    :return: (XCom) ``{"compactions": [Initiator sensor items], "messages": [...], "states": {...}}``; the outcome
        in one sentence per table/partition is pushed as XCom ``acid_outcome`` (the DAG run's note).
    """

    template_fields: Sequence[str] = ("table", "partition", "compaction_type", "properties", "wait", "pool_name",
                                      "queue_anyway")

    def __init__(self, *, table: str, partition: str | None = None, compaction_type: str = "major",
                 properties: dict[str, Any] | None = None, wait: bool = False, pool_name: str | None = None,
                 wait_timeout: float | None = None, queue_anyway: bool | str = False,
                 acid_conn_id: str = AcidMetastoreHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.partition = partition
        self.compaction_type = compaction_type
        self.properties = properties
        self.wait = wait
        self.pool_name = pool_name
        self.wait_timeout = wait_timeout
        self.queue_anyway = queue_anyway
        self.acid_conn_id = acid_conn_id

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_acid.services.compact import request_compaction, requester_id

        database, _, name = str(self.table or "").rpartition(".")
        if not database or not name:  # e.g. the DAG's form/params left the database or table empty
            raise self._fail(context, f"table {self.table!r}: give both a database and a table name "
                                      "(params 'database' and 'table' are required)")
        warehouse = self.hook.get_warehouse()
        metastore = warehouse.metastore
        try:
            results = request_compaction(warehouse, str(self.table), self.partition or None, str(self.compaction_type),
                                         pool=self.pool_name or None, properties=self.properties,
                                         initiator_id=requester_id("dag", triggering_user(context)),
                                         queue_anyway=_flag(self.queue_anyway))
        except AcidUserError as exc:  # retrying cannot help, unless the database is unreachable for now
            if exc.retryable:
                raise
            raise self._fail(context, f"compaction of {self.table} not queued: {exc}") from None
        queued: list[CompactionInfo] = []
        messages: list[str] = []
        outcome: list[str] = []
        for r in results:
            if r.compaction_id is not None:
                queued.append(metastore.compactions.get(r.compaction_id))
                outcome.append(f"compaction {r.compaction_id} of {r.entity} ({r.type}): queued")
                self.log.info("queued compaction %s: %s %s", r.compaction_id, r.type, r.entity)
            else:
                messages.append(f"{r.entity}: {r.message}")
                self.log.warning("compaction of %s not queued (%s): %s", r.entity, r.state, r.message)
        if not queued:
            raise self._nothing_queued(context, results)
        record_outcome(context, outcome, self.log)
        result = {"compactions": [QueuedCompaction.of(q).to_xcom() for q in queued], "messages": messages}
        if _flag(self.wait):
            result["states"] = self._wait(context, metastore, [q.id for q in queued])
        return result

    def _nothing_queued(self, context: Context, results: list[RequestedCompaction]) -> Exception:
        """Nothing was queued: fail when the Worker would refuse the request or it went wrong; skip, naming the
        scheduled compaction, when it is already scheduled (or the thresholds found nothing to do)."""
        from airflow_acid.services.compact import NOT_QUEUED

        refused = [r for r in results if r.state == NOT_QUEUED or r.state == "error"]
        if refused:
            return self._fail(context, "; ".join(f"compaction of {r.entity} {r.message}"
                                                 if r.state == NOT_QUEUED else f"{r.entity}: {r.message}"
                                                 for r in refused))
        lines = [f"compaction {r.existing_id} of {r.entity} is already scheduled: not queued again ({r.message})"
                 if r.existing_id is not None else f"compaction of {r.entity} not queued: {r.message}"
                 for r in results] or [f"compaction of {self.table} not queued: no partition to compact"]
        record_outcome(context, lines, self.log)
        message = "; ".join(lines)
        self.log.warning("%s", message)
        return AirflowSkipException(message)

    def _fail(self, context: Context, message: str) -> AirflowFailException:
        """The request failed: the reason becomes the DAG run's note and the task's last log line, at ERROR."""
        record_outcome(context, [message], self.log)
        self.log.error("%s", message)
        return AirflowFailException(message)

    def _wait(self, context: Context, metastore: Metastore, ids: list[int]) -> dict[str, str]:
        """AND WAIT: poll until every id left 'initiated'/'working' (bounded by ``wait_timeout``, default
        hive.compactor.wait.timeout); fail unless all ended 'ready for cleaning' or 'succeeded'."""
        from airflow_acid.services.compact import FIRST_POLL_S, wait_for_compactions
        from airflow_acid.services.errors import CompactionWaitTimeout

        limit = self.wait_timeout if self.wait_timeout is not None else metastore.conf.wait_timeout_ms / 1000
        try:
            rows = wait_for_compactions(metastore, ids, first_poll_s=min(FIRST_POLL_S, 0.5), max_poll_s=30.0,
                                        timeout_s=limit)
        except CompactionWaitTimeout as exc:
            raise AirflowException(str(exc)) from None
        bad = {i: row for i, row in rows.items()
               if row.state not in (CompactionState.READY_FOR_CLEANING, CompactionState.SUCCEEDED)}
        if bad:
            raise self._fail(context, "; ".join(
                f"compaction {i} of {row.full_partition_name}: {row.state.display}"
                + (f" — {row.error_message}" if row.error_message else "") for i, row in bad.items()))
        return {str(i): row.state.display for i, row in rows.items()}


def _flag(value: Any) -> bool:
    """A templated boolean (rendered as a bool, or as text without ``render_template_as_native_obj``)."""
    return value in (True, "True", "true", "1", 1)
