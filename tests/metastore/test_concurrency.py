"""8 processes hammer one metastore: txn ids stay unique, write ids dense per table, no unhandled deadlock.

Duration per backend: ``AIRFLOW_ACID_CONCURRENCY_SECONDS`` (default 10).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import random
import time
from collections import Counter, defaultdict

import pytest
import sqlalchemy as sa

from airflow_acid.acid.codes import OperationType
from airflow_acid.metastore.errors import WriteConflictError
from airflow_acid.metastore.init import init_schema
from airflow_acid.metastore.schema import NEXT_WRITE_ID, TXN_TO_WRITE_ID, TXNS, WRITE_SET
from airflow_acid.metastore.store import Metastore

DURATION_S = float(os.environ.get("AIRFLOW_ACID_CONCURRENCY_SECONDS", "10"))
PROCESSES = 8
TABLES = ("db.t0", "db.t1", "db.t2")


class _RetryCounter(logging.Handler):
    """Counts the transient-error retries Database.run logs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "transient database error" in record.getMessage():
            self.count += 1


def _worker(url: str, seconds: float, seed: int) -> dict:
    """One client: open (single or batch), allocate write ids, record components, commit or abort, read snapshots."""
    counter = _RetryCounter()
    logging.getLogger("airflow_acid.metastore.db").addHandler(counter)
    rng = random.Random(seed)
    ms = Metastore(url)
    txns = ms.txns
    opened: list[int] = []
    writes: list[tuple[int, str, int]] = []
    outcome: dict[int, str] = {}
    conflicts = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            batch = txns.open_txns(3 if rng.random() < 0.1 else 1, user=f"w{seed}", host="bench")
            opened.extend(batch)
            for t in batch:
                table = rng.choice(TABLES)
                db, name = table.split(".")
                wid = txns.allocate_write_id(t, db, name)
                writes.append((t, table, wid))
                op = OperationType.UPDATE if rng.random() < 0.3 else OperationType.INSERT
                txns.add_write_components(t, db, name, [f"p={rng.randrange(4)}"], op)
                if rng.random() < 0.1:
                    txns.abort(t)
                    outcome[t] = "a"
                    continue
                try:
                    txns.commit(t)
                    outcome[t] = "c"
                except WriteConflictError:
                    conflicts += 1
                    outcome[t] = "a"
            if rng.random() < 0.2:
                ms.snapshots.valid_write_ids(list(TABLES), ms.snapshots.valid_txn_list())
    finally:
        ms.close()
    return {"opened": opened, "writes": writes, "outcome": outcome, "conflicts": conflicts, "retries": counter.count}


@pytest.mark.slow
def test_many_processes_keep_ids_unique_and_dense(empty_db_url):
    ms = Metastore(empty_db_url)
    init_schema(ms.db)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(_worker, [(empty_db_url, DURATION_S, seed) for seed in range(PROCESSES)])

    opened = [t for r in results for t in r["opened"]]
    assert len(opened) == len(set(opened)), "a txn id was handed out twice"
    assert len(opened) >= PROCESSES  # every client made progress

    by_table: dict[str, list[int]] = defaultdict(list)
    mapping = {}
    for r in results:
        for t, table, wid in r["writes"]:
            by_table[table].append(wid)
            mapping[(t, table)] = wid
    with ms.db.begin() as conn:
        stored = {(int(r.T2W_TXNID), f"{r.T2W_DATABASE}.{r.T2W_TABLE}"): int(r.T2W_WRITEID)
                  for r in conn.execute(sa.select(TXN_TO_WRITE_ID))}
        next_ids = {f"{r.NWI_DATABASE}.{r.NWI_TABLE}": int(r.NWI_NEXT) for r in conn.execute(sa.select(NEXT_WRITE_ID))}
        states = dict(conn.execute(sa.select(TXNS.c.TXN_ID, TXNS.c.TXN_STATE).where(TXNS.c.TXN_ID > 0)).all())
        write_set = conn.execute(sa.select(WRITE_SET)).all()
    assert stored == mapping
    for table, wids in by_table.items():
        assert sorted(wids) == list(range(1, len(wids) + 1)), f"write ids of {table} are not dense"
        assert next_ids[table] == len(wids) + 1

    outcome = {t: s for r in results for t, s in r["outcome"].items()}
    assert {t: states[t] for t in outcome} == outcome
    assert "o" not in states.values()

    # first committer wins: no two committed updates of a partition overlap in [txn id, commit id]
    per_partition = defaultdict(list)
    for row in write_set:
        per_partition[(row.WS_TABLE, row.WS_PARTITION)].append((int(row.WS_TXNID), int(row.WS_COMMIT_ID)))
    for spans in per_partition.values():
        spans.sort(key=lambda s: s[1])
        for (t1, c1), (t2, _c2) in zip(spans, spans[1:]):
            assert c1 < t2, f"txns {t1} (commit id {c1}) and {t2} both committed updates of one partition"

    stats = Counter()
    for r in results:
        stats["txns"] += len(r["opened"])
        stats["conflicts"] += r["conflicts"]
        stats["transient_retries"] += r["retries"]
    print(f"\n{empty_db_url.split(':')[0]}: {dict(stats)} in {DURATION_S:g}s x {PROCESSES} processes")
    ms.close()
