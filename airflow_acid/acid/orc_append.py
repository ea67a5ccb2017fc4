"""An ORC file grown by appending the stripes of complete ORC files ("pieces"), with a valid tail after each append.

Hive Streaming appends every committed transaction of a batch to one open ``bucket_N`` file and writes an
*intermediate footer* after it, so readers see exactly the committed prefix up to the length in the
``_flush_length`` side file (docs/hive-acid.md#flush-length). pyarrow's fast ORC writer cannot write intermediate footers,
but it can write each flush's rows as a small complete file. :class:`AppendingOrcFile` copies that file's stripes to the end
of the open file (each stripe is self-contained: index, data and stripe footer, with offsets relative to the stripe) and
writes a new tail after them — Metadata (every stripe's statistics), Footer (every stripe's location, the column
types with char/varchar as Hive's, merged file statistics, user metadata, the proleptic Gregorian calendar) and
PostScript — exactly as an ORC writer's intermediate footer lays it out. Earlier tails stay in the file as
unreferenced bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import IO

from airflow_acid.acid.errors import OrcTailError
from airflow_acid.acid.orc_statistics import merge_column_statistics
from airflow_acid.acid.orc_tail import (
    _FOOTER_CALENDAR,
    _FOOTER_CONTENT_LENGTH,
    _FOOTER_METADATA,
    _FOOTER_STRIPES,
    _MAGIC,
    _PS_FOOTER_LENGTH,
    PROLEPTIC_GREGORIAN,
    _as_chunks,
    _decompress,
    _fields,
    _length_field,
    _moved_stripe,
    _submessage,
    _varint_field,
    hive_typed_field,
    read_tail,
    stripe_row_counts,
)

_FOOTER_HEADER_LENGTH, _FOOTER_TYPES, _FOOTER_ROWS, _FOOTER_STATISTICS = 1, 4, 6, 7
_FOOTER_ROW_INDEX_STRIDE, _FOOTER_WRITER, _FOOTER_ENCRYPTION, _FOOTER_SOFTWARE = 8, 9, 10, 12
_PS_METADATA_LENGTH, _PS_STRIPE_STATISTICS_LENGTH = 5, 7
_HEADER = len(_MAGIC)


@dataclass
class _Piece:
    """What one appended ORC file contributes."""

    stripes: memoryview
    """The stripe bytes (everything between the 'ORC' header and the Metadata section), not copied."""
    stripe_infos: list[bytes]
    stored_metadata: memoryview
    """The Metadata section as stored (one StripeStatistics entry per stripe, in compressed chunks): chunk sequences
    concatenate, so the pieces' sections together are the appended file's, with no compression per append."""
    statistics: list[bytes]
    rows: int
    types: bytes
    header_in_content: bool
    """Whether the writer counted the 'ORC' header in contentLength (Java) or not (C++: pyarrow)."""
    constants: bytes
    """Footer fields copied as they are (row index stride, writer, software version)."""
    postscript: bytes
    compression: int
    block_size: int


def _piece(data: bytes | memoryview) -> _Piece:
    view = memoryview(data)
    tail = read_tail(view)
    ps = {n: v for n, _w, v, _r in _fields(tail.postscript)}
    metadata_length = int(ps.get(_PS_METADATA_LENGTH, 0))
    if ps.get(_PS_STRIPE_STATISTICS_LENGTH):
        raise OrcTailError("encrypted ORC files cannot be appended")
    metadata_start = tail.footer_start - metadata_length
    stripe_infos: list[bytes] = []
    statistics: list[bytes] = []
    types = constants = b""
    rows = content_length = 0
    for number, _wire, value, raw in _fields(tail.footer):
        if number == _FOOTER_STRIPES:
            stripe_infos.append(_submessage(value, "a StripeInformation"))
        elif number == _FOOTER_STATISTICS:
            statistics.append(_submessage(value, "a ColumnStatistics"))
        elif number == _FOOTER_TYPES:
            types += hive_typed_field(value, raw)  # char/varchar as Hive records them
        elif number == _FOOTER_ROWS:
            rows = int(value)
        elif number == _FOOTER_CONTENT_LENGTH:
            content_length = int(value)
        elif number == _FOOTER_ENCRYPTION:
            raise OrcTailError("encrypted ORC files cannot be appended")
        elif number in (_FOOTER_ROW_INDEX_STRIDE, _FOOTER_WRITER, _FOOTER_SOFTWARE):
            constants += raw
    if content_length not in (metadata_start, metadata_start - _HEADER):  # ORC C++ leaves the header out, Java not
        raise OrcTailError(f"ORC contentLength {content_length} is not where the Metadata starts ({metadata_start})")
    return _Piece(stripes=view[_HEADER:metadata_start], stripe_infos=stripe_infos,
                  stored_metadata=view[metadata_start:tail.footer_start],
                  statistics=statistics, rows=rows, types=types, header_in_content=content_length == metadata_start,
                  constants=constants, postscript=tail.postscript,
                  compression=tail.compression, block_size=tail.block_size)


@dataclass
class AppendingOrcFile:
    """Appends ORC pieces (same schema and compression) to ``handle`` and writes a tail after each
    :meth:`append`; :meth:`tail` writes one with other user metadata (a streaming flush, the final footer)."""

    handle: IO[bytes]
    length: int = 0
    """Bytes written to ``handle`` so far (the file's length: a flush length)."""
    rows: int = 0
    stripe_rows: list[int] = field(default_factory=list)
    _stripe_entries: bytearray = field(default_factory=bytearray)
    """The Footer's StripeInformation fields so far, encoded (each flush adds its own, none is encoded again)."""
    _postscript: list[tuple[int, bytes]] = field(default_factory=list)
    """The first piece's PostScript fields in order (number, encoded); a tail rewrites the footer and metadata
    lengths and keeps the rest where they were (the magic stays last, where Java's reader looks for it)."""
    _metadata: bytearray = field(default_factory=bytearray)
    """The Metadata section so far: the pieces' stored sections, concatenated."""
    _statistics: list[bytes] = field(default_factory=list)
    _first: _Piece | None = None

    def append(self, data: bytes | memoryview) -> None:
        """Copy the stripes of the complete ORC file ``data`` to the end of this one (no tail yet)."""
        piece = _piece(data)
        if self._first is None:
            self._write(_MAGIC)
            self._first = replace(piece, stripes=memoryview(b""), stored_metadata=memoryview(b""))  # no piece data
            self._statistics = list(piece.statistics)
            self._postscript = _postscript_fields(piece.postscript)
        else:
            if piece.types != self._first.types:
                raise OrcTailError("an appended ORC file has another schema than the file it is appended to")
            if (piece.compression, piece.block_size) != (self._first.compression, self._first.block_size):
                raise OrcTailError("an appended ORC file has another compression than the file it is appended to")
            if len(piece.statistics) != len(self._statistics):
                raise OrcTailError("an appended ORC file has another number of column statistics")
            self._statistics = [merge_column_statistics(a, b) for a, b in zip(self._statistics, piece.statistics)]
        shift = self.length - _HEADER
        self._write(piece.stripes)
        for info in piece.stripe_infos:
            self._stripe_entries += _length_field(_FOOTER_STRIPES, _moved_stripe(info, shift))
        self._metadata += piece.stored_metadata
        self.rows += piece.rows
        self.stripe_rows += stripe_row_counts(piece.stripe_infos)

    def tail(self, user_metadata: Mapping[str, bytes] | None = None, *, final: bool = False) -> int:
        """Write Metadata, Footer and PostScript for every stripe so far; the file's length after them.

        An intermediate tail copies the pieces' compressed Metadata sections as they are (a few small chunks per
        stripe); the ``final`` one compresses the whole section again as one stream, when that is smaller, for the file
        that stays."""
        first = self._first
        if first is None:
            raise OrcTailError("an ORC tail needs at least one appended piece")
        kind, block = first.compression, first.block_size
        metadata = bytes(self._metadata)
        if final:
            packed = _as_chunks(kind, _decompress(kind, metadata, block), block)
            metadata = packed if len(packed) < len(metadata) else metadata
        footer = (_varint_field(_FOOTER_HEADER_LENGTH, _HEADER) + _varint_field(_FOOTER_CONTENT_LENGTH,
                                                                                  self._content_length())
                  + self._stripe_entries + first.types
                  + b"".join(_length_field(_FOOTER_METADATA, _length_field(1, k.encode()) + _length_field(2, bytes(v)))
                             for k, v in (user_metadata or {}).items())
                  + _varint_field(_FOOTER_ROWS, self.rows)
                  + b"".join(_length_field(_FOOTER_STATISTICS, s) for s in self._statistics)
                  + first.constants + _varint_field(_FOOTER_CALENDAR, PROLEPTIC_GREGORIAN))
        packed = _as_chunks(kind, footer, block)
        lengths = {_PS_FOOTER_LENGTH: len(packed), _PS_METADATA_LENGTH: len(metadata)}
        ps = b"".join(_varint_field(number, lengths[number]) if number in lengths else raw
                      for number, raw in self._postscript)
        if len(ps) > 255:
            raise OrcTailError("PostScript longer than 255 bytes")
        self._write(metadata + footer_bytes(packed, ps))
        self.handle.flush()
        return self.length

    def _content_length(self) -> int:
        assert self._first is not None, "set by the first append"
        return self.length if self._first.header_in_content else self.length - _HEADER

    def _write(self, data: bytes | memoryview) -> None:
        self.handle.write(data)
        self.length += len(data)


def _postscript_fields(postscript: bytes) -> list[tuple[int, bytes]]:
    """(number, encoded field) of a PostScript, with a metadata length after the footer length when it has none."""
    fields = [(number, raw) for number, _wire, _value, raw in _fields(postscript)]
    if all(number != _PS_METADATA_LENGTH for number, _raw in fields):
        at = next((i + 1 for i, (number, _raw) in enumerate(fields) if number == _PS_FOOTER_LENGTH), 0)
        fields.insert(at, (_PS_METADATA_LENGTH, b""))
    return fields


def footer_bytes(footer: bytes, postscript: bytes | bytearray) -> bytes:
    """Footer + PostScript + the PostScript's one-byte length: the last bytes of an ORC file."""
    return footer + bytes(postscript) + bytes([len(postscript)])
