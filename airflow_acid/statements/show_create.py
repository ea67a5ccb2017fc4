"""SHOW CREATE TABLE as Hive prints it (one ``createtab_stmt`` row per line): the statement that creates the table
again — airflow-acid's CREATE TABLE reads it back, ROW FORMAT SERDE / INPUTFORMAT spelling included."""

from __future__ import annotations

from airflow_acid.metastore.catalog import ORC_INPUT_FORMAT, ORC_OUTPUT_FORMAT, ORC_SERDE, ColumnInfo, TableInfo

COLUMNS = ["createtab_stmt"]


def _quote(text: str) -> str:
    """A Hive string literal; control characters (a text table's ``\\001`` delimiter) as ``\\uXXXX``."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + "".join(f"\\u{ord(c):04x}" if ord(c) < 32 else c for c in escaped) + "'"


def _column(c: ColumnInfo) -> str:
    return (f"  `{c.name}` {c.type}" + (f" DEFAULT {c.default}" if c.default is not None else "")
            + (f" COMMENT {_quote(c.comment)}" if c.comment else ""))


def create_statement(info: TableInfo) -> list[str]:
    """The lines of SHOW CREATE TABLE ``info`` (EXTERNAL for an external table; table comment as COMMENT)."""
    if info.is_view:  # Hive: the view's expanded query
        return [f"CREATE VIEW `{info.database}`.`{info.name}` AS {info.view_expanded_text or ''}"]
    external = info.table_type == "EXTERNAL_TABLE"
    lines = [f"CREATE {'EXTERNAL ' if external else ''}TABLE `{info.database}`.`{info.name}`("]
    lines += [line + ("," if i < len(info.columns) - 1 else ")") for i, line in
              enumerate(_column(c) for c in info.columns)]
    comment = info.properties.get("comment")
    if comment:
        lines.append(f"COMMENT {_quote(comment)}")
    if info.partition_keys:
        lines.append("PARTITIONED BY (")
        lines += [line + ("," if i < len(info.partition_keys) - 1 else ")") for i, line in
                  enumerate(_column(c) for c in info.partition_keys)]
    if info.bucket_cols:
        lines += ["CLUSTERED BY (", "  " + ", ".join(info.bucket_cols) + ")", f"INTO {info.num_buckets} BUCKETS"]
    lines += ["ROW FORMAT SERDE", f"  {_quote(info.serde or ORC_SERDE)}"]
    params = sorted(info.serde_params.items())
    if params:
        lines.append("WITH SERDEPROPERTIES (")
        lines += [f"  {_quote(k)}={_quote(v)}" + ("," if i < len(params) - 1 else ")") for i, (k, v) in
                  enumerate(params)]
    lines += ["STORED AS INPUTFORMAT", f"  {_quote(info.input_format or ORC_INPUT_FORMAT)}",
              "OUTPUTFORMAT", f"  {_quote(info.output_format or ORC_OUTPUT_FORMAT)}", "LOCATION",
              f"  {_quote(info.location)}"]
    props = sorted((k, v) for k, v in info.properties.items() if k != "comment")
    if props:
        lines.append("TBLPROPERTIES (")
        lines += [f"  {_quote(k)}={_quote(v)}" + ("," if i < len(props) - 1 else ")") for i, (k, v) in
                  enumerate(props)]
    return lines


__all__ = ["COLUMNS", "create_statement"]
