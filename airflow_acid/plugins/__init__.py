"""The Airflow plugin of airflow-acid, registered through the ``airflow.plugins`` entry point.

Provider-info ``plugins`` alone are not loaded by default in Airflow 3.3 (AIRFLOW_NOTES.md), hence the
entry point. The UI app (queue, history, table health, manual compaction) is added to this class.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin


class AcidPlugin(AirflowPlugin):
    name = "airflow_acid"
