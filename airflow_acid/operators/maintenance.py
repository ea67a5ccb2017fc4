"""Cleaner and HouseKeeper operators (the acid_cleanup and acid_housekeeping DAGs)."""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_acid.compactor.cleaner import Cleaner, CleanerEntry
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.hooks.metrics import emit_metrics
from airflow_acid.operations.lineage import LineageDataset, dataset_name
from airflow_acid.operations.metrics import cleaner_cycle_metrics
from airflow_acid.operators.lineage import operator_lineage


def _entry(e: CleanerEntry) -> dict[str, Any]:
    return {"compaction_id": e.compaction_id, "entity": e.entity, "status": e.status, "message": e.message,
            "deleted": [d.path for d in e.deletions], "blockers": [b.describe() for b in e.blockers]}


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
        dry_run = self.report_only in (True, "True", "true")
        started = time.monotonic()
        try:
            report = Cleaner(self.hook.get_metastore()).run_cycle(dry_run=dry_run)
        except Exception:
            emit_metrics(cleaner_cycle_metrics(time.monotonic() - started, failed=True), self.log)
            raise
        if not dry_run and report.skipped is None:
            emit_metrics(cleaner_cycle_metrics(time.monotonic() - started, deletions=len(report.deletions)),
                         self.log)
        self._cleaned = _cleaned_datasets(report.entries + report.abort_cleanups) if not dry_run else []
        for e in report.entries + report.abort_cleanups:
            self.log.info("%s %s: %s%s", "would clean" if dry_run else "cleaned", e.entity, e.status,
                          f" ({len(e.deletions)} deletion(s))" if e.deletions else "")
            for d in e.deletions:
                self.log.info("  %s %s — %s", "would delete" if dry_run else "deleted", d.url, d.reason)
        for e in report.waiting:
            self.log.info("waiting: %s%s", e.entity, "; blocked by " + ", ".join(b.describe() for b in e.blockers)
                          if e.blockers else f" ({e.message})" if e.message else "")
        return {"dry_run": dry_run, "cleaned": [_entry(e) for e in report.entries],
                "abort_cleanups": [_entry(e) for e in report.abort_cleanups],
                "waiting": [_entry(e) for e in report.waiting], "deletions": len(report.deletions)}


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
        report = HouseKeeper(self.hook.get_metastore()).run_once()
        self.log.info("housekeeping: %s", report.to_dict())
        return report.to_dict()
