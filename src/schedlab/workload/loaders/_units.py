"""The time units of a trace's numeric time fields (the ``time_unit`` option of every loader)."""

from __future__ import annotations

from schedlab.errors import ConfigError

# Seconds per unit.
TIME_UNITS = {"s": 1.0, "ms": 0.001, "min": 60.0, "h": 3600.0}


def seconds_per(time_unit: str) -> float:
    """Seconds in one ``time_unit`` ("s", "ms", "min", "h"); :class:`ConfigError` for another unit."""
    if time_unit not in TIME_UNITS:
        raise ConfigError(f"unknown time unit {time_unit!r}; use one of {list(TIME_UNITS)}")
    return TIME_UNITS[time_unit]
