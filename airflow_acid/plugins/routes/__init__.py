"""The console's routes, one module per area; each router requires a logged-in Airflow user."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends
from pydantic import BaseModel, field_validator

from airflow_acid.client.warehouse import AcidWarehouse
from airflow_acid.plugins.access import get_warehouse

WarehouseDep = Annotated[AcidWarehouse, Depends(get_warehouse)]


class Filters(BaseModel):
    """Query-string filters; an empty form field means "any"."""

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_any(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value
