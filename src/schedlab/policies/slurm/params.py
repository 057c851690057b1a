"""The Slurm policies' parameters, with Slurm 22.05's defaults, and how they are read from a
``slurm.conf``.

Each default is the one slurm.conf(5) of Slurm 22.05 documents (SchedulerParameters entries
``bf_interval``, ``bf_window``, ``bf_resolution``, ``bf_max_job_test``, ``sched_interval``,
``default_queue_depth``, ``batch_sched_delay``; PriorityWeight*, PriorityMaxAge, PriorityCalcPeriod,
PriorityFavorSmall, PriorityDecayHalfLife; partition DefaultTime/MaxTime). Times are in
seconds except ``bf_window``, in minutes as Slurm has it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from schedlab.errors import ConfigError
from schedlab.policies.params import help_field

DAY_S = 86400.0
MAX_WEIGHT = 2**32 - 1  # priority weights are unsigned 32-bit integers (priority_multifactor.html)
# SchedulerParameters entries read, with their ranges (slurm.conf(5): "Min", "Max").
_RANGES = {
    "bf_interval": (1, 10800),
    "bf_window": (1, 43200),
    "bf_resolution": (1, 3600),
    "bf_max_job_test": (1, 1_000_000),
    "sched_interval": (1, 2**31 - 1),
    "default_queue_depth": (0, 2**31 - 1),
    "batch_sched_delay": (0, 2**31 - 1),
}
_WEIGHTS = {
    "PriorityWeightAge": "weight_age",
    "PriorityWeightJobSize": "weight_job_size",
    "PriorityWeightPartition": "weight_partition",
    "PriorityWeightFairshare": "weight_fairshare",
}
_TIMES = {  # slurm.conf time strings, stored by Slurm in whole minutes (time_str2mins)
    "PriorityMaxAge": "priority_max_age",
    "PriorityDecayHalfLife": "priority_decay_half_life",
    "PriorityCalcPeriod": "priority_calc_period",
}


@dataclass(frozen=True)
class SlurmParams:
    """The scheduler and priority settings of ``slurm`` and ``slurm-backfill``."""

    bf_interval: int = help_field(30, "seconds between backfill cycles (sched/backfill only)")
    bf_window: int = help_field(1440, "minutes into the future a backfill cycle plans (sched/backfill only)")
    bf_resolution: int = help_field(60, "grid of reservation start and end times, seconds (sched/backfill only)")
    bf_max_job_test: int = help_field(500, "jobs a backfill cycle tests at most (sched/backfill only)")
    sched_interval: int = help_field(60, "seconds between main-scheduler passes over the whole queue")
    default_queue_depth: int = help_field(100, "jobs an event-triggered main-scheduler pass tests (submit, end)")
    batch_sched_delay: int = help_field(3, "seconds between the passes a submission triggers (the background "
                                        "loop's; a job end's pass runs at once)")  # fmt: skip
    weight_age: int = help_field(0, "PriorityWeightAge")
    weight_job_size: int = help_field(0, "PriorityWeightJobSize")
    weight_partition: int = help_field(0, "PriorityWeightPartition")
    weight_fairshare: int = help_field(0, "PriorityWeightFairshare (classic fair-share, per tenant account)")
    priority_max_age: float = help_field(7 * DAY_S, "seconds of waiting at which the age factor reaches 1")
    priority_calc_period: float = help_field(300.0, "seconds between priority recalculations and usage decay")
    priority_favor_small: bool = help_field(False, "PriorityFavorSmall: smaller jobs get a larger job size factor")
    priority_decay_half_life: float = help_field(7 * DAY_S, "half-life of past fair-share usage, s (0: no decay)")
    default_time_limit: float = help_field(math.inf, "limit of a job without one, s: the partition's DefaultTime, "
                                           "else MaxTime (inf: INFINITE)")  # fmt: skip
    interactive_submit: bool = help_field(False, "jobs are salloc/srun allocations, tried at submit when top priority "
                                          "in their partition (sbatch jobs are not)")  # fmt: skip

    def __post_init__(self) -> None:
        for name, (low, high) in _RANGES.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ConfigError(f"slurm: {name} must be between {low} and {high}, got {value}")
        for name in _WEIGHTS.values():
            if not 0 <= getattr(self, name) <= MAX_WEIGHT:
                raise ConfigError(f"slurm: {name} must be between 0 and {MAX_WEIGHT}, got {getattr(self, name)}")
        if not 60 <= self.priority_calc_period < math.inf:
            raise ConfigError(f"slurm: priority_calc_period must be at least 60 s, got {self.priority_calc_period}")
        if not (self.priority_max_age >= 0 and self.priority_decay_half_life >= 0):
            raise ConfigError("slurm: priority_max_age and priority_decay_half_life must be >= 0")
        if not self.default_time_limit > 0:
            raise ConfigError(f"slurm: default_time_limit must be > 0 s, got {self.default_time_limit}")


def slurm_seconds(text: str) -> float:
    """A Slurm time string in seconds, as ``time_str2secs`` reads it: ``days-hours[:minutes
    [:seconds]]``, ``hours:minutes:seconds``, ``minutes[:seconds]``; ``INFINITE``,
    ``UNLIMITED`` or ``-1`` is ``inf``. Raises ValueError for anything else."""
    s = text.strip()
    if s.lower() in ("infinite", "unlimited", "-1"):
        return math.inf
    if m := re.fullmatch(r"(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?", s):
        d, h, mi, sec = (int(g or 0) for g in m.groups())
    elif m := re.fullmatch(r"(\d+):(\d+):(\d+)", s):
        d, (h, mi, sec) = 0, (int(g) for g in m.groups())
    elif m := re.fullmatch(r"(\d+)(?::(\d+))?", s):
        d, h, mi, sec = 0, 0, int(m.group(1)), int(m.group(2) or 0)
    else:
        raise ValueError(f"not a Slurm time: {text!r}")
    return float(((d * 24 + h) * 60 + mi) * 60 + sec)


def _minutes_s(text: str) -> float:
    """A Slurm time string rounded up to whole minutes (``time_str2mins``), in seconds."""
    secs = slurm_seconds(text)
    return secs if math.isinf(secs) else 60.0 * math.ceil(secs / 60.0)


def _scheduler_parameters(text: str) -> tuple[dict[str, int], list[str]]:
    """SchedulerParameters: the entries modelled (name -> value) and the others, as written."""
    known: dict[str, int] = {}
    ignored: list[str] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if key not in _RANGES:
            ignored.append(item)
            continue
        if not sep or not re.fullmatch(r"-?\d+", value.strip()):
            raise ConfigError(f"SchedulerParameters: {item!r} is not {key}=INTEGER")
        known[key] = int(value)
    return known, ignored


def ignored_scheduler_parameters(conf: Mapping[str, str]) -> list[str]:
    """The SchedulerParameters entries the policies do not model (e.g. ``bf_continue``), as written."""
    return _scheduler_parameters(conf.get("SchedulerParameters", ""))[1]


def scheduler_policy(conf: Mapping[str, str]) -> str:
    """The policy of the conf's SchedulerType: ``slurm-backfill`` for sched/backfill (Slurm's
    default), ``slurm`` for sched/builtin."""
    kind = conf.get("SchedulerType", "sched/backfill").strip()
    names = {"sched/backfill": "slurm-backfill", "sched/builtin": "slurm"}
    if kind not in names:
        raise ConfigError(f"SchedulerType={kind} is not modelled (sched/backfill or sched/builtin)")
    return names[kind]


def params_from_conf(conf: Mapping[str, str]) -> SlurmParams:
    """:class:`SlurmParams` from a parsed ``slurm.conf`` (keys as slurm.conf spells them).

    Reads SchedulerParameters (the entries above; others are ignored, see
    :func:`ignored_scheduler_parameters`), PriorityType, the PriorityWeight* of the modelled
    factors, PriorityMaxAge, PriorityDecayHalfLife, PriorityCalcPeriod (time strings, rounded
    up to minutes as Slurm stores them; a bare number is minutes), PriorityFavorSmall, and a
    partition's DefaultTime or MaxTime if given. The weights count only under
    ``PriorityType=priority/multifactor`` (Slurm's default, priority/basic, is FIFO: every
    weight 0). A malformed value raises ConfigError naming it."""
    values: dict[str, object] = dict(_scheduler_parameters(conf.get("SchedulerParameters", ""))[0])
    if conf.get("PriorityType", "priority/basic").strip() == "priority/multifactor":
        for key, name in _WEIGHTS.items():
            if key in conf:
                text = conf[key].strip()
                if not text.isdigit() or int(text) > MAX_WEIGHT:
                    raise ConfigError(f"{key}={conf[key]} is not an integer between 0 and {MAX_WEIGHT}")
                values[name] = int(text)
    for key, name in _TIMES.items():
        if key in conf:
            values[name] = _conf_time(conf, key)
    if "PriorityFavorSmall" in conf:
        flag = conf["PriorityFavorSmall"].strip().lower()
        if flag not in ("yes", "no", "true", "false", "1", "0", "up", "down"):
            raise ConfigError(f"PriorityFavorSmall={conf['PriorityFavorSmall']} is not YES or NO")
        values["priority_favor_small"] = flag in ("yes", "true", "1", "up")
    for key in ("DefaultTime", "MaxTime"):
        if key in conf:
            values["default_time_limit"] = _conf_time(conf, key)
            break
    return SlurmParams(**values)  # type: ignore[arg-type]  # each value converted for its field above


def _conf_time(conf: Mapping[str, str], key: str) -> float:
    try:
        return _minutes_s(conf[key])
    except ValueError:
        raise ConfigError(f"{key}={conf[key]} is not a Slurm time (e.g. 7-0, 1:00:00, 5, INFINITE)") from None
