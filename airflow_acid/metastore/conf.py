"""Hive's settings (metastore, compactor, housekeeping) under Hive's keys and defaults, in one object.

Defaults are Hive's (docs/configuration.md lists them). The metastore layer is the lowest one that needs them, so
the object lives here; :mod:`airflow_acid.config` reads it, with every other ``[acid]`` option, from a config
section or the environment.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from airflow_acid.metastore.errors import InvalidSettingError

log = logging.getLogger(__name__)


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
    decision_log_retention_s: float = 30 * 86400.0
    failed_retry_time_s: float = 7 * 86400.0
    worker_timeout_s: float = 86400.0
    worker_pool_timeout_s: float = 12 * 3600.0
    cleaner_retry_max_attempts: int = 5
    cleaner_retry_retention_s: float = 300.0
    compactor_fetch_size: int = 1000
    txn_xlock_write: bool = True
    txn_xlock_iow: bool = True
    # compactor: Initiator
    check_interval_s: float = 300.0
    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    abortedtxn_threshold: int = 1000
    aborted_txn_time_threshold_s: float = 12 * 3600.0
    compact_insert_only: bool = True
    request_queue: int = 1
    compactor_job_queue: str = ""
    # compactor: Worker. Hive's meaning: 0 = no compaction workers here; N = at most N compactions at once. Unset
    # (None, the default): the Airflow pools cap them (Hive's own default, 0, would leave airflow-acid idle).
    worker_threads: int | None = None
    max_num_delta: int = 500
    transactional_events_mem: int = 10_000_000
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
    # ACID metrics and their warnings (Hive's AcidMetricService / AcidMetricLogger)
    acidmetrics_ext_on: bool = True
    acidmetrics_table_aborted_txns_threshold: int = 1500
    deltametrics_max_cache_size: int = 100
    deltametrics_delta_num_threshold: int = 100
    deltametrics_obsolete_delta_num_threshold: int = 100
    deltametrics_delta_pct_threshold: float = 0.01
    long_running_initiator_warning_s: float = 6 * 3600.0
    long_running_initiator_error_s: float = 12 * 3600.0
    oldest_open_txn_warning_s: float = 24 * 3600.0
    oldest_open_txn_error_s: float = 72 * 3600.0
    oldest_uncleaned_aborted_txn_warning_s: float = 24 * 3600.0
    oldest_uncleaned_aborted_txn_error_s: float = 48 * 3600.0
    oldest_uncleaned_compaction_s: float = 24 * 3600.0
    oldest_initiated_compaction_warning_s: float = 3600.0
    oldest_initiated_compaction_error_s: float = 12 * 3600.0
    failed_compaction_ratio_threshold: float = 0.01
    tables_with_aborted_txn_threshold: int = 1
    completed_txn_components_warning: int = 500_000
    completed_txn_components_error: int = 1_000_000
    txn_to_writeid_warning: int = 500_000
    txn_to_writeid_error: int = 1_000_000

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
        "decision_log_retention_s": "airflow.acid.initiator.decision.log.retention",
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
        "compactor_job_queue": "hive.compactor.job.queue",
        "worker_threads": "hive.compactor.worker.threads",
        "max_num_delta": "hive.compactor.max.num.delta",
        "transactional_events_mem": "hive.transactional.events.mem",
        "wait_timeout_ms": "hive.compactor.wait.timeout",
        "cleaner_run_interval_ms": "hive.compactor.cleaner.run.interval",
        "delayed_cleanup_enabled": "hive.compactor.delayed.cleanup.enabled",
        "cleaner_retention_time_s": "hive.compactor.cleaner.retention.time.seconds",
        "clean_aborts_using_cleaner": "hive.compactor.clean.aborts.using.cleaner",
        "acid_housekeeper_interval_s": "metastore.acid.housekeeper.interval",
        "compaction_housekeeper_interval_s": "metastore.compaction.housekeeper.interval",
        "txn_cleaner_interval_s": "metastore.acid.txn.cleaner.interval",
        "acidmetrics_ext_on": "metastore.acidmetrics.ext.on",
        "acidmetrics_table_aborted_txns_threshold": "metastore.acidmetrics.table.aborted.txns.threshold",
        "deltametrics_max_cache_size": "metastore.deltametrics.max.cache.size",
        "deltametrics_delta_num_threshold": "metastore.deltametrics.delta.num.threshold",
        "deltametrics_obsolete_delta_num_threshold": "metastore.deltametrics.obsolete.delta.num.threshold",
        "deltametrics_delta_pct_threshold": "metastore.deltametrics.delta.pct.threshold",
        "long_running_initiator_warning_s": "metastore.compactor.long.running.initiator.threshold.warning",
        "long_running_initiator_error_s": "metastore.compactor.long.running.initiator.threshold.error",
        "oldest_open_txn_warning_s": "metastore.compactor.oldest.open.txn.threshold.warning",
        "oldest_open_txn_error_s": "metastore.compactor.oldest.open.txn.threshold.error",
        "oldest_uncleaned_aborted_txn_warning_s": "metastore.compactor.oldest.uncleaned.aborted.txn.time.threshold.warning",
        "oldest_uncleaned_aborted_txn_error_s": "metastore.compactor.oldest.uncleaned.aborted.txn.time.threshold.error",
        "oldest_uncleaned_compaction_s": "metastore.compactor.oldest.uncleaned.compaction.time.threshold",
        "oldest_initiated_compaction_warning_s":
            "metastore.compactor.oldest.initiated.compaction.time.threshold.warning",
        "oldest_initiated_compaction_error_s": "metastore.compactor.oldest.initiated.compaction.time.threshold.error",
        "failed_compaction_ratio_threshold": "metastore.compactor.failed.compaction.ratio.threshold",
        "tables_with_aborted_txn_threshold": "metastore.compactor.tables.with.aborted.txn.threshold",
        "completed_txn_components_warning": "metastore.compactor.completed.txn.components.record.threshold.warning",
        "completed_txn_components_error": "metastore.compactor.completed.txn.components.record.threshold.error",
        "txn_to_writeid_warning": "metastore.compactor.txn.to.writeid.record.threshold.warning",
        "txn_to_writeid_error": "metastore.compactor.txn.to.writeid.record.threshold.error",
    }

    @property
    def cleaner_retention_ms(self) -> int:
        """How long after its commit a compaction's obsolete directories stay (delayed cleanup; 0 when off): the
        Cleaner waits this long, and it is the window in which the compaction can be undone."""
        return int(self.cleaner_retention_time_s * 1000) if self.delayed_cleanup_enabled else 0

    @classmethod
    def key_of(cls, field_name: str) -> str:
        """The Hive key of a field."""
        return cls.KEYS[field_name]

    @classmethod
    def names_of(cls, field_name: str) -> tuple[str, ...]:
        """Every name of a field's setting, Hive 4's ``metastore.*`` name first (it wins when both are given, as in
        Hive's MetastoreConf), then ``hive.*`` and older names (see :data:`ALIASES`)."""
        key = cls.KEYS[field_name]
        names = [key, *_ALIASES.get(field_name, ())]
        if key.startswith("hive."):
            names.insert(0, "metastore." + key[len("hive."):])
        elif key.startswith("metastore."):
            names.insert(1, "hive." + key[len("metastore."):])
        return tuple(dict.fromkeys(names))

    @classmethod
    def field_of(cls, key: str) -> str | None:
        """The field holding a setting name (``hive.*``, ``metastore.*`` or an older name; any case), or None."""
        return _FIELD_BY_NAME.get(key.strip().lower())

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> MetastoreConf:
        """Build from setting names (``hive.txn.timeout``, ``metastore.txn.timeout`` …, any case); unknown keys are
        ignored (callers warn about them: :func:`unknown_setting_names`), bad values rejected.

        When two names of one setting are given with different values, the ``metastore.*`` name wins, as in Hive —
        unless its value is the default and the other's is not (a config section lists every default under one
        name; an explicit value under the other name must not lose to it). Values may be strings or Python
        values. Booleans: true/false, yes/no, on/off, 1/0. Times (fields ending in ``_s``/``_ms``) take a plain
        number in the field's unit or a number with a unit as Hive writes them (``500ms``, ``300s``, ``5m``,
        ``12h``, ``7d``). Counts and times must not be negative, except the two times where Hive reads a negative
        value as "disabled"; a few keys have Hive's ranges. A bad value raises InvalidSettingError naming the key, the value
        and what is accepted.
        """
        by_key = {str(k).strip().lower(): v for k, v in values.items()}
        defaults = cls()
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            given = [(name, _parse_value(f.name, name, f.type, by_key[name.lower()]))
                     for name in cls.names_of(f.name) if name.lower() in by_key]
            if not given:
                continue
            explicit = [g for g in given if g[1] != getattr(defaults, f.name)] or given
            if len({value for _name, value in explicit}) > 1:
                log.warning("settings %s give different values %s; %s wins (Hive 4's metastore.* name first)",
                            ", ".join(n for n, _v in explicit), [v for _n, v in explicit], explicit[0][0])
            kwargs[f.name] = explicit[0][1]
        return cls(**kwargs)


_ALIASES: dict[str, tuple[str, ...]] = {
    "history_retention_did_not_initiate": ("hive.compactor.history.retention.attempted",
                                           "metastore.compactor.history.retention.attempted"),
}
"""Older names of settings besides the ``metastore.*``/``hive.*`` pair (Hive 3's ``…retention.attempted``)."""

_FIELD_BY_NAME = {name.lower(): f.name for f in fields(MetastoreConf) for name in MetastoreConf.names_of(f.name)}


def unknown_setting_names(keys: Iterable[str], *, prefixes: tuple[str, ...] = ("hive.", "metastore.")) -> list[str]:
    """The keys that look like settings (start with one of ``prefixes``) but name none airflow-acid knows."""
    return [k for k in keys if k.strip().lower().startswith(prefixes) and MetastoreConf.field_of(k) is None]


# --- value parsing ------------------------------------------------------------------------------------------

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0,
                 "hour": 3600.0, "d": 86400.0, "day": 86400.0}
_TIME = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")
# Fields where Hive reads a negative value as "disabled".
_NEGATIVE_ALLOWED = frozenset({"aborted_txn_time_threshold_s", "failed_retry_time_s"})
# Hive's RangeValidator bounds (inclusive).
_RANGES = {"failed_compacts_threshold": (1, 20), "compactor_fetch_size": (100, 5000),
           "cleaner_retry_max_attempts": (0, 10),
           "deltametrics_max_cache_size": (0, 500)}


def _parse_value(name: str, key: str, type_name: object, raw: Any) -> bool | int | float | str | None:
    """One setting from its text or Python value, checked; InvalidSettingError naming ``key`` otherwise. Optional settings
    (``int | None``) read an empty value as unset."""
    kind = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", str(type_name))
    if kind.endswith(" | None"):
        if raw is None or str(raw).strip() == "":
            return None
        kind = kind[:-len(" | None")]
    if kind == "str":
        return str(raw).strip()
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise InvalidSettingError(f"setting {key}={raw!r} is not a boolean; use true or false")
    if name.endswith(("_s", "_ms")):
        value: float = _parse_time(key, raw, 1.0 if name.endswith("_s") else 1e-3)
    else:
        try:
            value = float(raw) if not isinstance(raw, bool) else float("nan")
        except (TypeError, ValueError):
            value = float("nan")
        if not math.isfinite(value):
            raise InvalidSettingError(f"setting {key}={raw!r} is not a valid {'integer' if kind == 'int' else 'number'}")
    if kind == "int":
        if value != int(value):
            raise InvalidSettingError(f"setting {key}={raw!r} must be a whole number")
        value = int(value)
    if value < 0 and name not in _NEGATIVE_ALLOWED:
        raise InvalidSettingError(f"setting {key}={raw!r} must not be negative")
    if name in _RANGES:
        low, high = _RANGES[name]
        if not low <= value <= high:
            raise InvalidSettingError(f"setting {key}={raw!r} is out of range; Hive accepts {low} to {high}")
    return value


def parse_duration_s(key: str, raw: Any) -> float:
    """Seconds from a number (seconds) or ``<number><unit>`` (``300s``, ``12h``, ``7d``); InvalidSettingError
    naming ``key`` otherwise."""
    return _parse_time(key, raw, 1.0)


def _parse_time(key: str, raw: Any, unit_seconds: float) -> float:
    """A duration in the field's unit (``unit_seconds`` seconds each) from a number or ``<number><unit>``."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise InvalidSettingError(f"setting {key}={raw!r} is not a finite duration")
        return float(raw)
    match = _TIME.match(str(raw))
    unit = match.group(2).lower() if match else ""
    if not match or (unit and unit not in _UNIT_SECONDS):
        raise InvalidSettingError(f"setting {key}={raw!r} is not a duration; give a number "
                         f"({'seconds' if unit_seconds == 1.0 else 'milliseconds'}) or a number with one of the "
                         "units ms, s, m, h, d (e.g. 300s, 12h)")
    number = float(match.group(1))
    return number if not unit else number * _UNIT_SECONDS[unit] / unit_seconds
