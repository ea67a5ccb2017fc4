"""The writer/reader of the multi-host test, run on the client host: ``python client_host.py <command> <json>``.

It knows the metastore only by its URL and the warehouse only as an S3 URL with storage options (credentials come
from the environment). Commands: ``setup`` (bucket, metastore schema, tables), ``write`` (one transaction per item
of a list of statements), ``read`` (every table's rows), ``dirs`` (the directories of each table/partition
location). Output is one JSON document on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import fsspec

from airflow_acid import AcidWarehouse


def _warehouse(args: dict[str, Any], init: bool = False) -> AcidWarehouse:
    return AcidWarehouse(args["metastore"], args["warehouse"], init=init, user="writer", host="client",
                         storage_options=args["storage_options"])


def setup(args: dict[str, Any]) -> dict[str, Any]:
    fs = fsspec.filesystem("s3", endpoint_url=args["storage_options"]["endpoint_url"])
    bucket = args["warehouse"].removeprefix("s3://").split("/", 1)[0]
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    with _warehouse(args, init=True) as wh:
        for table in args["tables"]:
            wh.create_table(table["name"], [tuple(c) for c in table["columns"]],
                            partition_by=[tuple(c) for c in table.get("partition_by", [])] or None,
                            bucket_by=table.get("bucket_by", ()), num_buckets=table.get("num_buckets"),
                            properties=table.get("properties"))
        return {"tables": {t["name"]: wh.table(t["name"]).location for t in args["tables"]}}


def write(args: dict[str, Any]) -> dict[str, Any]:
    """Each item: {"insert"|"update"|"delete": table, "rows"/"set"/"where": …, "partition": …} in its own txn."""
    done = []
    with _warehouse(args) as wh:
        for item in args["statements"]:
            with wh.transaction() as txn:
                if "insert" in item:
                    result = txn.insert(item["insert"], [tuple(r) for r in item["rows"]],
                                        partition=item.get("partition"))
                elif "update" in item:
                    result = txn.update(item["update"], item["set"], where=item["where"])
                else:
                    result = txn.delete(item["delete"], where=item["where"])
                done.append({"txn": txn.txn_id, "inserted": result.inserted, "deleted": result.deleted})
    return {"statements": done}


def read(args: dict[str, Any]) -> dict[str, Any]:
    with _warehouse(args) as wh:
        return {name: sorted(map(list, (tuple(r.values()) for r in wh.read(name).to_pylist())))
                for name in args["tables"]}


def dirs(args: dict[str, Any]) -> dict[str, Any]:
    """Directory names directly under each table location and each partition of it."""
    out: dict[str, list[str]] = {}
    with _warehouse(args) as wh:
        for name in args["tables"]:
            fs, root = wh.io.storage(wh.table(name).location)
            places = [root] + [p["name"] for p in fs.listdir(root) if p["type"] == "directory"
                               and "=" in p["name"].rsplit("/", 1)[-1]]
            for place in places:
                key = name + place[len(root):]
                fs.invalidate_cache(place)
                out[key] = sorted(p["name"].rsplit("/", 1)[-1] for p in fs.listdir(place)
                                  if p["type"] == "directory" and "=" not in p["name"].rsplit("/", 1)[-1])
    return out


COMMANDS = {"setup": setup, "write": write, "read": read, "dirs": dirs}

if __name__ == "__main__":
    command, payload = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(COMMANDS[command](payload)))
