"""What Hive's ``orc.*`` table properties may hold here: the compression kinds every writer of this project writes
and the sizes ORC's writers honour. Imports nothing heavy, so the catalog checks a property when it is set.
"""

from __future__ import annotations

ORC_COMPRESSIONS = ("NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD")
"""Compressions every writer of this project (pyarrow's and pyorc's ORC writers) writes and its readers read."""
HIVE_ORC_COMPRESSIONS = ("NONE", "ZLIB", "SNAPPY", "LZO", "LZ4", "ZSTD")
"""The ``orc.compress`` values Hive accepts (ORC's CompressionKind); LZO has no writer here (ORC's C++ writer, which
pyarrow and pyorc wrap, cannot write it)."""
MEMORY_BLOCK = 64 * 1024
"""pyarrow's ORC writer (ORC's C++ writer) rounds the compression block up to a multiple of this."""
MAX_BUFFER_SIZE = (((1 << 23) - 1) // MEMORY_BLOCK) * MEMORY_BLOCK
"""The largest compression block a chunk header (23 bits of length) can describe, as a multiple of 64 KiB."""
MIN_ROW_INDEX_STRIDE = 1000
"""ORC's Java writer refuses a smaller row index stride (other than 0, no index)."""


def compression_problem(value: object) -> str | None:
    """Why ``value`` cannot be an ``orc.compress`` value here, or None when it can (any case)."""
    text = str(value).strip().upper() if isinstance(value, str) else None
    if text in ORC_COMPRESSIONS:
        return None
    if text == "LZO":
        return ("LZO is a compression Hive accepts, but ORC's C++ writer (which airflow-acid's writers use) cannot "
                f"write it; use one of {', '.join(ORC_COMPRESSIONS)}")
    return f"is not an ORC compression; use one of {', '.join(ORC_COMPRESSIONS)} (any case)"


def buffer_size_problem(value: int) -> str | None:
    """Why ``value`` cannot be ``orc.compress.size`` (the base files' compression block), or None."""
    if value % MEMORY_BLOCK or not MEMORY_BLOCK <= value <= MAX_BUFFER_SIZE:
        return (f"must be a multiple of {MEMORY_BLOCK} (64 KiB) from {MEMORY_BLOCK} to {MAX_BUFFER_SIZE}: ORC's C++ "
                "writer rounds other sizes up to a multiple of 64 KiB, so the size would not be the one asked for")
    return None


def row_index_stride_problem(value: int) -> str | None:
    """Why ``value`` cannot be ``orc.row.index.stride``, or None."""
    if value != 0 and value < MIN_ROW_INDEX_STRIDE:
        return f"must be 0 (no row index) or at least {MIN_ROW_INDEX_STRIDE}, as ORC's Java writer requires"
    return None
