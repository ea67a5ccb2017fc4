"""What the multi-host scenario checks against: a model of every committed write, which directories a listing
still holds needlessly, and which Spark tasks were lost with a host and run again (from the driver's log)."""

from __future__ import annotations

import re

DIR = re.compile(r"^(base|delta|delete_delta)_(\d+)(?:_(\d+))?(?:_(\d+))?(?:_v(\d+))?$")
# the driver's words (Spark 4, in the compaction task's log) for a task whose executor went away with its host
TASK_LOST = re.compile(r"task (\d+)\.(\d+) in stage (\S+) \(TID \d+\) failed because while it was being computed, its "
                       r"executor exited")


class Model:
    """What the tables must hold: every committed write applied in order."""

    def __init__(self, tables: list[str]) -> None:
        self.rows: dict[str, dict[tuple, list]] = {t: {} for t in tables}
        self.statements: list[dict] = []

    def insert(self, table: str, rows: list[list], partition: dict | None = None) -> None:
        self.statements.append({"insert": table, "rows": rows, **({"partition": partition} if partition else {})})
        for row in rows:
            full = row + ([partition["ds"]] if partition else [])
            self.rows[table][(row[0], *(full[2:]))] = full

    def update(self, table: str, key: int, values: dict) -> None:
        self.statements.append({"update": table, "set": values, "where": {"id": key}})
        for row in self.rows[table].values():
            if row[0] == key:
                row[1] = values["v"]

    def delete(self, table: str, key: int) -> None:
        self.statements.append({"delete": table, "where": {"id": key}})
        self.rows[table] = {k: r for k, r in self.rows[table].items() if r[0] != key}

    def take(self) -> list[dict]:
        """The statements not yet sent to the writer."""
        taken, self.statements = self.statements, []
        return taken

    def expected(self) -> dict[str, list[list]]:
        return {t: sorted(rows.values()) for t, rows in self.rows.items()}


def obsolete(dirs: list[str]) -> list[str]:
    """Directories another directory of the listing supersedes (a base or a wider delta covering their range)."""
    spans = {}
    for name in dirs:
        m = DIR.match(name)
        if m:
            kind, low = m.group(1), int(m.group(2))
            spans[name] = (kind, (0, low) if kind == "base" else (low, int(m.group(3))))
    covered = []
    for name, (kind, (lo, hi)) in spans.items():
        for other, (okind, (olo, ohi)) in spans.items():
            if other != name and olo <= lo and hi <= ohi and (olo, ohi) != (lo, hi) \
                    and (okind == "base" or kind != "base"):
                covered.append(name)
                break
    return sorted(covered)


def lost_and_rerun(task_log: str) -> list[str]:
    """Spark tasks the driver lost with an executor and then finished in a later attempt (``index.attempt``)."""
    rerun = []
    for index, attempt, stage in TASK_LOST.findall(task_log):
        finished = re.findall(rf"Finished task {index}\.(\d+) in stage {re.escape(stage)} ", task_log)
        if any(int(a) > int(attempt) for a in finished):
            rerun.append(f"{index}.{attempt}")
    return rerun


