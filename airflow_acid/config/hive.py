"""Hive's settings (:class:`MetastoreConf`) from a config section: the ``[acid]`` options named by Hive's keys."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping
from typing import Any

from airflow_acid.config.session_keys import KeyKind, classify
from airflow_acid.metastore.conf import MetastoreConf, unknown_setting_names
from airflow_acid.metastore.errors import InvalidSettingError

log = logging.getLogger(__name__)


def settings_from_mapping(values: Mapping[str, Any], *, base: MetastoreConf | None = None,
                          source: str = "settings", other_options: Collection[str] | None = None) -> MetastoreConf:
    """A MetastoreConf from a config mapping such as the Airflow ``[acid]`` section.

    Keys are setting names — Hive 4's ``metastore.*`` or the ``hive.*`` name of the same setting, any case
    (configparser lower-cases option names), dots also written ``__`` (an ``AIRFLOW__ACID__HIVE__TXN__TIMEOUT``
    variable) — or MetastoreConf field names (``delta_num_threshold``); values go through
    :meth:`MetastoreConf.from_mapping` (units, ranges, which name wins). Values not given keep ``base`` (default:
    Hive's defaults). With ``other_options`` (the section's other, non-Hive options) every other key is logged as
    unknown; without, only keys that look like settings (``hive.*``, ``metastore.*``). A bad value raises
    InvalidSettingError naming ``source``, the key and the value.
    """
    base = base or MetastoreConf()
    others = {o.lower() for o in other_options} if other_options is not None else None
    hive_values: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = str(raw_key).strip().replace("__", ".")
        field_name = MetastoreConf.field_of(key) or (key.lower() if key.lower() in MetastoreConf.KEYS else None)
        if field_name is None:
            if classify(key).kind is KeyKind.ACKNOWLEDGED:  # e.g. hive.txn.manager, hive.compactor.initiator.on
                log.debug("%s: %s configures HiveServer2 or Hive's engine; airflow-acid does not need it", source, key)
                continue
            if others is not None and str(raw_key).strip().lower() not in others or \
                    others is None and unknown_setting_names([key]):
                log.warning("%s: %s is not a setting airflow-acid knows; check the spelling", source, raw_key)
            continue
        hive_values[key if MetastoreConf.field_of(key) else MetastoreConf.key_of(field_name)] = value
    try:
        parsed = MetastoreConf.from_mapping(hive_values)
    except InvalidSettingError as exc:
        raise InvalidSettingError(f"{source}: {exc}") from None
    given = {MetastoreConf.field_of(k) for k in hive_values}
    changes = {name: getattr(parsed, name) for name in given if name is not None}
    return dataclasses.replace(base, **changes)
