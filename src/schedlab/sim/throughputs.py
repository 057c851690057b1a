"""Measured per-(model, scale, GPU type) training throughputs and the rate rule built on them.

A :class:`ThroughputTable` maps ``(model, scale factor)`` to the steps (iterations) per second
a job of that model trains at on each GPU type, alone on the GPUs (Gavel's single-job
``"null"`` entries of ``simulation_throughputs.json``; ``scale factor`` is the job's GPU count).

Work unit. A job's ``work`` (the workload's ``duration_s``) is seconds on the table's reference
type (``V100``, as in Gavel's simulator, which turns a trace duration into steps with the
reference throughput): ``iterations = work x thr(model, scale, reference)``. A job on type
``k`` advances ``thr(model, scale, k) / thr(model, scale, reference)`` work-seconds per second,
so the iterations it completes are exactly ``seconds x thr(model, scale, k)``.

Task-level rule (Hadar §III-A, constraint (1b)): a job whose tasks run on several GPU types
advances at the throughput of its slowest device, because of the synchronisation barrier of
data-parallel training: ``min_k thr(model, scale, k)`` over the types it holds.

:data:`GAVEL_BUILTIN` holds the entries of the five Hadar Table II models (one batch size each),
copied from the published file so that runs need no data folder;
``tests/sim/test_throughputs.py`` checks them against the file. :meth:`ThroughputTable.from_gavel_json`
reads the whole file.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from schedlab.errors import InputError

REFERENCE_TYPE = "V100"
_GAVEL_TYPES = ("V100", "P100", "K80")

# Hadar Table II models as Gavel job types (batch sizes: the middle of Gavel's range).
HADAR_MODELS = {
    "ResNet-50": "ResNet-50 (batch size 64)",  # ImageNet, XL
    "ResNet-18": "ResNet-18 (batch size 64)",  # CIFAR-10, S
    "LSTM": "LM (batch size 20)",  # Wikitext-2, L
    "CycleGAN": "CycleGAN",  # Monet2photo, M
    "Transformer": "Transformer (batch size 64)",  # Multi30k, L
}

# (model, scale) -> steps/s on (V100, P100, K80); gavel commit c4fa400, simulation_throughputs.json.
_BUILTIN_ROWS = {
    ("ResNet-50 (batch size 64)", 1): (4.394774823323071, 2.6194694075770055, 0.6190282202246573),
    ("ResNet-50 (batch size 64)", 2): (7.922054367597505, 5.515986118186492, 1.2636370655757299),
    ("ResNet-50 (batch size 64)", 4): (9.451949566394442, 10.36465731519379, 2.4122290974193286),
    ("ResNet-50 (batch size 64)", 8): (17.303172756892167, 18.221203053711378, 4.568730189823378),
    ("ResNet-18 (batch size 64)", 1): (24.093231895382736, 22.30494387033663, 7.052080666695425),
    ("ResNet-18 (batch size 64)", 2): (74.13589143268821, 41.4822445592434, 12.495482346599234),
    ("ResNet-18 (batch size 64)", 4): (95.58814453205626, 74.99057006200313, 21.625568416059814),
    ("ResNet-18 (batch size 64)", 8): (255.82913926317391, 120.03699011475503, 42.64410449114462),
    ("LM (batch size 20)", 1): (64.74245099960703, 58.17267240669826, 17.142289692304086),
    ("LM (batch size 20)", 2): (132.17413449742747, 62.33209834747592, 23.773289373427588),
    ("LM (batch size 20)", 4): (110.99685986392635, 93.81478290324394, 35.70344542111913),
    ("LM (batch size 20)", 8): (497.2952582330656, 116.64882298424683, 61.44923706594953),
    ("Transformer (batch size 64)", 1): (8.61775899193302, 5.091830907900463, 1.7522265657120206),
    ("Transformer (batch size 64)", 2): (15.876496488983058, 7.886748284628143, 3.0630786746251895),
    ("Transformer (batch size 64)", 4): (19.65962221663049, 13.313004543426457, 5.030983562889494),
    ("Transformer (batch size 64)", 8): (49.650700211670745, 19.942981926164425, 8.97621997981465),
    ("CycleGAN", 1): (4.426088263367452, 2.4026681703106223, 0.5047705689725351),
}  # fmt: skip


class ThroughputTable:
    """Steps per second by ``(model, scale)`` and GPU type; ``reference`` defines the work unit."""

    def __init__(self, rows: Mapping[tuple[str, int], Mapping[str, float]], reference: str = REFERENCE_TYPE) -> None:
        self.rows = {key: dict(per_type) for key, per_type in rows.items()}
        self.reference = reference
        self._scales: dict[str, list[int]] = {}
        for model, scale in sorted(self.rows):
            self._scales.setdefault(model, []).append(scale)
        for key, per_type in self.rows.items():
            if per_type.get(reference, 0) <= 0:
                raise InputError(f"throughput table: {key} has no positive {reference} (reference) throughput")

    @classmethod
    def from_gavel_json(cls, path: str | Path, models: Iterable[str] | None = None) -> ThroughputTable:
        """Single-job entries of Gavel's ``simulation_throughputs.json`` (consolidated types only)."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read the throughput file ({exc})") from exc
        wanted = set(models) if models is not None else None
        rows: dict[tuple[str, int], dict[str, float]] = {}
        for gtype in _GAVEL_TYPES:
            entries = raw.get(gtype.lower())
            if entries is None:
                raise InputError(f"{path}: no '{gtype.lower()}' section")
            for key, value in entries.items():
                try:
                    model, scale = ast.literal_eval(key)
                    rate = float(value["null"])
                except (ValueError, SyntaxError, TypeError, KeyError) as exc:
                    raise InputError(f"{path}: {gtype.lower()} entry {key!r}: expected \"('model', scale)\" with a 'null' rate") from exc
                if wanted is None or model in wanted:
                    rows.setdefault((model, int(scale)), {})[gtype] = rate
        return cls(rows)

    def models(self) -> list[str]:
        return list(self._scales)

    def __contains__(self, model: object) -> bool:
        return model in self._scales

    def scale_for(self, model: str, gpus: float) -> int:
        """The measured scale used for a job of ``gpus`` GPUs: the largest measured one not above it."""
        scales = self._scales[model]
        fit = [s for s in scales if s <= gpus]
        return fit[-1] if fit else scales[0]

    def throughput(self, model: str, gpus: float, gtype: str) -> float:
        """Steps per second of a ``gpus``-GPU job of ``model`` with all its tasks on ``gtype``
        (0 for a type the table does not measure)."""
        return self.rows[(model, self.scale_for(model, gpus))].get(gtype, 0.0)

    def speedup(self, model: str, gpus: float, gtype: str) -> float:
        """Work-seconds per second on ``gtype``: its throughput over the reference type's."""
        row = self.rows[(model, self.scale_for(model, gpus))]
        return row.get(gtype, 0.0) / row[self.reference]

    def task_rate(self, model: str, gpus: float, gtypes: Iterable[str]) -> float:
        """Rate of a job whose tasks hold ``gtypes``: its slowest type's (Hadar (1b))."""
        return min(self.speedup(model, gpus, t) for t in gtypes)


GAVEL_BUILTIN = ThroughputTable(
    {key: dict(zip(_GAVEL_TYPES, values)) for key, values in _BUILTIN_ROWS.items()}
)
