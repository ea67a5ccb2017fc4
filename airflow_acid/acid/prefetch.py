"""Run an iterator one step ahead in a background thread, so reading and decoding the next ORC stripe (pyarrow
releases the GIL while it decodes) overlaps the Python work on the current one."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
_POLL_S = 0.1


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(items: Iterator[T], *, depth: int = 1, name: str = "acid-prefetch") -> Iterator[T]:
    """Yield what ``items`` yields, produced by a thread at most ``depth`` items ahead. An exception of ``items``
    is raised here, at the point the consumer reaches it; closing this generator early stops the thread."""
    slots: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(value: object) -> bool:
        while not stop.is_set():
            try:
                slots.put(value, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            put(_Failure(exc))
            return
        finally:
            close = getattr(items, "close", None)
            if stop.is_set() and close is not None:
                close()
        put(_DONE)

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            value = slots.get()
            if value is _DONE:
                return
            if isinstance(value, _Failure):
                raise value.error
            yield value  # type: ignore[misc]  # anything but the two markers is an item of ``items``
    finally:
        stop.set()
        worker.join()
