"""QSSF's parameters, importable without the predictor's libraries."""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.policies.params import help_field
from schedlab.predict.settings import DurationSettings


@dataclass(frozen=True)
class QssfParams(DurationSettings):
    """The duration predictor's settings and how often it is refitted."""

    refit_every_s: float = help_field(86400.0, "refit the duration predictor every this many simulated seconds")
