"""The takeover rule: an in-scope table (:class:`~airflow_acid.config.scope.CompactionScope`) that Hive's own
compactor would also pick is declined, naming the setting to change in Hive."""

from __future__ import annotations

from airflow_acid.compactor.settings import NO_AUTO_COMPACTION, is_true
from airflow_acid.config.scope import POOL_KEY, CompactionScope
from airflow_acid.metastore.catalog import DatabaseInfo, TableInfo


def table_pool(info: TableInfo, db_info: DatabaseInfo | None) -> str | None:
    """The table's compaction pool: its own property, else its database's."""
    return info.property(POOL_KEY) or (db_info.param(POOL_KEY) if db_info is not None else None)


def hive_would_pick(info: TableInfo, db_info: DatabaseInfo | None, scope: CompactionScope,
                    hive_initiator_active: bool) -> str | None:
    """Why Hive's own compactor would also compact this in-scope table (the reason names what to change in Hive),
    or None when airflow-acid may act: Hive's Initiator not active, the table (or its database) marked
    ``no_auto_compaction=true``, or its pool one of ``scope_pools``."""
    if not hive_initiator_active:
        return None
    if is_true(info.property(NO_AUTO_COMPACTION)) or (db_info is not None and is_true(db_info.param(NO_AUTO_COMPACTION))):
        return None
    if scope.in_dedicated_pool(table_pool(info, db_info)):
        return None
    name = info.full_name
    pools = f" or put it in a compaction pool of [acid] scope_pools ({','.join(scope.pools)}) that no Hive worker " \
            "serves" if scope.pools else ""
    return (f"Hive's Initiator is active on this metastore and would compact {name} too: run "
            f"ALTER TABLE {name} SET TBLPROPERTIES ('{NO_AUTO_COMPACTION}'='true') in Hive{pools}; airflow-acid "
            "takes the table over once it is marked")
