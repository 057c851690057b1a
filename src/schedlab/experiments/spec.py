"""Sweep specs: a TOML file that names workloads, policies, seeds and engine settings, expanded
into a grid of runs (:class:`Cell`).

A value given as a list on a key that can vary (see :data:`WORKLOAD_AXES`, policy ``params``,
``[config]`` and ``seeds``) is an axis of the grid; every combination of axis values is one
cell. Every key is described in ``docs/guide.md`` ("Sweep specs"). An error names the file
and the key, e.g. ``spec.toml: workloads.venus.load: expected a positive number, got 'high'``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import ConfigError, did_you_mean
from schedlab.sim.config import SimConfig

# Workload keys that may be a list (an axis of the grid), and the type each value must have.
WORKLOAD_AXES = ("jobs", "load", "arrival_scale", "spot_scale", "sample", "cluster")
WORKLOAD_KEYS = ("trace", "format", "synthetic", "window", "train_until", "time_unit", "skip", "columns",
                 "tenant_prefix", "tenant_map", "fit_cluster", *WORKLOAD_AXES)  # fmt: skip
POLICY_KEYS = ("policy", "placer", "params")
CONFIG_KEYS = tuple(f.name for f in dataclasses.fields(SimConfig))
TOP_KEYS = ("name", "description", "seeds", "cluster", "workloads", "policies", "config", "report")
REPORT_KEYS = ("tables", "load_axis")
TABLE_KEYS = ("title", "rows", "metrics", "labels", "units", "where", "ratio_to", "ratio", "digits", "paper")
RATIOS = ("baseline/row", "row/baseline")
TABLE_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "x": 1.0, "%": 0.01, "": 1.0}
SPOT_PROFILES = ("gfs", "gfs-a100", "gfs-a100-calibrated")


@dataclass(frozen=True)
class Table:
    """A Markdown table the report writes from ``results.parquet``: one row per value of the
    ``rows`` keys, one column per metric (mean over seeds), optionally as ``ratio_to`` / cell."""

    title: str
    rows: tuple[str, ...]
    metrics: tuple[str, ...]
    labels: tuple[str, ...] = ()
    units: dict[str, str] = field(default_factory=dict)
    where: dict[str, Any] = field(default_factory=dict)
    ratio_to: dict[str, Any] = field(default_factory=dict)
    ratio: str = RATIOS[0]
    digits: int = 2
    # Published values shown beside ours: row (its rows-key values as text) -> metric -> value.
    paper: dict[tuple[str, ...], dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Cell:
    """One run of the grid: its keys (the columns of ``results.parquet``) and its settings."""

    keys: dict[str, Any]
    run: Any  # schedlab.experiments.run.RunSpec
    fit_cluster: bool = False  # drop the jobs that cannot run on the cluster (see sweep.fit_to_cluster)

    @property
    def name(self) -> str:
        """The cell's folder name: its keys, readable and safe in a path."""
        parts = [f"{k}={_text(v)}" for k, v in self.keys.items() if k not in ("workload", "policy", "seed")]
        head = [_text(self.keys["workload"]), _text(self.keys["policy"])]
        return _safe("_".join(head + parts + [f"seed={self.keys['seed']}"]))

    def fingerprint(self) -> str:
        """A hash of every setting of the run: a finished cell counts only while it matches."""
        from schedlab.experiments.manifest import _plain

        settings = {"run": _plain(self.run), "fit_cluster": True} if self.fit_cluster else _plain(self.run)
        text = json.dumps(settings, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SweepSpec:
    """A parsed spec: its cells in grid order, the axes that vary, and the report's tables."""

    path: Path
    name: str
    description: str
    cells: tuple[Cell, ...]
    axes: tuple[str, ...]
    tables: tuple[Table, ...]
    load_axis: str | None


def load_spec(path: Path | str) -> SweepSpec:
    """Read, check and expand ``path``; a :class:`ConfigError` names the file and the key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such spec file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        return _expand(path, data)
    except _KeyError as exc:
        raise ConfigError(f"{path}: {exc.key}: {exc.message}") from None


class _KeyError(Exception):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


def _expand(path: Path, data: dict[str, Any]) -> SweepSpec:
    _known(data, TOP_KEYS, "")
    seeds = _axis(data, "seeds", [0], _int(minimum=0))
    default_cluster = _get(data, "cluster", None, _str)
    workloads = _table(data, "workloads", "")
    policies = _table(data, "policies", "")
    if not workloads:
        raise _KeyError("workloads", "give at least one [workloads.NAME] table")
    if not policies:
        raise _KeyError("policies", "give at least one [policies.NAME] table")
    config_axes = _config_axes(data.get("config", {}))
    workload_grid = {name: _workload_axes(name, w, default_cluster) for name, w in workloads.items()}
    policy_grid = {name: _policy_axes(name, p) for name, p in policies.items()}
    grids = []
    for wname, (wbase, waxes) in workload_grid.items():
        for pname, (pbase, paxes) in policy_grid.items():
            grid = {**waxes, **{f"param.{k}": v for k, v in paxes.items()},
                    **{f"config.{k}": v for k, v in config_axes.items()}, "seed": seeds}  # fmt: skip
            grids.append((wname, wbase, pname, pbase, grid))
    # The keys of a cell: the axes that take more than one value somewhere in the spec.
    axes = list(dict.fromkeys(k for *_, grid in grids for k, v in grid.items() if len(v) > 1 and k != "seed"))
    cells = []
    for wname, wbase, pname, pbase, grid in grids:
        for values in itertools.product(*grid.values()):
            cells.append(_cell(wname, wbase, pname, pbase, dict(zip(grid, values)), axes))
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        raise _KeyError("policies", "two cells get the same keys; give policies and workloads distinct names")
    report = _table(data, "report", "")
    _known(report, REPORT_KEYS, "report.")
    tables = tuple(_report_table(i, t) for i, t in enumerate(_list(report, "tables", "report.")))
    for i, table in enumerate(tables):
        _check_paper_rows(f"report.tables[{i}].paper", table, cells)
    load_axis = _get(report, "load_axis", None, _str, "report.")
    return SweepSpec(path, _get(data, "name", path.stem, _str), _get(data, "description", "", _str),
                     tuple(cells), tuple(axes), tables, load_axis)  # fmt: skip


def _cell(wname: str, wbase: dict[str, Any], pname: str, pbase: dict[str, Any], chosen: dict[str, Any],
          axes: list[str]) -> Cell:
    from schedlab.experiments.run import RunSpec, WorkloadSpec
    from schedlab.policies.registry import POLICIES

    seed = chosen["seed"]
    w = {**wbase, **{k: v for k, v in chosen.items() if k in WORKLOAD_AXES}}
    cluster = w.pop("cluster")
    fit_cluster = w.pop("fit_cluster")
    options = dict(w.pop("options"))
    if w.get("arrival_scale") == 1.0:
        w["arrival_scale"] = None  # load x 1: the workload as it is, not re-timed
    spot = w.pop("spot_scale", None)
    if spot is not None:
        options["spot_scale"] = spot
    wspec = WorkloadSpec(seed=seed, options=options, **w)
    params = {**pbase["params"], **{k[6:]: v for k, v in chosen.items() if k.startswith("param.")}}
    config = SimConfig(**{k[7:]: v for k, v in chosen.items() if k.startswith("config.")})
    run = RunSpec(wspec, cluster, pbase["policy"], pbase["placer"], seed, config,
                  params=POLICIES[pbase["policy"]].parse(params))  # each value checked by _policy_axes
    keys = {"workload": wname, "policy": pname, **{k: v for k, v in chosen.items() if k in axes}, "seed": seed}
    return Cell(keys, run, fit_cluster)


def _workload_axes(name: str, w: Any, default_cluster: str | None) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(fixed WorkloadSpec fields, axes) of ``[workloads.NAME]``."""
    at = f"workloads.{name}."
    if not isinstance(w, dict):
        raise _KeyError(at[:-1], "expected a table")
    _known(w, WORKLOAD_KEYS, at)
    trace, synthetic = _get(w, "trace", None, _str, at), _get(w, "synthetic", None, _str, at)
    if (trace is None) == (synthetic is None):
        raise _KeyError(at[:-1], "give either trace (with format) or synthetic")
    fixed: dict[str, Any] = {"options": {}}
    if trace is not None:
        fixed["trace"] = trace
        fixed["fmt"] = _get(w, "format", None, _str, at)
        if fixed["fmt"] is None:
            raise _KeyError(at + "format", "a trace needs its format (see `schedlab traces list`)")
        for key, option in (("time_unit", "time_unit"), ("columns", "columns"), ("skip", "skip")):
            if key in w:
                fixed["options"][option] = _get(w, key, None, _OPTION_CHECKS[key], at)
        for key in ("jobs", "load", "spot_scale"):
            if key in w:
                raise _KeyError(at + key, "applies to a synthetic workload, not a trace")
    else:
        from schedlab.workload.synthetic import PROFILES

        if synthetic not in PROFILES:
            raise _KeyError(at + "synthetic", f"unknown profile '{synthetic}'{did_you_mean(synthetic, PROFILES)}; "
                                                   f"choose one of {', '.join(PROFILES)}")
        fixed["synthetic"] = synthetic
        for key in ("format", "time_unit", "columns", "skip"):
            if key in w:
                raise _KeyError(at + key, "applies to a trace, not a synthetic workload")
        if "spot_scale" in w and synthetic not in SPOT_PROFILES:
            raise _KeyError(at + "spot_scale", f"needs synthetic {' or '.join(SPOT_PROFILES)}")
    from schedlab.cluster.sizing import is_sized

    for key in ("tenant_prefix", "tenant_map"):
        fixed[key] = _get(w, key, None, _str, at)
    fixed["fit_cluster"] = _get(w, "fit_cluster", False, _bool, at)
    # Resolved to seconds by resolve_dates (a date needs the trace's origin).
    fixed["window_s"] = _get(w, "window", None, _window, at)
    fixed["train_until_s"] = _get(w, "train_until", None, _hours_or_date, at)
    axes = {
        "jobs": _axis(w, "jobs", [None], _int(minimum=1), at),
        "load": _axis(w, "load", [None], _positive, at),
        "arrival_scale": _axis(w, "arrival_scale", [None], _positive, at),
        "spot_scale": _axis(w, "spot_scale", [None], _positive, at),
        "sample": _axis(w, "sample", [None], _int(minimum=1), at),
        "cluster": _axis(w, "cluster", [default_cluster], _str, at),
    }
    if axes["cluster"] == [None] and synthetic is None:
        raise _KeyError(at + "cluster", "a trace needs a cluster (here or at the top level)")
    if trace is not None and not Path(trace).exists():
        raise _KeyError(at + "trace", f"no such file: {trace} (relative paths are from the current directory)")
    for cluster in axes["cluster"]:
        _check_cluster(at + "cluster" if "cluster" in w else "cluster", cluster)
        if fixed["fit_cluster"] and cluster is not None and is_sized(cluster):
            raise _KeyError(at + "fit_cluster", f"cluster '{cluster}' is sized so that every job fits; leave it out")
    return fixed, axes


def _check_cluster(key: str, cluster: str | None) -> None:
    """A preset or cluster option; ``helios-vcs[@LOAD]`` is sized to each cell's evaluation
    jobs when it runs (:func:`schedlab.experiments.run.build_run`), so only its LOAD is checked."""
    from schedlab.cluster.presets import load_cluster
    from schedlab.cluster.sizing import is_sized, parse_load

    if cluster is not None:
        try:
            parse_load(cluster) if is_sized(cluster) else load_cluster(cluster)
        except (ConfigError, OSError) as exc:
            raise _KeyError(key, str(exc)) from None


def _policy_axes(name: str, p: Any) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    from schedlab.policies.registry import POLICIES

    at = f"policies.{name}."
    if not isinstance(p, dict):
        raise _KeyError(at[:-1], "expected a table (may be empty: [policies.fifo])")
    _known(p, POLICY_KEYS, at)
    policy = _get(p, "policy", name, _str, at)
    if policy not in POLICIES:
        raise _KeyError(at + "policy" if "policy" in p else at[:-1],
                        f"unknown policy '{policy}'{did_you_mean(policy, POLICIES)}; "
                        f"choose one of {', '.join(POLICIES)}")  # fmt: skip
    placer = _get(p, "placer", None, _str, at)
    if placer is not None:
        from schedlab.policies.common.placers import PLACERS

        if placer not in PLACERS:
            raise _KeyError(at + "placer", f"unknown placer '{placer}'; choose one of {', '.join(PLACERS)}")
    params = _table(p, "params", at)
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in params.items()}
    for key, values in axes.items():
        if not values:
            raise _KeyError(f"{at}params.{key}", "an empty list")
        for value in values:
            try:
                POLICIES[policy].parse({key: value})
            except ConfigError as exc:
                raise _KeyError(f"{at}params.{key}", str(exc)) from None
    return {"policy": policy, "placer": placer, "params": {}}, axes


def _config_axes(config: Any) -> dict[str, list[Any]]:
    if not isinstance(config, dict):
        raise _KeyError("config", "expected a table of engine settings")
    _known(config, CONFIG_KEYS, "config.")
    axes = {key: _axis(config, key, [], _config_value(key), "config.") for key in config}
    for key, values in axes.items():
        for value in values:
            try:
                SimConfig(**{key: value})
            except ConfigError as exc:
                raise _KeyError(f"config.{key}", str(exc)) from None
    return axes


def _report_table(i: int, t: Any) -> Table:
    at = f"report.tables[{i}]."
    if not isinstance(t, dict):
        raise _KeyError(at[:-1], "expected a table")
    _known(t, TABLE_KEYS, at)
    rows = tuple(_list(t, "rows", at, _str)) or ("workload", "policy")
    metrics = tuple(_list(t, "metrics", at, _str))
    if not metrics:
        raise _KeyError(at + "metrics", "list at least one metric (a column of results.parquet)")
    labels = tuple(_list(t, "labels", at, _str))
    if labels and len(labels) != len(metrics):
        raise _KeyError(at + "labels", f"give one label per metric ({len(metrics)})")
    units = _table(t, "units", at)
    for metric, unit in units.items():
        if metric not in metrics:
            raise _KeyError(f"{at}units.{metric}", "not one of this table's metrics")
        if unit not in TABLE_UNITS:
            raise _KeyError(f"{at}units.{metric}", f"expected one of {', '.join(repr(u) for u in TABLE_UNITS)}")
    ratio_to = _table(t, "ratio_to", at)
    for key in ratio_to:
        if key not in rows:
            raise _KeyError(f"{at}ratio_to.{key}", "must be one of the table's rows keys")
    ratio = _get(t, "ratio", RATIOS[0], _str, at)
    if ratio not in RATIOS:
        raise _KeyError(at + "ratio", f"expected one of {', '.join(repr(r) for r in RATIOS)}, got {ratio!r}")
    return Table(_get(t, "title", f"table {i + 1}", _str, at), rows, metrics, labels, units,
                 _table(t, "where", at), ratio_to, ratio, _get(t, "digits", 2, _int(minimum=0), at),
                 _paper(_table(t, "paper", at), rows, metrics, at + "paper"))  # fmt: skip


def _paper(paper: dict[str, Any], rows: tuple[str, ...], metrics: tuple[str, ...], at: str) -> dict[tuple[str, ...], dict[str, float]]:
    """``paper``: tables nested one level per ``rows`` key (``paper.philly.fifo``), the innermost
    a table ``METRIC = VALUE`` of published figures, in the unit of the metric's column."""
    found: dict[tuple[str, ...], dict[str, float]] = {}

    def walk(table: Any, row: tuple[str, ...], key: str) -> None:
        if not isinstance(table, dict):
            raise _KeyError(key, f"expected a table (one level per rows key: {', '.join(rows)})")
        if len(row) < len(rows):
            for name, inner in table.items():
                walk(inner, (*row, name), f"{key}.{name}")
            return
        for metric, value in table.items():
            if metric not in metrics:
                raise _KeyError(f"{key}.{metric}", f"not one of this table's metrics ({', '.join(metrics)})")
            found.setdefault(row, {})[metric] = _number(f"{key}.{metric}", value)

    walk(paper, (), at)
    return found


def _check_paper_rows(at: str, table: Table, cells: list[Cell]) -> None:
    """Each ``paper`` row names values some cell has, as the table shows them (when its rows
    are keys of the grid; other columns are known only once the cells have run)."""
    present = {tuple(str(c.keys[r]) for r in table.rows) for c in cells if all(r in c.keys for r in table.rows)}
    if not present:
        return
    for row in table.paper:
        if row not in present:
            raise _KeyError(f"{at}.{'.'.join(row)}", f"no cell has {'/'.join(table.rows)} = {'/'.join(row)}")


def resolve_dates(spec: SweepSpec) -> SweepSpec:
    """Turn ``window`` and ``train_until`` into seconds from the workload's origin; a date needs
    the trace loaded once (here, once per trace) to know its origin. Numbers are hours."""
    origins: dict[str, pd.Timestamp] = {}
    cells = []
    for cell in spec.cells:
        w = cell.run.workload
        texts = [*(w.window_s.split(":") if isinstance(w.window_s, str) else []), w.train_until_s]
        origin = None
        if any(isinstance(t, str) and t and not _is_number(t) for t in texts):
            key = json.dumps([w.trace, w.fmt, w.synthetic, w.options], sort_keys=True, default=str)
            if key not in origins:
                bare = replace(w, window_s=None, train_until_s=None, sample=None, arrival_scale=None)
                origins[key] = bare.build().origin
            origin = origins[key]
        window = w.window_s
        if isinstance(window, str):
            start, _, end = window.partition(":")
            window = (_text_seconds(start, origin) if start else 0.0, _text_seconds(end, origin) if end else math.inf)
            if window[1] <= window[0]:
                raise ConfigError(f"{spec.path}: workloads.{cell.keys['workload']}.window: END must be after START")
        train_until = _point_seconds(w.train_until_s, origin)
        cells.append(replace(cell, run=replace(cell.run, workload=replace(w, window_s=window, train_until_s=train_until))))
    return replace(spec, cells=tuple(cells))


def _point_seconds(value: float | str | None, origin: pd.Timestamp | None) -> float | None:
    """Seconds (kept), hours as text, or a date as text (from ``origin``)."""
    if value is None or isinstance(value, float):
        return value
    return _text_seconds(value, origin)


def _text_seconds(text: str, origin: pd.Timestamp | None) -> float:
    """Hours as text, or a date as text (from ``origin``), in seconds."""
    if _is_number(text):
        return float(text) * 3600
    return float((pd.Timestamp(text) - origin).total_seconds())


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --- checks: each takes (key, value) and returns the value or raises _KeyError ---------------------


def _known(table: dict[str, Any], allowed: tuple[str, ...], at: str) -> None:
    for key in table:
        if key not in allowed:
            raise _KeyError(at + key, f"unknown key; expected one of {', '.join(allowed)}")


def _get(table: dict[str, Any], key: str, default: Any, check: Callable[[str, Any], Any], at: str = "") -> Any:
    return check(at + key, table[key]) if key in table else default


def _axis(table: dict[str, Any], key: str, default: list[Any], check: Callable[[str, Any], Any], at: str = "") -> list[Any]:
    """A key that may vary: one value, or a non-empty list of values."""
    if key not in table:
        return default
    value = table[key]
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _KeyError(at + key, "an empty list")
    checked = [check(at + key, v) for v in values]
    if len(set(map(repr, checked))) != len(checked):
        raise _KeyError(at + key, "a value is listed twice")
    return checked


def _table(table: dict[str, Any], key: str, at: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise _KeyError(at + key, "expected a table")
    return value


def _list(table: dict[str, Any], key: str, at: str, check: Callable[[str, Any], Any] | None = None) -> list[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise _KeyError(at + key, "expected a list")
    return [check(f"{at}{key}", v) for v in value] if check else value


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _KeyError(key, f"expected a non-empty string, got {value!r}")
    return value


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _KeyError(key, f"expected true or false, got {value!r}")
    return value


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _KeyError(key, f"expected a number, got {value!r}")
    return float(value)


def _config_value(name: str) -> Callable[[str, Any], Any]:
    """The check of a ``[config]`` key: text for the text fields of SimConfig, else a number."""
    field = next(f for f in dataclasses.fields(SimConfig) if f.name == name)
    return _word if field.type in (str, "str") else _number


def _word(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _KeyError(key, f"expected a text value, got {value!r}")
    return value


def _positive(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _KeyError(key, f"expected a positive number, got {value!r}")
    return float(value)


def _int(minimum: int) -> Callable[[str, Any], int]:
    def check(key: str, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        raise _KeyError(key, f"expected a whole number >= {minimum}, got {value!r}")

    return check


def _hours_or_date(key: str, value: Any) -> float | str:
    if isinstance(value, str):
        try:
            pd.Timestamp(value)
        except ValueError:
            raise _KeyError(key, f"expected hours or a date (YYYY-MM-DD), got {value!r}") from None
        return value
    if _number(key, value) < 0:
        raise _KeyError(key, f"expected hours >= 0, got {value!r}")
    return float(value) * 3600


def _window(key: str, value: Any) -> str:
    """START:END, each side hours or a date, either side may be empty."""
    if not isinstance(value, str) or value.count(":") != 1:
        raise _KeyError(key, f"expected \"START:END\" (hours or dates, e.g. \"0:72\" or \":2017-12-01\"), got {value!r}")
    for side in value.split(":"):
        if side and not _is_number(side):
            _hours_or_date(key, side)
    return value


def _str_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _KeyError(key, f"expected a list of strings, got {value!r}")
    return tuple(value)


def _str_table(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _KeyError(key, f"expected a table of CANONICAL = \"SOURCE\" strings, got {value!r}")
    return dict(value)


_OPTION_CHECKS = {"time_unit": _str, "columns": _str_table, "skip": _str_list}


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=+-]", "-", name)


