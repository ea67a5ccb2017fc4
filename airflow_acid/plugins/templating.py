"""Server-rendered pages: the Jinja2 templates folder, filters for Hive's millisecond timestamps and states, and
:func:`render`, which hands every page the links it needs (the app's root and Airflow's, behind any path prefix)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from airflow_acid.plugins import URL_PREFIX
from airflow_acid.plugins.security import page_actions

HERE = Path(__file__).parent

templates = Jinja2Templates(directory=str(HERE / "templates"))


def when(ms: int | None) -> str:
    """A metastore timestamp (ms since the epoch) as ``YYYY-MM-DD HH:MM:SS`` UTC; empty when missing."""
    if ms is None or ms <= 0:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(ms: int | None) -> str:
    """Milliseconds as ``1h 02m``, ``3m 07s`` or ``4.2s``."""
    if ms is None or ms < 0:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def age(ms: int | None) -> str:
    """How long ago a metastore timestamp was, as :func:`duration` formats it."""
    return "" if not ms or ms <= 0 else duration(max(0, int(time.time() * 1000) - ms))


def state_class(state: str | None) -> str:
    """CSS class of a state badge: ``ready for cleaning`` → ``s-ready-for-cleaning``, ``would_clean`` →
    ``s-would-clean``."""
    return "s-" + "-".join(str(state or "none").lower().replace("_", " ").split())


def size(n: int | None) -> str:
    """Bytes in binary units."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


templates.env.filters.update(when=when, duration=duration, age=age, state_class=state_class, size=size)


def roots(request: Request) -> tuple[str, str]:
    """(this app's URL root, Airflow's URL root) as paths, e.g. ``("/acid", "")`` or ``("/af/acid", "/af")``."""
    root = request.scope.get("root_path", "").rstrip("/")
    airflow = root[: -len(URL_PREFIX)] if root.endswith(URL_PREFIX) else root
    return root, airflow


def render(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    """Render ``templates/<name>`` with ``root``, ``airflow_base``, the current ``path`` and ``acting`` (the action
    buttons the user may see, :func:`~airflow_acid.plugins.security.page_actions`) added."""
    root, airflow = roots(request)
    page = {"root": root, "airflow_base": airflow, "path": request.url.path, "acting": page_actions(request),
            **context}
    return templates.TemplateResponse(request, name, page, status_code=status_code)
