"""ACID metrics, Airflow-free: the figures of Hive's AcidMetricService (``metastore.acidmetrics.*``), delta metrics
(``metastore.deltametrics.*``), Initiator/Cleaner cycle and Worker figures, as :class:`Sample` values, plus the
warnings Hive's AcidMetricsLogger writes when a figure passes its ``metastore.compactor.*.threshold.*`` setting.

:data:`METRICS` is the one list of names (the README's table is checked against it); the Airflow adapters send the
samples through Airflow's metrics interface (StatsD / OpenTelemetry, as configured) under the ``acid.`` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_acid.acid.codes import CompactionState
from airflow_acid.compactor.messages import WorkerOutcome, WorkerStatus
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.metrics import AcidMetricsData, MetricsStore, OldestRow
from airflow_acid.metastore.store import Metastore
from airflow_acid.pycompat import StrEnum

if TYPE_CHECKING:  # the client API (and its query engine) only where delta metrics are computed
    from airflow_acid.client.warehouse import AcidWarehouse

PREFIX = "acid"
"""Every name is sent as ``acid.<name>`` (after Airflow's own ``[metrics] statsd_prefix``)."""


class MetricKind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    TIMER = "timer"
    """Milliseconds."""


@dataclass(frozen=True)
class MetricSpec:
    """One documented metric: its name, kind, what it measures, and what it is per (``.<suffix>`` of the name)."""

    name: str
    kind: MetricKind
    description: str
    per: str | None = None
    """'table/partition', 'pool' or None: the name then ends with ``.<db>.<table>[.<partition>]`` / ``.<pool>``."""
    hive: bool = True
    """Hive emits a metric of this name (False: airflow-acid's own)."""


_G, _C, _T = MetricKind.GAUGE, MetricKind.COUNTER, MetricKind.TIMER
_STATES = [s for s in CompactionState]
METRICS: tuple[MetricSpec, ...] = (
    *(MetricSpec(f"compaction_num_{s.display.replace(' ', '_')}", _G,
                 f"tables/partitions whose latest compaction is '{s.display}'") for s in _STATES),
    *(MetricSpec(f"compaction_queue_{s.display.replace(' ', '_')}", _G, f"COMPACTION_QUEUE rows '{s.display}'",
                 hive=False) for s in _STATES if s.is_queued),
    MetricSpec("compaction_oldest_enqueue_age_in_sec", _G, "age of the oldest 'initiated' row"),
    MetricSpec("compaction_oldest_working_age_in_sec", _G, "age of the oldest 'working' row (since its start)"),
    MetricSpec("oldest_ready_for_cleaning_age_in_sec", _G, "age of the oldest 'ready for cleaning' row (since "
               "its compaction committed)"),
    MetricSpec("compaction_oldest_cleaning_age_in_sec", _G, "age of the oldest row a Cleaner started on"),
    MetricSpec("compaction_pools_initiated_item_count", _G, "'initiated' rows per compaction pool", per="pool"),
    MetricSpec("compaction_pools_working_item_count", _G, "'working' rows per compaction pool", per="pool"),
    MetricSpec("num_open_non_repl_transactions", _G, "open transactions (not replication)"),
    MetricSpec("num_open_repl_transactions", _G, "open replication transactions"),
    MetricSpec("oldest_open_non_repl_txn_id", _G, "id of the oldest open transaction (0: none)"),
    MetricSpec("oldest_open_non_repl_txn_age_in_sec", _G, "age of the oldest open transaction"),
    MetricSpec("num_aborted_transactions", _G, "aborted transactions still in TXNS"),
    MetricSpec("oldest_aborted_txn_id", _G, "id of the oldest aborted transaction (0: none)"),
    MetricSpec("oldest_aborted_txn_age_in_sec", _G, "age of the oldest aborted transaction"),
    MetricSpec("tables_with_x_aborted_transactions", _G, "tables with more aborted transactions than "
               "metastore.acidmetrics.table.aborted.txns.threshold"),
    MetricSpec("num_locks", _G, "locks in HIVE_LOCKS"),
    MetricSpec("oldest_lock_age_in_sec", _G, "age of the oldest acquired lock"),
    MetricSpec("compaction_num_txn_to_writeid", _G, "rows in TXN_TO_WRITE_ID"),
    MetricSpec("compaction_num_completed_txn_components", _G, "rows in COMPLETED_TXN_COMPONENTS"),
    MetricSpec("compaction_num_initiators", _G, "initiator hosts seen in the last 24 h"),
    MetricSpec("compaction_num_workers", _G, "worker hosts seen in the last 24 h"),
    MetricSpec("compaction_num_active_deltas", _G, "current deltas, for tables/partitions with at least "
               "metastore.deltametrics.delta.num.threshold", per="table/partition"),
    MetricSpec("compaction_num_small_deltas", _G, "current deltas smaller than metastore.deltametrics.delta.pct."
               "threshold of the base, same tables/partitions", per="table/partition"),
    MetricSpec("compaction_num_obsolete_deltas", _G, "obsolete directories, for tables/partitions with at least "
               "metastore.deltametrics.obsolete.delta.num.threshold", per="table/partition"),
    MetricSpec("compaction_initiator_cycle", _C, "Initiator cycles run"),
    MetricSpec("compaction_initiator_cycle_duration", _T, "duration of an Initiator cycle"),
    MetricSpec("compaction_initiator_failure_counter", _C, "Initiator cycles that failed"),
    MetricSpec("compaction_initiator_long_running", _C, "Initiator cycles longer than metastore.compactor.long."
               "running.initiator.threshold.warning", hive=False),
    MetricSpec("compaction_cleaner_cycle", _C, "Cleaner cycles run"),
    MetricSpec("compaction_cleaner_cycle_duration", _T, "duration of a Cleaner cycle"),
    MetricSpec("compaction_cleaner_failure_counter", _C, "Cleaner cycles that failed"),
    MetricSpec("compaction_cleaner_deletions", _C, "directories the Cleaner deleted", hive=False),
    MetricSpec("compaction_worker_cycle", _C, "compactions the Worker ran (any outcome)"),
    MetricSpec("compaction_worker_cycle_duration", _T, "duration of one compaction (plan, Spark job, commit)",
               hive=False),
    MetricSpec("compaction_worker_failed", _C, "compactions that failed or were revoked", hive=False),
    MetricSpec("compaction_rows_in", _C, "rows read by compactions", hive=False),
    MetricSpec("compaction_rows_out", _C, "rows written by compactions", hive=False),
    MetricSpec("compaction_files_written", _C, "files written by compactions", hive=False),
    MetricSpec("compaction_bytes_written", _C, "bytes written by compactions", hive=False),
)
SPECS = {spec.name: spec for spec in METRICS}

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def stat_part(text: str) -> str:
    """A name component StatsD accepts: characters other than letters, digits, ``_`` and ``-`` become ``_``."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


@dataclass(frozen=True)
class Sample:
    """One value of a documented metric (``suffix`` for per-table/partition and per-pool metrics)."""

    name: str
    value: float
    suffix: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in SPECS:
            raise ValueError(f"metric {self.name!r} is not in the documented list (services/metrics.py METRICS)")

    @property
    def kind(self) -> MetricKind:
        return SPECS[self.name].kind

    @property
    def stat(self) -> str:
        """The full name sent: ``acid.<name>[.<suffix>]``."""
        return f"{PREFIX}.{self.name}" + (f".{self.suffix}" if self.suffix else "")


class Level(StrEnum):
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Finding:
    """A figure past one of Hive's warning/error thresholds: logged at ``level`` by the adapters."""

    level: Level
    metric: str
    message: str


@dataclass
class MetricsReport:
    """Samples to emit and findings to log."""

    samples: list[Sample] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def value(self, name: str, suffix: str | None = None) -> float | None:
        """The value of one sample (tests, logs), or None."""
        for s in self.samples:
            if s.name == name and s.suffix == suffix:
                return s.value
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom): stat name -> value, and the findings."""
        return {"metrics": {s.stat: s.value for s in self.samples},
                "findings": [{"level": f.level.value, "metric": f.metric, "message": f.message}
                             for f in self.findings]}


def _age(row: OldestRow | None) -> float:
    return round(row.age_s, 3) if row is not None else 0.0


def _entity_suffix(database: str, table: str, partition: str | None) -> tuple[str, dict[str, str]]:
    parts = [stat_part(database), stat_part(table)] + ([stat_part(partition)] if partition else [])
    tags = {"database": database, "table": table, **({"partition": partition} if partition else {})}
    return ".".join(parts), tags


def _threshold(findings: list[Finding], metric: str, value: float, warning: float | None, error: float | None,
               message: str) -> None:
    """Hive's AcidMetricsLogger rule: error above ``error``, else warning above ``warning``."""
    if error is not None and error >= 0 and value > error:
        findings.append(Finding(Level.ERROR, metric, message))
    elif warning is not None and warning >= 0 and value > warning:
        findings.append(Finding(Level.WARNING, metric, message))


def acid_metrics(metastore: Metastore, warehouse: AcidWarehouse | None = None) -> MetricsReport:
    """Hive's ACID metrics now (one metastore read), the delta metrics when ``warehouse`` is given and
    metastore.acidmetrics.ext.on is set (one listing per table/partition), and the threshold findings."""
    conf = metastore.conf
    data = MetricsStore(metastore.db, conf).read()
    report = MetricsReport()
    report.samples += _metastore_samples(data)
    report.findings += _metastore_findings(data, conf)
    if warehouse is not None and conf.acidmetrics_ext_on:
        report.samples += delta_samples(warehouse, conf)
    return report


def _metastore_samples(data: AcidMetricsData) -> list[Sample]:
    samples = [Sample(f"compaction_num_{s.display.replace(' ', '_')}", data.latest_state_counts.get(s, 0))
               for s in _STATES]
    samples += [Sample(f"compaction_queue_{s.display.replace(' ', '_')}", data.queue_counts.get(s, 0))
                for s in _STATES if s.is_queued]
    samples += [
        Sample("compaction_oldest_enqueue_age_in_sec", _age(data.oldest_initiated)),
        Sample("compaction_oldest_working_age_in_sec", _age(data.oldest_working)),
        Sample("oldest_ready_for_cleaning_age_in_sec", _age(data.oldest_ready_for_cleaning)),
        Sample("compaction_oldest_cleaning_age_in_sec", _age(data.oldest_cleaning)),
        Sample("num_open_non_repl_transactions", data.open_txns),
        Sample("num_open_repl_transactions", data.open_repl_txns),
        Sample("oldest_open_non_repl_txn_id", data.oldest_open_txn.id if data.oldest_open_txn else 0),
        Sample("oldest_open_non_repl_txn_age_in_sec", _age(data.oldest_open_txn)),
        Sample("num_aborted_transactions", data.aborted_txns),
        Sample("oldest_aborted_txn_id", data.oldest_aborted_txn.id if data.oldest_aborted_txn else 0),
        Sample("oldest_aborted_txn_age_in_sec", _age(data.oldest_aborted_txn)),
        Sample("tables_with_x_aborted_transactions", len(data.tables_with_aborted_txns)),
        Sample("num_locks", data.locks),
        Sample("oldest_lock_age_in_sec", _age(data.oldest_lock)),
        Sample("compaction_num_txn_to_writeid", data.txn_to_write_id_rows),
        Sample("compaction_num_completed_txn_components", data.completed_txn_components_rows),
        Sample("compaction_num_initiators", data.initiators),
        Sample("compaction_num_workers", data.workers),
    ]
    for (pool, state), count in sorted(data.pool_counts.items()):
        name = ("compaction_pools_initiated_item_count" if state is CompactionState.INITIATED
                else "compaction_pools_working_item_count")
        samples.append(Sample(name, count, stat_part(pool), {"pool": pool}))
    return samples


def _metastore_findings(data: AcidMetricsData, conf: MetastoreConf) -> list[Finding]:
    findings: list[Finding] = []
    if data.oldest_open_txn is not None:
        _threshold(findings, "oldest_open_non_repl_txn_age_in_sec", data.oldest_open_txn.age_s,
                   conf.oldest_open_txn_warning_s, conf.oldest_open_txn_error_s,
                   f"transaction {data.oldest_open_txn.id} has been open for {data.oldest_open_txn.age_s:.0f} s; "
                   "it keeps the Cleaner from removing obsolete files (abort it if it leaked)")
    if data.oldest_aborted_txn is not None:
        _threshold(findings, "oldest_aborted_txn_age_in_sec", data.oldest_aborted_txn.age_s,
                   conf.oldest_uncleaned_aborted_txn_warning_s, conf.oldest_uncleaned_aborted_txn_error_s,
                   f"aborted transaction {data.oldest_aborted_txn.id} is {data.oldest_aborted_txn.age_s:.0f} s old "
                   "and not cleaned yet: is the acid_cleanup DAG running?")
    if data.oldest_ready_for_cleaning is not None:
        _threshold(findings, "oldest_ready_for_cleaning_age_in_sec", data.oldest_ready_for_cleaning.age_s,
                   conf.oldest_uncleaned_compaction_s, None,
                   f"compaction {data.oldest_ready_for_cleaning.id} has been 'ready for cleaning' for "
                   f"{data.oldest_ready_for_cleaning.age_s:.0f} s: an open transaction blocks it or the Cleaner "
                   "does not run (airflow-acid why <table> names the blocker)")
    if data.oldest_initiated is not None:
        _threshold(findings, "compaction_oldest_enqueue_age_in_sec", data.oldest_initiated.age_s,
                   conf.oldest_initiated_compaction_warning_s, conf.oldest_initiated_compaction_error_s,
                   f"compaction {data.oldest_initiated.id} has waited 'initiated' for "
                   f"{data.oldest_initiated.age_s:.0f} s: are the acid_compaction DAG and its pool running?")
    failed = (data.latest_state_counts.get(CompactionState.FAILED, 0)
              + data.latest_state_counts.get(CompactionState.DID_NOT_INITIATE, 0))
    total = failed + data.latest_state_counts.get(CompactionState.SUCCEEDED, 0)
    if total and failed / total > conf.failed_compaction_ratio_threshold:
        findings.append(Finding(Level.WARNING, "compaction_num_failed",
                                f"{failed} of {total} tables/partitions ended their latest compaction failed or "
                                f"'did not initiate' (ratio {failed / total:.2f} > "
                                f"{conf.failed_compaction_ratio_threshold:g}); see SHOW COMPACTIONS"))
    if len(data.tables_with_aborted_txns) >= conf.tables_with_aborted_txn_threshold > 0:
        names = ", ".join(f"{d}.{t} ({n})" for (d, t), n in sorted(data.tables_with_aborted_txns.items())[:5])
        findings.append(Finding(Level.WARNING, "tables_with_x_aborted_transactions",
                                f"{len(data.tables_with_aborted_txns)} table(s) have more than "
                                f"{conf.acidmetrics_table_aborted_txns_threshold} aborted transactions: {names}"))
    _threshold(findings, "compaction_num_completed_txn_components", data.completed_txn_components_rows,
               conf.completed_txn_components_warning, conf.completed_txn_components_error,
               f"COMPLETED_TXN_COMPONENTS holds {data.completed_txn_components_rows} rows: compaction or cleaning "
               "is falling behind")
    _threshold(findings, "compaction_num_txn_to_writeid", data.txn_to_write_id_rows, conf.txn_to_writeid_warning,
               conf.txn_to_writeid_error, f"TXN_TO_WRITE_ID holds {data.txn_to_write_id_rows} rows: is the "
               "acid_housekeeping DAG running?")
    return findings


def delta_samples(warehouse: AcidWarehouse, conf: MetastoreConf | None = None) -> list[Sample]:
    """Hive's delta metrics: per table/partition above metastore.deltametrics.(obsolete.)delta.num.threshold, the
    metastore.deltametrics.max.cache.size ones with the most."""
    from airflow_acid.services.health import warehouse_health

    conf = conf or warehouse.metastore.conf
    rows = [r for r in warehouse_health(warehouse) if r.error is None]
    limit = conf.deltametrics_max_cache_size
    samples: list[Sample] = []
    active = sorted((r for r in rows if r.deltas + r.delete_deltas >= conf.deltametrics_delta_num_threshold),
                    key=lambda r: -(r.deltas + r.delete_deltas))[:limit]
    for r in active:
        suffix, tags = _entity_suffix(r.database, r.table, r.partition)
        samples.append(Sample("compaction_num_active_deltas", r.deltas + r.delete_deltas, suffix, tags))
        samples.append(Sample("compaction_num_small_deltas", r.small_deltas, suffix, tags))
    obsolete = sorted((r for r in rows if r.obsolete_dirs >= conf.deltametrics_obsolete_delta_num_threshold),
                      key=lambda r: -r.obsolete_dirs)[:limit]
    for r in obsolete:
        suffix, tags = _entity_suffix(r.database, r.table, r.partition)
        samples.append(Sample("compaction_num_obsolete_deltas", r.obsolete_dirs, suffix, tags))
    return samples


def initiator_cycle_metrics(seconds: float, conf: MetastoreConf, *, failed: bool = False,
                            ran: bool = True) -> MetricsReport:
    """One Initiator cycle: count, duration, failure, and Hive's long-running warning/error."""
    report = MetricsReport()
    if ran:
        report.samples += [Sample("compaction_initiator_cycle", 1),
                           Sample("compaction_initiator_cycle_duration", round(seconds * 1000, 3))]
    if failed:
        report.samples.append(Sample("compaction_initiator_failure_counter", 1))
    _threshold(report.findings, "compaction_initiator_cycle_duration", seconds,
               conf.long_running_initiator_warning_s, conf.long_running_initiator_error_s,
               f"the Initiator cycle took {seconds:.0f} s (warning above {conf.long_running_initiator_warning_s:g} s,"
               f" error above {conf.long_running_initiator_error_s:g} s): too many candidates per cycle?")
    if report.findings:
        report.samples.append(Sample("compaction_initiator_long_running", 1))
    return report


def cleaner_cycle_metrics(seconds: float, *, deletions: int = 0, failed: bool = False) -> MetricsReport:
    """One Cleaner cycle: count, duration, directories deleted, failure."""
    report = MetricsReport([Sample("compaction_cleaner_cycle", 1),
                            Sample("compaction_cleaner_cycle_duration", round(seconds * 1000, 3))])
    if deletions:
        report.samples.append(Sample("compaction_cleaner_deletions", deletions))
    if failed:
        report.samples.append(Sample("compaction_cleaner_failure_counter", 1))
    return report


def worker_metrics(outcomes: Iterable[WorkerOutcome]) -> MetricsReport:
    """The Worker's outcomes: one cycle and its duration each, failures, rows/files/bytes (tagged by entity)."""
    report = MetricsReport()
    for o in outcomes:
        tags = {"entity": o.entity, "status": str(o.status)}
        report.samples += [Sample("compaction_worker_cycle", 1, tags=tags),
                           Sample("compaction_worker_cycle_duration", round(o.seconds * 1000, 3), tags=tags)]
        if not o.succeeded:
            if o.status in (WorkerStatus.FAILED, WorkerStatus.REVOKED):
                report.samples.append(Sample("compaction_worker_failed", 1, tags=tags))
            continue
        report.samples += [Sample("compaction_rows_in", o.rows_in, tags=tags),
                           Sample("compaction_rows_out", o.rows_out, tags=tags),
                           Sample("compaction_files_written", o.files, tags=tags),
                           Sample("compaction_bytes_written", o.bytes, tags=tags)]
    return report


def metric_names(specs: Sequence[MetricSpec] = METRICS) -> list[str]:
    """Every documented name with its prefix (``acid.<name>``)."""
    return [f"{PREFIX}.{s.name}" for s in specs]


__all__ = ["METRICS", "PREFIX", "Finding", "Level", "MetricKind", "MetricSpec", "MetricsReport", "Sample",
           "acid_metrics", "cleaner_cycle_metrics", "delta_samples", "initiator_cycle_metrics", "metric_names",
           "stat_part", "worker_metrics"]
