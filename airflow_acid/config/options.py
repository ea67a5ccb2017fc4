"""Every option airflow-acid reads, described once: name, type, default, an example and what it does.

The ``[acid]`` section of the provider info and the reference page docs/configuration.md are generated from
:data:`OPTIONS` (:mod:`airflow_acid.config.reference`); :class:`~airflow_acid.config.acid_config.AcidConfig` parses
them. Hive's settings take Hive's keys and defaults (the fields of :class:`MetastoreConf`); the others belong to the
DAGs, the Initiator's scheduling, the alerts and the object store.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from airflow_acid.metastore.conf import MetastoreConf

ACID_SECTION = "acid"
OPERATORS_SECTION = "operators"
DEFAULT_POOL = "default_pool"


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` is the provider-info type (string, integer, float, boolean); ``default`` the text an
    unset option reads as ("" = unset); ``section`` the Airflow config section it lives in."""

    name: str
    kind: str
    default: str | None
    example: str
    description: str
    section: str = ACID_SECTION

    @property
    def env_var(self) -> str:
        """The environment variable Airflow (and the CLI) read it from: ``AIRFLOW__<SECTION>__<NAME>``."""
        return f"AIRFLOW__{self.section.upper()}__{self.name.upper()}"


# What each Hive setting does, by MetastoreConf field (Hive's HiveConf/MetastoreConf wording, shortened).
HIVE_DESCRIPTIONS: dict[str, str] = {
    "txn_timeout_s": "A transaction whose client sent no heartbeat for this long is aborted by the housekeeper.",
    "txn_max_open_batch": "Most transactions one open-transactions request may open.",
    "max_open_txns": "Most open transactions at once; new ones are refused beyond this.",
    "opentxn_timeout_ms": "How long a just-opened transaction may stay invisible to snapshots (commit ordering).",
    "lock_numretries": "How many times a lock request is retried before it fails.",
    "lock_sleep_between_retries_s": "Sleep between lock retries.",
    "timedout_txn_abort_batch": "Most timed-out transactions aborted in one housekeeper batch.",
    "use_min_history_level": "Track the minimum open transaction per transaction (MIN_HISTORY_LEVEL) for the "
                             "Cleaner.",
    "history_retention_succeeded": "Succeeded compactions kept in the history per table/partition.",
    "history_retention_failed": "Failed compactions kept in the history per table/partition.",
    "history_retention_did_not_initiate": "'did not initiate' entries kept in the history per table/partition.",
    "history_retention_refused": "Refused compactions kept in the history per table/partition.",
    "history_retention_timeout_s": "History entries older than this are purged regardless of the counts.",
    "failed_compacts_threshold": "After this many consecutive failures the Initiator stops queueing a "
                                 "table/partition (1-20).",
    "transient_error_retries": "Retries of a metastore operation on a transient database error "
                               "(airflow-acid setting).",
    "decision_log_retention_s": "How long ACID_INITIATOR_DECISION_LOG keeps the decisions of each shadow cycle "
                                "([acid] mode = shadow, airflow-acid shadow run), the history behind airflow-acid "
                                "shadow report over a time range; each shadow cycle and the HouseKeeper delete older "
                                "rows. 0: no log is kept (airflow-acid setting).",
    "failed_retry_time_s": "After this long the Initiator tries a table/partition again despite failures "
                           "(negative: never).",
    "worker_timeout_s": "A compaction 'working' for longer than this is revoked and queued again.",
    "worker_pool_timeout_s": "A pooled compaction nobody picked up for this long may be run by any worker.",
    "cleaner_retry_max_attempts": "How often the Cleaner retries a compaction whose cleanup failed (0-10).",
    "cleaner_retry_retention_s": "Base back-off of Cleaner retries (doubles per attempt).",
    "compactor_fetch_size": "Rows the compactor reads per batch from the metastore (100-5000).",
    "txn_xlock_write": "UPDATE/DELETE take exclusive-write locks (no concurrent writers to a partition).",
    "txn_xlock_iow": "INSERT OVERWRITE takes an exclusive lock.",
    "check_interval_s": "How often the Initiator looks for tables and partitions to compact (the schedule of the "
                        "acid_compaction DAG).",
    "delta_num_threshold": "Compact a table/partition when it has more current deltas than this.",
    "delta_pct_threshold": "Major compaction when the deltas' size exceeds this fraction of the base's size.",
    "abortedtxn_threshold": "Compact when more aborted transactions than this wrote a table/partition.",
    "aborted_txn_time_threshold_s": "Compact when an aborted transaction is older than this (negative: off).",
    "compact_insert_only": "Also compact insert-only (micro-managed) tables.",
    "request_queue": "Threads on which the Initiator lists and evaluates its candidates in parallel "
                     "(Hive's checkForCompaction pool; 1 = one at a time).",
    "compactor_job_queue": "YARN queue of compaction jobs (spark.yarn.queue) unless a table or request names one "
                           "(compactor.hive.compactor.job.queue, compactor.mapreduce.job.queuename, …).",
    "worker_threads": "Hive's compactor worker threads: 0 turns compaction workers off (queued compactions stay "
                      "'initiated' for another worker, e.g. Hive's); N runs at most N compactions at once per DAG "
                      "run; unset (default), the Airflow pools' slots cap them.",
    "max_num_delta": "Most deltas one compaction job reads; more are compacted in several rounds.",
    "transactional_events_mem": "Delete events of one bucket held in memory by a compaction's merge (about 8 bytes "
                                "each); a bucket whose delete deltas hold more streams them in key order instead "
                                "(Hive's sort-merge; a MINOR compaction merges them into its delete delta batch by "
                                "batch). A table's compactor.hive.transactional.events.mem property overrides it.",
    "wait_timeout_ms": "How long ALTER TABLE ... COMPACT ... AND WAIT waits for the compaction.",
    "cleaner_run_interval_ms": "How often the Cleaner runs (the schedule of the acid_cleanup DAG).",
    "delayed_cleanup_enabled": "Keep obsolete directories for the retention time after compaction.",
    "cleaner_retention_time_s": "How long obsolete directories stay when delayed cleanup is on.",
    "clean_aborts_using_cleaner": "The Cleaner removes aborted directories directly (no compaction needed).",
    "acid_housekeeper_interval_s": "How often the ACID housekeeper aborts timed-out transactions.",
    "compaction_housekeeper_interval_s": "How often compaction history is purged (the acid_housekeeping DAG).",
    "txn_cleaner_interval_s": "How often empty aborted/committed transaction rows are removed.",
    "acidmetrics_ext_on": "The metrics task also lists table/partition directories for the delta metrics "
                          "(compaction_num_active_deltas / obsolete_deltas / small_deltas).",
    "acidmetrics_table_aborted_txns_threshold": "A table counts in tables_with_x_aborted_transactions when more "
                                                "aborted transactions than this wrote it.",
    "deltametrics_max_cache_size": "Most tables/partitions reported per delta metric (those with the most; 0-500).",
    "deltametrics_delta_num_threshold": "A table/partition is reported in compaction_num_active_deltas (and "
                                        "small_deltas) when it has at least this many current deltas.",
    "deltametrics_obsolete_delta_num_threshold": "A table/partition is reported in compaction_num_obsolete_deltas "
                                                 "when it has at least this many obsolete directories.",
    "deltametrics_delta_pct_threshold": "A delta smaller than this fraction of its base counts as small.",
    "long_running_initiator_warning_s": "An Initiator cycle longer than this logs a warning.",
    "long_running_initiator_error_s": "An Initiator cycle longer than this logs an error.",
    "oldest_open_txn_warning_s": "The metrics task warns when the oldest open transaction is older than this.",
    "oldest_open_txn_error_s": "The metrics task logs an error when the oldest open transaction is older than this.",
    "oldest_uncleaned_aborted_txn_warning_s": "Warn when the oldest aborted transaction is older than this.",
    "oldest_uncleaned_aborted_txn_error_s": "Error when the oldest aborted transaction is older than this.",
    "oldest_uncleaned_compaction_s": "Warn when a compaction has been 'ready for cleaning' for longer than this.",
    "oldest_initiated_compaction_warning_s": "Warn when a compaction has waited 'initiated' for longer than this.",
    "oldest_initiated_compaction_error_s": "Error when a compaction has waited 'initiated' for longer than this.",
    "failed_compaction_ratio_threshold": "Warn when (failed + did not initiate) / (those + succeeded) of the "
                                         "latest compactions per table/partition exceeds this.",
    "tables_with_aborted_txn_threshold": "Warn when at least this many tables have more aborted transactions than "
                                         "metastore.acidmetrics.table.aborted.txns.threshold.",
    "completed_txn_components_warning": "Warn when COMPLETED_TXN_COMPONENTS holds more rows than this.",
    "completed_txn_components_error": "Error when COMPLETED_TXN_COMPONENTS holds more rows than this.",
    "txn_to_writeid_warning": "Warn when TXN_TO_WRITE_ID holds more rows than this.",
    "txn_to_writeid_error": "Error when TXN_TO_WRITE_ID holds more rows than this.",
}


def _number(value: float) -> str:
    """A number as a setting's text: whole numbers in full (``2592000``, not ``2.592e+06``)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _hive_option(field: dataclasses.Field[Any], default: Any) -> Option:
    """One Hive setting under its Hive key, its default written the way Hive writes it (times with their unit)."""
    name = field.name
    description = HIVE_DESCRIPTIONS[name]
    key = MetastoreConf.key_of(name)
    if default is None:  # an optional count: unset unless configured
        return Option(key, "integer", None, "4", description)
    if isinstance(default, bool):
        return Option(key, "boolean", str(default).lower(), str(not default).lower(), description)
    if isinstance(default, str):
        return Option(key, "string", default, "compaction", description)
    if name.endswith("_s"):
        return Option(key, "string", f"{_number(default)}s", f"{_number(default * 2)}s", description)
    if name.endswith("_ms"):
        return Option(key, "string", f"{int(default)}ms", f"{int(default) * 2}ms", description)
    if isinstance(default, int):
        return Option(key, "integer", str(default), str(default * 2 or 4), description)
    return Option(key, "float", f"{default:g}", f"{default * 2:g}", description)


_HIVE_DEFAULTS = MetastoreConf()
HIVE_OPTIONS: tuple[Option, ...] = tuple(_hive_option(f, getattr(_HIVE_DEFAULTS, f.name))
                                         for f in dataclasses.fields(MetastoreConf))
"""Hive's settings, one per MetastoreConf field, under the key Hive documents."""

DAG_OPTIONS: tuple[Option, ...] = (
    Option('compaction_pool', 'string', 'default_pool', 'acid_compaction',
           'Airflow pool the compaction tasks run in. Create a pool with N slots (N playing '
           'hive.compactor.worker.threads) to cap parallel Spark jobs; default_pool when unset.'),
    Option('compaction_pools', 'string', '', 'etl,backfill',
           'Comma-separated compaction pools (hive.compactor.worker.pool table/database property) whose '
           "compactions run in an Airflow pool of the same name (create it; its slots cap that pool's parallel "
           'Spark jobs). Rows of other pools run in compaction_pool.'),
    Option('compaction_batch_size', 'integer', '1', '8',
           'Queued compactions one mapped task runs in ONE Spark application. 1 (default) runs a task per '
           "table/partition, as Hive's workers do; a larger value saves a Spark start-up per row when many small"
           ' partitions are compacted at once.'),
    Option('alert_max_backlog', 'integer', '', '200',
           "When set, acid_housekeeping's backlog_check task fails (and Airflow's failure callbacks / email "
           "alert) once more compactions than this are 'initiated', 'working' or 'ready for cleaning'; the "
           'message names the transaction that blocks cleanup.'),
    Option('alert_max_ready_for_cleaning_age', 'string', '', '24h',
           "When set (seconds, or with a unit: 24h), backlog_check fails once a compaction has been 'ready for "
           "cleaning' for longer than this, naming the open transaction that blocks it."),
    Option('alert_max_initiated_age', 'string', '', '12h',
           'When set (seconds, or with a unit: 12h), backlog_check fails once a compaction has waited '
           "'initiated' for longer than this."),
    Option('compaction_budget_bytes', 'string', '', '50gb',
           'Bytes the compactions of one acid_compaction run may read in total (estimated from one listing of '
           'each queued directory); rows run highest benefit per cost first, those that do not fit wait for the '
           'next run. Unset: no limit. Units b, kb, mb, gb, tb.'),
    Option('compaction_budget_core_seconds', 'string', '', '7200',
           'Estimated executor core-seconds the compactions of one acid_compaction run may use in total '
           '(throughput learnt from the recorded runs). Unset: no limit.'),
    Option('compaction_budget_pool_bytes', 'string', '', '20gb',
           'Bytes per compaction pool (hive.compactor.worker.pool) in one acid_compaction run. Unset: no limit.'),
    Option('compaction_budget_table_bytes', 'string', '', '10gb',
           "Bytes per table in one acid_compaction run, so one table's partitions cannot take the whole run. "
           'Unset: no limit.'),
    Option('compaction_aging', 'string', '1h', '30m',
           "A waiting compaction's priority doubles for every such period it waited (s, m, h, d), so no table "
           'starves behind cheaper ones.'),
    Option('cleaner_retention', 'string', '', '1h',
           'When set (seconds, or with a unit: 1h), the Cleaner keeps the directories a compaction made obsolete '
           'this long after the compaction committed, and the compaction can be undone in that window '
           '(airflow-acid compaction undo). The same as hive.compactor.delayed.cleanup.enabled=true with '
           'hive.compactor.cleaner.retention.time.seconds (either name works; this one wins when both are given); '
           '0 turns delayed cleanup off.'),
    Option('spark_ui_url', 'string', '', 'http://spark-history:18080/history/{app_id}/jobs/',
           "Where the console links a compaction's Spark application: a URL with {app_id} where the application id "
           '(local-…, app-…, application_…) goes, e.g. the Spark history server (http://host:18080/history/{app_id}/'
           'jobs/) or a YARN proxy. Unset: the console shows the id without a link.'),
    Option('action_approval', 'string', 'off', 'hitl',
           "off (default): the console's destructive actions (abort a compaction, abort a transaction) act once "
           'the user confirms the dialog. hitl: they act only after a second person approves them in Airflow '
           "(3.1+ human-in-the-loop): the console triggers a run of the acid_approved_action DAG, whose approval "
           'task lists the consequences, and its act task performs the action in the name of the approver.'),
    Option('storage_options', 'string', '', '{"endpoint_url": "http://minio:9000", "region": "us-east-1"}',
           'Object-store options of the warehouse as a JSON object: endpoint_url, region, anonymous, profile, or'
           " any other non-secret fsspec argument of the store (s3fs, gcsfs, adlfs). They apply to Airflow's "
           "tasks and reach the Spark job and its executors through fsspec's FSSPEC_<PROTOCOL> environment. The "
           "acid_metastore connection's storage_options extra overrides them. Credentials never go here: they "
           'come from the environment (AWS_ACCESS_KEY_ID ...), a profile or an instance role.'),
    Option('mode', 'string', 'active', 'shadow',
           "active (default): the Initiator queues compactions. shadow: the Initiator (the compaction DAG's "
           'sensors, airflow-acid shadow run) evaluates every table reading only - no queue rows, nothing written to '
           "a Hive table - and records its decisions in ACID_INITIATOR_DECISIONS, to compare with Hive's own "
           'compactor (airflow-acid shadow report; docs/migrating-from-hive.md).'),
    Option('scope', 'string', '', 'sales,crm.orders,stage.tmp_*',
           'Comma-separated tables airflow-acid compacts and cleans: a database (sales), a table (crm.orders) or an '
           'fnmatch pattern of db.table (stage.tmp_*). Unset (and scope_pools unset): every table. Everything else '
           "is left to Hive's compactor. An in-scope table is declined while Hive's Initiator is active and the "
           "table is not marked no_auto_compaction=true in Hive (nor in a scope_pools pool); in scope, "
           'no_auto_compaction=true is the hand-over marker, not a stop.'),
    Option('scope_pools', 'string', '', 'airflow',
           'Comma-separated Hive compaction pools (hive.compactor.worker.pool) whose tables airflow-acid compacts '
           "and cleans; configure no Hive worker for them, so Hive's workers skip these tables."),
    Option('takeover_hive_active_window', 'string', '1h', '30m',
           "Hive's Initiator counts as active (and in-scope tables it would pick are declined) when it queued a "
           'compaction or recorded a run within this long (s, m, h, d).'),
    Option('compaction_verify', 'string', 'digest', 'count',
           'How a compaction proves its output before the Worker commits it. digest (default): per compaction '
           'unit (bucket; the whole partition for a rebalance) the Spark job digests the rows it read at the '
           "compaction's snapshot (every column, and ROW__ID where the compaction keeps it) and the rows of its "
           'files read back from storage; any difference in rows or digest fails the compaction and removes its '
           'output. The digest is the row count, the sums (mod 2^64) of both halves and the xor of 128-bit row hashes: '
           'one changed '
           'value always shows, other differences escape with a probability of about 2^-64; it is not '
           'cryptographic (docs/architecture.md, proof before commit). count: row counts only. off: no check.'),
)
"""The options of the DAGs, the Initiator's scheduling, the alerts and the object store (not Hive settings)."""

OTHER_SECTION_OPTIONS: tuple[Option, ...] = (
    Option("default_deferrable", "boolean", "false", "true",
           "Airflow's own option: whether the airflow-acid sensors defer to the triggerer when a DAG does not say "
           "(deferrable=...).", section=OPERATORS_SECTION),
)
"""Options of other Airflow sections airflow-acid follows (Airflow declares them; not in the provider info)."""

OPTIONS: tuple[Option, ...] = HIVE_OPTIONS + DAG_OPTIONS + OTHER_SECTION_OPTIONS
"""Every option, in the order of the reference page."""

DAG_OPTION_NAMES = frozenset(o.name for o in DAG_OPTIONS)
"""The ``[acid]`` options that are not Hive settings (the Hive parser leaves them alone)."""
