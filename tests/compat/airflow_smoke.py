"""Run inside an Airflow environment of the matrix: the provider registers, the plugin loads, every DAG file parses
with no import error, and the console answers through Airflow's own API app. Prints one JSON line of findings.

Usage: python airflow_smoke.py DAGS_FOLDER
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time


def smoke(dags_folder: str) -> dict[str, object]:
    """The findings (imports inside: this file runs in the matrix's environments, not the suite's)."""
    import airflow
    import pyspark
    from airflow import plugins_manager
    from airflow.api_fastapi.app import create_app
    from airflow.providers_manager import ProvidersManager
    from fastapi.testclient import TestClient

    started = time.monotonic()
    found: dict[str, object] = {"python": sys.version.split()[0], "airflow": airflow.__version__,
                                "pyspark": pyspark.__version__}
    found["provider"] = "airflow-acid" in ProvidersManager().providers
    plugins_manager.ensure_plugins_loaded()
    found["plugin"] = [p["name"] for p in plugins_manager.get_plugin_info() if p["name"] == "airflow_acid"]
    errors = (plugins_manager.get_import_errors() if hasattr(plugins_manager, "get_import_errors")  # 3.3
              else plugins_manager.import_errors)
    found["plugin_errors"] = {k: str(v) for k, v in (errors or {}).items()}
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import DagBag
    bag = DagBag(dags_folder)  # [core] load_examples is off
    found["dags"] = sorted(bag.dags)
    found["dag_errors"] = {k: v[-1500:] for k, v in bag.import_errors.items()}
    # features of Airflow 3.1 the README says every supported release has
    found["features_3_1"] = {
        "react_apps": hasattr(plugins_manager.AirflowPlugin, "react_apps"),
        "hitl": importlib.util.find_spec("airflow.providers.standard.operators.hitl") is not None,
        "deadline_alerts": importlib.util.find_spec("airflow.sdk.definitions.deadline") is not None,
    }
    client = TestClient(create_app())
    token = client.get("/auth/token").json()["access_token"]  # [core] simple_auth_manager_all_admins
    found["console"] = client.get("/acid/", headers={"Authorization": f"Bearer {token}"}).status_code
    found["seconds"] = round(time.monotonic() - started, 1)
    return found


if __name__ == "__main__":
    print("SMOKE " + json.dumps(smoke(sys.argv[1])))
