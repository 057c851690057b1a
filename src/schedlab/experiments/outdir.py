"""Run directories that are never half-written.

A run writes into a hidden staging directory beside ``--out`` and is renamed into place only
when complete, so an interrupted run (Ctrl-C, SIGTERM, an error) leaves nothing that looks
finished. An existing run directory is replaced only with ``force``; a directory holding
anything else is never touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from schedlab.errors import ConfigError

# A directory holding one of these is a schedlab run (simulate, compare, ces, forecast, characterize).
RUN_MARKERS = ("run.json", "summary.json", "comparison.csv", "forecast_comparison.csv", "index.html")


def is_run_dir(path: Path) -> bool:
    return any((path / name).exists() for name in RUN_MARKERS)


def check_out(out: Path, *, force: bool, option: str = "--out") -> Path:
    """Fail before any work if ``out`` cannot become a run directory; return it absolute. A
    symbolic link (even one whose target does not exist yet) stands for its target: the run
    goes there and the link keeps pointing at it."""
    out = Path(out).absolute()
    if out.is_symlink():
        out = Path(os.path.realpath(out))
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{option} {out}: {parent} is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{option} {out}: cannot write in {parent}")
            break
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"{option} {out}: exists and is a file")
        if any(out.iterdir()):
            if not is_run_dir(out):
                raise ConfigError(f"{option} {out}: exists and holds files that are not a schedlab run; "
                                  "choose another directory")  # fmt: skip
            if not force:
                raise ConfigError(f"{option} {out}: a run is already there; pass --force to replace it")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} {out}: cannot write in it")
    return out


@contextmanager
def staged(out: Path, *, force: bool) -> Iterator[Path]:
    """Yield a staging directory beside ``out``; on success it replaces ``out``. On any failure,
    the body's or the final move's (another run took ``out`` meanwhile, Ctrl-C, SIGTERM made an
    exception by :mod:`schedlab.terminal`), the staging directory is removed and a run being
    replaced is put back.

    ``force`` allows replacing an existing run directory (its old files go with it)."""
    out = check_out(out, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    old = None
    try:
        stage.chmod(0o755)
        yield stage
        check_out(out, force=force)
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            out.rename(old)
        stage.rename(out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if old is not None and not out.exists():
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
