"""``run.json``: what a run directory needs to be repeated exactly.

It records the command with every option resolved, the working directory it ran in, the
schedlab and Python versions, the SHA-256 of every input file the command named and of every
output file, and the resolved settings of each simulation. ``schedlab rerun`` reads it back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from schedlab import __version__, compiled_core
from schedlab.errors import InputError

MANIFEST = "run.json"
# Outputs whose bytes must repeat: the per-job and time-series tables. Summaries and comparison tables
# hold wall-clock fields (sim_wall_s, peak_rss_mb), and plots and pages are drawings; they are not compared.
REPRODUCIBLE_SUFFIXES = (".parquet",)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def input_files(argv: Sequence[str], cwd: Path, out: Path) -> list[Path]:
    """Existing files named by the command's values, also inside ``kind:PATH@DATE`` cluster strings;
    a folder stands for every file below it. The output directory is not an input."""
    found: dict[Path, None] = {}
    for token in argv:
        for candidate in {token, token.partition(":")[2].partition("@")[0]} - {""}:
            path = (cwd / candidate).absolute()
            if path == out or out in path.parents or path in out.parents or not path.exists():
                continue
            if not (path.is_dir() or path.is_file()):
                continue  # a pipe or device: read once by the run, nothing to check later
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            found.update(dict.fromkeys(files))
    return list(found)


def checksums(paths: Iterable[Path], root: Path | None = None) -> dict[str, str]:
    return {str(p.relative_to(root) if root else p): sha256(p) for p in paths}


def output_files(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(
    run_dir: Path, *, argv: list[str], cwd: Path, out: Path, settings: Any = None
) -> Path:
    """Write ``run_dir/run.json`` for a run that will live at ``out`` (``run_dir`` may be its staging copy)."""
    manifest = {
        "command": argv,
        "cwd": str(cwd),
        "schedlab_version": __version__,
        "compiled_core": compiled_core(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": checksums(input_files(argv, cwd, out)),
        "settings": _plain(settings),
        "outputs": checksums(output_files(run_dir), run_dir),
    }
    path = run_dir / MANIFEST
    path.write_text(json.dumps(manifest, indent=2, allow_nan=True) + "\n")
    return path


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise InputError(f"no {MANIFEST} here: not a run directory, or written by an older schedlab", file=str(run_dir))
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"not valid JSON: {err}", file=str(path)) from None
    for key in ("command", "cwd", "inputs", "outputs"):
        if key not in manifest:
            raise InputError("missing key", file=str(path), field=key)
    return manifest


def changed_inputs(manifest: dict[str, Any]) -> list[str]:
    """Input files that are gone or whose bytes differ from when the run was made."""
    return [name for name, digest in manifest["inputs"].items()
            if not Path(name).is_file() or sha256(Path(name)) != digest]  # fmt: skip


def output_states(manifest: dict[str, Any], run_dir: Path) -> dict[str, str]:
    """Each reproducible output the manifest records, as found in ``run_dir``: ``same`` (its
    recorded SHA-256), ``changed`` or ``missing``."""
    states = {}
    for name, digest in manifest["outputs"].items():
        if name.endswith(REPRODUCIBLE_SUFFIXES):
            path = run_dir / name
            states[name] = "missing" if not path.is_file() else "same" if sha256(path) == digest else "changed"
    return states


def changed_outputs(manifest: dict[str, Any], run_dir: Path) -> list[str]:
    """The run's own reproducible outputs that are gone (``NAME (missing)``) or whose bytes no
    longer match the SHA-256 recorded when it was made (``NAME (changed)``)."""
    return [f"{name} ({state})" for name, state in output_states(manifest, run_dir).items() if state != "same"]


def compare_outputs(manifest: dict[str, Any], run_dir: Path) -> tuple[list[str], list[str]]:
    """(identical, different) reproducible outputs of ``run_dir`` against the manifest's record."""
    states = output_states(manifest, run_dir)
    return [n for n, s in states.items() if s == "same"], [n for n, s in states.items() if s != "same"]


def _plain(value: Any) -> Any:
    """Dataclasses, paths and tuples as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
