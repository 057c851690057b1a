"""schedlab: a lab for scheduling deep-learning work on GPU clusters."""

__version__ = "0.1.0"


def compiled_core() -> bool:
    """Whether this install runs the simulator's core compiled (``SCHEDLAB_COMPILE=1``: setup.py)."""
    from importlib.machinery import EXTENSION_SUFFIXES

    from schedlab.sim import engine

    return str(engine.__file__).endswith(tuple(EXTENSION_SUFFIXES))
