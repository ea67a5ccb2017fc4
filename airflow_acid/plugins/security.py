"""Who may use the ACID console. Airflow does not authenticate plugin apps, so every route depends on Airflow's
own security dependencies: a logged-in user for everything, permission to run ``acid_manual_compaction`` for
requesting, undoing, aborting or requeueing a compaction, edit access to ``acid_housekeeping`` for aborting a
transaction, and a same-origin JSON request for anything that changes state (CSRF)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import Depends, HTTPException, Request, status

MANUAL_DAG_ID = "acid_manual_compaction"
HOUSEKEEPING_DAG_ID = "acid_housekeeping"

USER_STATE = "acid_user"
"""``request.state`` attribute holding the logged-in user (the pages' action buttons depend on who it is)."""


def _logged_in(request: Request, user: GetUserDep) -> None:
    """Airflow's ``requires_authenticated()`` (the user dependency answers 401 without a login), keeping the user on
    the request for :func:`page_actions`."""
    setattr(request.state, USER_STATE, user)


authenticated = Depends(_logged_in)
"""Any logged-in Airflow user (the UI's ``_token`` cookie or an ``Authorization: Bearer`` token)."""

_may_run_manual_dag = requires_access_dag("POST", DagAccessEntity.RUN, MANUAL_DAG_ID)
may_request_compaction = Depends(_may_run_manual_dag)
"""Permission to start runs of ``acid_manual_compaction``: requesting a compaction is the same act."""


_may_edit_housekeeping = requires_access_dag("PUT", None, HOUSEKEEPING_DAG_ID)
may_abort_transaction = Depends(_may_edit_housekeeping)
"""Edit access to ``acid_housekeeping``: aborting someone's transaction is the HouseKeeper's act (it aborts the ones
whose heartbeat stopped), and ending another user's work asks for more than triggering a run."""


def _passes(check: Callable[[Request, BaseUser], None], request: Request, user: BaseUser) -> bool:
    try:
        check(request, user)
    except HTTPException as exc:
        if exc.status_code == status.HTTP_403_FORBIDDEN:
            return False
        raise
    return True


def user_may_request(request: Request, user: BaseUser) -> bool:
    """Whether ``user`` passes :data:`may_request_compaction` (pages show the form disabled otherwise)."""
    return _passes(_may_run_manual_dag, request, user)


def user_may_abort_transactions(request: Request, user: BaseUser) -> bool:
    """Whether ``user`` passes :data:`may_abort_transaction`."""
    return _passes(_may_edit_housekeeping, request, user)


def same_origin_json(request: Request) -> None:
    """CSRF guard for state-changing routes.

    The UI's session cookie is SameSite=Lax, so cross-site form posts arrive without it; on top of that a request
    must be JSON (an HTML form cannot send ``application/json`` without a CORS preflight this app never grants) and,
    when the browser says where it comes from (``Sec-Fetch-Site``, ``Origin``), come from this site's own pages.
    Scripts using a bearer token send neither header and are not affected.
    """
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                            "send the request as JSON (Content-Type: application/json)")
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"cross-site request refused (Sec-Fetch-Site: {fetch_site})")
    origin = request.headers.get("origin")
    if origin is not None:
        hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")} - {None}
        if origin == "null" or urlsplit(origin).netloc not in hosts:
            raise HTTPException(status.HTTP_403_FORBIDDEN, f"cross-origin request refused (Origin: {origin})")


csrf_protected = Depends(same_origin_json)


def page_actions(request: Request) -> dict[str, bool]:
    """Which action buttons a page shows its user (the ``acting`` template variable): ``compactions`` (abort,
    requeue, undo) and ``transactions`` (abort); none without a logged-in user. The routes check again: a hidden
    button is no permission."""
    user = getattr(request.state, USER_STATE, None)
    if user is None:
        return {"compactions": False, "transactions": False}
    return {"compactions": user_may_request(request, user), "transactions": user_may_abort_transactions(request, user)}
