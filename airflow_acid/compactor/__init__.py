"""Compactor: Hive's compactor threads as plain Python over the metastore and the table format.

Planning (``planning``, pure), the Initiator (``initiator``, with the pure decision in ``decision``), the Worker
(``worker``, which hands plans to a :class:`~airflow_acid.job.runner.Runner` it is given), the Cleaner
(``cleaner``) and the HouseKeeper (``housekeeper``). The job contract (plan and result documents) lives in
``airflow_acid.job``; the Spark job that executes plans in ``airflow_acid.spark``. No Airflow imports: the Airflow
layer wraps these classes.
"""
