"""The ``hive_acid`` data source where Spark 4 looks for Python data sources by itself: a top-level ``pyspark_*``
package whose ``DefaultSource`` is a ``DataSource``, found on the Python path of the session's Python workers.

So ``spark.read.format("hive_acid")`` works without ``airflow_acid.client.spark_source.register(spark)`` wherever
airflow-acid is installed. ``register`` still adds what this one cannot: the session's ``spark.airflow_acid.*``
defaults and partition pruning by pushed filters. Spark 3.5 has no Python data sources and never imports this.
"""

from airflow_acid.client.spark_source import AcidDataSource as DefaultSource

__all__ = ["DefaultSource"]
