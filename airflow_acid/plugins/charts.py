"""Inline SVG charts drawn on the server (no chart library, nothing fetched from outside): deltas and delta/base
ratio per partition against the Initiator's thresholds, and a table's compactions over time. Colours come from the
page's stylesheet through CSS classes, so badges and charts share one palette."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from markupsafe import Markup

from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.plugins.formats import percent, size
from airflow_acid.plugins.templating import state_class as _state_css
from airflow_acid.pycompat import UTC

WIDTH = 900
LABEL_W = 190
ROW_H = 24
BAR_H = 14
TOP = 44
MAX_ROWS = 60
MAX_LANES = 24
TABLE_LABEL = "(whole table)"


def _attrs(**attrs: Any) -> str:
    return " ".join(f'{k.rstrip("_").replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items() if v is not None)


def _el(tag: str, text: str | None = None, **attrs: Any) -> str:
    body = "" if text is None else escape(text)
    return f"<{tag} {_attrs(**attrs)}>{body}</{tag}>" if text is not None else f"<{tag} {_attrs(**attrs)}/>"


def _svg(height: float, parts: Iterable[str], label: str) -> Markup:
    return Markup(f'<svg class="chart" viewBox="0 0 {WIDTH} {height:.0f}" width="100%" role="img" '
                  f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')


def nice_ceiling(value: float) -> float:
    """The smallest 1/2/2.5/5 × 10^n at or above ``value`` (axis end)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * 10 ** exponent >= value - 1e-12:
            return step * 10 ** exponent
    return 10 ** (exponent + 1)


def _short(text: str, limit: int = 26) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _percent(ratio: float) -> str:
    return percent(ratio)


def partition_chart(partitions: Sequence[Mapping[str, Any]], delta_threshold: int, pct_threshold: float) -> Markup:
    """Two aligned bar panels per partition: current deltas (insert + delete) and delta/base size, each with the
    threshold line the Initiator compares against (more deltas than ``delta_threshold``; ratio above
    ``pct_threshold``)."""
    rows = list(partitions)[:MAX_ROWS]
    gap, right = 36, 56
    panel = (WIDTH - LABEL_W - gap - 2 * right) / 2
    x_deltas, x_ratio = LABEL_W, LABEL_W + panel + right + gap
    max_deltas = nice_ceiling(max([r["deltas"] + r["delete_deltas"] for r in rows] + [delta_threshold + 1]))
    max_ratio = nice_ceiling(max([r["delta_base_ratio"] or 0.0 for r in rows] + [pct_threshold * 1.5]))
    height = TOP + ROW_H * len(rows) + 30
    out = [
        _el("text", "Current deltas (insert + delete)", x=x_deltas, y=16, class_="chart-title"),
        _el("text", "Delta / base size", x=x_ratio, y=16, class_="chart-title"),
        _legend_item(x_deltas, 32, "bar-delta", "insert deltas"),
        _legend_item(x_deltas + 110, 32, "bar-delete", "delete deltas"),
        _legend_item(x_ratio, 32, "bar-ratio", "delta bytes ÷ base bytes"),
    ]
    for i, row in enumerate(rows):
        y = TOP + i * ROW_H
        name = row["partition"] or TABLE_LABEL
        ratio = row["delta_base_ratio"]
        total = row["deltas"] + row["delete_deltas"]
        no_ratio = "empty base" if row.get("base_write_id") is not None else "no base"
        tip = (f"{name}: {row['deltas']} insert + {row['delete_deltas']} delete deltas, "
               + (f"{no_ratio} (no delta/base ratio)" if ratio is None else f"delta/base {_percent(ratio)}"))
        parts = [_el("title", tip)]
        if i % 2 == 0:
            parts.append(_el("rect", x=0, y=y, width=WIDTH, height=ROW_H, class_="stripe"))
        parts.append(_el("text", _short(name), x=LABEL_W - 10, y=y + ROW_H / 2 + 4, class_="row-label",
                         text_anchor="end"))
        w_ins = panel * row["deltas"] / max_deltas
        w_del = panel * row["delete_deltas"] / max_deltas
        by = y + (ROW_H - BAR_H) / 2
        parts.append(_el("rect", x=x_deltas, y=by, width=f"{w_ins:.1f}", height=BAR_H, class_="bar-delta"))
        parts.append(_el("rect", x=f"{x_deltas + w_ins:.1f}", y=by, width=f"{w_del:.1f}", height=BAR_H,
                         class_="bar-delete"))
        parts.append(_el("text", str(total), x=f"{x_deltas + w_ins + w_del + 5:.1f}", y=y + ROW_H / 2 + 4,
                         class_="value" + (" over" if total > delta_threshold else "")))
        if ratio is None:
            parts.append(_el("text", no_ratio, x=x_ratio + 2, y=y + ROW_H / 2 + 4, class_="value muted"))
        else:
            w = panel * min(ratio, max_ratio) / max_ratio
            parts.append(_el("rect", x=x_ratio, y=by, width=f"{w:.1f}", height=BAR_H, class_="bar-ratio"))
            parts.append(_el("text", _percent(ratio), x=f"{x_ratio + w + 5:.1f}", y=y + ROW_H / 2 + 4,
                             class_="value" + (" over" if ratio > pct_threshold else "")))
        out.append(f"<g>{''.join(parts)}</g>")
    bottom = TOP + ROW_H * len(rows)
    out += _threshold(x_deltas + panel * delta_threshold / max_deltas, bottom, f"threshold {delta_threshold}")
    out += _threshold(x_ratio + panel * pct_threshold / max_ratio, bottom, f"threshold {_percent(pct_threshold)}")
    out += _axis(x_deltas, panel, bottom, max_deltas, lambda v: f"{v:g}")
    out += _axis(x_ratio, panel, bottom, max_ratio, _percent)
    return _svg(height, out, "deltas and delta/base ratio per partition")


def _legend_item(x: float, y: float, css: str, label: str) -> str:
    return (_el("rect", x=x, y=y - 9, width=10, height=10, rx=2, class_=css)
            + _el("text", label, x=x + 14, y=y, class_="legend"))


def _threshold(x: float, bottom: float, label: str) -> list[str]:
    return [_el("line", x1=f"{x:.1f}", x2=f"{x:.1f}", y1=TOP - 4, y2=bottom, class_="threshold"),
            _el("text", label, x=f"{x + 4:.1f}", y=bottom + 26, class_="threshold-label")]


def _axis(x: float, width: float, y: float, maximum: float, fmt) -> list[str]:
    out = [_el("line", x1=x, x2=f"{x + width:.1f}", y1=y, y2=y, class_="axis")]
    for frac in (0, 0.5, 1):
        tx = x + width * frac
        out.append(_el("line", x1=f"{tx:.1f}", x2=f"{tx:.1f}", y1=y, y2=y + 4, class_="axis"))
        out.append(_el("text", fmt(maximum * frac), x=f"{tx:.1f}", y=y + 14, class_="tick", text_anchor="middle"))
    return out


def _latest(row: ShowCompactionsRow) -> int | None:
    times = [t for t in (row.enqueuetime, row.starttime, row.committime) if t]
    if row.starttime and row.duration is not None:
        times.append(row.starttime + row.duration)
    return max(times) if times else None


def _time_label(ms: float, span_ms: float) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    if span_ms > 2 * 86_400_000:
        return moment.strftime("%Y-%m-%d")
    return moment.strftime("%m-%d %H:%M" if span_ms > 3_600_000 else "%H:%M:%S")


def history_chart(rows: Sequence[ShowCompactionsRow], now_ms: int | None = None) -> Markup:
    """A table's compactions over time: one lane per partition, a mark per compaction at its latest activity
    (square MAJOR, circle MINOR, diamond other), coloured by state; a run's start-to-end span as a bar."""
    now_ms = now_ms or int(time.time() * 1000)
    dated = [(r, t) for r in rows if (t := _latest(r)) is not None]
    lanes = sorted({r.partname or TABLE_LABEL for r, _ in dated})
    if len(lanes) > MAX_LANES:  # keep the most recently active partitions
        recent: dict[str, int] = {}
        for r, t in dated:
            lane = r.partname or TABLE_LABEL
            recent[lane] = max(recent.get(lane, 0), t)
        lanes = sorted(sorted(recent, key=lambda lane: recent[lane], reverse=True)[:MAX_LANES])
        dated = [(r, t) for r, t in dated if (r.partname or TABLE_LABEL) in lanes]
    first = min([r.enqueuetime or t for r, t in dated] or [now_ms - 3_600_000])
    last = max([t for _, t in dated] + [first + 60_000])
    pad = (last - first) * 0.04
    start, end = first - pad, last + pad
    x0, width = LABEL_W, WIDTH - LABEL_W - 30
    scale = width / (end - start)
    states = sorted({r.state for r, _ in dated})
    height = TOP + ROW_H * max(len(lanes), 1) + 30
    out = [_el("text", "Compactions over time (UTC)", x=x0, y=16, class_="chart-title")]
    lx = x0
    for state in states:
        out.append(_el("circle", cx=lx + 5, cy=28, r=5, class_=f"mark {_state_css(state)}"))
        out.append(_el("text", state, x=lx + 14, y=32, class_="legend"))
        lx += 22 + 7 * len(state)
    out.append(_el("rect", x=lx + 10, y=23, width=10, height=10, class_="mark neutral"))
    out.append(_el("text", "major", x=lx + 24, y=32, class_="legend"))
    out.append(_el("circle", cx=lx + 75, cy=28, r=5, class_="mark neutral"))
    out.append(_el("text", "minor", x=lx + 84, y=32, class_="legend"))
    index = {lane: i for i, lane in enumerate(lanes)}
    for lane, i in index.items():
        y = TOP + i * ROW_H
        if i % 2 == 0:
            out.append(_el("rect", x=0, y=y, width=WIDTH, height=ROW_H, class_="stripe"))
        out.append(_el("text", _short(lane), x=LABEL_W - 10, y=y + ROW_H / 2 + 4, class_="row-label",
                       text_anchor="end"))
    for row, t in sorted(dated, key=lambda item: item[1]):
        cy = TOP + index[row.partname or TABLE_LABEL] * ROW_H + ROW_H / 2
        css = _state_css(row.state)
        tip = (f"compaction {row.compactionid}: {row.type} {row.state}, enqueued {_time_label(row.enqueuetime or t, 0)}"
               + (f", ran {row.duration / 1000:.1f} s" if row.duration is not None else "")
               + (f" — {row.errormessage}" if row.errormessage else ""))
        parts = [_el("title", tip)]
        if row.starttime and row.duration:
            parts.append(_el("rect", x=f"{x0 + (row.starttime - start) * scale:.1f}", y=cy - 3,
                             width=f"{max(row.duration * scale, 1):.1f}", height=6, class_=f"span {css}"))
        cx = x0 + (t - start) * scale
        if row.type == "MAJOR":
            parts.append(_el("rect", x=f"{cx - 5:.1f}", y=cy - 5, width=10, height=10, class_=f"mark {css}"))
        elif row.type == "MINOR":
            parts.append(_el("circle", cx=f"{cx:.1f}", cy=cy, r=5, class_=f"mark {css}"))
        else:
            parts.append(_el("path", d=f"M{cx:.1f} {cy - 6}l6 6l-6 6l-6 -6z", class_=f"mark {css}"))
        out.append(f"<g>{''.join(parts)}</g>")
    bottom = TOP + ROW_H * max(len(lanes), 1)
    out.append(_el("line", x1=x0, x2=x0 + width, y1=bottom, y2=bottom, class_="axis"))
    for k in range(5):
        ms = start + (end - start) * k / 4
        tx = x0 + width * k / 4
        out.append(_el("line", x1=f"{tx:.1f}", x2=f"{tx:.1f}", y1=TOP - 4, y2=bottom, class_="grid"))
        out.append(_el("text", _time_label(ms, end - start), x=f"{tx:.1f}", y=bottom + 16, class_="tick",
                       text_anchor="middle"))
    if not dated:
        out.append(_el("text", "no compactions recorded yet", x=x0 + width / 2, y=TOP + ROW_H / 2 + 4,
                       class_="muted", text_anchor="middle"))
    return _svg(height, out, "compactions over time")


def _bytes(value: float) -> str:
    return size(value)


def figures_chart(rows: Sequence[ShowCompactionsRow]) -> Markup:
    """The recorded runs of a table (SHOW COMPACTIONS' figure columns), newest first: bytes read and written, and
    files and deltas before and after, as paired bars; each row also says the executor core-seconds."""
    runs = [r for r in rows if r.bytesin is not None][:MAX_ROWS]
    gap, right = 36, 70
    panel = (WIDTH - LABEL_W - gap - 2 * right) / 2
    x_bytes, x_files = LABEL_W, LABEL_W + panel + right + gap
    max_bytes = nice_ceiling(max([max(r.bytesin or 0, r.bytesout or 0) for r in runs] + [1]))
    max_files = nice_ceiling(max([max(r.filesin or 0, r.filesout or 0, r.deltasbefore or 0) for r in runs] + [1]))
    height = TOP + ROW_H * max(len(runs), 1) + 30
    out = [
        _el("text", "Bytes read → written per run", x=x_bytes, y=16, class_="chart-title"),
        _el("text", "Files read → written (deltas before → after)", x=x_files, y=16, class_="chart-title"),
        _legend_item(x_bytes, 32, "bar-ratio", "in"),
        _legend_item(x_bytes + 50, 32, "bar-delta", "out"),
        _legend_item(x_files, 32, "bar-ratio", "in"),
        _legend_item(x_files + 50, 32, "bar-delta", "out"),
    ]
    half = BAR_H / 2
    for i, row in enumerate(runs):
        y = TOP + i * ROW_H
        label = f"#{row.compactionid} {row.type} {row.partname or ''}".strip()
        tip = (f"compaction {row.compactionid}: {row.filesin} files / {_bytes(row.bytesin or 0)} / {row.rowsin} rows "
               f"in, {row.filesout} files / {_bytes(row.bytesout or 0)} / {row.rowsout} rows out, deltas "
               f"{row.deltasbefore} → {row.deltasafter}, {row.coreseconds or 0:.1f} core-s, "
               f"{row.wallseconds or 0:.1f} s wall" + (f", {row.sparkappid}" if row.sparkappid else ""))
        parts = [_el("title", tip)]
        if i % 2 == 0:
            parts.append(_el("rect", x=0, y=y, width=WIDTH, height=ROW_H, class_="stripe"))
        parts.append(_el("text", _short(label), x=LABEL_W - 10, y=y + ROW_H / 2 + 4, class_="row-label",
                         text_anchor="end"))
        by = y + (ROW_H - BAR_H) / 2
        for x0, maximum, before, after, text in (
                (x_bytes, max_bytes, row.bytesin or 0, row.bytesout or 0,
                 f"{_bytes(row.bytesout or 0)} · {row.coreseconds or 0:.1f} core-s"),
                (x_files, max_files, row.filesin or 0, row.filesout or 0,
                 f"{row.filesout} (Δ {row.deltasbefore}→{row.deltasafter})")):
            w_in, w_out = panel * before / maximum, panel * after / maximum
            parts.append(_el("rect", x=x0, y=by, width=f"{w_in:.1f}", height=half, class_="bar-ratio"))
            parts.append(_el("rect", x=x0, y=f"{by + half:.1f}", width=f"{w_out:.1f}", height=half,
                             class_="bar-delta"))
            parts.append(_el("text", text, x=f"{x0 + max(w_in, w_out) + 5:.1f}", y=y + ROW_H / 2 + 4,
                             class_="value"))
        out.append(f"<g>{''.join(parts)}</g>")
    bottom = TOP + ROW_H * max(len(runs), 1)
    out += _axis(x_bytes, panel, bottom, max_bytes, _bytes)
    out += _axis(x_files, panel, bottom, max_files, lambda v: f"{v:g}")
    if not runs:
        out.append(_el("text", "no run figures recorded yet", x=WIDTH / 2, y=TOP + ROW_H / 2 + 4, class_="muted",
                       text_anchor="middle"))
    return _svg(height, out, "compaction run figures")
