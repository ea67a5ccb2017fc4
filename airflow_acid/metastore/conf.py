"""Hive's settings (metastore, compactor, housekeeping) under Hive's keys and defaults, in one object.

Defaults are HIVE_ACID_SPEC.md "Numbers worth remembering". The metastore layer is the lowest one that needs
them, so the object lives here; the compactor and the Airflow ``[acid]`` config section build on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class MetastoreConf:
    """Every airflow-acid setting; each field maps to one Hive key (see ``KEYS``). Times are in the unit the
    field name ends with (``_s`` seconds, ``_ms`` milliseconds)."""

    txn_timeout_s: float = 300.0
    txn_max_open_batch: int = 1000
    max_open_txns: int = 100_000
    opentxn_timeout_ms: int = 1000
    lock_numretries: int = 100
    lock_sleep_between_retries_s: float = 60.0
    timedout_txn_abort_batch: int = 50_000
    use_min_history_level: bool = True
    history_retention_succeeded: int = 3
    history_retention_failed: int = 3
    history_retention_did_not_initiate: int = 2
    history_retention_refused: int = 3
    history_retention_timeout_s: float = 7 * 86400.0
    failed_compacts_threshold: int = 2
    transient_error_retries: int = 10
    failed_retry_time_s: float = 7 * 86400.0
    worker_timeout_s: float = 86400.0
    worker_pool_timeout_s: float = 12 * 3600.0
    cleaner_retry_max_attempts: int = 5
    cleaner_retry_retention_s: float = 300.0
    compactor_fetch_size: int = 1000
    txn_xlock_write: bool = False
    txn_xlock_iow: bool = True
    # compactor: Initiator
    check_interval_s: float = 300.0
    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    abortedtxn_threshold: int = 1000
    aborted_txn_time_threshold_s: float = 12 * 3600.0
    compact_insert_only: bool = True
    request_queue: int = 1
    # compactor: Worker
    worker_threads: int = 0
    max_num_delta: int = 500
    wait_timeout_ms: int = 300_000
    # compactor: Cleaner
    cleaner_run_interval_ms: int = 5000
    delayed_cleanup_enabled: bool = False
    cleaner_retention_time_s: float = 300.0
    clean_aborts_using_cleaner: bool = True
    # housekeeping intervals
    acid_housekeeper_interval_s: float = 60.0
    compaction_housekeeper_interval_s: float = 300.0
    txn_cleaner_interval_s: float = 10.0

    KEYS = {
        "txn_timeout_s": "hive.txn.timeout",
        "txn_max_open_batch": "hive.txn.max.open.batch",
        "max_open_txns": "hive.max.open.txns",
        "opentxn_timeout_ms": "hive.txn.opentxn.timeout",
        "lock_numretries": "hive.lock.numretries",
        "lock_sleep_between_retries_s": "hive.lock.sleep.between.retries",
        "timedout_txn_abort_batch": "hive.txn.timedout.abort.batch",
        "use_min_history_level": "metastore.txn.use.minhistorylevel",
        "history_retention_succeeded": "hive.compactor.history.retention.succeeded",
        "history_retention_failed": "hive.compactor.history.retention.failed",
        "history_retention_did_not_initiate": "hive.compactor.history.retention.did.not.initiate",
        "history_retention_refused": "hive.compactor.history.retention.refused",
        "history_retention_timeout_s": "hive.compactor.history.retention.timeout",
        "failed_compacts_threshold": "hive.compactor.initiator.failed.compacts.threshold",
        "transient_error_retries": "airflow.acid.metastore.transient.retries",
        "failed_retry_time_s": "hive.compactor.initiator.failed.retry.time",
        "worker_timeout_s": "hive.compactor.worker.timeout",
        "worker_pool_timeout_s": "metastore.compactor.worker.pool.timeout",
        "cleaner_retry_max_attempts": "hive.compactor.cleaner.retry.maxattempts",
        "cleaner_retry_retention_s": "hive.compactor.cleaner.retry.retentionTime",
        "compactor_fetch_size": "metastore.compactor.fetch.size",
        "txn_xlock_write": "hive.txn.xlock.write",
        "txn_xlock_iow": "hive.txn.xlock.iow",
        "check_interval_s": "hive.compactor.check.interval",
        "delta_num_threshold": "hive.compactor.delta.num.threshold",
        "delta_pct_threshold": "hive.compactor.delta.pct.threshold",
        "abortedtxn_threshold": "hive.compactor.abortedtxn.threshold",
        "aborted_txn_time_threshold_s": "hive.compactor.aborted.txn.time.threshold",
        "compact_insert_only": "hive.compactor.compact.insert.only",
        "request_queue": "hive.compactor.request.queue",
        "worker_threads": "hive.compactor.worker.threads",
        "max_num_delta": "hive.compactor.max.num.delta",
        "wait_timeout_ms": "hive.compactor.wait.timeout",
        "cleaner_run_interval_ms": "hive.compactor.cleaner.run.interval",
        "delayed_cleanup_enabled": "hive.compactor.delayed.cleanup.enabled",
        "cleaner_retention_time_s": "hive.compactor.cleaner.retention.time.seconds",
        "clean_aborts_using_cleaner": "hive.compactor.clean.aborts.using.cleaner",
        "acid_housekeeper_interval_s": "metastore.acid.housekeeper.interval",
        "compaction_housekeeper_interval_s": "metastore.compaction.housekeeper.interval",
        "txn_cleaner_interval_s": "metastore.acid.txn.cleaner.interval",
    }

    @classmethod
    def key_of(cls, field_name: str) -> str:
        """The Hive key of a field."""
        return cls.KEYS[field_name]

    @classmethod
    def field_of(cls, key: str) -> str | None:
        """The field holding a Hive key (case-insensitive), or None."""
        lowered = key.lower()
        for name, hive_key in cls.KEYS.items():
            if hive_key.lower() == lowered:
                return name
        return None

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> MetastoreConf:
        """Build from Hive keys (``hive.txn.timeout`` …); unknown keys are ignored, bad values rejected."""
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            key = cls.KEYS[f.name]
            if key not in values:
                continue
            raw = values[key]
            try:
                if f.type in ("bool", bool):
                    kwargs[f.name] = str(raw).strip().lower() in ("1", "true", "yes", "on")
                elif f.type in ("int", int):
                    kwargs[f.name] = int(raw)
                else:
                    kwargs[f.name] = float(raw)
            except (TypeError, ValueError):
                raise ValueError(f"setting {key}={raw!r} is not a valid {f.type}") from None
        return cls(**kwargs)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> MetastoreConf:
        """Hive keys from ``AIRFLOW_ACID__<KEY>`` variables (dots as ``__``, e.g. AIRFLOW_ACID__HIVE__TXN__TIMEOUT)."""
        env = os.environ if environ is None else environ
        values = {}
        for key in cls.KEYS.values():
            var = "AIRFLOW_ACID__" + key.upper().replace(".", "__")
            if var in env:
                values[key] = env[var]
        return cls.from_mapping(values)
