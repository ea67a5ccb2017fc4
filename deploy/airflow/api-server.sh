#!/usr/bin/env bash
# Starts the API server with the admin password from the environment. SimpleAuthManager reads passwords from its
# passwords file and would generate (and print) a random one for any user missing there.
set -euo pipefail

: "${AIRFLOW_ADMIN_USERNAME:?}" "${AIRFLOW_ADMIN_PASSWORD:?set AIRFLOW_ADMIN_PASSWORD in .env}"
passwords_file="${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:?}"
(
  umask 077
  python -c 'import json, os, sys; env = os.environ
json.dump({env["AIRFLOW_ADMIN_USERNAME"]: env["AIRFLOW_ADMIN_PASSWORD"]}, sys.stdout)' > "$passwords_file"
)
unset AIRFLOW_ADMIN_PASSWORD
exec airflow api-server "$@"
