"""The console's stylesheet, script and icons, served from the package (behind the login like every other route)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse

from airflow_acid.plugins.security import authenticated
from airflow_acid.plugins.templating import HERE

STATIC = HERE / "static"
_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}

router = APIRouter(dependencies=[authenticated])


@router.get("/static/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    """One file of the package's ``static`` folder (no sub-folders, no other files)."""
    path = STATIC / name
    if name not in {p.name for p in STATIC.iterdir()} or path.suffix not in _TYPES:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {name!r}")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers={"Cache-Control": "private, max-age=300"})
