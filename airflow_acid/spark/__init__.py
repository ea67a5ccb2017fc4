"""The Spark compaction job: executes compaction plans (files in, files out; no metastore access)."""
