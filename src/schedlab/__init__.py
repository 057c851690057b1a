"""schedlab: a lab for scheduling deep-learning work on GPU clusters."""

__version__ = "0.1.0"
