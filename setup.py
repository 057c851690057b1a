"""Build hook: with ``SCHEDLAB_COMPILE=1``, compile the simulator's core with mypyc.

The modules of :data:`CORE` are ordinary, strictly type-checked Python. mypyc (part of mypy)
turns them into C extensions that Python loads in place of the sources, with the same results
(``tests/test_compiled_core.py``). Everything else, the policies included, stays interpreted. It
needs mypy (the ``dev`` extra pins it) and a C compiler, and a regular install: an editable one
would load the compiled modules over later edits of their sources.

    pip install -e '.[dev]'                                  # mypy, for the build
    SCHEDLAB_COMPILE=1 pip install --no-build-isolation .    # schedlab with a compiled core

Without the variable this is a plain pure-Python build.
"""

import os

from setuptools import setup

# The simulator's inner loop: the engine, its jobs and their rates, the cluster's free GPUs, the
# recorders and the queue drain; and Hadar's allocator, where HadarE spends its time (policies and
# placers stay interpreted: their docstrings are the CLI's help).
CORE = (
    "sim/engine.py",
    "sim/job.py",
    "sim/actions.py",
    "sim/ledger.py",
    "sim/perf.py",
    "sim/recorders.py",
    "policies/common/queues.py",
    "policies/hetero/allocator.py",
    "cluster/state.py",
)


def core_extensions() -> list:
    """The compiled core's extensions when ``SCHEDLAB_COMPILE=1``, else none."""
    if os.environ.get("SCHEDLAB_COMPILE") != "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        raise SystemExit(
            "SCHEDLAB_COMPILE=1 needs mypy (with mypyc) where the build runs: pip install -e '.[dev]', "
            "then SCHEDLAB_COMPILE=1 pip install --no-build-isolation ."
        ) from None

    extensions = mypycify([f"src/schedlab/{module}" for module in CORE], opt_level="3")
    for extension in extensions:
        extension.extra_compile_args.append("-Wno-tautological-compare")  # NaN tests written as x != x or x == x
    return extensions


setup(ext_modules=core_extensions())
