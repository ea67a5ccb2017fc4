"""Where a compaction job writes: the names its output lives under before and after publication.

Output directory names themselves (``base_N_vC``, ``delta_a_b_vC``) are the table format's (``acid.names``).
"""

from __future__ import annotations

TMP_PREFIX = "_tmp_compactor_v"
"""Temporary output lives in ``<location>/_tmp_compactor_v<C>/``: hidden from readers (leading ``_``)."""


def tmp_dir_name(compactor_txn_id: int) -> str:
    """The hidden temporary directory of compactor transaction ``compactor_txn_id`` inside a partition."""
    return f"{TMP_PREFIX}{compactor_txn_id:07d}"
