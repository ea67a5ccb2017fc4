"""The inline SVG charts: well-formed, escaped, thresholds drawn, marks coloured by state, large inputs capped."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pytest

from airflow_acid.metastore.compactions import ShowCompactionsRow
from airflow_acid.plugins.charts import (
    MAX_LANES,
    MAX_ROWS,
    figures_chart,
    history_chart,
    nice_ceiling,
    partition_chart,
)

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup) -> ET.Element:
    return ET.fromstring(str(markup))


def _texts(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{SVG}text")]


def _partition(name, deltas=0, delete_deltas=0, ratio=None) -> dict:
    return {"partition": name, "deltas": deltas, "delete_deltas": delete_deltas, "delta_base_ratio": ratio}


def _compaction(cid, part, state, type_="MAJOR", enqueued=1_700_000_000_000, start=None, duration=None):
    return ShowCompactionsRow(cid, "db", "t", part, type_, state, None, None, enqueued, start, duration, None, None,
                              None, None, "default", None, None, None, None)


@pytest.mark.parametrize(("value", "ceiling"), [(0, 1), (0.07, 0.1), (3, 5), (11, 20), (21, 25), (100, 100)])
def test_axis_ends_on_a_round_number(value, ceiling):
    assert nice_ceiling(value) == pytest.approx(ceiling)


def test_partition_chart_draws_thresholds_and_flags_what_crosses_them():
    root = _parse(partition_chart([_partition("ds=<b>", 9, 3, 0.25), _partition(None, 1, 0, None)], 10, 0.1))
    texts = _texts(root)
    assert "ds=<b>" in texts and "(whole table)" in texts  # escaped in the markup, read back as text
    assert {"threshold 10", "threshold 10%", "12", "25%", "no base"} <= set(texts)
    over = {t.text for t in root.iter(f"{SVG}text") if "over" in t.get("class", "").split()}
    assert over == {"12", "25%"}  # 12 deltas > 10; 25% > 10%
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert titles[0] == "ds=<b>: 9 insert + 3 delete deltas, delta/base 25%"


def test_partition_chart_tells_an_empty_base_from_no_base_and_never_rounds_a_ratio_to_zero():
    rows = [{**_partition("ds=1", 1, 0, None), "base_write_id": 6}, {**_partition("ds=2", 1, 0, 819 / 818),
                                                                     "base_write_id": 6},
            {**_partition("ds=3", 1, 0, 0.0004), "base_write_id": 6}]
    texts = _texts(_parse(partition_chart(rows, 10, 0.1)))
    assert "empty base" in texts and "no base" not in texts
    assert "100%" in texts and "<0.1%" in texts  # 819 B over 818 B is not 0 %, nor is 0.04 %


def test_partition_chart_shows_at_most_max_rows():
    root = _parse(partition_chart([_partition(f"p={i}", i) for i in range(MAX_ROWS + 5)], 10, 0.1))
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "row-label"]
    assert len(labels) == MAX_ROWS


def test_history_chart_marks_each_compaction_by_type_and_state():
    rows = [_compaction(1, "p=1", "succeeded", "MAJOR", start=1_700_000_060_000, duration=30_000),
            _compaction(2, "p=2", "failed", "MINOR", enqueued=1_700_000_120_000),
            _compaction(3, None, "initiated", "REBALANCE", enqueued=1_700_000_180_000)]
    root = _parse(history_chart(rows))
    marks = [(m.tag.removeprefix(SVG), m.get("class")) for m in root.iter() if "mark" in (m.get("class") or "")
             and "neutral" not in m.get("class")]
    assert ("rect", "mark s-succeeded") in marks and ("circle", "mark s-failed") in marks
    assert ("path", "mark s-initiated") in marks  # neither major nor minor: a diamond
    assert [s.get("class") for s in root.iter(f"{SVG}rect") if "span" in (s.get("class") or "")] == [
        "span s-succeeded"]  # only the run with a start and a duration gets a span
    assert {"p=1", "p=2", "(whole table)", "succeeded", "failed", "initiated"} <= set(_texts(root))


def test_history_chart_keeps_the_most_recent_lanes_and_says_when_empty():
    rows = [_compaction(i, f"p={i:03d}", "succeeded", enqueued=1_700_000_000_000 + i * 1000)
            for i in range(MAX_LANES + 6)]
    labels = {t.text for t in _parse(history_chart(rows)).iter(f"{SVG}text") if t.get("class") == "row-label"}
    assert labels == {f"p={i:03d}" for i in range(6, MAX_LANES + 6)}
    assert "no compactions recorded yet" in _texts(_parse(history_chart([])))


def test_figures_chart_draws_each_recorded_run_and_skips_the_others():
    ran = dataclasses.replace(_compaction(7, "p=1", "succeeded"), filesin=6, bytesin=3 * 1024 * 1024, rowsin=900,
                              filesout=1, bytesout=1024 * 1024, rowsout=880, deltasbefore=6, deltasafter=0,
                              sparkappid="local-1", coreseconds=2.5, wallseconds=4.0)
    root = _parse(figures_chart([ran, _compaction(8, "p=2", "failed")]))
    texts = _texts(root)
    assert "#7 MAJOR p=1" in texts and not any(t and t.startswith("#8") for t in texts)  # no figures: no row
    assert "1.0 MiB · 2.5 core-s" in texts and "1 (Δ 6→0)" in texts
    bars = [float(r.get("width")) for r in root.iter(f"{SVG}rect") if r.get("class") in ("bar-ratio", "bar-delta")
            and r.get("height") != "10"]
    assert bars[0] == pytest.approx(3 * bars[1])  # bytes in is three times bytes out
    tip = next(t.text for t in root.iter(f"{SVG}title"))
    assert "900 rows in" in tip and "local-1" in tip
    assert "no run figures recorded yet" in _texts(_parse(figures_chart([_compaction(8, "p=2", "failed")])))
