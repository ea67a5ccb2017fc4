"""An S3-compatible server on loopback (moto's server mode) for the object-storage tests, and warehouses on it.

The server runs once per session on 127.0.0.1 with a free port; each test gets its own bucket. Credentials are
moto's dummy ones, in the environment only (as a deployment would give them), so subprocesses (spark-submit, its
executors) inherit them; the endpoint travels as storage options.
"""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from airflow_acid.acid.storage_options import StorageOptions
from airflow_acid.metastore import Metastore
from airflow_acid.warehouse import AcidWarehouse
from tests.compactor.worker_support import CONF

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "acid-test-key", "AWS_SECRET_ACCESS_KEY": f"acid-secret-{uuid.uuid4().hex}",
               "AWS_DEFAULT_REGION": "us-east-1"}
"""moto accepts any credentials; the secret is unique so a test can prove it appears in no log."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """URL of a moto S3 server on loopback, with dummy credentials exported for this process and its children."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def s3_options(s3_endpoint) -> StorageOptions:
    return StorageOptions(endpoint_url=s3_endpoint, region="us-east-1")


@pytest.fixture
def s3_bucket(s3_options) -> str:
    """A fresh bucket; returns its s3:// URL."""
    import s3fs

    name = f"acid-{uuid.uuid4().hex[:12]}"
    fs = s3fs.S3FileSystem(endpoint_url=s3_options.endpoint_url, skip_instance_cache=True)
    fs.mkdir(name)  # us-east-1 takes no location constraint
    return f"s3://{name}"


@pytest.fixture
def s3_wh(tmp_path, s3_bucket, s3_options):
    """A warehouse at ``s3://<bucket>/warehouse`` on a fresh SQLite metastore."""
    ms = Metastore(f"sqlite:///{tmp_path / 'metastore.db'}", CONF).init()
    w = AcidWarehouse(ms, f"{s3_bucket}/warehouse", init=False, host="testhost", storage_options=s3_options)
    yield w
    ms.close()
