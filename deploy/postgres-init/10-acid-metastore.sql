-- The ACID metastore gets its own database next to Airflow's.
CREATE DATABASE acid_metastore OWNER airflow;
