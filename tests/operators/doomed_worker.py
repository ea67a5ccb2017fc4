"""The process a compaction task runs in, for tests/operators/test_durable_compaction.py: claims one queue row and
compacts it through SparkSubmitHookRunner; the test SIGKILLs this process while the Spark application runs.

Usage: python -m tests.operators.doomed_worker METASTORE_URL WORKDIR CQ_ID TXN_TIMEOUT_S
"""

from __future__ import annotations

import sys

from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.operators.spark import SparkSubmitHookRunner


def main(url: str, workdir: str, cq_id: str, txn_timeout_s: str) -> None:
    conf = MetastoreConf(opentxn_timeout_ms=0, txn_timeout_s=float(txn_timeout_s))
    worker = Worker(Metastore(url, conf), runner=SparkSubmitHookRunner(workdir=workdir), worker_id="doomed-1")
    print(worker.claim_and_compact([int(cq_id)]), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
