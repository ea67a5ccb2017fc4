"""prefetched: an iterator run one step ahead in a thread, errors and early stops handed over cleanly."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_acid.acid.prefetch import prefetched


def test_yields_everything_in_order_at_most_depth_ahead():
    produced: list[int] = []

    def items():
        for i in range(20):
            produced.append(i)
            yield i

    seen = []
    for value in prefetched(items(), depth=1):
        time.sleep(0.002)
        assert len(produced) <= value + 3  # the item in hand, one in the slot, one being produced
        seen.append(value)
    assert seen == list(range(20))


def test_an_error_of_the_source_is_raised_where_the_consumer_reaches_it():
    def items():
        yield 1
        raise ValueError("stripe 2 is corrupt")

    got = []
    with pytest.raises(ValueError, match="stripe 2 is corrupt"):
        for value in prefetched(items()):
            got.append(value)
    assert got == [1]


def test_stopping_early_stops_the_thread_and_closes_the_source():
    closed = threading.Event()

    def items():
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    before = threading.active_count()
    stream = prefetched(items(), name="test-prefetch")
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()
    assert closed.wait(5)
    assert threading.active_count() == before
