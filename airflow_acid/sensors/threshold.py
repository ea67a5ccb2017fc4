"""Per-table threshold sensors users put in their own DAGs: fire when one table/partition crosses one Initiator
threshold (delta count, delta/base size ratio, aborted transactions). Poke, reschedule or deferrable."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from airflow_acid.airflow_compat import AirflowException, AirflowFailException
from airflow_acid.airflow_config import acid_config
from airflow_acid.errors import AcidUserError
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.services.thresholds import ThresholdCheck, ThresholdKind
from airflow_acid.triggers.threshold import AcidThresholdTrigger


class AcidThresholdSensor(BaseSensorOperator):
    """Waits until ``table`` / ``partition`` crosses the ``kind`` threshold.

    :param table: ``db.table`` (or ``table`` in database ``default``); templated.
    :param partition: the partition to watch (``ds=2024-01-01``); required on a partitioned table; templated.
    :param threshold: the limit; None: the table's own (``compactorthreshold.*`` property or ``[acid]`` setting).
    :param acid_conn_id: the ``acid_metastore`` connection.
    :param deferrable: wait in the triggerer (:class:`AcidThresholdTrigger`) instead of a worker slot; default
        ``[operators] default_deferrable``.
    :return: (XCom) the verdict: reason, numbers, suggested compaction type.
    """

    template_fields: Sequence[str] = ("table", "partition", "threshold")
    kind: ThresholdKind

    def __init__(self, *, table: str, partition: str | None = None, threshold: float | None = None,
                 acid_conn_id: str = AcidMetastoreHook.default_conn_name,
                 deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.partition = partition
        self.threshold = threshold
        self.acid_conn_id = acid_conn_id
        self.deferrable = acid_config().default_deferrable if deferrable is None else deferrable

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def make_check(self) -> ThresholdCheck:
        threshold = None if self.threshold in (None, "", "None") else float(self.threshold)
        try:
            return ThresholdCheck(self.kind, self.table, self.partition or None, threshold)
        except ValueError as exc:
            raise AirflowFailException(str(exc)) from None

    def poke(self, context: Context) -> PokeReturnValue | bool:
        try:
            result = self.make_check().evaluate(self.hook.get_metastore())
        except AcidUserError as exc:  # e.g. the table or partition does not exist: retrying cannot help
            if exc.retryable:  # the metastore database cannot be reached now: the task's retries may get through
                raise
            raise AirflowFailException(str(exc)) from None
        self.log.info("%s", result.reason)
        if result.met:
            return PokeReturnValue(True, xcom_value=result.to_dict())
        return False

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        fired = self.poke(context)
        if isinstance(fired, PokeReturnValue) and fired.is_done:
            return fired.xcom_value
        self.defer(trigger=AcidThresholdTrigger(self.make_check().to_dict(), acid_conn_id=self.acid_conn_id,
                                                poll_interval=float(self.poke_interval)),
                   method_name="execute_complete", timeout=timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """The trigger's event: the verdict as XCom, or the check's error as a task failure."""
        if event.get("status") == "met":
            self.log.info("%s", event["result"]["reason"])
            return event["result"]
        raise AirflowException(f"threshold check on {self.table} failed: {event.get('message')}")


class AcidDeltaCountSensor(AcidThresholdSensor):
    """More current deltas than hive.compactor.delta.num.threshold (or ``threshold``)."""

    kind = ThresholdKind.DELTA_COUNT


class AcidDeltaRatioSensor(AcidThresholdSensor):
    """Delta size / base size above hive.compactor.delta.pct.threshold (or ``threshold``)."""

    kind = ThresholdKind.DELTA_RATIO


class AcidAbortedTxnSensor(AcidThresholdSensor):
    """More aborted transactions than hive.compactor.abortedtxn.threshold (or ``threshold``), or one older than
    hive.compactor.aborted.txn.time.threshold (or ``age_threshold_s``).

    :param age_threshold_s: the age limit in seconds; None: hive.compactor.aborted.txn.time.threshold.
    """

    kind = ThresholdKind.ABORTED_TXNS

    def __init__(self, *, age_threshold_s: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.age_threshold_s = age_threshold_s

    def make_check(self) -> ThresholdCheck:
        base = super().make_check()
        return ThresholdCheck(base.kind, base.table, base.partition, base.threshold, self.age_threshold_s)
