"""Pollux's registry entry: its parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedlab.policies.common.placers import Placer
from schedlab.policies.params import as_dict, help_field
from schedlab.policies.pollux.pollux import Pollux


@dataclass(frozen=True)
class PolluxParams:
    """Pollux's scheduling interval and fairness exponent (§4.2) and our goodput assumptions."""

    interval_s: float = help_field(60.0, "seconds between reallocations (Pollux §4.2: 60)")
    p: float = help_field(-1.0, "fairness exponent of the generalised mean of speedups (Pollux: -1)")
    noise_scale: float = help_field(10.0, "gradient noise scale phi as a multiple of the job's initial batch "
                                           "(an assumption: the jobs carry no gradient statistics)")
    max_batch_x: float = help_field(32.0, "largest total batch as a multiple of the initial one")


def build_pollux(placer: Placer, params: PolluxParams, options: Any) -> Pollux:
    """Pollux places its own jobs; the placer is not used."""
    return Pollux(**as_dict(params), seed=options.seed)
