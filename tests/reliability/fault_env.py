"""What every fault test needs: a table whose committed rows are known independently of the system (a ledger),
the recovery steps an operator's schedule runs (housekeeping past the timeout, revoke, re-run, clean), and the
end-state checks — rows equal the ledger, no output of a failed attempt left or visible, nothing outside the
table location touched. A broken invariant is recorded in the run's summary and fails the test."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.compute as pc

from airflow_acid.acid.codes import CompactionState, CompactionType
from airflow_acid.acid.names import parse_dir
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.compactor.cleaner import Cleaner, CleanerStatus
from airflow_acid.compactor.housekeeper import HouseKeeper
from airflow_acid.compactor.messages import WorkerOutcome, WorkerStatus
from airflow_acid.compactor.worker import Worker
from airflow_acid.job.layout import TMP_PREFIX
from airflow_acid.job.runner import Runner
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.spark.runners import LocalRunner
from tests.reliability.conftest import ReliabilitySummary

TABLE = "db.t"
NEIGHBOUR = "db.neighbour"
COLUMNS = [("id", "int"), ("name", "string")]
# A committed compaction is cleanable as soon as its readers are gone (no open-txn window to wait out).
CONF = MetastoreConf(opentxn_timeout_ms=0)
DEAD_AFTER_S = 0.5
"""hive.txn.timeout of the recovery HouseKeeper: a txn whose process died is aborted once this has passed."""


def make_warehouse(url: str, root: Path | str, conf: MetastoreConf = CONF, **kwargs) -> AcidWarehouse:
    return AcidWarehouse(Metastore(url, conf).init(), root, init=False, host="reliability", **kwargs)


def check(summary: ReliabilitySummary, ok: bool, detail: str) -> None:
    """An invariant: record a mismatch in the run's summary and fail when it does not hold."""
    if not ok:
        summary.mismatch(detail)
        raise AssertionError(detail)


def clear_error(summary: ReliabilitySummary, exc: BaseException, *names: str) -> None:
    """An expected error: count it by class and insist that its message names what it is about."""
    message = str(exc)
    # a name may appear as itself or quoted by repr (control characters such as '\r' are shown escaped)
    check(summary, bool(message.strip()) and all(n in message or repr(n)[1:-1] in message for n in names),
          f"{type(exc).__name__} does not name {names}: {message!r}")
    summary.error(type(exc).__name__)


@dataclass
class Ledger:
    """The committed rows of one table, kept by the test: every committed write updates both table and ledger."""

    wh: AcidWarehouse
    summary: ReliabilitySummary
    table: str = TABLE
    rows: dict[int, str] = field(default_factory=dict)

    def insert(self, ids: Iterable[int], tag: str = "n") -> None:
        new = {i: f"{tag}{i}" for i in ids}
        with self.wh.transaction() as txn:
            txn.insert(self.table, [{"id": i, "name": n} for i, n in new.items()])
        self.rows.update(new)
        self.summary.add("transactions_committed")

    def update(self, ids: Iterable[int], name: str) -> None:
        ids = list(ids)
        with self.wh.transaction() as txn:
            txn.update(self.table, set={"name": name}, where=pc.field("id").isin(ids))
        self.rows.update({i: name for i in ids if i in self.rows})
        self.summary.add("transactions_committed")

    def delete(self, ids: Iterable[int]) -> None:
        ids = list(ids)
        with self.wh.transaction() as txn:
            txn.delete(self.table, where=pc.field("id").isin(ids))
        for i in ids:
            self.rows.pop(i, None)
        self.summary.add("transactions_committed")

    def history(self, batches: int = 3, size: int = 4) -> Ledger:
        """Inserts, an update and a delete: several deltas and a delete delta to compact."""
        for b in range(batches):
            self.insert(range(b * 10, b * 10 + size))
        self.update([1, 11], "updated")
        self.delete([2])
        return self

    def expected(self) -> list[tuple[int, str]]:
        return sorted(self.rows.items())


def table_rows(wh: AcidWarehouse, table: str = TABLE) -> list[tuple[int, str]]:
    return sorted((r["id"], r["name"]) for r in wh.read(table).to_pylist())


def check_rows(summary: ReliabilitySummary, ledger: Ledger, when: str) -> None:
    """The table reads exactly the committed rows."""
    got = table_rows(ledger.wh, ledger.table)
    summary.add("reads_checked")
    check(summary, got == ledger.expected(), f"{ledger.table} {when}: read {got}, committed {ledger.expected()}")


def acid_dirs(location: str) -> list[str]:
    return sorted(os.listdir(location))


def dirs_of_txn(location: str, txn_id: int) -> list[str]:
    """Directories written by compactor txn ``txn_id``: ``…_v<txn>`` outputs and its hidden temporary directory."""
    out = []
    for name in acid_dirs(location):
        parsed = parse_dir(name) if not name.startswith("_") else None
        if (parsed is not None and parsed.visibility_txn_id == txn_id) or name == f"{TMP_PREFIX}{txn_id:07d}":
            out.append(name)
    return out


def check_no_output_of(summary: ReliabilitySummary, location: str, txn_ids: Iterable[int], when: str) -> None:
    for txn in txn_ids:
        left = dirs_of_txn(location, txn)
        check(summary, not left, f"{when}: output of failed compactor txn {txn} is still in {location}: {left}")


def fingerprint(root: Path, skip: str) -> dict[str, tuple[int, str]]:
    """Size and SHA-1 of every file under ``root`` except below ``skip`` (the table location)."""
    skip_path = Path(skip).resolve()
    out = {}
    for path in sorted(root.rglob("*")):
        resolved = path.resolve()
        if path.is_file() and not path.is_symlink() and skip_path not in (resolved, *resolved.parents):
            out[str(path.relative_to(root))] = (path.stat().st_size, hashlib.sha1(path.read_bytes()).hexdigest())
    return out


@dataclass
class Scene:
    """A warehouse with the table under test (known history), a neighbouring table and a file beside the
    warehouse; ``untouched()`` compares everything outside the table location with how it was at the start."""

    wh: AcidWarehouse
    root: Path
    ledger: Ledger
    summary: ReliabilitySummary
    _before: dict[str, tuple[int, str]] = field(default_factory=dict)

    @classmethod
    def build(cls, url: str, root: Path, summary: ReliabilitySummary, *, conf: MetastoreConf = CONF,
              batches: int = 3, warehouse: str | None = None, **kwargs) -> Scene:
        """``root``: the local folder holding the warehouse (``warehouse``: its URL when not ``root/wh``)."""
        wh = make_warehouse(url, warehouse or root / "wh", conf, **kwargs)
        wh.create_table(TABLE, COLUMNS)
        wh.create_table(NEIGHBOUR, COLUMNS)
        with wh.transaction() as txn:
            txn.insert(NEIGHBOUR, [{"id": 1, "name": "keep me"}])
        (root / "beside").mkdir(exist_ok=True)
        (root / "beside" / "notes.txt").write_text("not part of any table\n")
        ledger = Ledger(wh, summary).history(batches)
        scene = cls(wh, root, ledger, summary)
        scene._before = scene._outside()
        return scene

    @property
    def location(self) -> str:
        """The table's directory as a local path (the catalog may hold a URL)."""
        return self.wh.io.storage(self.wh.table(TABLE).location)[1]

    @property
    def ms(self) -> Metastore:
        return self.wh.metastore

    def _outside(self) -> dict[str, tuple[int, str]]:
        return fingerprint(self.root, self.location)

    def untouched(self, when: str) -> None:
        now = self._outside()
        changed = sorted(k for k in set(now) | set(self._before) if now.get(k) != self._before.get(k))
        check(self.summary, not changed, f"{when}: files outside {self.location} changed: {changed}")

    def enqueue(self, kind: str = "major") -> int:
        db, table = TABLE.split(".")
        result = self.ms.compactions.enqueue(db, table, None, CompactionType.parse(kind))
        assert result.accepted, result.message
        return result.id

    def worker(self, runner: Runner | None = None, conf: MetastoreConf | None = None, **kwargs) -> Worker:
        return Worker(self.ms, conf, runner=runner or LocalRunner(), host="reliability", **kwargs)

    def compact(self, kind: str = "major", runner: Runner | None = None) -> WorkerOutcome:
        """Request and run one compaction that must succeed."""
        cq = self.enqueue(kind)
        outcome = self.worker(runner).run_next()
        check(self.summary, outcome is not None and outcome.compaction_id == cq
              and outcome.status == WorkerStatus.COMPACTED, f"compaction {cq} did not succeed: {outcome}")
        self.summary.add("compactions")
        return outcome

    def housekeep_dead(self) -> list[int]:
        """The HouseKeeper once hive.txn.timeout has passed without heartbeats: aborts the dead txns."""
        time.sleep(DEAD_AFTER_S + 0.1)
        report = HouseKeeper(self.ms, dataclasses.replace(self.ms.conf, txn_timeout_s=DEAD_AFTER_S)).run_once()
        assert report.ran, report.message
        return report.aborted_txns

    def clean(self) -> list[str]:
        """One Cleaner cycle; every cleaned row is counted; returns the statuses of the rows it handled."""
        report = Cleaner(self.ms, filesystem=self.wh.filesystem).run_cycle()
        statuses = [e.status for e in report.entries]
        self.summary.add("cleanings", statuses.count(CleanerStatus.CLEANED))
        return statuses

    def history_states(self, cq_ids: Iterable[int]) -> list[CompactionState]:
        return [self.ms.compactions.get(cq).state for cq in cq_ids]

    def final_check(self, failed_txns: Iterable[int], when: str, *, clean_dirs: list[str] | None = None) -> None:
        """After recovery: rows are the committed ones, no failed attempt's output remains, outside untouched,
        and (``clean_dirs``) the table location holds exactly those directories."""
        check_rows(self.summary, self.ledger, when)
        check_no_output_of(self.summary, self.location, failed_txns, when)
        if clean_dirs is not None:
            left = acid_dirs(self.location)
            check(self.summary, left == sorted(clean_dirs), f"{when}: table location holds {left}, "
                                                            f"expected {sorted(clean_dirs)}")
        self.untouched(when)
        neighbour = sorted((r["id"], r["name"]) for r in self.wh.read(NEIGHBOUR).to_pylist())
        check(self.summary, neighbour == [(1, "keep me")], f"{when}: neighbouring table reads {neighbour}")
