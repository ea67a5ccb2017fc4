"""Byte sizes the one way every surface writes them (console tables, charts, the Next run page, the Initiator's
reasons, the CLI's plan): IEC units — ``818 B``, ``1.4 KiB``, ``2.0 GiB``.

Imports nothing of the project, so every layer may use it (``compactor/`` writes its reasons with it)."""

from __future__ import annotations

IEC_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def iec_size(n: float) -> str:
    """Bytes in IEC units: whole bytes below 1 KiB, one decimal above (``818 B``, ``1.5 KiB``, ``2.0 GiB``)."""
    value = float(n)
    for unit in IEC_UNITS:
        if abs(value) < 1024 or unit == IEC_UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable: the last unit returns")
