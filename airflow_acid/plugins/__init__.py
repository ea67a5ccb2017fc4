"""The Airflow plugin of airflow-acid, registered through the ``airflow.plugins`` entry point.

Provider-info ``plugins`` alone are not loaded by default in Airflow 3.3 (docs/airflow.md#provider-registration), hence the
entry point. The plugin mounts the ACID console (a FastAPI app, :mod:`airflow_acid.plugins.app`) at ``/acid`` and links it
from the navigation and from the DAG pages. The app is built on first use only: schedulers and task workers load plugins
too and need not import the API server's security module.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_acid.plugins.priority import AcidQueueOrder
from airflow_acid.plugins.run_notes import run_notes_listener

URL_PREFIX = "/acid"
ACID_DAG_IDS = ("acid_compaction", "acid_manual_compaction", "acid_cleanup", "acid_housekeeping")


class AcidPlugin(AirflowPlugin):
    name = "airflow_acid"
    priority_weight_strategies = [AcidQueueOrder]  # the compaction DAG's mapped tasks: best rows first
    listeners = [run_notes_listener]  # a run's compaction outcomes become its note (plugins/run_notes.py)

    # Relative hrefs resolve against the UI's base URL, so a deployment under a path prefix keeps working. Airflow
    # 3.3 shows a "dag" view on every DAG (no per-DAG filter): the page says when a DAG is not an ACID DAG.
    external_views = [
        {"name": "ACID", "href": "acid/", "destination": "nav", "url_route": "acid",
         "icon": "acid/static/acid.svg", "icon_dark_mode": "acid/static/acid-dark.svg"},
        {"name": "ACID", "href": "acid/dag/{DAG_ID}", "destination": "dag", "url_route": "acid-dag",
         "icon": "acid/static/acid.svg", "icon_dark_mode": "acid/static/acid-dark.svg"},
    ]

    @cached_property
    def fastapi_apps(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """The console app, built when Airflow first asks (the API server, ``airflow plugins``)."""
        from airflow_acid.plugins.app import create_app

        return [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "ACID console"}]
