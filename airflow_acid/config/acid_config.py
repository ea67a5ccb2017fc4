"""Everything airflow-acid reads from the ``[acid]`` section, parsed once into one typed, frozen object.

The CLI, the console and the DAGs build the same :class:`AcidConfig` from the same text (airflow.cfg and
``AIRFLOW__ACID__*`` variables), so they always see the same values; only where the text comes from differs.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from airflow_acid.acid.errors import StorageOptionsError
from airflow_acid.acid.storage_options import StorageOptions
from airflow_acid.config.alert_limits import BacklogLimits
from airflow_acid.config.budgets import Budgets, budgets_from_mapping
from airflow_acid.config.hive import settings_from_mapping
from airflow_acid.config.options import ACID_SECTION, DAG_OPTION_NAMES, DEFAULT_POOL
from airflow_acid.config.scope import CompactionScope
from airflow_acid.job.verify import VERIFY_MODES
from airflow_acid.metastore.conf import MetastoreConf, parse_duration_s
from airflow_acid.metastore.errors import InvalidSettingError

log = logging.getLogger(__name__)

ACTIVE_MODE = "active"
SHADOW_MODE = "shadow"
APPROVAL_OFF = "off"
APPROVAL_HITL = "hitl"
_TRUE = ("true", "t", "yes", "on", "1")
_FALSE = ("false", "f", "no", "off", "0", "")


@dataclass(frozen=True)
class AcidConfig:
    """Every ``[acid]`` option (and ``[operators] default_deferrable``), parsed; see docs/configuration.md."""

    settings: MetastoreConf = field(default_factory=MetastoreConf)
    """Hive's settings under Hive's keys."""
    budgets: Budgets = field(default_factory=Budgets)
    """The compaction budgets of one compaction DAG run and the aging period."""
    storage_options: StorageOptions = field(default_factory=StorageOptions)
    """Object-store options of the warehouse (an Airflow connection's own extra overrides them)."""
    compaction_pool: str = DEFAULT_POOL
    """The Airflow pool whose slots cap parallel compactions."""
    compaction_pools: tuple[str, ...] = ()
    """Compaction pools (``hive.compactor.worker.pool``) that get an Airflow pool of the same name."""
    compaction_batch_size: int = 1
    """Queued rows one mapped compaction task runs in one Spark application."""
    alert_limits: BacklogLimits = field(default_factory=BacklogLimits)
    """The backlog check's limits (unset: not checked)."""
    default_deferrable: bool = False
    """``[operators] default_deferrable``: whether sensors defer when a DAG does not say."""
    compaction_verify: str = "digest"
    """How a compaction proves its output before it commits: ``digest``, ``count`` or ``off``."""
    spark_ui_url: str | None = None
    """The console's link to a Spark application: a URL template with ``{app_id}`` (unset: no link)."""
    mode: str = ACTIVE_MODE
    """``active`` (queue compactions) or ``shadow`` (evaluate and record only)."""
    scope: CompactionScope = field(default_factory=CompactionScope)
    """The tables airflow-acid compacts and cleans (empty: every table)."""
    takeover_hive_active_window_s: float = 3600.0
    """How recently Hive's Initiator must have shown itself to count as active."""
    action_approval: str = APPROVAL_OFF
    """``off`` (the console's dialog confirms) or ``hitl`` (destructive actions wait for Airflow's approval)."""

    @property
    def shadow(self) -> bool:
        """``[acid] mode = shadow``."""
        return self.mode == SHADOW_MODE

    def spark_ui_link(self, app_id: str | None) -> str | None:
        """The Spark UI / history server URL of application ``app_id`` (None without a template or an id)."""
        if not self.spark_ui_url or not app_id:
            return None
        return self.spark_ui_url.replace(APP_ID_PLACEHOLDER, quote(app_id, safe=""))

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any], *, operators: Mapping[str, Any] | None = None,
                     source: str = f"[{ACID_SECTION}]") -> AcidConfig:
        """Parse an ``[acid]`` section (option -> text; Python values as Airflow's ``getsection`` gives them are
        taken too) and optionally the ``[operators]`` section. Options not given take their defaults; an option
        nobody knows is logged; a bad value raises InvalidSettingError naming ``source``, the option and the value."""
        text = {str(k).strip().lower(): _text(v) for k, v in section.items()}

        def given(option: str) -> str:
            return text.get(option, "").strip()

        settings = _with_cleaner_retention(settings_from_mapping(text, source=source, other_options=DAG_OPTION_NAMES),
                                           given("cleaner_retention"), source)
        budgets = budgets_from_mapping(text, source=source)
        try:
            storage_options = StorageOptions.from_json(given("storage_options"))
        except StorageOptionsError as exc:
            raise InvalidSettingError(f"{source} storage_options={given('storage_options')!r}: {exc}") from None
        pools = tuple(dict.fromkeys(p.strip() for p in given("compaction_pools").split(",") if p.strip()))
        return cls(settings=settings, budgets=budgets, storage_options=storage_options,
                   compaction_pool=given("compaction_pool") or DEFAULT_POOL, compaction_pools=pools,
                   compaction_batch_size=_batch_size(given("compaction_batch_size"), source),
                   alert_limits=_alert_limits(given, source), default_deferrable=_deferrable(operators or {}),
                   compaction_verify=_verify_mode(given("compaction_verify"), source),
                   spark_ui_url=_spark_ui_url(given("spark_ui_url"), source),
                   mode=_mode(given("mode"), source),
                   scope=CompactionScope.parse(given("scope"), given("scope_pools")),
                   takeover_hive_active_window_s=_window(given("takeover_hive_active_window"), source),
                   action_approval=_approval(given("action_approval"), source))


def _approval(raw: str, source: str) -> str:
    value = raw.strip().lower() or APPROVAL_OFF
    if value not in (APPROVAL_OFF, APPROVAL_HITL):
        raise InvalidSettingError(f"{source} action_approval={raw!r}: must be {APPROVAL_OFF} or {APPROVAL_HITL}")
    return value


def _mode(raw: str, source: str) -> str:
    value = raw.strip().lower() or ACTIVE_MODE
    if value not in (ACTIVE_MODE, SHADOW_MODE):
        raise InvalidSettingError(f"{source} mode={raw!r}: must be {ACTIVE_MODE} or {SHADOW_MODE}")
    return value


def _window(raw: str, source: str) -> float:
    if not raw:
        return 3600.0
    value = parse_duration_s(f"{source} takeover_hive_active_window", raw)
    if value <= 0:
        raise InvalidSettingError(f"{source} takeover_hive_active_window={raw!r}: must be positive")
    return value


def _text(value: Any) -> str:
    """An option's value as the text a config file holds (Airflow's ``getsection`` converts some to Python)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _deferrable(operators: Mapping[str, Any]) -> bool:
    raw = _text(operators.get("default_deferrable", "false")).strip().lower()
    if raw not in _TRUE + _FALSE:
        raise InvalidSettingError(f"[operators] default_deferrable={raw!r} is not a boolean; use true or false")
    return raw in _TRUE


def _batch_size(raw: str, source: str) -> int:
    try:
        size = int(raw or "1")
    except ValueError:
        size = 0
    if size < 1:
        raise InvalidSettingError(f"{source} compaction_batch_size must be a positive integer, got {raw!r}")
    return size


APP_ID_PLACEHOLDER = "{app_id}"


def _spark_ui_url(raw: str, source: str) -> str | None:
    """``spark_ui_url``: an http(s) URL with ``{app_id}``; unset: None."""
    if not raw:
        return None
    if APP_ID_PLACEHOLDER not in raw or not raw.lower().startswith(("http://", "https://")):
        raise InvalidSettingError(f"{source} spark_ui_url={raw!r} must be an http(s) URL with {APP_ID_PLACEHOLDER} "
                                  "where the application id goes, e.g. http://spark-history:18080/history/{app_id}/"
                                  "jobs/")
    return raw


def _verify_mode(raw: str, source: str) -> str:
    mode = raw.lower() or "digest"
    if mode not in VERIFY_MODES:
        raise InvalidSettingError(f"{source} compaction_verify={raw!r} is not known; use one of "
                                  f"{', '.join(VERIFY_MODES)}")
    return mode


def _alert_limits(given: Callable[[str], str], source: str) -> BacklogLimits:
    """``alert_max_backlog`` (a count), ``alert_max_ready_for_cleaning_age``, ``alert_max_initiated_age`` (seconds,
    or with a unit: ``24h``); unset ones are not checked."""
    def non_negative(option: str, value: float) -> float:
        if value < 0:
            raise InvalidSettingError(f"{source} {option}={given(option)!r} must not be negative (unset it to "
                                      "switch the check off)")
        return value

    def count(option: str) -> int | None:
        raw = given(option)
        if not raw:
            return None
        try:
            value = int(raw)
        except ValueError:
            raise InvalidSettingError(f"{source} {option}={raw!r} is not a whole number") from None
        return int(non_negative(option, value))

    def seconds(option: str) -> float | None:
        raw = given(option)
        return non_negative(option, parse_duration_s(f"{source} {option}", raw)) if raw else None

    return BacklogLimits(count("alert_max_backlog"), seconds("alert_max_ready_for_cleaning_age"),
                         seconds("alert_max_initiated_age"))


def _with_cleaner_retention(settings: MetastoreConf, raw: str, source: str) -> MetastoreConf:
    """``cleaner_retention`` (seconds, or with a unit: ``1h``): delayed cleanup with that retention (0: off). It is
    airflow-acid's name for hive.compactor.delayed.cleanup.enabled + hive.compactor.cleaner.retention.time.seconds
    and wins over them when both are given."""
    if not raw:
        return settings
    seconds = parse_duration_s(f"{source} cleaner_retention", raw)
    if seconds < 0:
        raise InvalidSettingError(f"{source} cleaner_retention={raw!r} must not be negative (0 turns it off)")
    wanted = dataclasses.replace(settings, delayed_cleanup_enabled=seconds > 0,
                                 cleaner_retention_time_s=seconds if seconds > 0 else settings.cleaner_retention_time_s)
    if settings.delayed_cleanup_enabled and settings.cleaner_retention_ms != wanted.cleaner_retention_ms:
        log.warning("%s cleaner_retention=%s overrides hive.compactor.delayed.cleanup.enabled / "
                    "hive.compactor.cleaner.retention.time.seconds=%gs", source, raw, settings.cleaner_retention_time_s)
    return wanted
