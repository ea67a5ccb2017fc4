"""Cleaner and HouseKeeper operators (the acid_cleanup and acid_housekeeping DAGs). The compactor is imported when
a task runs, not when a DAG file is parsed."""

from __future__ import annotations

import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

from airflow_acid.airflow_stats import emit_metrics
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.operators.lineage import operator_lineage
from airflow_acid.services.lineage import LineageDataset, dataset_name

if TYPE_CHECKING:
    from airflow_acid.compactor.cleaner import CleanerEntry


class AcidCleanerOperator(BaseOperator):
    """One Cleaner cycle: deletes obsolete and aborted directories no reader can still see; rows still blocked
    are logged with the transaction that blocks them. Sends ``acid.compaction_cleaner_*`` metrics.

    :param dry_run: only report what would go (kept as ``report_only``: ``BaseOperator.dry_run()`` is a method,
        which a ``dry_run`` attribute would shadow); templated.
    :param acid_conn_id: the ``acid_metastore`` connection.
    OpenLineage events of the task list each table/partition directory it deleted from as input and output.
    :return: (XCom) what was cleaned, what waits and for which transaction, the number of deletions.
    """

    template_fields = ("report_only",)

    def __init__(self, *, dry_run: bool = False, acid_conn_id: str = AcidMetastoreHook.default_conn_name,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_only = dry_run
        self.acid_conn_id = acid_conn_id
        self._cleaned: list[LineageDataset] = []

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_acid.airflow_config import acid_config
        from airflow_acid.services.reports import cleaner_cycle, cleaner_failure_metrics

        dry_run = self.report_only in (True, "True", "true")
        started = time.monotonic()
        try:
            cycle = cleaner_cycle(self.hook.get_metastore(), dry_run=dry_run, scope=acid_config().scope)
        except Exception:
            emit_metrics(cleaner_failure_metrics(time.monotonic() - started), self.log)
            raise
        emit_metrics(cycle.metrics, self.log)
        report = cycle.report
        self._cleaned = _cleaned_datasets(report.entries + report.abort_cleanups) if not dry_run else []
        for line in cycle.lines:
            self.log.info("%s", line)
        return cycle.to_xcom()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: every table/partition directory the cycle deleted from (input and output: its listing was
        read, obsolete and aborted directories removed)."""
        return operator_lineage(self._cleaned, self._cleaned)


def _cleaned_datasets(entries: list[CleanerEntry]) -> list[LineageDataset]:
    found: dict[tuple[str, str], LineageDataset] = {}
    for e in entries:
        if e.deletions and e.location:
            namespace, name = dataset_name(e.location)
            table, _, partition = e.entity.partition("/")
            found.setdefault((namespace, name), LineageDataset(namespace, name, table, partition or None))
    return list(found.values())


class AcidHouseKeeperOperator(BaseOperator):
    """One HouseKeeper pass: aborts timed-out transactions, retires locks, purges compaction history.

    :param acid_conn_id: the ``acid_metastore`` connection.
    :return: (XCom) what the pass did (counts per kind).
    """

    def __init__(self, *, acid_conn_id: str = AcidMetastoreHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.acid_conn_id = acid_conn_id

    @cached_property
    def hook(self) -> AcidMetastoreHook:
        return AcidMetastoreHook(self.acid_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_acid.services.reports import housekeeping_pass

        done = housekeeping_pass(self.hook.get_metastore())
        emit_metrics(done.metrics, self.log)
        for line in done.lines:
            self.log.info("%s", line)
        return done.to_xcom()
