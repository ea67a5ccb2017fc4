"""The metastore facade: one object holding the database, the settings and every metastore service."""

from __future__ import annotations

import os
from pathlib import Path

from airflow_acid.metastore.catalog import Catalog
from airflow_acid.metastore.cleaning import CleaningStore
from airflow_acid.metastore.compaction_actions import CompactionActions
from airflow_acid.metastore.compactions import CompactionQueue
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.db import Database
from airflow_acid.metastore.diagnosis import Diagnosis
from airflow_acid.metastore.flavour import FLAVOUR_ENV, Flavour, SchemaProfile
from airflow_acid.metastore.housekeeping import Housekeeping
from airflow_acid.metastore.initiator_store import InitiatorStore
from airflow_acid.metastore.locks import LockManager
from airflow_acid.metastore.runs import RunHistory
from airflow_acid.metastore.shadow import ShadowStore
from airflow_acid.metastore.snapshots import Snapshots
from airflow_acid.metastore.txns import TxnStore
from airflow_acid.metastore.undo import UndoStore

METASTORE_FILE = "metastore.db"
HOME_ENV = "AIRFLOW_ACID_HOME"


def default_url(home: str | os.PathLike[str] | None = None) -> str:
    """The embedded SQLite metastore under ``home`` (default ``$AIRFLOW_ACID_HOME`` or ``~/airflow-acid``)."""
    base = Path(home if home is not None else os.environ.get(HOME_ENV, Path.home() / "airflow-acid")).expanduser()
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(base / METASTORE_FILE).resolve()}"


class Metastore:
    """``Metastore(url_or_db, conf)``: ``.txns``, ``.snapshots``, ``.housekeeping``, ``.locks``, ``.compactions``
    (the queue and its history), ``.catalog``, ``.initiator`` (candidates, decisions, leases, the queue as the
    Initiator sees it), ``.cleaning`` (the Cleaner's side), ``.runs`` (run figures), ``.undo`` (undoing a
    compaction) and ``.actions`` (aborting and requeueing a compaction) over one :class:`Database`. ``url_or_db``
    None means the embedded SQLite file of :func:`default_url`. Every SQL statement on the metastore's tables is
    behind one of these services."""

    def __init__(self, url_or_db: str | Database | None = None, conf: MetastoreConf | None = None, *,
                 home: str | os.PathLike[str] | None = None, flavour: Flavour | str | None = None) -> None:
        self.conf = conf or MetastoreConf()
        if isinstance(url_or_db, Database):
            self.db = url_or_db
            self._owns_db = False
            if flavour is not None:
                self.db.flavour = Flavour.parse(flavour)
        else:
            self.db = Database(url_or_db or default_url(home), retries=self.conf.transient_error_retries,
                               flavour=flavour if flavour is not None else os.environ.get(FLAVOUR_ENV))
            self._owns_db = True
        self.txns = TxnStore(self.db, self.conf)
        self.snapshots = Snapshots(self.db, self.conf)
        self.housekeeping = Housekeeping(self.db, self.conf)
        self.locks = LockManager(self.db, self.conf)
        self.compactions = CompactionQueue(self.db, self.conf)
        self.catalog = Catalog(self.db, self.conf)
        self.initiator = InitiatorStore(self.db, self.conf)
        self.cleaning = CleaningStore(self.db, self.conf)
        self.runs = RunHistory(self.db, self.conf)
        self.undo = UndoStore(self.db, self.conf)
        self.actions = CompactionActions(self.db, self.conf)
        self.shadow = ShadowStore(self.db)
        self.diagnosis = Diagnosis(self.db, self.conf)

    def with_conf(self, conf: MetastoreConf | None) -> Metastore:
        """The same database seen with other settings (an Initiator, Cleaner or HouseKeeper given its own conf);
        shares the connection pool, which stays owned by this object."""
        if conf is None or conf is self.conf:
            return self
        return Metastore(self.db, conf)

    def init(self) -> Metastore:
        """Create or upgrade the schema to the latest migration (idempotent); returns self. Refused on a Hive
        metastore (:class:`HiveMetastoreError`): Hive's schematool owns that schema."""
        from airflow_acid.metastore.init import init_schema

        init_schema(self.db)
        return self

    def ensure_schema(self) -> bool:
        """:meth:`init` only when this process has not yet seen the schema at the current revision (one revision
        query the first time, nothing after); True when it migrated."""
        from airflow_acid.metastore.init import ensure_schema

        return ensure_schema(self.db)

    @property
    def profile(self) -> SchemaProfile:
        """The kind of metastore database (airflow-acid's own or Hive's) and the schema facts that matter."""
        return self.db.profile

    @property
    def flavour(self) -> Flavour:
        return self.profile.flavour

    def create_decisions_table(self) -> bool:
        """On a Hive metastore, create airflow-acid's ACID_INITIATOR_DECISIONS table and its shadow-cycle log
        ACID_INITIATOR_DECISION_LOG (made only on request), whichever is missing. Returns False when both existed."""
        from airflow_acid.metastore.init import create_decisions_table

        return create_decisions_table(self.db)

    def create_extra_tables(self) -> list[str]:
        """On a Hive metastore, create every table of airflow-acid's own that is missing (decisions, run figures);
        returns the names created."""
        from airflow_acid.metastore.init import create_extra_tables

        return create_extra_tables(self.db)

    @property
    def url(self) -> str:
        """The database URL with any password hidden."""
        return self.db.url

    def close(self) -> None:
        """Release pooled connections (only when this object created the Database)."""
        if self._owns_db:
            self.db.dispose()

    def __enter__(self) -> Metastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Metastore({self.url!r})"

