"""A compaction worker process that SIGKILLs itself between a successful job and the commit (fault 2).

``python -m tests.reliability.fault_worker_child <metastore url> <point>``: claims the next queued compaction,
runs the job (LocalRunner) and, with its output written and verified, dies at ``point``:

* ``job_done`` — before the row is marked compacted (row 'working', compactor txn C open);
* ``marked``   — after the row went to 'ready for cleaning', before C commits.
"""

from __future__ import annotations

import os
import signal
import sys

from airflow_acid.compactor.worker import Worker
from airflow_acid.metastore import Metastore
from airflow_acid.spark.runners import LocalRunner
from tests.reliability.fault_env import CONF

POINTS = ("job_done", "marked")


def _die(*_args: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(url: str, point: str) -> int:
    if point not in POINTS:
        raise SystemExit(f"unknown point {point!r}; one of {POINTS}")
    worker = Worker(Metastore(url, CONF), host="doomed", runner=LocalRunner())
    mark = worker._mark_compacted_if_owner

    def mark_then_die(job) -> bool:
        mark(job)
        _die()
        return True

    worker._mark_compacted_if_owner = _die if point == "job_done" else mark_then_die
    outcome = worker.run_next()
    print(f"the worker was meant to die at {point} but finished: {outcome}", file=sys.stderr)
    return 3


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
