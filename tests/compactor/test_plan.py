"""Compaction plans: Hive's isEnoughToCompact, MR output names, partial minors, properties, the JSON document."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_acid.acid import names
from airflow_acid.acid.codes import CompactionType
from airflow_acid.acid.names import LONG_MIN
from airflow_acid.acid.state import get_acid_state
from airflow_acid.acid.writeids import ValidCompactorWriteIdList, ValidReaderWriteIdList
from airflow_acid.compactor.job_conf import effective_properties
from airflow_acid.compactor.planner import (
    NothingToCompact,
    compose_compaction,
    partial_minor_slices,
)
from airflow_acid.job.errors import PlanError
from airflow_acid.job.plan import PLAN_VERSION, CompactionPlan, OrcSettings, not_enough_reason

C = 50


def _wil(hwm: int, aborted=(), open_=()) -> ValidCompactorWriteIdList:
    return ValidCompactorWriteIdList.from_reader(
        ValidReaderWriteIdList(table="db.t", high_watermark=hwm, aborted=tuple(aborted), open=tuple(open_)))


def _plan(dirs, ctype, hwm=100, **kw):
    files = [f"{d}/bucket_00000" if not d.startswith("0") else d for d in dirs]
    wil = _wil(hwm, kw.pop("aborted", ()))
    state = get_acid_state([(f, 10) for f in files], wil)
    return compose_compaction(state, wil, C, ctype, location="/w/t", compaction_id="1", **kw)


MERGE_DIRS = ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delete_delta_0000002_0000002_0001",
              "delta_0000002_0000002_0001"]


def test_minor_of_the_merge_example_names_mr_outputs():
    c = _plan(MERGE_DIRS, "minor")
    assert c.final_outputs == ("delta_0000001_0000002_v0000050", "delete_delta_0000001_0000002_v0000050")
    (step,) = c.steps
    assert step.deltas == ("delta_0000001_0000001_0000", "delta_0000002_0000002_0000",
                           "delete_delta_0000002_0000002_0001", "delta_0000002_0000002_0001")
    assert step.base is None and step.original_files == ()


def test_major_names_base_by_highest_input_write_id_not_hwm():
    c = _plan(["base_0000003_v0000020", "delta_0000004_0000004_0000", "delete_delta_0000006_0000006_0000"],
              "major", hwm=9)
    assert c.final_outputs == ("base_0000006_v0000050",)
    assert c.steps[0].base == "base_0000003_v0000020" and c.steps[0].compacted_base


def test_major_of_originals_only_writes_the_long_min_base():
    c = _plan(["000000_0", "000001_0"], "major")
    assert c.final_outputs == (names.format_base(LONG_MIN, C),)
    assert c.steps[0].original_files == ("000000_0", "000001_0")


@pytest.mark.parametrize(("dirs", "ctype", "fragment"), [
    (["delta_0000001_0000001_0000"], "minor", "more than one current delta"),
    (["delta_0000002_0000002_0000", "delete_delta_0000002_0000002_0000"], "minor", "exactly one insert delta"),
    (["base_0000005"], "major", "found a base and 0 current delta"),
    (["delta_0000001_0000001_0000"], "major", "no base and 1 current delta"),
    ([], "major", "no base and 0"),
])
def test_nothing_to_compact(dirs, ctype, fragment):
    result = _plan(dirs, ctype)
    assert isinstance(result, NothingToCompact)
    assert fragment in result.reason
    assert not result.cleaner_has_work


def test_nothing_to_compact_says_when_the_cleaner_has_work():
    result = _plan(["delta_0000001_0000005_v0000010", "delete_delta_0000001_0000005_v0000010",
                    "delta_0000003_0000003_0000"], "minor")
    assert isinstance(result, NothingToCompact) and result.cleaner_has_work


def test_a_previous_minor_pair_is_not_recompacted_to_the_same_range():
    # Compacting exactly [delta_1_5_vX, delete_delta_1_5_vX] would add a second (1,5) directory without statement
    # id: getAcidState reads both (rule 10c) and every row would appear twice.
    pair = ["delta_0000001_0000005_v0000010", "delete_delta_0000001_0000005_v0000010"]
    assert isinstance(_plan(pair, "minor"), NothingToCompact)
    reason = not_enough_reason(CompactionType.MINOR, has_base=False, has_originals=False,
                               deltas=["delta_0000001_0000005", "delta_0000002_0000003_0000"])
    assert reason is not None and "delta_0000001_0000005" in reason
    assert not_enough_reason(CompactionType.MINOR, has_base=False, has_originals=False,
                             deltas=["delta_0000001_0000005_v0000010", "delete_delta_0000001_0000005_v0000010",
                                     "delta_0000006_0000006_0000"]) is None


def test_minor_of_statement_siblings_of_one_write_id_is_allowed():
    c = _plan(["delta_0000003_0000003_0000", "delta_0000003_0000003_0001"], "minor")
    assert c.final_outputs[0] == "delta_0000003_0000003_v0000050"


def test_aborted_and_open_write_ids_are_not_inputs():
    wil = _wil(10, aborted=[2], open_=[4])
    assert wil.high_watermark == 3
    dirs = ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000",
            "delta_0000004_0000004_0000", "delta_0000005_0000005_0000"]
    state = get_acid_state([(f"{d}/bucket_00000", 5) for d in dirs], wil)
    c = compose_compaction(state, wil, C, "minor", location="/w", compaction_id="x")
    assert c.steps[-1].deltas == ("delta_0000001_0000001_0000", "delta_0000003_0000003_0000")
    assert c.final_outputs[0] == "delta_0000001_0000003_v0000050"
    assert ValidCompactorWriteIdList.from_string(c.write_ids) == wil


def _deltas(groups):
    out, w = [], 0
    for size in groups:
        w += 1
        for s in range(size):
            out.append(names.format_delta(w, w, s))
    return out


def test_partial_minor_slices_keep_statement_siblings_together():
    deltas = _deltas([1, 1, 3, 1, 1, 1, 2])  # 10 deltas
    slices = partial_minor_slices(deltas, 4)
    assert len(slices) == 2  # floor(10 / 4)
    assert slices[0] == deltas[:2]  # the 3-sibling group would be split at 4: the end moves back
    assert slices[1] == deltas[2:6]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=25), st.integers(1, 6))
def test_partial_minor_slices_properties(groups, limit):
    deltas = _deltas(groups)
    slices = partial_minor_slices(deltas, limit)
    if len(deltas) <= limit:
        assert slices == []
        return
    assert len(slices) <= len(deltas) // limit
    flat = [d for s in slices for d in s]
    assert flat == deltas[:len(flat)]  # consecutive from the start
    for s in slices:
        ranges = {names.parse_delta(d).max_write_id for d in s}
        assert len(s) <= limit or len(ranges) == 1  # only an oversized sibling group exceeds the limit
    if len(flat) < len(deltas):  # no write id is split across a slice end
        assert names.parse_delta(flat[-1]).max_write_id != names.parse_delta(deltas[len(flat)]).max_write_id


def test_plan_with_partial_minors_chains_steps():
    dirs = _deltas([1] * 7)
    c = _plan(dirs, "major", max_num_delta=3)
    assert [s.type for s in c.steps] == [CompactionType.MINOR, CompactionType.MINOR, CompactionType.MAJOR]
    assert c.steps[0].outputs == ("delta_0000001_0000003_v0000050", "delete_delta_0000001_0000003_v0000050")
    assert c.steps[1].deltas == tuple(dirs[3:6])
    final = c.steps[-1]
    assert final.deltas == ("delete_delta_0000001_0000003_v0000050", "delta_0000001_0000003_v0000050",
                            "delete_delta_0000004_0000006_v0000050", "delta_0000004_0000006_v0000050",
                            "delta_0000007_0000007_0000")  # rule 9 order: for one range delete_ sorts first
    assert set(final.optional_inputs) == set(c.steps[0].outputs + c.steps[1].outputs)
    assert final.outputs == ("base_0000007_v0000050",)


def test_max_num_delta_comes_from_compactor_properties():
    dirs = _deltas([1] * 5)
    c = _plan(dirs, "minor", table_properties={"compactor.hive.compactor.max.num.delta": "2"})
    assert len(c.steps) == 3 and c.steps[-1].outputs[0] == "delta_0000001_0000005_v0000050"
    assert c.job_conf == {"hive.compactor.max.num.delta": "2"}


def test_properties_compactor_and_tblprops_overrides():
    job, props = effective_properties(
        {"compactor.spark.executor.memory": "1g", "orc.compress": "SNAPPY", "transactional": "true"},
        {"compactor.spark.executor.memory": "4g", "tblprops.orc.compress": "ZSTD", "tblprops.orc.stripe.size": "1024"})
    assert job == {"spark.executor.memory": "4g"}
    assert props["orc.compress"] == "ZSTD" and props["transactional"] == "true"
    orc = OrcSettings.from_properties(props)
    assert (orc.compression, orc.stripe_size) == ("ZSTD", 1024)
    with pytest.raises(PlanError, match="orc.compress"):
        OrcSettings.from_properties({"orc.compress": "LZO"})
    with pytest.raises(PlanError, match="orc.stripe.size"):
        OrcSettings.from_properties({"orc.stripe.size": "big"})


def test_plan_json_round_trip_and_version():
    c = _plan(MERGE_DIRS, "minor", row_schema="struct<id:int,name:string>",
              table_properties={"orc.compress": "SNAPPY"})
    plan = CompactionPlan((c,))
    doc = json.loads(plan.to_json())
    assert doc["version"] == PLAN_VERSION and doc["compactions"][0]["type"] == "minor"
    assert doc["compactions"][0]["orc"]["compression"] == "SNAPPY"
    assert CompactionPlan.from_json(plan.to_json()) == plan
    doc["version"] = 99
    with pytest.raises(PlanError, match="version 99 is not supported"):
        CompactionPlan.from_dict(doc)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["compactions"][0].pop("location"), "missing field compactions\\[0\\].location"),
    (lambda d: d["compactions"][0].update(type="abort_txn_cleanup"), "compactions\\[0\\].type"),
    (lambda d: d["compactions"][0].update(type="rebalance"), "last step must be the requested rebalance"),
    (lambda d: d["compactions"][0].update(number_of_buckets=2), "only for a rebalance compaction"),
    (lambda d: d["compactions"][0].update(order_by=[["a"]]), "order_by must be a list of"),
    (lambda d: d["compactions"][0].update(compactor_txn_id="7"), "compactor_txn_id must be int"),
    (lambda d: d["compactions"][0]["steps"][0].update(outputs=["delta_0000001_0000002_v0000049",
                                                                "delete_delta_0000001_0000002_v0000049"]),
     "_v0000050"),
    (lambda d: d["compactions"][0]["steps"][0].update(outputs=["delta_0000001_0000009_v0000050",
                                                                "delete_delta_0000001_0000009_v0000050"]),
     "does not span the input range"),
    (lambda d: d["compactions"][0].update(write_ids="garbage"), "write_ids"),
    (lambda d: d["compactions"].append(dict(d["compactions"][0])), "duplicate compaction id"),
    (lambda d: d["compactions"][0]["steps"][0].update(deltas=["delta_x"]), "delta_x"),
])
def test_invalid_plans_name_the_field(mutate, message):
    doc = json.loads(CompactionPlan((_plan(MERGE_DIRS, "minor"),)).to_json())
    mutate(doc)
    with pytest.raises(PlanError, match=message):
        CompactionPlan.from_dict(doc)


def test_not_json_is_a_plan_error():
    with pytest.raises(PlanError, match="plan.json: not valid JSON"):
        CompactionPlan.from_json("{", source="plan.json")


def test_planner_refuses_a_reader_write_id_list():
    state = get_acid_state([], ValidReaderWriteIdList(table="t", high_watermark=1))
    with pytest.raises(PlanError, match="ValidCompactorWriteIdList"):
        compose_compaction(state, ValidReaderWriteIdList(table="t", high_watermark=1), C, "minor", location="/x",
                        compaction_id="1")


def test_events_mem_from_the_setting_or_a_compactor_property():
    """hive.transactional.events.mem: Hive's default stays out of the job conf; the global setting goes in, a
    table's compactor. property wins over it, a request's over the table's; a bad value names the key."""
    dirs = ["base_0000003_v0000020", "delete_delta_0000004_0000004_0000"]
    assert "hive.transactional.events.mem" not in _plan(dirs, "major").job_conf
    assert _plan(dirs, "major", events_mem=5).job_conf["hive.transactional.events.mem"] == "5"
    table = {"compactor.hive.transactional.events.mem": "7"}
    assert _plan(dirs, "major", events_mem=5, table_properties=table).job_conf["hive.transactional.events.mem"] == "7"
    request = {"compactor.hive.transactional.events.mem": "0"}
    c = _plan(dirs, "major", table_properties=table, request_properties=request)
    assert c.job_conf["hive.transactional.events.mem"] == "0"
    with pytest.raises(PlanError, match=r"hive.transactional.events.mem='lots'"):
        _plan(dirs, "major", table_properties={"compactor.hive.transactional.events.mem": "lots"})
    with pytest.raises(PlanError, match="must not be negative"):
        _plan(dirs, "major", table_properties={"compactor.hive.transactional.events.mem": "-1"})
