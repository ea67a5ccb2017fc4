"""The root of every error airflow-acid raises, and the "the user can fix this" line through it.

Each layer raises its own subclasses, declared in its one ``errors`` module (``acid.errors``, ``metastore.errors``,
``client.errors``, ``statements.errors``…); the surfaces map them by category, never by module:

- :class:`AcidUserError` and its subclasses are problems a user or operator can fix — a bad name, partition spec or
  property value, an unknown object, a closed transaction, a corrupt or foreign file, an unreachable database. Their
  message names the thing and what to do. The CLI prints it on one line and exits with :attr:`exit_code`; the UI
  plugin answers :attr:`http_status`; the Airflow operators fail the task without retries, unless the error is
  :attr:`retryable` (a database that cannot be reached now may be back for the task's next try).
- Anything else (including a plain ``ValueError``) is a bug or an unexpected failure: an internal error with its
  traceback (CLI exit code :data:`INTERNAL_EXIT_CODE`, HTTP 500).

This module imports nothing, so every layer may import it.
"""

from __future__ import annotations

INTERNAL_EXIT_CODE = 3
"""CLI exit code of an internal error (1: refused, 2: statement not understood)."""


class AcidError(Exception):
    """Base class of every airflow-acid error."""


class AcidUserError(AcidError):
    """A problem the user can fix; the message says what and how. Default: the state of something refuses it."""

    http_status = 409
    exit_code = 1
    retryable = False
    """Whether trying the same thing again later may succeed (Airflow tasks then retry instead of failing)."""


class AcidInputError(AcidUserError, ValueError):
    """A name, value, spec, property, statement or document is not acceptable."""

    http_status = 400


class AcidNotFoundError(AcidUserError, LookupError):
    """A database, table, partition, transaction, lock or compaction does not exist."""

    http_status = 404


class AcidUnavailableError(AcidUserError):
    """A service the operation needs (the metastore database, its connection) cannot be reached or is misconfigured."""

    http_status = 503


class AcidTimeoutError(AcidUserError, TimeoutError):
    """Waiting for something (e.g. ALTER TABLE … AND WAIT) took longer than allowed."""

    http_status = 504


__all__ = ["INTERNAL_EXIT_CODE", "AcidError", "AcidInputError", "AcidNotFoundError", "AcidTimeoutError",
           "AcidUnavailableError", "AcidUserError"]
