"""Plain (non-ACID) ORC tables read by SQL as Hive reads them — every ORC file of the table or partition directory
— so they join ACID tables and feed INSERT … SELECT and MERGE; ROW__ID and other storage formats refused with the
reason; on each backend."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_acid.client.errors import NotTransactionalError
from airflow_acid.statements import StatementExecutor, parse_statements
from tests.services.support import unique


def run(wh, text: str):
    return [StatementExecutor(wh).run(s) for s in parse_statements(text)]


def plain_table(wh, files: list[list[tuple[int, str]]]) -> str:
    """A transactional=false ORC table whose directory holds ``files`` as Hive names them (000000_0, …)."""
    name = unique("plain")
    run(wh, f"CREATE TABLE {name} (id INT, name STRING) STORED AS ORC TBLPROPERTIES ('transactional'='false')")
    location = wh.table(name).location
    fs, root = wh.io.storage(location)
    fs.makedirs(root, exist_ok=True)
    for i, rows in enumerate(files):
        with fs.open(f"{root}/{i:06d}_0", "wb") as f:
            orc.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int32()),
                                      "name": pa.array([r[1] for r in rows], pa.string())}), f)
    return name


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["a", "b", "c"])), max_size=4),
                      min_size=1, max_size=3))
def test_plain_orc_tables_join_acid_tables_and_feed_insert_select(wh, files):
    plain = plain_table(wh, files)
    acid = unique("plain_acid")
    run(wh, f"CREATE TABLE {acid} (id INT, score INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    run(wh, f"INSERT INTO {acid} VALUES (1, 10), (2, 20), (3, 30)")
    rows = [r for f in files for r in f]

    [selected] = run(wh, f"SELECT id, name FROM {plain}")
    assert sorted(map(tuple, selected.rows)) == sorted(rows)
    [joined] = run(wh, f"SELECT p.id, p.name, a.score FROM {plain} p JOIN {acid} a ON p.id = a.id")
    scores = {1: 10, 2: 20, 3: 30}
    assert sorted(map(tuple, joined.rows)) == sorted((i, n, scores[i]) for i, n in rows if i in scores)

    run(wh, f"INSERT INTO {acid} SELECT id, length(name) FROM {plain} WHERE id > 3")
    assert sorted((r["id"], r["score"]) for r in wh.read(acid).to_pylist()) == \
        sorted([(1, 10), (2, 20), (3, 30)] + [(i, 1) for i, _ in rows if i > 3])


def test_row_id_and_other_formats_are_refused_with_the_reason(wh):
    plain = plain_table(wh, [[(1, "a")]])
    with pytest.raises(NotTransactionalError, match="no ROW__ID"):
        run(wh, f"SELECT ROW__ID, id FROM {plain}")
    with pytest.raises(NotTransactionalError, match="not transactional"):
        run(wh, f"DELETE FROM {plain} WHERE id = 1")
