"""The multi-host fixture: skipped with the reason where network namespaces cannot be made (not root, no iproute2),
but failed when AIRFLOW_ACID_REQUIRE_NETNS=1 or CI=true (.ci/run sets the former); always torn down."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.deployment.netns import NETNS_REQUIRED_ENV, Network, netns_unavailable_reason


def _required() -> bool:
    return os.environ.get(NETNS_REQUIRED_ENV) == "1" or os.environ.get("CI", "").lower() == "true"


@pytest.fixture
def network(artifacts_dir) -> Iterator[Network]:
    """A fresh private network for simulated hosts; its hosts' logs (processes, Airflow tasks, Spark executors) are
    copied to the artifacts folder at the end (``multi-host/``), everything else removed."""
    reason = netns_unavailable_reason()
    if reason is not None:
        message = f"multi-host deployment test: {reason}"
        if _required():
            pytest.fail(f"{message} ({NETNS_REQUIRED_ENV}=1 or CI=true: this test must run)")
        pytest.skip(message)
    from tests.deployment.cluster import network_root

    net = Network(network_root())
    try:
        yield net
    finally:
        problems = net.teardown()
        keep = artifacts_dir / "multi-host"
        shutil.rmtree(keep, ignore_errors=True)
        for host in net.hosts.values():
            if (host.root / "logs").is_dir():
                shutil.copytree(host.root / "logs", keep / host.name, dirs_exist_ok=True)
            task_logs = host.root / "airflow" / "logs"
            if task_logs.is_dir():
                shutil.copytree(task_logs, keep / host.name / "airflow-logs", dirs_exist_ok=True)
            for executor_log in (host.root / "work").rglob("std*"):  # Spark executors' stdout/stderr
                target = keep / host.name / "executors" / executor_log.relative_to(host.root / "work")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(executor_log, target)
        shutil.rmtree(net.root, ignore_errors=True)
        assert not problems, f"teardown left things behind: {problems}"
