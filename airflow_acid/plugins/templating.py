"""Server-rendered pages: the Jinja2 templates folder, filters for Hive's millisecond timestamps and states, and
:func:`render`, which hands every page the links it needs (the app's root and Airflow's, behind any path prefix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from airflow_acid.compactor.decision import Rule
from airflow_acid.plugins import URL_PREFIX
from airflow_acid.plugins.formats import age, duration, percent, seconds, size, when
from airflow_acid.plugins.security import page_actions

HERE = Path(__file__).parent

templates = Jinja2Templates(directory=str(HERE / "templates"))


def state_class(state: str | None) -> str:
    """CSS class of a state badge: ``ready for cleaning`` → ``s-ready-for-cleaning``, ``would_clean`` →
    ``s-would-clean``."""
    return "s-" + "-".join(str(state or "none").lower().replace("_", " ").split())


def rule_text(rule: str | None) -> str:
    """An Initiator rule (``multi_base``) in words (``more than one base``)."""
    if not rule:
        return ""
    try:
        return Rule(rule).display
    except ValueError:
        return rule.replace("_", " ")


templates.env.filters.update(when=when, duration=duration, age=age, state_class=state_class, size=size,
                             percent=percent, seconds=seconds, rule_text=rule_text)


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
