"""Table health over many partitions: ``warehouse_health`` (what ``airflow-acid health`` and the console show) vs
the irreducible work — one listing + getAcidState per partition at the same snapshot — measured in the same run.

Builds one table with P partitions written by D transactions (each transaction writes every partition), runs both
``--repeat`` times and reports the best. The ratio is health / baseline (target: close to 1, i.e. the metastore
queries of a health scan do not grow with the number of partitions). Prints one JSON object.

Usage: python bench/bench_health.py [--partitions 500] [--deltas 4] [--repeat 3] [--metastore-url URL]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from goals import Goal, emit

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.listing import directory_state
from airflow_acid.services.health import warehouse_health


def build(wh: AcidWarehouse, partitions: int, deltas: int) -> None:
    wh.create_database("bench")
    wh.create_table("bench.t", [("id", "bigint"), ("name", "string")], partition_by=[("p", "int")])
    for d in range(deltas):
        rows = [{"id": d * partitions + p, "name": f"r{p}", "p": p} for p in range(partitions)]
        with wh.transaction() as txn:
            txn.insert("bench.t", rows)


def baseline(wh: AcidWarehouse) -> int:
    """One listing + getAcidState per partition at one snapshot: what any health scan must do."""
    ms = wh.metastore
    txns = ms.snapshots.valid_txn_list()
    write_ids = ms.snapshots.valid_write_id_list("bench.t", txns)
    deltas = 0
    for part in ms.catalog.list_partitions("bench", "t"):
        state = directory_state(part.location, write_ids, txns, missing_ok=True)
        deltas += len(state.deltas)
    return deltas


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


GOALS = [Goal("health scan <= 2x one listing + getAcidState per partition", "ratio_health_vs_listing", "<=", 2.0)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=500)
    ap.add_argument("--deltas", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--metastore-url", default=None, help="default: a SQLite file in a temporary folder")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="bench-health-"))
    url = args.metastore_url or f"sqlite:///{work / 'metastore.db'}"
    with AcidWarehouse(url, work / "warehouse") as wh:
        start = time.perf_counter()
        build(wh, args.partitions, args.deltas)
        build_s = time.perf_counter() - start
        base_s, deltas = best(lambda: baseline(wh), args.repeat)
        health_s, rows = best(lambda: warehouse_health(wh, "bench"), args.repeat)
    assert len(rows) == args.partitions and sum(r.deltas for r in rows) == deltas == args.partitions * args.deltas
    emit({
        "benchmark": "table health over many partitions",
        "backend": url.split(":", 1)[0], "partitions": args.partitions, "deltas_per_partition": args.deltas,
        "build_seconds": round(build_s, 2),
        "baseline_listing_seconds": round(base_s, 4), "health_seconds": round(health_s, 4),
        "health_ms_per_partition": round(1000 * health_s / args.partitions, 3),
        "ratio_health_vs_listing": round(health_s / base_s, 3),
    }, GOALS)


if __name__ == "__main__":
    main()
