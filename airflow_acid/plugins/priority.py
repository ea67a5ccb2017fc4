"""Airflow priority weights carrying the compaction order: the Initiator sensor emits the rows this run admits
best first (:mod:`airflow_acid.compactor.scheduling`), so map index 0 is the best row; :class:`AcidQueueOrder`
gives each mapped compaction task the task's own weight plus more the lower its map index, and Airflow's scheduler
starts the best compactions first when pool slots are short. Registered by :class:`~airflow_acid.plugins.AcidPlugin`
(a priority weight strategy must be, to be serialized)."""

from __future__ import annotations

from typing import Any

from airflow.task.priority_strategy import PriorityWeightStrategy

MAX_MAPPED = 10_000
"""Map indexes beyond this all get the task's own weight."""


def weight_for(priority_weight: int, map_index: int | None) -> int:
    """The task's weight plus ``MAX_MAPPED - map_index`` for a mapped task instance (index 0: the best row)."""
    if map_index is None or map_index < 0:
        return priority_weight
    return priority_weight + max(0, MAX_MAPPED - map_index)


class AcidQueueOrder(PriorityWeightStrategy):
    """Weight of a mapped compaction task instance: earlier rows (higher benefit per cost) weigh more."""

    def get_weight(self, ti: Any) -> int:
        return weight_for(int(ti.task.priority_weight), getattr(ti, "map_index", None))


ACID_QUEUE_ORDER = f"{AcidQueueOrder.__module__}.{AcidQueueOrder.__qualname__}"
"""The strategy by its importable name: what a mapped task's ``weight_rule`` must be (Airflow serializes a mapped
task's partial arguments as text, so an instance would not survive serialization)."""
