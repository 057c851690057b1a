"""Time units in seconds, the simulator's clock unit. Imports nothing, so any module may use it."""

HOUR_S = 3600.0
DAY_S = 86400.0
