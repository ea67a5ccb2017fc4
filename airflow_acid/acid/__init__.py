"""The table format: names, BucketCodec, snapshots, directory selection, ACID ORC files, merge-on-read.

This layer imports no SQLAlchemy, no Airflow and no PySpark (docs/architecture.md#layers).
"""
