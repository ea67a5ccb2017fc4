"""Compactor settings on top of :class:`MetastoreConf`: per-table ``compactorthreshold.*`` overrides and per-request
WITH OVERWRITE TBLPROPERTIES (the ``[acid]`` section itself is read by :mod:`airflow_acid.config`).

MetastoreConf stays the one settings object (docs/hive-acid.md#defaults); this module only says
how a table or a request changes what the compactor uses, and rejects bad values with a message naming the table and
key (docs/hive-acid.md#compaction-type, docs/hive-acid.md#commands).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.compactor.errors import CompactorSettingsError
from airflow_acid.compactor.job_conf import COMPACTOR_PREFIX, TBLPROPS_PREFIX, effective_properties
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidInputError
from airflow_acid.metastore.table_properties import check_property, property_value

THRESHOLD_PREFIX = "compactorthreshold."
DELTA_NUM_KEY = MetastoreConf.key_of("delta_num_threshold")  # hive.compactor.delta.num.threshold
DELTA_PCT_KEY = MetastoreConf.key_of("delta_pct_threshold")  # hive.compactor.delta.pct.threshold
# The only per-table overrides the Initiator reads (docs/hive-acid.md#compaction-type notes); the abort thresholds stay
# global.
TABLE_THRESHOLD_KEYS = (DELTA_NUM_KEY, DELTA_PCT_KEY)
WORKER_POOL_KEY = "hive.compactor.worker.pool"
NO_AUTO_COMPACTION = "no_auto_compaction"
_INTEGER_THRESHOLDS = ("delta.num.threshold", "abortedtxn.threshold", "max.num.delta")


@dataclass(frozen=True)
class TableThresholds:
    """The delta thresholds that apply to one table, and where each came from (for decision reasons)."""

    delta_num_threshold: int
    delta_pct_threshold: float
    sources: Mapping[str, str] = field(default_factory=dict)
    """Hive key -> ``"table property compactorthreshold.<key>"`` or ``"global setting <key>"``."""

    def describe(self, key: str) -> str:
        """``<source>=<value>`` for a reason text."""
        value = self.delta_num_threshold if key == DELTA_NUM_KEY else self.delta_pct_threshold
        return f"{self.sources.get(key, key)}={value:g}" if isinstance(value, float) else \
            f"{self.sources.get(key, key)}={value}"


def parse_threshold(table: str, key: str, value: Any, *, integer: bool) -> int | float:
    """One threshold value from a table property: a finite non-negative number (integer for counts)."""
    where = f"table {table}: property {key}={value!r}"
    try:
        number = float(str(value).strip())
    except (TypeError, ValueError):
        raise CompactorSettingsError(f"{where} is not a number; give a non-negative "
                                     f"{'integer' if integer else 'number'} or unset the property") from None
    if not math.isfinite(number) or number < 0:
        raise CompactorSettingsError(f"{where} must be a finite non-negative number")
    if integer:
        if number != int(number):
            raise CompactorSettingsError(f"{where} must be a whole number")
        return int(number)
    return number


def table_thresholds(conf: MetastoreConf, table_properties: Mapping[str, str], *, table: str) -> TableThresholds:
    """hive.compactor.delta.{num,pct}.threshold for ``table``: ``compactorthreshold.<key>`` (``hive.*`` or
    ``metastore.*`` name) wins over the global setting (docs/hive-acid.md#compaction-type steps 4–5). A bad property raises
    CompactorSettingsError naming the table and the key."""
    values: dict[str, int | float] = {DELTA_NUM_KEY: conf.delta_num_threshold, DELTA_PCT_KEY: conf.delta_pct_threshold}
    sources = {key: f"global setting {key}" for key in TABLE_THRESHOLD_KEYS}
    for key in TABLE_THRESHOLD_KEYS:
        for name in MetastoreConf.names_of(MetastoreConf.field_of(key) or key):  # metastore.* name first, as Hive
            prop = THRESHOLD_PREFIX + name
            raw = property_value(table_properties, prop)
            if raw is not None:
                values[key] = parse_threshold(table, prop, raw, integer=key == DELTA_NUM_KEY)
                sources[key] = f"table property {prop}"
                break
    return TableThresholds(int(values[DELTA_NUM_KEY]), float(values[DELTA_PCT_KEY]), sources)


def is_true(value: str | None) -> bool:
    """Hive's reading of a boolean parameter (``Boolean.parseBoolean``: only "true", any case)."""
    return value is not None and value.strip().lower() == "true"


# --- per request: WITH OVERWRITE TBLPROPERTIES -------------------------------------------------------------


@dataclass(frozen=True)
class RequestOverrides:
    """What a compaction request's WITH OVERWRITE TBLPROPERTIES changes (docs/hive-acid.md#commands): ``compactor.<key>``
    entries become job (Spark) conf on top of the table's own ``compactor.<key>`` properties; ``tblprops.<key>`` entries
    replace table properties for this compaction only."""

    job_conf: dict[str, str]
    table_properties: dict[str, str]


def validate_request_properties(request_properties: Mapping[str, Any], *, table: str) -> dict[str, str]:
    """Check WITH OVERWRITE TBLPROPERTIES of a request on ``table``: every key ``compactor.<key>`` or
    ``tblprops.<key>`` with a non-empty name, values strings/numbers/booleans; ``tblprops.compactorthreshold.*``
    values must be valid thresholds. Returns the properties as strings."""
    result: dict[str, str] = {}
    for key, value in request_properties.items():
        if not isinstance(key, str) or not key.startswith((COMPACTOR_PREFIX, TBLPROPS_PREFIX)):
            raise CompactorSettingsError(
                f"table {table}: request property {key!r} is not understood; WITH OVERWRITE TBLPROPERTIES takes "
                f"'{COMPACTOR_PREFIX}<setting>' (job conf) or '{TBLPROPS_PREFIX}<table property>' keys")
        name = key.split(".", 1)[1]
        if not name.strip():
            raise CompactorSettingsError(f"table {table}: request property {key!r} names no setting after the prefix")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            text = str(value)
        else:
            raise CompactorSettingsError(f"table {table}: request property {key}={value!r} must be a string, number "
                                         f"or boolean, not {type(value).__name__}")
        lowered = name.lower()
        if key.startswith(TBLPROPS_PREFIX) and lowered.startswith(THRESHOLD_PREFIX):
            parse_threshold(table, key, text, integer=lowered.endswith(_INTEGER_THRESHOLDS))
        elif key.startswith(TBLPROPS_PREFIX):
            try:  # a table property for this compaction only follows the table property's rule
                check_property(table, name, text)
            except InvalidInputError as exc:
                raise CompactorSettingsError(f"request property {key}: {exc}") from None
        result[key] = text
    return result


def request_overrides(table_properties: Mapping[str, str], request_properties: Mapping[str, Any] | None = None, *,
                      table: str) -> RequestOverrides:
    """Job conf and effective table properties of one compaction (Hive's MR compactor rules,
    docs/hive-acid.md#minor-and-major, docs/hive-acid.md#commands)."""
    checked = validate_request_properties(request_properties or {}, table=table)
    job_conf, props = effective_properties(dict(table_properties), checked)
    return RequestOverrides(job_conf, props)
