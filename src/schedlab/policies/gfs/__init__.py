"""GFS (Duan et al., ASPLOS '26, arXiv 2509.11134): spot quota allocation (:mod:`.sqa`, §3.3)
and preemptive task scheduling (:mod:`.pts`, :mod:`.nodes`, §3.4) in :class:`.policy.GFS`.

Variants, the paper's ablations (§4.6):

* ``gfs``: everything on, with the OrgLinear demand estimator retrained during the run
  (:class:`.forecast.OrgLinearForecaster`; weekly peak until enough history exists);
* ``gfs-e`` (§4.6.1): GDE replaced by the production rule, each organisation's peak HP
  demand of the previous week;
* ``gfs-d`` (§4.6.2): ``eta`` fixed at 1.0 in eq. 10 (no feedback of eq. 11);
* ``gfs-s`` (§4.6.3): non-preemptive scheduling by GPU stacking only (best fit; no
  homogeneous co-location, no eviction awareness);
* ``gfs-p`` (§4.6.3): preemptive scheduling by random node and card selection;
* ``gfs-sp``: both of the last two.

The option ``forecaster`` ("orglinear" or "weekly-peak") overrides a variant's forecaster;
``pooling`` ("org", eq. 9, or "model") sets how OrgLinear's per-organisation forecasts are
combined.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import field, fields, make_dataclass, replace
from typing import Any

from schedlab.errors import ConfigError
from schedlab.policies.params import help_field
from schedlab.policies.gfs.forecast import OnlineSettings, OrgLinearForecaster
from schedlab.policies.gfs.policy import GFS, PtsConfig
from schedlab.policies.gfs.sqa import DemandForecaster, SqaConfig, WeeklyPeak

VARIANTS: dict[str, dict[str, Any]] = {
    "gfs": {},
    "gfs-e": {"forecaster": "weekly-peak"},
    "gfs-d": {"dynamic_eta": False},
    "gfs-s": {"scored": False},
    "gfs-p": {"cost_aware": False},
    "gfs-sp": {"scored": False, "cost_aware": False},
}


def build_gfs(variant: str, params: dict[str, Any] | None = None, *, seed: int = 0) -> GFS:
    """A GFS variant; ``params`` override any :class:`SqaConfig` / :class:`PtsConfig` field
    plus ``forecaster`` and ``pooling``; ``seed`` seeds OrgLinear's training and GFS-p's choices."""
    settings = {**VARIANTS[variant], **(params or {})}
    forecaster = _forecaster(variant, settings.pop("forecaster", "orglinear"), settings.pop("pooling", "org"), seed)
    sqa_names = {f.name for f in fields(SqaConfig)}
    pts_names = {f.name for f in fields(PtsConfig)}
    unknown = sorted(set(settings) - sqa_names - pts_names)
    if unknown:
        raise ConfigError(f"{variant}: unknown option(s) {', '.join(unknown)}")
    try:
        sqa = replace(SqaConfig(), **{k: v for k, v in settings.items() if k in sqa_names})
        pts = replace(PtsConfig(), **{k: v for k, v in settings.items() if k in pts_names})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{variant}: {exc}") from exc
    return GFS(variant, forecaster, sqa=sqa, pts_config=pts, seed=seed)


@functools.cache
def gfs_params(variant: str) -> type:
    """The parameter dataclass of a GFS variant: every :class:`SqaConfig` and :class:`PtsConfig`
    field, ``forecaster`` and ``pooling``, with the variant's defaults."""
    overrides = VARIANTS[variant]
    specs: list[tuple[str, Any, Any]] = []
    for config in (SqaConfig, PtsConfig):
        hints = typing.get_type_hints(config)
        for f in fields(config):
            default = overrides.get(f.name, f.default)
            specs.append((f.name, hints[f.name], field(default=default, metadata=f.metadata)))
    specs.append(("forecaster", str, help_field(overrides.get("forecaster", "orglinear"),
                                                "HP demand forecaster: orglinear or weekly-peak")))
    specs.append(("pooling", str, help_field("org", "eq. 9: sum the organisations' bounds ('org') or pool their Gaussians per model ('model')")))
    return make_dataclass(f"GfsParams_{variant.replace('-', '_')}", specs, frozen=True)


def _forecaster(variant: str, kind: str, pooling: str, seed: int) -> DemandForecaster:
    if kind == "orglinear":
        return OrgLinearForecaster(OnlineSettings(pooling=pooling), seed=seed)
    if kind == "weekly-peak":
        return WeeklyPeak()
    raise ConfigError(f"{variant}: forecaster must be orglinear or weekly-peak (got {kind!r})")


__all__ = ["GFS", "OnlineSettings", "OrgLinearForecaster", "PtsConfig", "SqaConfig", "VARIANTS", "WeeklyPeak", "build_gfs", "gfs_params"]
