# The one image of the docker-compose deployment: Apache Airflow with airflow-acid installed, Java 17 for
# spark-submit, and Spark itself from the pyspark wheel (spark-submit, spark-class and the jars).
#
# The spark-master and spark-worker services run this same image (`spark-class` from the wheel) instead of
# apache/spark: that image ships another Python minor (Ubuntu's 3.10; PySpark refuses a driver/worker minor
# mismatch), a different uid on the shared warehouse, and none of the packages the compaction job imports on the
# executors (pyarrow, pyorc, fsspec, airflow_acid's dependencies). Here driver and executors share the Spark
# release, the Python build and the interpreter path the driver hands out as spark.pyspark.python.
#
# Versions follow setup.cfg (Airflow and pyspark ranges, Python minors; the test extra's pyspark pin is this
# image's Spark); tests/test_deployment.py fails when one side is bumped alone, and the build itself fails if pip
# moved Airflow or mixed Spark releases. pyspark and the Spark provider's pyspark-client are both pinned to
# SPARK_VERSION here: a release mix overwrites pyspark's Python files.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}

ARG PYTHON_VERSION
ARG SPARK_VERSION=4.2.0

SHELL ["/bin/bash", "-o", "pipefail", "-o", "errexit", "-o", "nounset", "-c"]

USER root
# Debian's JRE 17 (the base is Debian bookworm). Slim Debian lacks /usr/share/man/man1, which the JRE's
# update-alternatives step writes into. JAVA_HOME gets a name that does not depend on the CPU architecture.
# The warehouse folder is created here so the named volume mounted on it starts owned by airflow:0, group-writable.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/java-17 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o airflow -g 0 -m 2775 /opt/acid /opt/acid/warehouse \
    && install -d -o airflow -g 0 /opt/airflow-acid
# $AIRFLOW_ACID_HOME/warehouse is where the client API and the command line put new tables by default.
ENV JAVA_HOME=/usr/lib/jvm/java-17 \
    AIRFLOW_ACID_HOME=/opt/acid

USER airflow
WORKDIR /opt/airflow-acid

# Dependencies first, from setup.cfg alone, so editing the code or the README does not download pyspark again.
# Pinning apache-airflow to the base image's release ($AIRFLOW_VERSION is the base image's own ENV) keeps pip from
# moving Airflow, as Airflow's image documentation recommends.
COPY --chown=airflow:0 setup.cfg ./
RUN python -c 'import configparser; c = configparser.ConfigParser(); c.read("setup.cfg"); \
print(c["options"]["install_requires"]); print(c["options.extras_require"]["postgres"])' > /tmp/requirements.txt \
    && pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" -r /tmp/requirements.txt \
       "pyspark==${SPARK_VERSION}" "pyspark-client==${SPARK_VERSION}" \
    && rm /tmp/requirements.txt

# The package itself (its entry points register the provider and the UI plugin), then the deployment scripts.
COPY --chown=airflow:0 pyproject.toml README.md ./
COPY --chown=airflow:0 airflow_acid ./airflow_acid
COPY --chown=airflow:0 pyspark_hive_acid ./pyspark_hive_acid
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" "/opt/airflow-acid[postgres]" \
       "pyspark==${SPARK_VERSION}" "pyspark-client==${SPARK_VERSION}" \
    && rm -rf build airflow_acid.egg-info
COPY --chown=airflow:0 deploy/airflow ./deploy/airflow

# Fail the build, not the first compaction: Airflow still the base image's release, Spark's Python files and jars
# from one release (pyspark-client overwrites pyspark's Python files when versions differ), the expected Python
# minor, and spark-submit runnable from PATH with this JRE.
RUN test "$(python -c 'import importlib.metadata as m; print(m.version("apache-airflow"))')" = "${AIRFLOW_VERSION}" \
    && test "$(python -c 'import pyspark; print(pyspark.__version__)')" = "${SPARK_VERSION}" \
    && spark_home="$(python -c 'import pyspark; print(*pyspark.__path__)')" \
    && ls "${spark_home}"/jars/spark-core_*-"${SPARK_VERSION}".jar \
    && test "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "${PYTHON_VERSION}" \
    && spark-submit --version

WORKDIR /opt/airflow
