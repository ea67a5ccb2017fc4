"""Where a submitted compaction job keeps its files, so that a process other than the one that submitted it can
find it again: one directory per job under a work directory, named after the job key of its first compaction
(``acid-cq<row>-txn<C>``; the other compactions of the job get a symbolic link of their own key to it).

Inside: ``plan.json``, ``result.json`` (written by the job after every wave), ``application_id`` (written by the
job once its Spark application started) and ``submit.json`` (host and pid of spark-submit). A retried task reads
them to wait for the application its dead predecessor started instead of submitting a second one. Sharing the
work directory between workers (a network filesystem) lets a retry on another host find the job too.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_acid.job.plan import CompactionPlan
from airflow_acid.job.result import JobStatus, PlanResult

DIR_PREFIX = "acid-"
PLAN, RESULT, APPLICATION_ID, SUBMIT = "plan.json", "result.json", "application_id", "submit.json"
DEFAULT_MASTER_UI_PORT = 8080


@dataclass(frozen=True)
class JobDir:
    """The directory of one submitted job."""

    path: str

    @property
    def plan_path(self) -> str:
        return os.path.join(self.path, PLAN)

    @property
    def result_path(self) -> str:
        return os.path.join(self.path, RESULT)

    @property
    def application_id_path(self) -> str:
        return os.path.join(self.path, APPLICATION_ID)

    def exists(self) -> bool:
        return os.path.isfile(self.plan_path)

    def plan(self) -> CompactionPlan:
        return CompactionPlan.from_json(Path(self.plan_path).read_text(), source=self.plan_path)

    def application_id(self) -> str | None:
        """The Spark application id the job wrote once it started (None before that)."""
        try:
            return Path(self.application_id_path).read_text().strip() or None
        except FileNotFoundError:
            return None

    def complete_result(self) -> PlanResult | None:
        """The job's result once every compaction in it finished (None while it runs, or without a result)."""
        try:
            result = PlanResult.from_json(Path(self.result_path).read_text())
        except (FileNotFoundError, ValueError):
            return None
        if any(c.status == JobStatus.RUNNING for c in result.compactions):
            return None
        return result

    def record_submit(self, pid: int) -> None:
        """Note which process on which host runs spark-submit (read by :meth:`submit_process_alive`)."""
        tmp = os.path.join(self.path, f".{SUBMIT}.tmp")
        Path(tmp).write_text(json.dumps({"host": socket.gethostname(), "pid": pid}))
        os.replace(tmp, os.path.join(self.path, SUBMIT))

    def submit_process_alive(self) -> bool | None:
        """Whether the recorded spark-submit process still runs: None when it ran on another host (or was not
        recorded), so this host cannot tell."""
        try:
            doc = json.loads(Path(self.path, SUBMIT).read_text())
        except (FileNotFoundError, ValueError):
            return None
        if doc.get("host") != socket.gethostname():
            return None
        return process_alive(int(doc["pid"]))


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def job_dir_for(workdir: str, key: str) -> JobDir:
    """The directory of the job that runs the compaction attempt ``key`` (a link for the job's later compactions)."""
    return JobDir(os.path.join(workdir, DIR_PREFIX + key))


def create_job_dir(workdir: str, keys: Sequence[str]) -> JobDir:
    """A fresh directory for a job running the attempts ``keys``: named after the first, linked from the others.
    A leftover of the same name (another metastore's attempt with the same ids) is replaced."""
    os.makedirs(workdir, exist_ok=True)
    first = job_dir_for(workdir, keys[0])
    for key in keys:
        path = job_dir_for(workdir, key).path
        if os.path.islink(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
    os.makedirs(first.path)
    for key in keys[1:]:
        os.symlink(os.path.basename(first.path), job_dir_for(workdir, key).path)
    return first


def standalone_application_running(master: str, application_id: str, *, ui_port: int = DEFAULT_MASTER_UI_PORT,
                                   timeout_s: float = 10.0) -> bool | None:
    """Whether a Spark standalone master (``spark://host:port[,host:port]``) lists ``application_id`` among its
    active applications (its UI's ``/json/`` document); None when no master answered."""
    if not master.startswith("spark://"):
        return None
    for hostport in master[len("spark://"):].split(","):
        host = hostport.strip().rsplit(":", 1)[0]
        try:
            with urllib.request.urlopen(f"http://{host}:{ui_port}/json/", timeout=timeout_s) as response:
                doc = json.loads(response.read())
        except (OSError, ValueError):
            continue
        if doc.get("status", "ALIVE") != "ALIVE":
            continue  # a standby master of an HA pair
        return any(app.get("id") == application_id for app in doc.get("activeapps", []))
    return None


__all__ = ["JobDir", "create_job_dir", "job_dir_for", "process_alive", "standalone_application_running"]
