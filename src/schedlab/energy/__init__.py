"""Energy saving: the Helios CES service (SC '21 §4.3), replayed on node series or run in a simulation."""

from schedlab.energy.ces import CESConfig, arrival_check, periodic_check, should_power_down

__all__ = ["CESConfig", "arrival_check", "periodic_check", "should_power_down"]
