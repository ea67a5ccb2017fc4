"""Requests per operation on an S3-compatible store (moto's server on loopback, s3fs), against the minimum.

Counts every HTTP request the S3 client sends (botocore's ``before-send`` event) while one operation runs:
a 1-row insert, a read of a table with 10 deltas, a MAJOR compaction of those 10 deltas (in-process runner, so the
job's requests are counted too), and the Cleaner removing the 10 obsolete directories. ``minimum`` is what the
operation cannot do without (one LIST per directory listing, one GET per input file, one PUT per output file or
marker, one batched DELETE); the compaction's output verification is counted separately in the minimum. Prints
one JSON object with per-operation totals and per-API counts.
Usage: python bench/bench_object_store_requests.py [--deltas 10]
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import socket
import tempfile
import uuid
from contextlib import contextmanager

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


class RequestCounter:
    """Counts S3 API calls by name (PutObject, GetObject, ListObjectsV2, DeleteObjects, HeadObject …)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()

    def __call__(self, event_name: str, **_: object) -> None:
        self.calls[event_name.rsplit(".", 1)[-1]] += 1

    @contextmanager
    def measure(self, into: dict, name: str, minimum: int, note: str):
        self.calls.clear()
        yield
        into[name] = {"requests": sum(self.calls.values()), "minimum": minimum, "by_api": dict(sorted(self.calls.items())),
                      "note": note}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=10)
    args = parser.parse_args()
    n = args.deltas

    import s3fs
    from moto.server import ThreadedMotoServer

    from airflow_acid.acid.codes import CompactionType
    from airflow_acid.client.warehouse import AcidWarehouse
    from airflow_acid.compactor.cleaner import Cleaner
    from airflow_acid.compactor.worker import Worker
    from airflow_acid.metastore import Metastore
    from airflow_acid.metastore.conf import MetastoreConf
    from airflow_acid.spark.runners import LocalRunner

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access log
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        fs = s3fs.S3FileSystem(endpoint_url=f"http://127.0.0.1:{port}", skip_instance_cache=True)
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        fs.mkdir(bucket)
        fs.connect()
        counter = RequestCounter()
        fs.s3.meta.events.register("before-send", counter)
        results: dict[str, dict] = {}
        with tempfile.TemporaryDirectory() as tmp:
            ms = Metastore(f"sqlite:///{tmp}/metastore.db", MetastoreConf(opentxn_timeout_ms=0)).init()
            wh = AcidWarehouse(ms, f"s3://{bucket}/warehouse", init=False, filesystem=fs)
            wh.create_table("db.t", [("id", "int"), ("name", "string")])
            with counter.measure(results, "insert_1_row", 2, "PUT bucket_00000, PUT _orc_acid_version"):
                with wh.transaction() as t:
                    t.insert("db.t", [{"id": 0, "name": "r0"}])
            for i in range(1, n):
                with wh.transaction() as t:
                    t.insert("db.t", [{"id": i, "name": f"r{i}"}])
            with counter.measure(results, f"read_{n}_deltas", 1 + n, f"LIST once, GET each of {n} files"):
                assert wh.read("db.t").num_rows == n
            ms.compactions.enqueue("db", "t", None, CompactionType.MAJOR)
            worker = Worker(ms, filesystem=fs, runner=LocalRunner())
            with counter.measure(results, f"major_{n}_deltas", 1 + 1 + n + 2 + 3,
                                 f"plan LIST + job: LIST, GET each of {n} inputs, PUT base file + marker; verification: "
                                 "LIST, GET output, GET marker"):
                outcome = worker.run_next()
                assert outcome is not None and outcome.succeeded, outcome
            with counter.measure(results, f"clean_{n}_dirs", 3, "LIST, one batched DELETE, LIST (verification)"):
                report = Cleaner(ms, filesystem=fs).run_cycle()
                assert len(report.deletions) == n, report
            assert wh.read("db.t").num_rows == n
            ms.close()
    finally:
        server.stop()
    from goals import Goal, emit
    emit({"benchmark": "object_store_requests", "store": "moto S3 server (loopback) via s3fs", "operations": results,
          "excess_requests": sum(r["requests"] - r["minimum"] for r in results.values())},
         [Goal("requests per operation = the minimum (no excess request in any operation)", "excess_requests", "<=", 0)])


if __name__ == "__main__":
    main()
