"""Where the CLI finds the ``[acid]`` text without Airflow: airflow.cfg (read with configparser) and the environment,
spelt as Airflow spells it (``AIRFLOW__ACID__<OPTION>``), so ``airflow-acid`` and the DAGs read the same values.

The older ``AIRFLOW_ACID__<KEY>`` spelling (dots written ``__``) still works and warns, naming the new spelling.
"""

from __future__ import annotations

import configparser
import logging
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

from airflow_acid.config.acid_config import AcidConfig
from airflow_acid.config.options import ACID_SECTION, OPERATORS_SECTION
from airflow_acid.metastore.errors import InvalidSettingError

log = logging.getLogger(__name__)

ENV_PREFIX = f"AIRFLOW__{ACID_SECTION.upper()}__"
"""Airflow's spelling: ``AIRFLOW__ACID__<OPTION>``, the option as written (``AIRFLOW__ACID__COMPACTION_POOL``,
``AIRFLOW__ACID__HIVE.COMPACTOR.DELTA.NUM.THRESHOLD``; dots may also be written ``__``)."""
DEPRECATED_ENV_PREFIX = "AIRFLOW_ACID__"
"""The older spelling ``AIRFLOW_ACID__<KEY>`` with dots as ``__``; read with a deprecation warning."""
OPERATORS_ENV_PREFIX = f"AIRFLOW__{OPERATORS_SECTION.upper()}__"


def env_section(environ: Mapping[str, str] | None = None, *, prefix: str = ENV_PREFIX) -> dict[str, str]:
    """The options one section's ``AIRFLOW__<SECTION>__<OPTION>`` variables set, option names lower-cased (as
    Airflow reads them). With the ``[acid]`` prefix, ``AIRFLOW_ACID__<KEY>`` variables are read too (dots as
    ``__``), each with a warning naming its new spelling; the new spelling wins when both are set."""
    env = os.environ if environ is None else environ
    values = {var[len(prefix):].lower(): value for var, value in env.items() if var.upper().startswith(prefix)}
    if prefix != ENV_PREFIX:
        return values
    for var, value in env.items():
        if not var.upper().startswith(DEPRECATED_ENV_PREFIX):
            continue
        option = var[len(DEPRECATED_ENV_PREFIX):].replace("__", ".").lower()
        new = f"{ENV_PREFIX}{option.upper()}"
        message = f"environment variable {var} uses the old spelling; write it as {new}"
        log.warning(message)
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        values.setdefault(option, value)
    return values


def airflow_cfg_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Airflow's config file as Airflow finds it: ``$AIRFLOW_CONFIG``, else ``$AIRFLOW_HOME/airflow.cfg``
    (``~/airflow``); None when there is none."""
    env = os.environ if environ is None else environ
    explicit = env.get("AIRFLOW_CONFIG")
    path = Path(explicit) if explicit else Path(env.get("AIRFLOW_HOME") or "~/airflow") / "airflow.cfg"
    path = path.expanduser()
    return path if path.is_file() else None


def cfg_sections(path: Path) -> dict[str, dict[str, str]]:
    """The ``[acid]`` and ``[operators]`` sections of an airflow.cfg (options lower-cased, values raw text)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise InvalidSettingError(f"{path} is not a valid Airflow config file: {exc}") from None
    return {name: dict(parser.items(name, raw=True)) if parser.has_section(name) else {}
            for name in (ACID_SECTION, OPERATORS_SECTION)}


def config_from_environment(environ: Mapping[str, str] | None = None) -> AcidConfig:
    """The configuration Airflow would see, read without Airflow: airflow.cfg's ``[acid]`` (and ``[operators]``)
    when the file exists, each option overridden by its ``AIRFLOW__<SECTION>__<OPTION>`` variable."""
    path = airflow_cfg_path(environ)
    sections = cfg_sections(path) if path is not None else {ACID_SECTION: {}, OPERATORS_SECTION: {}}
    acid = {**sections[ACID_SECTION], **env_section(environ)}
    operators = {**sections[OPERATORS_SECTION], **env_section(environ, prefix=OPERATORS_ENV_PREFIX)}
    where = f"[{ACID_SECTION}] ({path} and the environment)" if path is not None else \
        f"[{ACID_SECTION}] (environment)"
    return AcidConfig.from_mapping(acid, operators=operators, source=where)
