"""GFS (Duan et al., ASPLOS '26, arXiv 2509.11134): spot quota allocation (:mod:`.sqa`, §3.3)
and preemptive task scheduling (:mod:`.pts`, :mod:`.nodes`, §3.4) in :class:`.policy.GFS`.

Variants (the paper's ablations, Tables 8-10, could not be read; each is defined here):

* ``gfs``: everything on, over the injected HP demand forecaster. The learned OrgLinear
  estimator (:mod:`schedlab.predict.orglinear`) is trained offline on demand series and has
  no in-simulation interface yet, so ``gfs`` currently uses the weekly-peak forecaster too and
  differs from ``gfs-e`` only once a learned forecaster is injected;
* ``gfs-e``: the production rule, each organisation's previous-week peak HP demand;
* ``gfs-d``: no dynamic ``eta`` (fixed at its initial 1): quota = min(f, S0 + Sa);
* ``gfs-s``: no eviction awareness (Score3 and the circuit breaker off);
* ``gfs-p``: no preemption-aware victim selection (best-fit node, newest spot jobs evicted);
* ``gfs-sp``: both of the last two off.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from schedlab.errors import ConfigError
from schedlab.policies.gfs.policy import GFS, PtsConfig
from schedlab.policies.gfs.sqa import SqaConfig, WeeklyPeak

VARIANTS: dict[str, dict[str, Any]] = {
    "gfs": {},
    "gfs-e": {},
    "gfs-d": {"dynamic_eta": False},
    "gfs-s": {"eviction_aware": False},
    "gfs-p": {"preemption_aware": False},
    "gfs-sp": {"eviction_aware": False, "preemption_aware": False},
}


def build_gfs(variant: str, params: dict[str, Any] | None = None) -> GFS:
    """A GFS variant; ``params`` override any :class:`SqaConfig` / :class:`PtsConfig` field."""
    settings = {**VARIANTS[variant], **(params or {})}
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
    return GFS(variant, WeeklyPeak(), sqa=sqa, pts_config=pts)


__all__ = ["GFS", "PtsConfig", "SqaConfig", "VARIANTS", "WeeklyPeak", "build_gfs"]
