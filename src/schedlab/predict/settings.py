"""Settings of the predictors, importable without the libraries that fit them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DurationSettings:
    """Hyper-parameters of the duration predictor (seeds are passed separately)."""

    name_similarity: float = field(default=0.8, metadata={"help": "Levenshtein similarity above which two job names count as alike"})
    decay: float = field(default=0.5, metadata={"help": "weight of the k-th most recent similar job: decay ** k"})
    rolling_weight: float = field(default=0.1, metadata={"help": "weight of the rolling estimate against LightGBM"})
    min_train_rows: int = field(default=100, metadata={"help": "finished jobs before LightGBM is used"})
    prior_s: float = field(default=3600.0, metadata={"help": "the prediction before any job has finished (s)"})
    n_estimators: int = field(default=150, metadata={"help": "LightGBM trees"})
    learning_rate: float = field(default=0.05, metadata={"help": "LightGBM learning rate"})
    num_leaves: int = field(default=31, metadata={"help": "LightGBM leaves per tree"})

    def __post_init__(self) -> None:
        if not 0 < self.name_similarity <= 1:
            raise ValueError(f"name_similarity must be in (0, 1], got {self.name_similarity!r}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"decay must be in (0, 1], got {self.decay!r}")
        if not 0 <= self.rolling_weight <= 1:
            raise ValueError(f"rolling_weight must be in [0, 1], got {self.rolling_weight!r}")
