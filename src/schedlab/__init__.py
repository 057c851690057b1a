"""schedlab: a lab for scheduling deep-learning work on GPU clusters."""

__version__ = "0.1.0"


def compiled_core() -> bool:
    """Whether this install runs the simulator's core compiled (``SCHEDLAB_COMPILE=1``: setup.py):
    whether the engine the import system finds is an extension module (found, not imported)."""
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec

    spec = find_spec("schedlab.sim.engine")
    return spec is not None and str(spec.origin).endswith(tuple(EXTENSION_SUFFIXES))
