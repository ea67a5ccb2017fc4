"""Plans of insert-only (MM) compactions: output names (no delete delta), partial minors, the JSON document
(version 2, ``insert_only``; version 1 documents still read) and the checks that refuse a malformed MM plan."""

from __future__ import annotations

import json

import pytest

from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.planner import compose_compaction
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import PLAN_VERSION, CompactionPlan

C = 50
MM_DIRS = ["base_0000002_v0000010", "delta_0000003_0000003_0000", "delta_0000004_0000004_0000",
           "delta_0000004_0000004_0001", "delta_0000005_0000005_0000", "delta_0000006_0000006_0000"]


def _mm_plan(dirs, ctype, *, aborted=(), **kw):
    wil = ValidCompactorWriteIdList.from_reader(
        ValidReaderWriteIdList(table="db.mm", high_watermark=9, aborted=tuple(aborted)))
    files = [(f"{d}/000000_0", 10) for d in dirs]
    state = get_acid_state(files, wil)
    return compose_compaction(state, wil, C, ctype, location="/w/mm", compaction_id="7", insert_only=True, **kw)


def test_mm_major_and_minor_outputs_skip_aborted_deltas():
    major = _mm_plan(MM_DIRS, "major", aborted=(5,))
    (step,) = major.steps
    assert major.insert_only and major.final_outputs == ("base_0000006_v0000050",)
    assert step.base == "base_0000002_v0000010" and "delta_0000005_0000005_0000" not in step.deltas
    assert step.input_files[0] == "base_0000002_v0000010/000000_0" and len(step.input_files) == 5
    minor = _mm_plan(MM_DIRS, "minor", aborted=(5,))
    assert minor.final_outputs == ("delta_0000003_0000006_v0000050",)  # no delete_delta for an MM table
    assert minor.steps[0].base is None and len(minor.steps[0].deltas) == 4


def test_mm_partial_minors_write_one_delta_each():
    plan = _mm_plan(MM_DIRS[1:], "minor", max_num_delta=2)
    # The statement siblings of write id 4 fold first (the lone write id 3 slice is not enough on its own).
    assert [(s.deltas, s.outputs, s.optional_inputs) for s in plan.steps] == [
        (("delta_0000004_0000004_0000", "delta_0000004_0000004_0001"), ("delta_0000004_0000004_v0000050",), ()),
        (("delta_0000003_0000003_0000", "delta_0000004_0000004_v0000050", "delta_0000005_0000005_0000",
          "delta_0000006_0000006_0000"), ("delta_0000003_0000006_v0000050",), ("delta_0000004_0000004_v0000050",))]


def test_mm_plan_json_round_trip_and_version_1_documents():
    plan = CompactionPlan((_mm_plan(MM_DIRS, "major"),))
    doc = json.loads(plan.to_json())
    assert doc["version"] == PLAN_VERSION == 2 and doc["compactions"][0]["insert_only"] is True
    assert CompactionPlan.from_json(plan.to_json()) == plan
    # A version 1 document (written before insert-only compactions existed) reads as full ACID.
    old = _mm_plan(MM_DIRS, "minor")
    v1 = json.loads(CompactionPlan((old,)).to_json())
    v1["version"] = 1
    del v1["compactions"][0]["insert_only"]
    v1["compactions"][0]["steps"][0]["outputs"].append("delete_delta_0000003_0000006_v0000050")
    read = CompactionPlan.from_dict(v1)
    assert not read.compactions[0].insert_only and read.version == PLAN_VERSION
    with pytest.raises(PlanError, match="must be bool"):
        CompactionPlan.from_dict({**doc, "compactions": [{**doc["compactions"][0], "insert_only": "yes"}]})


def test_malformed_mm_plans_are_refused():
    doc = json.loads(CompactionPlan((_mm_plan(MM_DIRS, "minor"),)).to_json())
    step = doc["compactions"][0]["steps"][0]
    step["outputs"].append("delete_delta_0000003_0000006_v0000050")
    with pytest.raises(PlanError, match=r"insert-only minor compaction's output is \[delta_a_b_vC\]"):
        CompactionPlan.from_dict(doc)
    step["outputs"].pop()
    step["deltas"].append("delete_delta_0000006_0000006_0000")
    with pytest.raises(PlanError, match="no delete deltas"):
        CompactionPlan.from_dict(doc)
