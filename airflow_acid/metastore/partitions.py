"""Partition specs and Hive partition names (``k1=v1/k2=v2``) with Hive's path escaping.

Hive builds a partition's name, and the directory under the table location, by escaping special
characters of keys and values as ``%XX`` (FileUtils.escapePathName) and joining ``key=value`` pairs with
``/``. Keys are lower-cased; values keep their case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from airflow_acid.metastore.errors import InvalidInputError

# FileUtils.charToEscape: control characters, DEL and these punctuation characters.
_ESCAPED = frozenset(chr(c) for c in range(0x01, 0x20)) | frozenset('"#%\'*/:=?\\\x7f{[]^')
MAX_PARTITION_NAME_LENGTH = 767  # TC_PARTITION / CQ_PARTITION / PARTITIONS.PART_NAME width


def entity_name(database: str, table: str, partition: str | None = None) -> str:
    """``db.table`` or ``db.table/partition``: how messages, logs and task labels name a table or partition."""
    return f"{database}.{table}" if partition is None else f"{database}.{table}/{partition}"


def escape_path_name(text: str) -> str:
    """Escape one key or value the way Hive does for partition directory names."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def unescape_path_name(text: str) -> str:
    """Undo :func:`escape_path_name` (``%XX`` with two hex digits; a lone ``%`` stays as is)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and _is_hex(text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def _describe(spec: Mapping[str, object]) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in spec.items()) + ")"


def normalize_spec(partition_keys: Sequence[str], spec: Mapping[str, object], *, table: str) -> dict[str, str]:
    """Check a full partition spec against the table's partition keys; return it in key order, keys lower-cased.

    Rejected (InvalidInputError naming the spec): missing or unknown keys, keys given twice in different
    case, values that are empty, ``.``/``..``, contain ``/`` or NUL, or are not str/int.
    """
    keys = [k.lower() for k in partition_keys]
    if not keys:
        raise InvalidInputError(f"table {table} is not partitioned; partition spec {_describe(spec)} is not allowed")
    given: dict[str, str] = {}
    for raw_key, raw_value in spec.items():
        key = str(raw_key).lower()
        if key in given:
            raise InvalidInputError(f"partition spec {_describe(spec)} for {table} names key {key!r} twice")
        if key not in keys:
            raise InvalidInputError(
                f"partition spec {_describe(spec)} for {table} has unknown key {raw_key!r}; "
                f"the partition keys are {', '.join(keys)}")
        given[key] = _check_value(raw_value, key, spec, table)
    missing = [k for k in keys if k not in given]
    if missing:
        raise InvalidInputError(
            f"partition spec {_describe(spec)} for {table} is missing {', '.join(missing)}; "
            f"give a value for every partition key ({', '.join(keys)})")
    result = {k: given[k] for k in keys}
    name = make_partition_name(result)
    if len(name) > MAX_PARTITION_NAME_LENGTH:
        raise InvalidInputError(
            f"partition spec {_describe(spec)} for {table} gives a name of {len(name)} characters; "
            f"the limit is {MAX_PARTITION_NAME_LENGTH}")
    return result


def _check_value(value: object, key: str, spec: Mapping[str, object], table: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInputError(
            f"partition spec {_describe(spec)} for {table}: value of {key} must be a string or integer, "
            f"not {type(value).__name__}")
    text = str(value)
    problem = None
    if text == "":
        problem = "is empty"
    elif text in (".", ".."):
        problem = f"is {text!r}"
    elif "/" in text:
        problem = "contains '/'"
    elif "\x00" in text:
        problem = "contains a NUL character"
    if problem:
        raise InvalidInputError(f"partition spec {_describe(spec)} for {table}: value of {key} {problem}")
    return text


def make_partition_name(spec: Mapping[str, str]) -> str:
    """Hive's partition name for an already normalized spec, e.g. ``ds=2024-01-01/h=1``."""
    return "/".join(f"{escape_path_name(k.lower())}={escape_path_name(v)}" for k, v in spec.items())


def normalize_partition_name(name: str | None) -> str | None:
    """A partition name as Hive records it in HIVE_LOCKS / TXN_COMPONENTS (TxnUtils.normalizePartitionCase): each
    key lower-cased, each value kept exactly as given, so ``dS=ToDay`` and ``ds=ToDay`` name one partition.

    Values are not escaped a second time (Hive re-escapes the already escaped text, turning ``%2F`` into ``%252F``,
    a name no partition has). None stays None; a name that is not ``key=value[/key=value…]`` with distinct keys is
    refused (InvalidInputError), as Hive's splitter refuses it.
    """
    if name is None:
        return None
    parts: list[str] = []
    seen: set[str] = set()
    for part in str(name).split("/"):
        key, sep, value = part.partition("=")
        if not sep or not key or "=" in value:
            raise InvalidInputError(f"partition name {name!r} is not of the form key=value[/key=value…]")
        key = escape_path_name(unescape_path_name(key).lower())
        if key in seen:
            raise InvalidInputError(f"partition name {name!r} names key {key!r} twice")
        seen.add(key)
        parts.append(f"{key}={value}")
    return "/".join(parts)


def parse_partition_name(name: str) -> dict[str, str]:
    """Split ``k1=v1/k2=v2`` into an ordered spec, unescaping keys and values."""
    spec: dict[str, str] = {}
    if not name:
        raise InvalidInputError("partition name is empty; expected key=value[/key=value…]")
    for part in name.split("/"):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"partition name {name!r} is not of the form key=value[/key=value…]")
        spec[unescape_path_name(key)] = unescape_path_name(value)
    return spec


def partition_location(table_location: str, partition_name: str) -> str:
    """Where a partition's directory lives: ``<table location>/<partition name>``."""
    return table_location.rstrip("/") + "/" + partition_name
