"""The plot of a ``schedlab serve slurm`` state directory: per cycle, how many jobs were
pending and how many SiteFactors were written (or proposed by a dry run), and the node power
actions."""

from __future__ import annotations

from pathlib import Path

from schedlab.tables import read_parquet


def is_serve_dir(path: Path) -> bool:
    return (path / "serve.db").is_file() and (path / "decisions.parquet").is_file()


def draw(state_dir: Path) -> list[Path]:
    """``decisions.png`` in ``state_dir``: SiteFactor writes per cycle over time."""
    from schedlab import figures

    path = state_dir / "decisions.parquet"
    log = read_parquet(path)
    figure, axes = figures.titled_axes("schedlab serve slurm: SiteFactor decisions")
    if len(log):
        start = log["time"].min()
        per = log.groupby(["cycle", "applied"]).agg(time=("time", "first"), n=("job_id", "size")).reset_index()
        for applied, label in ((1, "written"), (0, "proposed (dry run)")):
            part = per[per["applied"] == applied]
            if len(part):
                axes.bar((part["time"] - start) / 60.0, part["n"], width=0.4, label=label)
        power = state_dir / "power.parquet"
        if power.is_file():
            actions = read_parquet(power)
            for action, marker in (("POWER_DOWN_ASAP", "v"), ("POWER_UP", "^")):
                done = actions[actions["action"] == action]
                if len(done):
                    axes.plot((done["time"] - start) / 60.0, [0] * len(done), marker, label=action.lower())
        axes.legend()
    axes.set_xlabel("minutes since the first decision")
    axes.set_ylabel("jobs whose SiteFactor changed")
    return [figures.save(figure, state_dir / "decisions.png")]
