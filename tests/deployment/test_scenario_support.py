"""The multi-host test's own checks can fail: obsolete directories are found, a lost task without a later finished
attempt does not count, the model applies writes in order, and the fixture says why it cannot run without root."""

from __future__ import annotations

import pytest

from tests.deployment import netns
from tests.deployment.scenario_support import Model, lost_and_rerun, obsolete

LOST = ("INFO TaskSetManager: task 0.0 in stage 0.0 (TID 0) failed because while it was being computed, its executor "
        "exited for a reason unrelated to the task. Not counting this failure towards the maximum number of failures")


def test_obsolete_directories_are_the_ones_something_else_covers():
    assert obsolete(["base_0000009_v0000020", "delta_0000010_0000010_0000"]) == []
    assert obsolete(["base_0000009_v0000020", "delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000",
                     "base_0000002"]) == ["base_0000002", "delete_delta_0000004_0000004_0000",
                                          "delta_0000003_0000003_0000"]
    assert obsolete(["delta_0000001_0000004_v0000009", "delta_0000002_0000002_0000",
                     "delta_0000005_0000005_0000"]) == ["delta_0000002_0000002_0000"]
    assert obsolete(["delta_0000001_0000001_0000", "delete_delta_0000001_0000001_0000"]) == []


def test_a_lost_task_counts_only_when_a_later_attempt_finished():
    finished = "INFO TaskSetManager: Finished task 0.1 in stage 0.0 (TID 2) in 762 ms on 10.0.0.7 (executor 0) (2/5)"
    assert lost_and_rerun(f"{LOST}\n{finished}") == ["0.0"]
    assert lost_and_rerun(LOST) == []
    other_stage = finished.replace("stage 0.0", "stage 1.0")
    assert lost_and_rerun(f"{LOST}\n{other_stage}") == []
    assert lost_and_rerun(finished) == []


def test_model_applies_writes_in_order():
    model = Model(["t", "p"])
    model.insert("t", [[1, "a"], [2, "b"]])
    model.update("t", 2, {"v": "B"})
    model.delete("t", 1)
    model.insert("p", [[1, 10]], {"ds": "d1"})
    model.insert("p", [[1, 11]], {"ds": "d2"})
    assert model.expected() == {"t": [[2, "B"]], "p": [[1, 10, "d1"], [1, 11, "d2"]]}
    assert [next(iter(s)) for s in model.take()] == ["insert", "update", "delete", "insert", "insert"]
    assert model.take() == []


def test_not_root_is_a_reason_to_skip(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.netns_unavailable_reason() == "needs root (ip netns add, veth pairs, a bridge)"


def test_missing_iproute2_is_a_reason_to_skip(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns.shutil, "which", lambda name: None)
    assert "iproute2" in netns.netns_unavailable_reason()


@pytest.mark.parametrize("env, required", [({}, False), ({"CI": "true"}, True),
                                           ({netns.NETNS_REQUIRED_ENV: "1"}, True), ({"CI": "false"}, False)])
def test_ci_requires_the_test(monkeypatch, env, required):
    from tests.deployment.conftest import _required

    for name in ("CI", netns.NETNS_REQUIRED_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _required() is required
