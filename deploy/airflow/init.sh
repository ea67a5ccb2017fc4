#!/usr/bin/env bash
# One-off set-up run by the airflow-init service before the other Airflow services start: Airflow's database,
# the ACID metastore schema, and the Airflow pool that caps parallel Spark compactions. Idempotent.
set -euo pipefail

warehouse="${AIRFLOW_ACID_HOME:?AIRFLOW_ACID_HOME is not set (the image sets it)}/warehouse"
if [[ ! -w "$warehouse" ]]; then
  echo "ERROR: the warehouse $warehouse is not writable by uid $(id -u); remove the volume" \
       "(docker compose down -v) or fix its owner (it must be writable by AIRFLOW_UID, group 0)" >&2
  exit 1
fi

echo "== Airflow database"
airflow db migrate

echo "== ACID metastore schema"
airflow-acid init   # the metastore URL comes from AIRFLOW_ACID_METASTORE_URL

pool="${AIRFLOW__ACID__COMPACTION_POOL:-default_pool}"
if [[ "$pool" != "default_pool" ]]; then
  echo "== Airflow pool $pool (${ACID_COMPACTION_SLOTS:?} slots)"
  airflow pools set "$pool" "$ACID_COMPACTION_SLOTS" \
    "Spark compactions at once (Hive's hive.compactor.worker.threads); set by the acid compaction_pool option"
fi
