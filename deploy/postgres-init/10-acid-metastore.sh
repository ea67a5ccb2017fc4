#!/usr/bin/env bash
# Runs once, when the PostgreSQL volume is initialised: the ACID metastore gets its own user and database next to
# Airflow's (the metastore's schema is created by `airflow-acid init` in the airflow-init service).
# Written to work both executed and sourced by the postgres image's entrypoint (no `set`, no `exit`).
: "${ACID_METASTORE_PASSWORD:?ACID_METASTORE_PASSWORD is not set for the postgres service}"
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     --set=acid_password="$ACID_METASTORE_PASSWORD" <<'SQL'
CREATE ROLE acid LOGIN PASSWORD :'acid_password';
CREATE DATABASE acid OWNER acid;
REVOKE ALL ON DATABASE acid FROM PUBLIC;
SQL
