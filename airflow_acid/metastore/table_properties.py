"""Every rule a table property must follow, checked where a value enters (CREATE TABLE … TBLPROPERTIES, ALTER TABLE
… SET TBLPROPERTIES, the Python API): the transactional rules, the compactor's per-table thresholds and switches,
and the ``orc.*`` writer settings (docs/hive-acid.md#table-properties).

Keys Hive leaves free (a team's own metadata) are accepted as they are; a key in a namespace airflow-acid reads
(``compactorthreshold.*``, ``orc.*``) that names nothing it knows is warned about once per table and key, when it
is set — not again on every later ALTER of other keys.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping

from airflow_acid.acid.orc_rules import buffer_size_problem, compression_problem, row_index_stride_problem
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidInputError

log = logging.getLogger(__name__)

TRANSACTIONAL = "transactional"
TRANSACTIONAL_PROPERTIES = "transactional_properties"
TRANSACTIONAL_PROPERTY_VALUES = ("default", "insert_only")
COMPACTOR_THRESHOLD_PREFIX = "compactorthreshold."
NO_AUTO_COMPACTION = "no_auto_compaction"
NO_CLEANUP = "no_cleanup"
WORKER_POOL = "hive.compactor.worker.pool"
BOOLEAN_PROPERTIES = (NO_AUTO_COMPACTION, NO_CLEANUP)
"""Switches Hive reads as booleans; only 'true' and 'false' (any case) are accepted, so a typo is not read as false."""
_INTEGER_THRESHOLDS = ("delta.num.threshold", "abortedtxn.threshold", "max.num.delta")

def _positive(value: int) -> str | None:
    return None if value > 0 else "must be a positive integer"


ORC_SIZE_RULES: dict[str, Callable[[int], str | None]] = {
    "orc.compress.size": buffer_size_problem,
    "orc.row.index.stride": row_index_stride_problem,
    "orc.stripe.size": _positive,
    "orc.base.delta.ratio": _positive,
    "hive.exec.orc.base.delta.ratio": _positive,
}
"""The integer ``orc.*`` properties the writers honour, each with its rule."""
ORC_KEYS = ("orc.compress", *ORC_SIZE_RULES)

_warned: set[tuple[str, str]] = set()


def check_properties(table: str, updates: Mapping[str, str]) -> None:
    """Check the properties being set on ``table`` (key → text), each by its rule; InvalidInputError naming the
    table, key, value and what is accepted. Unknown keys of airflow-acid's namespaces are warned about once."""
    for key, value in updates.items():
        check_property(table, key, value)


def check_property(table: str, key: str, value: str) -> None:
    """One property (see :func:`check_properties`)."""
    lowered = key.lower()
    where = f"table {table}: property {key}={value!r}"
    if lowered in BOOLEAN_PROPERTIES:
        if value.strip().lower() not in ("true", "false"):
            raise InvalidInputError(f"{where} is not a boolean; use 'true' or 'false'")
    elif lowered == WORKER_POOL:
        if not value.strip():
            raise InvalidInputError(f"{where} names no pool; give a pool name or unset the property")
    elif lowered.startswith(COMPACTOR_THRESHOLD_PREFIX):
        validate_threshold(table, key, value)
        if MetastoreConf.field_of(key[len(COMPACTOR_THRESHOLD_PREFIX):]) is None:
            _warn_once(table, key, "names no setting airflow-acid knows; check the spelling")
    elif lowered == "orc.compress":
        problem = compression_problem(value)
        if problem is not None:
            raise InvalidInputError(f"{where} {problem}" if not problem.startswith("LZO") else
                                    f"table {table}: property {key}: {problem}")
    elif lowered in ORC_SIZE_RULES:
        try:
            number = int(value.strip())
        except ValueError:
            raise InvalidInputError(f"{where} is not an integer") from None
        problem = ORC_SIZE_RULES[lowered](number)
        if problem is not None:
            raise InvalidInputError(f"{where} {problem}")
    elif lowered.startswith("orc."):
        _warn_once(table, key, "is not used by airflow-acid's ORC writers (they honour "
                               f"{', '.join(ORC_KEYS[:4])}); it is stored for Hive")


def _warn_once(table: str, key: str, what: str) -> None:
    if (table, key.lower()) in _warned:
        return
    _warned.add((table, key.lower()))
    log.warning("table %s: property %s %s", table, key, what)


def validate_threshold(table: str, key: str, value: str) -> None:
    """A ``compactorthreshold.*`` value: a finite non-negative number (an integer for counts)."""
    integer = key.lower().endswith(_INTEGER_THRESHOLDS)
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"table {table}: property {key}={value!r} is not {'an integer' if integer else 'a number'}; "
            f"give a non-negative {'integer' if integer else 'number'}") from None
    try:
        finite = math.isfinite(number)  # the compactor reads thresholds as floats: 10**400 would overflow there
    except OverflowError:
        finite = False
    if not finite or number < 0:
        raise InvalidInputError(
            f"table {table}: property {key}={value!r} must be a finite non-negative number")


def validate_table_properties(table: str, properties: Mapping[str, str], *, previous: Mapping[str, str] | None = None,
                              unset: Iterable[str] = (), changed: Mapping[str, str] | None = None) -> None:
    """Check TBLPROPERTIES after merging; ``previous`` is set when altering, ``changed`` holds the keys this
    statement sets (default: every key, as when creating) — only those are checked by their own rule.

    A table is transactional (``transactional=true``, full ACID or ``insert_only``) or a plain ORC table
    (``transactional=false``, Hive's non-ACID table). A plain table may become transactional (Hive's conversion
    with ``SET TBLPROPERTIES ('transactional'='true')``); a transactional one never becomes plain again.
    """
    unset_keys = {str(k).lower() for k in unset}
    for key in (TRANSACTIONAL, TRANSACTIONAL_PROPERTIES):
        if key in unset_keys:
            raise InvalidInputError(f"table {table}: property {key!r} cannot be unset")
    transactional = property_value(properties, TRANSACTIONAL)
    value = (transactional or "").strip().lower()
    if transactional is None and previous is not None:
        value = "false"  # a plain table Hive registered without the key stays plain
    was_transactional = previous is not None and (property_value(previous, TRANSACTIONAL) or "").strip().lower() == "true"
    given = property_value(properties, TRANSACTIONAL_PROPERTIES)
    if value != "true":
        if was_transactional:
            raise InvalidInputError(
                f"table {table} is transactional; transactional={transactional!r} is not allowed "
                "(a transactional table cannot be turned into a non-transactional one)")
        if value != "false":
            raise InvalidInputError(
                f"table {table}: transactional={transactional!r} is not supported; use 'true' (an ACID table) or "
                "'false' (a plain ORC table, which can be converted later)")
        if given is not None:
            raise InvalidInputError(f"table {table}: transactional_properties={given!r} needs transactional=true")
    else:
        kind = "default" if given is None else given.strip().lower()  # an empty value is refused, not read as default
        if kind not in TRANSACTIONAL_PROPERTY_VALUES:
            raise InvalidInputError(
                f"table {table}: transactional_properties={kind!r} is not supported; use one of "
                f"{', '.join(TRANSACTIONAL_PROPERTY_VALUES)}")
        if was_transactional:
            assert previous is not None, "was_transactional implies previous"
            before = (property_value(previous, TRANSACTIONAL_PROPERTIES) or "default").strip().lower()
            if before != kind:
                raise InvalidInputError(
                    f"table {table}: transactional_properties cannot change after creation ({before!r} -> {kind!r}); "
                    "create a new table and copy the data instead")
    check_properties(table, properties if changed is None else changed)


def property_value(mapping: Mapping[str, str], key: str) -> str | None:
    """The value of property ``key`` in ``mapping``, its name compared case-insensitively (as Hive does)."""
    lowered = key.lower()
    for k, v in mapping.items():
        if str(k).lower() == lowered:
            return v
    return None


__all__ = ["BOOLEAN_PROPERTIES", "COMPACTOR_THRESHOLD_PREFIX", "NO_AUTO_COMPACTION", "NO_CLEANUP", "ORC_KEYS",
           "TRANSACTIONAL", "TRANSACTIONAL_PROPERTIES", "TRANSACTIONAL_PROPERTY_VALUES", "WORKER_POOL",
           "check_properties", "check_property", "property_value", "validate_table_properties",
           "validate_threshold"]
