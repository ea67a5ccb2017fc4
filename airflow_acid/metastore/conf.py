"""Metastore-side settings under Hive's keys and defaults (HIVE_ACID_SPEC.md "Numbers worth remembering")."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class MetastoreConf:
    """Settings the metastore itself needs; every field maps to one Hive key (see ``KEYS``)."""

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
    }

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
