"""Named settings: the engine options, policy parameters and workload options that together
reproduce a published setup, applied with ``--setting NAME`` (explicit options win).

``gfs-authors`` runs the GFS evaluation as the authors' public simulator does
(github.com/Sjtucitlab/Spot, read only; ``docs/gfs.md`` lists every difference from the paper
text, which names the baselines and nothing more):

* YARN-CS, Lyra and FGD admit a spot job only within GFS's forecast spot quota (eqs. 9-11);
* eq. 11 runs with every 300-s quota update and reads ``l`` as the spot queue head's wait, for
  the baselines' quota and for GFS and its ablations alike (all share one quota update there);
* Chronus releases every running job every 1,200 s at a cost of 120 s (``restore_s``) and
  places the queues again, with no quota;
* an evicted task loses the work since its last checkpoint, taken every 3,600 s of work, and
  pays 40 s to start again (the 60 s of workers above 8 GPUs never applies on 8-GPU nodes);
* HP tasks of the 7 days before the window (class ``hp-resident``, about 10,600 tasks at
  Table 3's rate) load the cluster and train the forecaster without being scored; the authors'
  simulator runs the HP tasks of the five months before its scored month. The 7 days are our
  assumption: one weekly cycle, and a forecaster trained before the window opens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from schedlab.errors import ConfigError, did_you_mean
from schedlab.sim.config import SimConfig

if TYPE_CHECKING:
    from schedlab.experiments.run import WorkloadSpec


@dataclass(frozen=True)
class Setting:
    """Engine options (:class:`SimConfig` fields), ``--param`` values per policy and synthetic
    profile options per profile."""

    name: str
    summary: str
    engine: Mapping[str, float] = field(default_factory=dict)
    params: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    profile_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def config(self, given: Mapping[str, Any]) -> SimConfig:
        """:class:`SimConfig` from its defaults, then this setting, then ``given`` (explicit options)."""
        return replace(SimConfig(), **{**self.engine, **given})

    def policy_params(self, policy: str, given: Mapping[str, str]) -> dict[str, str]:
        """The setting's ``--param`` values for ``policy``, then ``given``."""
        return {**self.params.get(policy, {}), **given}

    def workload(self, spec: WorkloadSpec) -> WorkloadSpec:
        """``spec`` with the setting's options for its synthetic profile (its own options win)."""
        extra = self.profile_options.get(spec.synthetic or "", {})
        return replace(spec, options={**extra, **spec.options}) if extra else spec


_AUTHORS_QUOTA = {"spot_quota": "forecast", "quota_eta_every_s": "300", "quota_wait_reading": "head"}
_AUTHORS_ETA = {"eta_every_s": "300", "wait_reading": "head"}

SETTINGS: Mapping[str, Setting] = MappingProxyType({
    "paper-text": Setting("paper-text", "the defaults: every policy as its paper's text describes it"),
    "gfs-authors": Setting(
        "gfs-authors",
        "the GFS evaluation as the authors' simulator runs it: baselines under GFS's spot quota, eq. 11 every "
        "300 s with l from the queue head, Chronus re-leasing all every 1,200 s at 120 s, checkpoints every "
        "3,600 s, 40 s per eviction, 7 days of resident HP tasks before the window",
        engine={"checkpoint_interval_s": 3600.0, "restart_s": 40.0, "checkpoint_s": 0.0, "restore_s": 120.0},
        params={
            "yarn-cs-preempt": _AUTHORS_QUOTA, "lyra": _AUTHORS_QUOTA, "fgd": _AUTHORS_QUOTA,
            "chronus": {"release_all_s": "1200"},
            **{name: _AUTHORS_ETA for name in ("gfs", "gfs-e", "gfs-s", "gfs-p", "gfs-sp")},
        },
        profile_options={"gfs-a100": {"resident_days": 7.0}, "gfs-a100-calibrated": {"resident_days": 7.0}},
    ),
})  # fmt: skip


def get_setting(name: str | None) -> Setting:
    """The named setting; None is ``paper-text``."""
    if name is None:
        return SETTINGS["paper-text"]
    if name not in SETTINGS:
        raise ConfigError(f"unknown setting {name!r}{did_you_mean(name, SETTINGS)}; known: {', '.join(SETTINGS)}")
    return SETTINGS[name]
