"""MapReduce-era ``compactor.<key>`` job settings mapped to the Spark job that replaces Hive's MR compactor.

Hive users tune compaction with ``compactor.<MR key>`` table/request properties (``compactor.mapreduce.map.memory.mb``
…) and pick a YARN queue with ``hive.compactor.job.queue`` (docs/hive-acid.md#minor-and-major). Each MR key with a Spark
equivalent becomes that Spark setting (an explicit ``spark.*`` key wins); any other key is logged as a warning
naming it, never silently ignored. The queue follows Hive's order: the request's ``compactor.hive.compactor.job.queue``,
``compactor.mapreduce.job.queuename``, ``compactor.mapred.job.queue.name``, the same three table properties, then
the global ``hive.compactor.job.queue`` setting; it becomes ``spark.yarn.queue``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from airflow_acid.acid.delete_settings import EVENTS_MEM_KEY

log = logging.getLogger(__name__)

COMPACTOR_PREFIX = "compactor."
TBLPROPS_PREFIX = "tblprops."
MAX_NUM_DELTA_KEY = "hive.compactor.max.num.delta"
SPARK_PREFIX = "spark."
QUEUE_KEYS = ("hive.compactor.job.queue", "mapreduce.job.queuename", "mapred.job.queue.name")
SPARK_QUEUE = "spark.yarn.queue"


def effective_properties(table_properties: Mapping[str, str], request_properties: Mapping[str, str] = {}
                         ) -> tuple[dict[str, str], dict[str, str]]:
    """(job conf, table properties) as Hive's MR compactor applies them (see docs/hive-acid.md).

    ``compactor.<key>`` table properties become job conf ``<key>``; request properties (WITH OVERWRITE
    TBLPROPERTIES) ``compactor.<key>`` override those and ``tblprops.<key>`` override table property ``<key>``.
    """
    job_conf: dict[str, str] = {}
    props = {k: v for k, v in table_properties.items()}
    for k, v in table_properties.items():
        if k.startswith(COMPACTOR_PREFIX):
            job_conf[k[len(COMPACTOR_PREFIX):]] = v
    for k, v in request_properties.items():
        if k.startswith(COMPACTOR_PREFIX):
            job_conf[k[len(COMPACTOR_PREFIX):]] = v
        elif k.startswith(TBLPROPS_PREFIX):
            props[k[len(TBLPROPS_PREFIX):]] = v
    return job_conf, props


def _megabytes(value: str) -> str:
    return f"{int(float(value))}m"


_MR_TO_SPARK: dict[str, tuple[str, Callable[[str], str]]] = {
    "mapreduce.map.memory.mb": ("spark.executor.memory", _megabytes),
    "mapred.job.map.memory.mb": ("spark.executor.memory", _megabytes),
    "mapreduce.map.cpu.vcores": ("spark.executor.cores", lambda v: str(int(float(v)))),
    "mapreduce.map.java.opts": ("spark.executor.extraJavaOptions", str),
    "mapred.map.child.java.opts": ("spark.executor.extraJavaOptions", str),
    "mapreduce.job.maps": ("spark.executor.instances", lambda v: str(int(float(v)))),
}
"""MR key → (Spark key, value conversion)."""

_READ_ELSEWHERE = frozenset({MAX_NUM_DELTA_KEY, EVENTS_MEM_KEY, *QUEUE_KEYS})
"""Job-conf keys the compactor reads itself (not Spark settings)."""


def job_queue(table_properties: Mapping[str, str], request_properties: Mapping[str, str],
              default: str = "") -> str:
    """The compaction's queue in Hive's order of keys (request, then table, then the global setting)."""
    for source in (request_properties, table_properties):
        for key in QUEUE_KEYS:
            value = source.get(COMPACTOR_PREFIX + key)
            if value:
                return value
    return default


def spark_job_conf(job_conf: Mapping[str, str], *, queue: str = "", where: str = "") -> dict[str, str]:
    """``job_conf`` (``compactor.`` properties, prefix stripped) with the Spark equivalents of its MR keys and the
    queue added; keys with no equivalent are logged (once per call) naming them and ``where``."""
    out = dict(job_conf)
    for key, value in job_conf.items():
        lowered = key.lower()
        if lowered.startswith(SPARK_PREFIX) or lowered in _READ_ELSEWHERE:
            continue
        mapped = _MR_TO_SPARK.get(lowered)
        if mapped is None:
            log.warning("%scompactor.%s has no Spark equivalent and is ignored (the compaction runs as a Spark job; "
                        "give a compactor.spark.* property instead)", f"{where}: " if where else "", key)
            continue
        spark_key, convert = mapped
        if spark_key in job_conf:
            continue  # an explicit spark.* setting wins
        try:
            out[spark_key] = convert(value)
        except ValueError:
            log.warning("%scompactor.%s=%r is not a number; not mapped to %s", f"{where}: " if where else "", key,
                        value, spark_key)
    if queue and SPARK_QUEUE not in job_conf:
        out[SPARK_QUEUE] = queue
    return out
