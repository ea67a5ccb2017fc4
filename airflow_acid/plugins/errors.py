"""Errors become answers, never tracebacks: each known failure gets a status and a message that names the thing and
what to do — JSON (``{"detail": …}``) under ``/api/``, an error page elsewhere; an anonymous browser asking for a
page is sent to Airflow's login page."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from airflow_acid.airflow_compat import AirflowNotFoundException
from airflow_acid.errors import AcidUnavailableError, AcidUserError
from airflow_acid.hooks.errors import AcidMetastoreConnectionError
from airflow_acid.hooks.metastore import AcidMetastoreHook
from airflow_acid.plugins.templating import render, roots

log = logging.getLogger(__name__)

CONNECTION_HINT = f"check the {AcidMetastoreHook.default_conn_name!r} connection (Admin → Connections)"
HANDLED = (AcidUserError, AirflowNotFoundException)
"""Known failures; anything else (a plain ValueError or a database error the metastore did not translate included)
is a bug and stays a 500 with its traceback."""


def wants_json(request: Request) -> bool:
    """API routes answer JSON; pages answer HTML."""
    root, _ = roots(request)
    path = request.scope.get("path", "")
    return path[len(root):].startswith("/api/") if path.startswith(root) else path.startswith("/api/")


def describe(exc: Exception) -> tuple[int, str]:
    """(HTTP status, message) for an error raised while serving a request: a user error's own status. The metastore
    raises a database it cannot reach, or one without its schema, as an :class:`AcidUnavailableError`."""
    if isinstance(exc, (AcidMetastoreConnectionError, AirflowNotFoundException)):
        return status.HTTP_503_SERVICE_UNAVAILABLE, f"the ACID metastore connection is not usable: {exc}"
    if isinstance(exc, AcidUnavailableError):
        return exc.http_status, f"{exc}; {CONNECTION_HINT}"
    if isinstance(exc, AcidUserError):
        return exc.http_status, str(exc)
    return status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)


def error_response(request: Request, status_code: int, message: str) -> Response:
    if wants_json(request):
        return JSONResponse({"detail": message}, status_code=status_code)
    return render(request, "error.html", {"status_code": status_code, "message": message}, status_code=status_code)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == status.HTTP_401_UNAUTHORIZED and not wants_json(request):
            from airflow.api_fastapi.app import get_auth_manager

            _, airflow = roots(request)
            here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            login = get_auth_manager().get_url_login(next_url=here)
            return RedirectResponse(f"{airflow}{login}", status.HTTP_303_SEE_OTHER)
        if wants_json(request):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        return error_response(request, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        if wants_json(request):
            return JSONResponse({"detail": jsonable_encoder(exc.errors())},
                                status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in exc.errors())
        return error_response(request, status.HTTP_422_UNPROCESSABLE_CONTENT, problems)

    async def known_failure(request: Request, exc: Exception) -> Response:
        status_code, message = describe(exc)
        if status_code >= 500:
            log.warning("ACID console: %s %s failed: %s", request.method, request.url.path, message)
        return error_response(request, status_code, message)

    # Known failures only: anything else is a bug and keeps its traceback (a plain 500).
    for known in HANDLED:
        app.add_exception_handler(known, known_failure)
