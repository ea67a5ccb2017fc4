"""Writer processes of the concurrent-load test and the handle the test keeps on each of them.

A writer is a separate process (forked from a pre-imported server, see :class:`WriterProcess`) looping over
transactions on the partitioned, bucketed main table until a stop file appears: one to three statements each (INSERT
with dynamic partitions, UPDATE, DELETE, MERGE on one partition), plus one marker row in the unpartitioned marker
table that says "this txn committed" (the oracle when the metastore no longer knows a txn). Some transactions abort
on purpose (an explicit abort, or an exception inside the ``with`` block). Before committing, a writer journals
its intent; after, the outcome (see ``model``). Expected errors (write conflicts, time-outs) are journaled by kind;
anything else is journaled as a crash and ends the process with exit code 3.

Slot ``s`` only updates, deletes and merges keys it inserted itself, so the model can replay commits in id order;
slots still collide on partitions, which is where write conflicts come from.
"""

from __future__ import annotations

import faulthandler
import json
import multiprocessing
import os
import random
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from airflow_acid.acid.codes import TxnState
from airflow_acid.client.predicates import source
from airflow_acid.client.transaction import Transaction
from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.metastore import Metastore
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import WriteConflictError
from airflow_acid.metastore.txns import AbortReason
from tests.reliability.model import (
    Journal,
    Kind,
    Model,
    Outcome,
    State,
    apply_ops,
    delete_op,
    insert_op,
    merge_op,
    update_op,
)

TABLE = "load.t"
MARKERS = "load.markers"
COLUMNS = [("k", "bigint"), ("v", "string"), ("w", "bigint")]
PARTITION_KEYS = [("p", "string")]
MARKER_COLUMNS = [("k", "bigint"), ("slot", "int")]
HOT_PARTITIONS = ("p0", "p1", "p2")
ERA_PARTITION_SHARE = 0.1
"""Share of inserted rows that go to the partition of the current era, ``e<n>`` (n = seconds since the run's
epoch // era length): new partitions keep appearing during the run, often registered by several writers at once."""
KEYS_PER_SLOT = 10**9
KEYS_PER_INCARNATION = 10**6
EXIT_CRASHED = 3


def timed_out(wh: AcidWarehouse, txn_id: int) -> bool:
    """Whether the HouseKeeper aborted ``txn_id`` for missing heartbeats (hive.txn.timeout)."""
    return any(t.txnid == txn_id and t.state is TxnState.ABORTED and t.meta_info == AbortReason.TIMEOUT
               for t in wh.metastore.txns.show_transactions())


def create_tables(wh: AcidWarehouse) -> None:
    """The two tables every writer uses: ``load.t`` (partitioned by p, 2 buckets on k) and ``load.markers``."""
    wh.create_table(TABLE, COLUMNS, partition_by=PARTITION_KEYS, bucket_by=["k"], num_buckets=2)
    wh.create_table(MARKERS, MARKER_COLUMNS)


@dataclass(frozen=True)
class WriterConfig:
    """Everything one writer process needs (handed to the process as JSON)."""

    slot: int
    metastore_url: str
    warehouse: str
    journal: str
    stop_file: str
    settings: dict[str, Any] = field(default_factory=dict)
    """Hive keys for MetastoreConf.from_mapping (hive.txn.timeout …)."""
    incarnation: int = 0
    seed: int = 0
    abort_rate: float = 0.08
    pause_s: float = 0.05
    epoch: float = 0.0
    """Start of the run (time.time()); era partitions count from it."""
    era_s: float = 4.0

    @property
    def name(self) -> str:
        return f"writer{self.slot}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WriterConfig:
        return cls(**json.loads(text))


class _DeliberateAbort(Exception):
    """Raised inside a transaction's ``with`` block so that ``__exit__`` aborts it."""


class Writer:
    """One incarnation of a writer slot: rebuilds its keys from the journal, then writes until told to stop."""

    def __init__(self, cfg: WriterConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.journal = Journal(cfg.journal)
        model = Model()
        model.feed(self.journal.records()[0])
        pending = model.unresolved(cfg.name)
        if pending:
            raise RuntimeError(f"{cfg.name}: transactions {pending} of an earlier incarnation have no outcome; the "
                               "killer must settle them before restarting the slot")
        self.live = model.state_at(lambda _txn: True, writer=cfg.name)
        ever = {row[0] for i in model.intents.values()
                if i.writer == cfg.name and model.outcomes.get(i.txn) is Outcome.COMMITTED
                for op in i.ops if op[0] in ("insert", "merge") for row in op[1]}
        self.dead = ever - set(self.live)
        self.next_key = cfg.slot * KEYS_PER_SLOT + cfg.incarnation * KEYS_PER_INCARNATION
        conf = MetastoreConf.from_mapping(cfg.settings)
        self.wh = AcidWarehouse(Metastore(cfg.metastore_url, conf), cfg.warehouse, init=False,
                                host=f"load-{cfg.name}", user="load")

    def run(self) -> None:
        self.journal.append({"kind": Kind.STARTED.value, "writer": self.cfg.name, "pid": os.getpid(),
                             "incarnation": self.cfg.incarnation})
        while not os.path.exists(self.cfg.stop_file):
            self.one_transaction()
            time.sleep(self.rng.uniform(0, self.cfg.pause_s))

    # --- one transaction ---------------------------------------------------------------------------------

    def one_transaction(self) -> None:
        cfg, rng = self.cfg, self.rng
        staged = dict(self.live)
        dead = set(self.dead)
        ops: list[tuple] = []
        began = round(time.time(), 3)
        txn = self.wh.transaction(agent_info=f"load {cfg.name}")
        try:
            with txn:
                marker_first = rng.random() < 0.5
                if marker_first:
                    self._marker(txn)
                for stmt in range(rng.randint(1, 3)):
                    op = self._statement(txn, stmt, staged, dead)
                    ops.append(op)
                    for k, *_ in (op[1] if op[0] in ("insert", "merge") else ()):
                        dead.discard(k)
                    if op[0] == "delete":
                        dead.update(k for k in op[1] if k in staged)
                    apply_ops(staged, [op])
                if not marker_first:
                    self._marker(txn)
                roll = rng.random()
                if roll < cfg.abort_rate / 2:
                    txn.abort()
                    self._aborted(txn.txn_id, "deliberate")
                    return
                if roll < cfg.abort_rate:
                    raise _DeliberateAbort()
                self.journal.append({"kind": Kind.INTENT.value, "txn": txn.txn_id, "writer": cfg.name,
                                     "slot": cfg.slot, "began": began, "ops": [list(op) for op in ops]})
            # leaving the block committed
        except _DeliberateAbort:
            self._aborted(txn.txn_id, "deliberate")
            return
        except WriteConflictError:
            self._aborted(txn.txn_id, "write_conflict", error=True)
            return
        except Exception:
            if not timed_out(self.wh, txn.txn_id):
                raise
            # hive.txn.timeout passed without a heartbeat (an overloaded machine) and the txn was aborted under us:
            # whatever failed afterwards (a commit, a statement whose files the Cleaner then removed) is expected
            if txn.state == "open":
                txn.abort()
            self._aborted(txn.txn_id, "txn_timed_out", error=True)
            return
        self.journal.append({"kind": Kind.COMMITTED.value, "txn": txn.txn_id})
        self.live, self.dead = staged, dead

    def _aborted(self, txn_id: int, why: str, *, error: bool = False) -> None:
        self.journal.append({"kind": Kind.ABORTED.value, "txn": txn_id, "why": why})
        if error:
            self.journal.append({"kind": Kind.ERROR.value, "writer": self.cfg.name, "error": why})

    def _marker(self, txn: Transaction) -> None:
        txn.insert(MARKERS, [{"k": txn.txn_id, "slot": self.cfg.slot}])

    def _fresh(self) -> int:
        self.next_key += 1
        return self.next_key

    def _partition(self) -> str:
        if self.rng.random() < ERA_PARTITION_SHARE:
            return f"e{int((time.time() - self.cfg.epoch) // self.cfg.era_s)}"
        return self.rng.choice(HOT_PARTITIONS)

    def _statement(self, txn: Transaction, stmt: int, staged: State, dead: set[int]) -> tuple:
        """Run one random statement on the main table; returns it as a model op."""
        rng, t = self.rng, txn.txn_id
        kind = "insert" if len(staged) < 6 else rng.choices(["insert", "update", "delete", "merge"], [4, 3, 2, 3])[0]
        v = f"{kind[0]}{t}.{stmt}"
        if kind == "insert":
            rows = [(self._fresh(), v, t, self._partition()) for _ in range(rng.randint(1, 6))]
            txn.insert(TABLE, [{"k": k, "v": v_, "w": w, "p": p} for k, v_, w, p in rows])
            return insert_op(rows)
        part = rng.choice(sorted({p for _, _, p in staged.values()}))  # one partition: fewer write conflicts
        keys = sorted(k for k, (_, _, p) in staged.items() if p == part)
        if kind in ("update", "delete"):
            chosen = set(rng.sample(keys, min(len(keys), rng.randint(1, 4 if kind == "update" else 3))))
            if dead and rng.random() < 0.2:
                chosen.add(rng.choice(sorted(dead)))  # a key deleted earlier: matches nothing
            where = (pc.field("p") == part) & pc.field("k").isin(sorted(chosen))
            if kind == "update":
                txn.update(TABLE, set={"v": v, "w": t}, where=where)
                return update_op(chosen, v, t)
            txn.delete(TABLE, where=where)
            return delete_op(chosen)
        matched = rng.sample(keys, min(len(keys), rng.randint(0, 3)))
        reborn = rng.sample(sorted(dead), min(len(dead), rng.randint(0, 1)))
        rows = [(k, v, t, staged[k][2]) for k in matched]
        rows += [(k, v, t, self._partition()) for k in reborn + [self._fresh() for _ in range(rng.randint(0, 2))]]
        if not rows:
            rows = [(self._fresh(), v, t, self._partition())]
        txn.merge(TABLE, [{"k": k, "v": v_, "w": w, "p": p} for k, v_, w, p in rows], on="k",
                  when_matched_update={"v": source("v"), "w": source("w")}, when_not_matched_insert=True)
        return merge_op(rows)


def main(cfg_json: str, log_path: str | None = None) -> int:
    """A writer process: stdout/stderr to ``log_path``, SIGUSR1 dumps stacks, exit code 3 after a crash."""
    if log_path is not None:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    faulthandler.register(signal.SIGUSR1)  # the test dumps the stacks of a writer that does not stop
    cfg = WriterConfig.from_json(cfg_json)
    try:
        Writer(cfg).run()
    except BaseException:  # noqa: BLE001 - everything unexpected is reported through the journal
        Journal(cfg.journal).append({"kind": Kind.CRASH.value, "writer": cfg.name, "error": traceback.format_exc()})
        return EXIT_CRASHED
    return 0


def _process_main(cfg_json: str, log_path: str) -> None:
    sys.exit(main(cfg_json, log_path))


# --- the test's handle on a writer process --------------------------------------------------------------------

_FORKSERVER = multiprocessing.get_context("forkserver")
"""Writers fork from a server that imported this module once: a restart after a SIGKILL takes milliseconds, not
the seconds that importing pyarrow, pandas and SQLAlchemy take (the test process itself, with its JVM and
threads, is never forked)."""


@dataclass
class WriterProcess:
    """Starts, SIGKILLs and restarts one writer slot; each start is a new incarnation with fresh keys."""

    cfg: WriterConfig
    log_dir: Path
    proc: multiprocessing.process.BaseProcess | None = None

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.cfg.name}.{self.cfg.incarnation}.log"

    def start(self) -> None:
        if self.proc is not None:
            self.cfg = replace(self.cfg, incarnation=self.cfg.incarnation + 1, seed=self.cfg.seed + 7919)
        _FORKSERVER.set_forkserver_preload([__name__])
        self.proc = _FORKSERVER.Process(target=_process_main, args=(self.cfg.to_json(), str(self.log_path)),
                                        name=f"{self.cfg.name}.{self.cfg.incarnation}", daemon=True)
        self.proc.start()

    def dump_stacks(self) -> None:
        """Ask a live writer to print every thread's stack into its log (before it is killed for hanging)."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL the process (mid-statement, mid-commit, anywhere) and reap it."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.join()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    @property
    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.exitcode

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None when the process is still running after ``timeout`` seconds."""
        if self.proc is None:
            return None
        self.proc.join(timeout)
        return self.proc.exitcode

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        if self.alive():
            self.kill()
