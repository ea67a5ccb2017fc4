"""Airflow's audit log for the console's actions: the same ``action_logging`` dependency Airflow's own REST API
uses, so each abort, requeue or undo request lands in Browse → Audit Log with the user, the event name, the ids
(path parameters) and the method, before the route runs (refused requests included: what was asked, by whom)."""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.logging.decorators import action_logging
from fastapi import Depends

EVENT_PREFIX = "acid_"
"""Every console event starts with this (filter the Audit Log's Event column on it)."""


def audited(event: str) -> Any:
    """A route dependency recording ``acid_<event>`` in Airflow's audit log (table ``log``) for the request's user.
    Put it after the permission and CSRF dependencies: requests they refuse are not recorded, as in Airflow."""
    return Depends(action_logging(f"{EVENT_PREFIX}{event}"))
