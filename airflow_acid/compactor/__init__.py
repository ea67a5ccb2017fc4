"""Compactor: Hive's compactor threads as plain Python over the metastore and the table format, as named roles.

The planner (``planner``: what to compact, the plan document, its cost — pure composition plus a read-only preview),
the Initiator (``initiator``, with the pure decision in ``decision``), the Worker (``worker``: the lifecycle of a
claimed row; it hands plans to a :class:`~airflow_acid.job.runner.Runner`, the executor, it is given), the committer
(``committer``: output verification and removal, marking compacted, run figures), the scheduler (``scheduling``:
the order of one run within its budgets), the dry run (``dry_run``), the Cleaner (``cleaner``) and the HouseKeeper
(``housekeeper``). What each cycle reports lives in ``reports``; errors in ``errors``. The job contract (plan and
result documents) lives in ``airflow_acid.job``; the Spark job that executes plans in ``airflow_acid.spark``. No
Airflow imports: the Airflow layer wraps these classes.
"""
