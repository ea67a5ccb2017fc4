"""Pre-flight of a metastore database before airflow-acid works on it: what it is (Hive's schema at its VERSION,
airflow-acid's own at a revision, or neither), its drift from Hive's schema of that version, the known Hive
metastore issues of that version, whether Hive's compactor and airflow-acid would both compact the same tables,
the server's isolation level and time zone — and a verdict, ready or not, with the reasons. Only reads.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from airflow_acid.config.acid_config import SHADOW_MODE
from airflow_acid.metastore import hive_reference
from airflow_acid.metastore.hive_mutex import CLEANER, INITIATOR
from airflow_acid.metastore.preflight import DatabaseFacts, Drift, compare, database_facts, describe_schema

HIVE_ACTIVITY_WINDOW_MS = 24 * 3600 * 1000
"""A Hive service mutex released within this window counts as a compactor service that is running."""
OWN_TABLE_PREFIX = "ACID_"
"""airflow-acid's own tables on a Hive metastore (decisions, compaction runs) start with this."""


class Kind(str, enum.Enum):
    """Whose schema the database holds."""

    HIVE = "hive"
    ACID = "acid"
    UNKNOWN = "unknown"


class Severity(str, enum.Enum):
    """A blocker makes the verdict "not ready"; warnings and notes do not."""

    BLOCKER = "blocker"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    """One thing the pre-flight found, what it means, and what to do about it."""

    severity: Severity
    topic: str
    message: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "severity": self.severity.value}


@dataclass(frozen=True)
class KnownIssue:
    """A known Hive metastore issue and the Hive versions it affects (``since``; ``fixed_in`` None: no release with
    a fix is recorded)."""

    key: str
    summary: str
    since: str = "4.0.0"
    fixed_in: str | None = None
    status: str = "no fixed release recorded"

    def affects(self, version: str) -> bool:
        """Whether Hive ``version`` is inside the issue's window."""
        v = _version_tuple(version)
        return v >= _version_tuple(self.since) and (self.fixed_in is None or v < _version_tuple(self.fixed_in))

    def window(self) -> str:
        """The affected versions in words, e.g. ``4.0.0 and later (fix proposed, merge not verified)``."""
        upper = f"before {self.fixed_in}" if self.fixed_in else "and later"
        return f"{self.since} {upper} ({self.status})"


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("HIVE-29572", "a compaction whose transaction was aborted after it reached 'ready for cleaning' blocks "
               "every later cleaning of the table", status="fix proposed, merge not verified"),
    KnownIssue("HIVE-28240", "'working' queue rows stay after a worker timed out"),
    KnownIssue("HIVE-29186", "a metastore restart revokes running compactions and another worker runs them again, "
               "leaving duplicate directories and records", status="fix proposed, merge not verified"),
    KnownIssue("HIVE-30026", "some tables are never picked by the Initiator once the fetch limit applies"),
    KnownIssue("HIVE-29720", "a metastore without a leader stalls compaction silently"),
)
"""Hive metastore issues that show on the metastore database; versions as far as they are documented (Hive 4
releases; none records a fixed release)."""


@dataclass(frozen=True)
class CompactionSettings:
    """airflow-acid's own settings that decide whether it compacts, and what (``[acid] mode`` and ``[acid] scope``;
    None when not set)."""

    mode: str | None = None
    scope: str | None = None

    @property
    def compacts(self) -> bool:
        """airflow-acid acts (queues, compacts, cleans) rather than only shadowing Hive."""
        return (self.mode or "").strip().lower() != SHADOW_MODE

    @property
    def scoped(self) -> bool:
        return bool((self.scope or "").strip())


@dataclass
class PreflightReport:
    """Everything the pre-flight found; ``ready`` is the verdict."""

    kind: Kind
    facts: DatabaseFacts
    reference: str | None = None
    """``Hive 4.2.0 (postgresql)`` when the drift was checked against a reference."""
    drift: list[Drift] = field(default_factory=list)
    known_issues: list[KnownIssue] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.blockers

    @property
    def blockers(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.BLOCKER]

    def describe(self) -> str:
        """What the database is, in one line."""
        if self.kind is Kind.HIVE:
            return f"Hive metastore, schema version {self.facts.hive_version}"
        if self.kind is Kind.ACID:
            return f"airflow-acid's own metastore schema at revision {self.facts.alembic_revision}"
        return "neither a Hive metastore nor airflow-acid's metastore"

    def to_json(self) -> dict[str, Any]:
        return {
            "ready": self.ready, "verdict": "ready" if self.ready else "not ready",
            "reasons": [f.message for f in self.blockers], "database": self.describe(), "kind": self.kind.value,
            "hive_version": self.facts.hive_version, "revision": self.facts.alembic_revision,
            "reference": self.reference, "drift": [d.to_json() for d in self.drift],
            "known_issues": [{"key": i.key, "summary": i.summary, "affected": i.window()} for i in self.known_issues],
            "findings": [f.to_json() for f in self.findings], "facts": self.facts.to_json(),
        }


def run_preflight(conn: Connection, settings: CompactionSettings, head_revision: str) -> PreflightReport:
    """Inspect the database on ``conn`` (reading only). ``head_revision``: the schema revision this version of
    airflow-acid needs on its own metastore."""
    facts = database_facts(conn)
    if facts.hive_version is not None:
        report = PreflightReport(Kind.HIVE, facts)
        _check_hive_schema(conn, report)
        report.known_issues = [i for i in KNOWN_ISSUES if i.affects(facts.hive_version)]
        if report.known_issues:
            report.findings.append(Finding(
                Severity.WARNING, "known issues",
                f"Hive {facts.hive_version} is inside the window of {len(report.known_issues)} known metastore "
                f"issue(s): {', '.join(i.key for i in report.known_issues)}",
                "nothing to change before starting; watch for the states they leave (cleaning that never finishes, "
                "'working' rows without a worker, compactions run twice, tables never picked, no compaction at all)"))
        _check_two_compactors(facts, settings, report)
    elif facts.alembic_revision is not None:
        report = PreflightReport(Kind.ACID, facts)
        if facts.alembic_revision == head_revision:
            report.findings.append(Finding(Severity.NOTE, "schema", f"airflow-acid's own metastore schema at "
                                           f"revision {facts.alembic_revision} (the current one); Hive's schema "
                                           "drift does not apply"))
        else:
            report.findings.append(Finding(
                Severity.BLOCKER, "schema", f"airflow-acid's own metastore schema is at revision "
                f"{facts.alembic_revision}, this version needs {head_revision}",
                "airflow-acid init --metastore-url <url>"))
    else:
        report = PreflightReport(Kind.UNKNOWN, facts)
        report.findings.append(Finding(
            Severity.BLOCKER, "schema", "the database has neither Hive's VERSION table nor airflow-acid's "
            "alembic_version: it is not a metastore yet",
            "point --metastore-url at Hive's metastore database, or create airflow-acid's own schema with "
            "airflow-acid init"))
    _check_server(facts, report)
    return report


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("-")[0].split("."))


def _check_hive_schema(conn: Connection, report: PreflightReport) -> None:
    version, dialect = str(report.facts.hive_version), report.facts.dialect
    expected = hive_reference.load(version, dialect)
    if expected is None:
        known = ", ".join(hive_reference.known_versions(dialect)) or "none"
        report.findings.append(Finding(
            Severity.WARNING, "schema", f"no reference of Hive {version}'s schema on {dialect} (known: {known}); "
            "drift was not checked", "compare the database with Hive's schema script of that version by hand "
            "(schematool -validate does not check indexes or constraints)"))
        return
    report.reference = f"Hive {version} ({hive_reference.DIALECTS.get(dialect, dialect)})"
    report.drift = compare(expected, describe_schema(conn))
    harmful = [d for d in report.drift if not d.kind.harmless]
    extra = [d for d in report.drift if d.kind.harmless]
    if harmful:
        report.findings.append(Finding(
            Severity.BLOCKER, "schema drift", f"{len(harmful)} difference(s) from Hive {version}'s schema: "
            + "; ".join(d.describe() for d in harmful),
            f"restore each from Hive's hive-schema-{version} script for this database (the index, constraint or "
            "column definition named), or re-run the upgrade scripts that were skipped"))
    own = [d.table for d in extra if d.name is None and d.table.startswith(OWN_TABLE_PREFIX)]
    if own:
        report.findings.append(Finding(Severity.NOTE, "schema", "airflow-acid's own tables: " + ", ".join(own)))
    others = [d for d in extra if not (d.name is None and d.table.startswith(OWN_TABLE_PREFIX))]
    if others:
        report.findings.append(Finding(Severity.NOTE, "schema", "additions Hive's schema does not have (harmless): "
                                       + "; ".join(d.describe() for d in others)))


def _check_two_compactors(facts: DatabaseFacts, settings: CompactionSettings, report: PreflightReport) -> None:
    """HIVE-28662: since Hive 4 the metastore runs the Initiator and Cleaner by default; with airflow-acid
    compacting everything too, both work on the same tables."""
    if not settings.compacts or settings.scoped:
        return
    recent = _recent_runs(facts, (INITIATOR, CLEANER))
    fix = ("switch Hive's compactor off in the HMS/HS2 configuration (hive.compactor.initiator.on=false, "
           "hive.compactor.cleaner.on=false, hive.compactor.worker.threads=0), or set [acid] mode = shadow, or "
           "limit airflow-acid to an [acid] scope")
    mode = settings.mode or "not set (compacting)"
    if recent:
        report.findings.append(Finding(
            Severity.BLOCKER, "two compactors",
            f"Hive's compactor services ran recently ({'; '.join(recent)}; the mutex also records airflow-acid's "
            f"own cycles) and airflow-acid's [acid] mode is {mode} without an [acid] scope: both would compact and "
            "clean the same tables (Hive 4 runs its Initiator and Cleaner by default, HIVE-28662)", fix))
    else:
        report.findings.append(Finding(
            Severity.WARNING, "two compactors",
            f"airflow-acid's [acid] mode is {mode} without an [acid] scope, and Hive 4 runs its Initiator and Cleaner "
            "by default (HIVE-28662); the database shows no recent run of them, but cannot show Hive's settings",
            fix))


def _recent_runs(facts: DatabaseFacts, keys: Sequence[str]) -> list[str]:
    runs = []
    for key in keys:
        last = facts.mutex_last_run_ms.get(key)
        if last is not None and facts.now_ms - last <= HIVE_ACTIVITY_WINDOW_MS:
            runs.append(f"{key} mutex released {max(0, facts.now_ms - last) // 60_000} min ago")
    return runs


def _check_server(facts: DatabaseFacts, report: PreflightReport) -> None:
    """Isolation level and time zone (docs/operations.md: use the metastore at READ COMMITTED, Hive's setting)."""
    level = facts.isolation_level
    if facts.dialect in ("mysql", "mariadb") and level and level != "READ COMMITTED":
        report.findings.append(Finding(
            Severity.WARNING, "isolation level",
            f"the server's default isolation level is {level}; airflow-acid's connections use READ COMMITTED, as "
            "Hive's do, but other clients writing the transactional tables get the default",
            "SET GLOBAL transaction_isolation = 'READ-COMMITTED' (and in the server's configuration)"))
    elif level:
        report.findings.append(Finding(Severity.NOTE, "isolation level", f"server default {level}; airflow-acid's "
                                       "connections use READ COMMITTED"))
    if facts.time_zone and report.kind is Kind.HIVE:
        report.findings.append(Finding(
            Severity.NOTE, "time zone",
            f"database time zone {facts.time_zone}: Hive's commit times (COMPLETED_TXN_COMPONENTS.CTC_TIMESTAMP) "
            "are written in the writer's session time zone and read back in airflow-acid's; keep Hive and "
            "airflow-acid on the same (the database's default)"))
