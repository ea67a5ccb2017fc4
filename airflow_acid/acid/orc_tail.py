"""Finish an ORC file by rewriting its tail (Footer + PostScript): add user metadata and mark the calendar.

pyarrow's ORC writer is ~10× faster than the pyorc event writer but cannot set user metadata. An ORC file ends
with ``[stripes][metadata][Footer][PostScript][1 byte: PostScript length]``; the Footer is a protobuf message
(compressed in chunks) whose repeated field 5 holds ``UserMetadataItem {1: name, 2: value}``. Protobuf allows a
repeated field's items anywhere in a message, so appending items to the decompressed Footer is a valid Footer.
The new Footer is stored deflated (ZLIB files) or as *original* (uncompressed) chunks, which every ORC reader
accepts, and the PostScript is re-encoded with the new ``footerLength``. Stripes and stripe statistics are untouched.

Neither pyarrow nor pyorc (ORC C++) records the Footer's ``calendar`` (field 11); Java readers (Hive 4, Spark) then
take dates and timestamps before 1582-10-15 as hybrid Julian and shift them (1500-01-01 reads as 1499-12-23). Every
file written here is proleptic Gregorian, so :func:`finished_tail` always sets ``calendar = PROLEPTIC_GREGORIAN``,
as ORC 1.5+/Hive 3+ Java writers do.

pyarrow's writer knows no CHAR/VARCHAR: it stores a string column with its Arrow field metadata as the Type's
attributes. A Type whose attributes name a Hive ``char(n)``/``varchar(n)`` (:mod:`airflow_acid.acid.hive_chars`)
becomes that kind with ``maximumLength`` n, attribute dropped, as Hive's writer records it; the three kinds share one
stream encoding, so the stripes stay valid.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import pyarrow as pa

from airflow_acid.acid.errors import OrcTailError
from airflow_acid.acid.hive_chars import HIVE_TYPE_KEY, ORC_KINDS, CharType, parse_char_type

_MAGIC = b"ORC"
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_NONE, _ZLIB, _SNAPPY, _LZO, _LZ4, _ZSTD = range(6)
_PS_FOOTER_LENGTH, _PS_COMPRESSION, _PS_BLOCK_SIZE = 1, 2, 3
_FOOTER_CONTENT_LENGTH, _FOOTER_STRIPES, _FOOTER_TYPES, _FOOTER_METADATA, _FOOTER_CALENDAR = 2, 3, 4, 5, 11
_TYPE_KIND, _TYPE_MAXIMUM_LENGTH, _TYPE_ATTRIBUTES = 1, 4, 7
PROLEPTIC_GREGORIAN = 2
"""ORC's ``CalendarKind`` value for the proleptic Gregorian calendar (0 is unknown, 1 hybrid Julian/Gregorian)."""
_STRIPE_OFFSET, _STRIPE_NUMBER_OF_ROWS = 1, 5



def _varint(data: bytes, pos: int) -> tuple[int, int]:
    if pos < len(data) and data[pos] < 0x80:  # one byte: most field keys, lengths and counts
        return data[pos], pos + 1
    result = shift = 0
    while True:
        if pos >= len(data):
            raise OrcTailError("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes, bytes]]:
    """(field number, wire type, value, raw encoded field) for each field of a protobuf message."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == _FIXED64:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == _FIXED32:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise OrcTailError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value, data[start:pos]


def _submessage(value: int | bytes, what: str) -> bytes:
    """A length-delimited field's bytes (a nested message); a number there means the Footer is malformed."""
    if not isinstance(value, bytes):
        raise OrcTailError(f"malformed ORC Footer: {what} is not a length-delimited field")
    return value


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LENGTH) + _encode_varint(len(payload)) + payload


def _snappy_length(chunk: bytes) -> int:
    return _varint(chunk, 0)[0]


def _zstd_length(chunk: bytes) -> int:
    """Frame_Content_Size from a zstd frame header (ORC's zstd writer records it)."""
    if chunk[:4] != b"\x28\xb5\x2f\xfd":
        raise OrcTailError("zstd chunk does not start with a zstd frame")
    descriptor = chunk[4]
    fcs_flag, single, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0:
        raise OrcTailError("zstd frame does not record its content size")
    value = int.from_bytes(chunk[pos:pos + size], "little")
    return value + 256 if size == 2 else value


def _decompress_chunk(kind: int, chunk: bytes, block_size: int) -> bytes:
    if kind == _ZLIB:
        return zlib.decompress(chunk, -15)
    data: bytes  # pyarrow is untyped: asbytes=True makes decompress return bytes
    if kind == _SNAPPY:
        data = pa.Codec("snappy").decompress(chunk, decompressed_size=_snappy_length(chunk), asbytes=True)
        return data
    if kind == _ZSTD:
        data = pa.Codec("zstd").decompress(chunk, decompressed_size=_zstd_length(chunk), asbytes=True)
        return data
    if kind == _LZ4:
        return lz4_block_decompress(chunk, block_size)
    raise OrcTailError(f"ORC compression kind {kind} (LZO) is not supported for tail rewriting; "
                       "use NONE, ZLIB, SNAPPY, LZ4 or ZSTD")


def lz4_block_decompress(chunk: bytes, limit: int) -> bytes:
    """One raw LZ4 block (ORC's LZ4 chunks carry no size; pyarrow's raw codec needs the exact size first), at most
    ``limit`` bytes out. Only tails and footers go through it, so plain Python is fast enough."""
    out = bytearray()
    pos, end = 0, len(chunk)
    while pos < end:
        token = chunk[pos]
        pos += 1
        length = token >> 4
        if length == 15:
            while True:
                extra = chunk[pos]
                pos += 1
                length += extra
                if extra != 255:
                    break
        out += chunk[pos:pos + length]
        pos += length
        if pos >= end:  # the last sequence has literals only
            break
        offset = chunk[pos] | chunk[pos + 1] << 8
        pos += 2
        if offset == 0 or offset > len(out):
            raise OrcTailError("malformed LZ4 chunk: a match points before the start of the data")
        match = (token & 15) + 4
        if token & 15 == 15:
            while True:
                extra = chunk[pos]
                pos += 1
                match += extra
                if extra != 255:
                    break
        start = len(out) - offset
        for i in range(match):  # matches may overlap their own output
            out.append(out[start + i])
        if len(out) > limit:
            raise OrcTailError(f"malformed LZ4 chunk: it holds more than the file's block size ({limit} bytes)")
    return bytes(out)


def _decompress(kind: int, data: bytes, block_size: int) -> bytes:
    if kind == _NONE:
        return data
    out, pos = bytearray(), 0
    while pos < len(data):
        header = int.from_bytes(data[pos:pos + 3], "little")
        pos += 3
        length, original = header >> 1, header & 1
        chunk = data[pos:pos + length]
        pos += length
        out += chunk if original else _decompress_chunk(kind, chunk, block_size)
    return bytes(out)


def _compress_chunk(kind: int, piece: bytes) -> bytes | None:
    """``piece`` deflated for a ZLIB file (as ORC's writers do); None for other kinds (stored as original)."""
    if kind != _ZLIB:
        return None
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return deflate.compress(piece) + deflate.flush()


def _as_chunks(kind: int, data: bytes, block_size: int) -> bytes:
    """Stream bytes as chunks of at most ``block_size`` bytes: deflated for ZLIB when smaller, else 'original'."""
    if kind == _NONE:
        return data
    out = bytearray()
    for start in range(0, len(data), block_size):
        piece = data[start:start + block_size]
        packed = _compress_chunk(kind, piece)
        if packed is not None and len(packed) < len(piece):
            out += (len(packed) << 1).to_bytes(3, "little") + packed
        else:
            out += ((len(piece) << 1) | 1).to_bytes(3, "little") + piece
    return bytes(out)


def hive_typed(type_message: bytes) -> bytes:
    """An ORC Type message with a Hive char/varchar attribute turned into that kind and ``maximumLength``, the
    attribute dropped; any other Type unchanged."""
    if HIVE_TYPE_KEY not in type_message:
        return type_message
    char: CharType | None = None
    kept = bytearray()
    for number, _wire, value, raw in _fields(type_message):
        if number == _TYPE_ATTRIBUTES:
            item = {n: v for n, _w, v, _r in _fields(_submessage(value, "a StringPair"))}
            if item.get(1) == HIVE_TYPE_KEY:
                char = parse_char_type(bytes(_submessage(item.get(2, b""), "a StringPair value")))
                if char is not None:
                    continue
        if number not in (_TYPE_KIND, _TYPE_MAXIMUM_LENGTH):
            kept += raw
    if char is None:
        return type_message
    return _varint_field(_TYPE_KIND, ORC_KINDS[char.kind]) + bytes(kept) + _varint_field(_TYPE_MAXIMUM_LENGTH,
                                                                                           char.length)


def hive_typed_field(value: int | bytes, raw: bytes) -> bytes:
    """A Footer's encoded ``types`` entry (``raw``, holding Type ``value``) through :func:`hive_typed`."""
    message = _submessage(value, "a Type")
    typed = hive_typed(message)
    return raw if typed is message else _length_field(_FOOTER_TYPES, typed)


def column_char_types(footer: bytes) -> dict[int, CharType]:
    """The CHAR/VARCHAR columns of a decompressed Footer: column id -> type."""
    kinds = {v: k for k, v in ORC_KINDS.items()}
    found: dict[int, CharType] = {}
    column = 0
    for number, _wire, value, _raw in _fields(footer):
        if number != _FOOTER_TYPES:
            continue
        parts = {n: v for n, _w, v, _r in _fields(_submessage(value, "a Type"))}
        kind = kinds.get(int(parts.get(_TYPE_KIND, 0)))
        if kind is not None:
            found[column] = CharType(kind, int(parts.get(_TYPE_MAXIMUM_LENGTH, 0)))
        column += 1
    return found


@dataclass(frozen=True)
class OrcTail:
    """The decoded tail of an ORC file."""

    footer_start: int
    postscript: bytes
    footer: bytes
    """Decompressed Footer message."""
    compression: int
    block_size: int

    @property
    def stripe_rows(self) -> list[int]:
        """Rows per stripe, in file order."""
        return stripe_row_counts(_submessage(value, "a StripeInformation")
                                 for number, _wire, value, _raw in _fields(self.footer) if number == _FOOTER_STRIPES)

    @property
    def calendar(self) -> int | None:
        """The Footer's ``CalendarKind`` number, or None when the writer recorded none."""
        kinds = [int(v) for n, _w, v, _r in _fields(self.footer) if n == _FOOTER_CALENDAR]
        return kinds[-1] if kinds else None

    @property
    def user_metadata(self) -> dict[str, bytes]:
        items: dict[str, bytes] = {}
        for number, _wire, value, _raw in _fields(self.footer):
            if number == _FOOTER_METADATA:
                parts = {n: v for n, _w, v, _r in _fields(_submessage(value, "a UserMetadataItem"))}
                items[bytes(parts.get(1, b"")).decode()] = bytes(parts.get(2, b""))
        return items


def stripe_row_counts(stripe_infos: Iterable[bytes]) -> list[int]:
    """``numberOfRows`` of each encoded StripeInformation message."""
    rows = []
    for info in stripe_infos:
        n = 0
        for number, _wire, value, _raw in _fields(info):
            if number == _STRIPE_NUMBER_OF_ROWS:
                n = int(value)
        rows.append(n)
    return rows


def read_tail(data: bytes | memoryview | pa.Buffer, *, whole_file: bool = True) -> OrcTail:
    """Decode the PostScript and Footer of an ORC file held in memory (only the tail is copied).

    ``whole_file=False`` accepts just the file's last bytes (at least Footer + PostScript); ``footer_start`` is then
    relative to them.
    """
    data = memoryview(data)
    if whole_file and (len(data) < 4 or bytes(data[:3]) != _MAGIC):
        raise OrcTailError("not an ORC file (no 'ORC' magic at the start)")
    if not len(data):
        raise OrcTailError("no ORC tail: no bytes")
    ps_len = data[-1]
    postscript = bytes(data[-1 - ps_len:-1])
    ps = {n: v for n, _w, v, _r in _fields(postscript)}
    footer_len = int(ps.get(_PS_FOOTER_LENGTH, 0))
    kind = int(ps.get(_PS_COMPRESSION, _NONE))
    block = int(ps.get(_PS_BLOCK_SIZE, 256 * 1024))
    footer_start = len(data) - 1 - ps_len - footer_len
    if footer_start < (3 if whole_file else 0):
        raise OrcTailError(f"PostScript footer length {footer_len} does not fit a {len(data)}-byte file")
    footer = _decompress(kind, bytes(data[footer_start:footer_start + footer_len]), block)
    return OrcTail(footer_start, postscript, footer, kind, block)


def read_file_tail(source: pa.NativeFile) -> OrcTail:
    """The tail of an open ORC file, reading only its last bytes (PostScript, then Footer)."""
    size = source.size()
    if size < 4:
        raise OrcTailError(f"not an ORC file: {size} bytes")
    ps_len = source.read_at(1, size - 1)[0]
    ps = {n: v for n, _w, v, _r in _fields(bytes(source.read_at(ps_len, size - 1 - ps_len)))}
    need = min(size, 1 + ps_len + int(ps.get(_PS_FOOTER_LENGTH, 0)))
    return read_tail(source.read_at(need, size - need), whole_file=False)


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(value)


def _moved_stripe(info: bytes, shift: int) -> bytes:
    """A StripeInformation message with its offset moved by ``shift`` bytes."""
    return b"".join(_varint_field(_STRIPE_OFFSET, int(value) + shift) if number == _STRIPE_OFFSET else raw
                    for number, _wire, value, raw in _fields(info))


@dataclass
class StripeRunCache:
    """The stripe entries of the last footer a :class:`TailFinishingStream` rewrote, as written and as moved.

    A streaming writer's footers repeat every earlier stripe entry byte for byte, so a new footer that starts its
    stripe run with the cached bytes reuses their moved form: each flush parses only its new stripes (one
    ``startswith`` over the rest), not every stripe of the file again."""

    written: bytes = b""
    moved: bytes = b""
    count: int = 0


def _relocated(footer: bytes, stripe_shifts: Sequence[int], shift: int,
               cache: StripeRunCache | None = None) -> tuple[bytes, int]:
    """The Footer's fields without the calendar, stripe offsets and contentLength moved (see :func:`finished_tail`),
    char/varchar types as Hive's (:func:`hive_typed`), and its number of stripes; ``cache`` (updated) skips stripe
    entries an earlier footer already had."""
    out, stripe, pos = bytearray(), 0, 0
    run: tuple[int, int] | None = None  # where the stripe entries start in footer and in out
    while pos < len(footer):
        if cache is not None and cache.count and stripe == 0 and footer.startswith(cache.written, pos):
            run = (pos, len(out))
            out += cache.moved
            pos += len(cache.written)
            stripe = cache.count
            continue
        field_start = pos
        key, pos = _varint(footer, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(footer, pos)
        elif wire == _LENGTH:
            length, pos = _varint(footer, pos)
            value, pos = footer[pos:pos + length], pos + length
        elif wire in (_FIXED64, _FIXED32):
            value, pos = 0, pos + (8 if wire == _FIXED64 else 4)
        else:
            raise OrcTailError(f"unsupported protobuf wire type {wire}")
        if number == _FOOTER_CALENDAR:
            continue
        if number == _FOOTER_STRIPES:
            if run is None:
                run = (field_start, len(out))
            moved = stripe_shifts[stripe] if stripe < len(stripe_shifts) else shift
            stripe += 1
            info = _submessage(value, "a StripeInformation")
            out += _length_field(_FOOTER_STRIPES, _moved_stripe(info, moved)) if moved else footer[field_start:pos]
            if cache is not None:
                cache.written, cache.moved = footer[run[0]:pos], bytes(out[run[1]:])
        elif number == _FOOTER_CONTENT_LENGTH and shift:
            out += _varint_field(_FOOTER_CONTENT_LENGTH, int(value) + shift)
        elif number == _FOOTER_TYPES:
            out += hive_typed_field(value, footer[field_start:pos])
        else:
            out += footer[field_start:pos]
    if cache is not None:
        cache.count = stripe
    return bytes(out), stripe


def _finished(data: bytes | memoryview | pa.Buffer, metadata: Mapping[str, bytes] | None, *, whole_file: bool,
              shift: int = 0, stripe_shifts: Sequence[int] = (),
              cache: StripeRunCache | None = None) -> tuple[int, bytes, int]:
    """:func:`finished_tail` plus the number of stripes the footer lists."""
    tail = read_tail(data, whole_file=whole_file)
    metadata = metadata or {}
    clash = set(metadata) & set(tail.user_metadata) if metadata else set()
    if clash:
        raise OrcTailError(f"user metadata keys {sorted(clash)} are already present")
    kept, stripes = _relocated(tail.footer, stripe_shifts, shift, cache)
    items = b"".join(_length_field(_FOOTER_METADATA, _length_field(1, k.encode()) + _length_field(2, bytes(v)))
                     for k, v in metadata.items())
    calendar = _varint_field(_FOOTER_CALENDAR, PROLEPTIC_GREGORIAN)
    footer = _as_chunks(tail.compression, kept + items + calendar, tail.block_size)
    ps = bytearray()
    for number, _wire, _value, raw in _fields(tail.postscript):
        if number == _PS_FOOTER_LENGTH:
            ps += _encode_varint(_PS_FOOTER_LENGTH << 3 | _VARINT) + _encode_varint(len(footer))
        else:
            ps += raw
    if len(ps) > 255:
        raise OrcTailError("PostScript longer than 255 bytes")
    return tail.footer_start, footer + bytes(ps) + bytes([len(ps)]), stripes


def finished_tail(data: bytes | memoryview | pa.Buffer, metadata: Mapping[str, bytes] | None = None, *,
                  whole_file: bool = True, shift: int = 0, stripe_shifts: Sequence[int] = ()) -> tuple[int, bytes]:
    """Where the Footer of ``data`` starts, and the new Footer + PostScript to put there: ``metadata`` appended
    (names must not exist yet) and the calendar set to proleptic Gregorian.

    ``data[:start] + tail`` is the new file; writing the two pieces avoids copying the stripes. With
    ``whole_file=False`` ``data`` is only the file's last bytes (see :func:`read_tail`). ``shift`` moves the
    Footer's offsets when earlier footers of the file were rewritten (:class:`TailFinishingStream`): stripe ``i``
    by ``stripe_shifts[i]`` (by ``shift`` beyond the list), ``contentLength`` by ``shift``.
    """
    start, tail, _stripes = _finished(data, metadata, whole_file=whole_file, shift=shift, stripe_shifts=stripe_shifts)
    return start, tail


def finished_file(data: bytes | memoryview | pa.Buffer, metadata: Mapping[str, bytes] | None = None) -> bytes:
    """The ORC file ``data`` finished by :func:`finished_tail` (metadata appended, proleptic Gregorian calendar)."""
    start, tail = finished_tail(data, metadata)
    return bytes(memoryview(data)[:start]) + tail


class TailFinishingStream:
    """A binary output stream for writers that write ORC tails themselves (pyorc): bytes pass through to
    ``handle``; between :meth:`hold_tail` and :meth:`finish` they are held, and every tail written in between
    (the final one, or an intermediate footer of a streaming flush) is rewritten with :func:`finished_tail`, with
    the user metadata :meth:`finish` is given (pyorc puts user metadata in the final footer only).

    A rewritten tail changes length, so bytes after it sit at other offsets than the writer believes: its offsets
    are *logical*, the file's *physical*. :meth:`physical` converts a length the writer reports (a flush length),
    and every later tail gets its stripe offsets moved by what was added before each stripe.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._held: bytearray | None = None
        self.shift = 0
        """Physical minus logical position of the bytes written now."""
        self._stripe_shifts: list[int] = []
        """The shift of each stripe in the last rewritten tail."""
        self._cache = StripeRunCache()

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._held is not None:
            self._held += data
        else:
            self._handle.write(data)
        return len(data)

    def flush(self) -> None:
        if self._held is None:
            self._handle.flush()

    def tell(self) -> int:
        return self._handle.tell() + (len(self._held) if self._held is not None else 0)

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def writable(self) -> bool:
        return True

    def physical(self, logical_length: int) -> int:
        """The file length that a length the writer reports (``write_intermediate_footer()``) corresponds to."""
        return logical_length + self.shift

    def hold_tail(self) -> None:
        self._held = bytearray()

    def finish(self, metadata: Mapping[str, bytes] | None = None) -> None:
        """Write the held bytes with their tail finished (``metadata`` added, proleptic Gregorian calendar, moved
        offsets) to the handle; held bytes without a new tail (a flush with nothing new) are written as they are."""
        if self._held is None:
            raise OrcTailError("finish() needs hold_tail() before the ORC writer wrote its tail")
        held, self._held = bytes(self._held), None
        if not held:
            return
        start, tail, stripes = _finished(held, metadata, whole_file=False, shift=self.shift,
                                         stripe_shifts=self._stripe_shifts, cache=self._cache)
        self._handle.write(held[:start])
        self._handle.write(tail)
        self._handle.flush()
        self._stripe_shifts += [self.shift] * (stripes - len(self._stripe_shifts))
        self.shift += len(tail) - (len(held) - start)


_FOOTER_NUMBER_OF_ROWS, _FOOTER_STATISTICS = 6, 7
_PS_METADATA_LENGTH, _PS_STRIPE_STATISTICS_LENGTH = 5, 7


def stripe_range_tail(tail: OrcTail, first: int, end: int) -> tuple[bytes, int]:
    """A Footer + PostScript listing only stripes [first, end) of ``tail``'s file, and their rows.

    The stripes keep their offsets: the file's bytes before its Footer followed by this tail read as an ORC file of
    those stripes only, so ORC's row reader streams a stripe range in small batches (a split's delete events) where
    ``read_stripe`` would decode whole stripes. The file's column statistics and stripe statistics are left out (they
    describe every stripe)."""
    kept, stripe, rows = bytearray(), 0, 0
    for number, _wire, value, raw in _fields(tail.footer):
        if number == _FOOTER_STRIPES:
            if first <= stripe < end:
                kept += raw
                rows += stripe_row_counts([_submessage(value, "a StripeInformation")])[0]
            stripe += 1
        elif number not in (_FOOTER_NUMBER_OF_ROWS, _FOOTER_STATISTICS):
            kept += raw
    kept += _varint_field(_FOOTER_NUMBER_OF_ROWS, rows)
    footer = _as_chunks(tail.compression, bytes(kept), tail.block_size)
    ps = bytearray()
    for number, _wire, _value, raw in _fields(tail.postscript):
        if number == _PS_FOOTER_LENGTH:
            ps += _varint_field(_PS_FOOTER_LENGTH, len(footer))
        elif number in (_PS_METADATA_LENGTH, _PS_STRIPE_STATISTICS_LENGTH):
            ps += _varint_field(number, 0)
        else:
            ps += raw
    if len(ps) > 255:
        raise OrcTailError("PostScript longer than 255 bytes")
    return footer + bytes(ps) + bytes([len(ps)]), rows


def footer_offset(source: pa.NativeFile, tail: OrcTail) -> int:
    """Where the Footer of ``tail`` (read by :func:`read_file_tail`) starts in ``source``."""
    footer_length = int({n: v for n, _w, v, _r in _fields(tail.postscript)}.get(_PS_FOOTER_LENGTH, 0))
    return int(source.size()) - 1 - len(tail.postscript) - footer_length
