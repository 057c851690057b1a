"""``schedlab serve slurm``: reorder a live Slurm queue with a schedlab policy.

Every cycle it reads ``squeue --json`` and ``sinfo --json``, ranks the pending jobs with the
chosen policy (:mod:`schedlab.slurm.ranking`: the simulator's own policy classes) and gives
each job whose place changed a new ``SiteFactor`` (``scontrol update JobId=X SiteFactor=N``,
all of a cycle's updates in one ``scontrol`` process). Under ``priority/multifactor`` the
SiteFactor is added to the job's priority (and survives hold and release, unlike
``Priority=``), so Slurm's own scheduler, main pass and backfill, takes the jobs in that order.

A dry run (the default) logs what it would write and writes nothing. The state (factors
written, decisions, the history cursor) lives in ``STATE/serve.db``; the decisions are also
in ``STATE/decisions.parquet``. A lost controller is waited for with backoff.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.energy.ces import CESConfig
from schedlab.errors import ConfigError
from schedlab.slurm.client import SlurmClient, SlurmCommandError, SlurmUnavailable
from schedlab.slurm.live import live_cluster, pending_workload
from schedlab.slurm.ranking import history_on_axis, rank, site_factors
from schedlab.slurm.store import Store
from schedlab.workload.schema import Workload

RANKING_POLICIES = ("qssf", "sjf", "fifo", "fair-share", "astraea", "gandiva-fair", "themis", "ssf")
MAX_BACKOFF_S = 60.0


@dataclass(frozen=True)
class ServeSettings:
    """What the service does: ``policy`` with ``params`` every ``interval_s``; ``apply`` writes.
    ``history_days`` of ``sacct`` train QSSF's predictor, refreshed every ``refit_every_s``;
    or ``history_file``, a ``sacct --json`` export (e.g. from another cluster), read once."""

    policy: str = "qssf"
    params: Any = None  # the policy's parameters (PolicyInfo.parse); None: its defaults
    interval_s: float = 30.0
    apply: bool = False
    history_days: float = 30.0
    refit_every_s: float = 86400.0
    seed: int = 0
    ces: CESConfig | None = None  # power idle nodes down and up with Helios' CES
    history_file: Path | None = None


@dataclass
class CycleResult:
    cycle: int
    pending: int
    changed: int
    applied: bool
    errors: list[str]
    seconds: float


def check_controller(client: SlurmClient, *, apply: bool, ces: bool = False) -> dict[str, str]:
    """Refuse, with one line saying what to change, when the service cannot work here."""
    try:
        config = client.config()
    except SlurmUnavailable as exc:
        raise ConfigError(f"cannot reach slurmctld: {exc}") from exc
    ptype = config.get("PriorityType", "")
    if ptype != "priority/multifactor":
        raise ConfigError(f"PriorityType={ptype or '?'} ignores SiteFactor; set PriorityType=priority/multifactor "
                          "in slurm.conf and run `scontrol reconfigure`")  # fmt: skip
    if apply and os.geteuid() != 0:
        owner = config.get("SlurmUser", "").split("(")[0]
        me = pwd.getpwuid(os.geteuid()).pw_name
        if me != owner:
            raise ConfigError(f"only root or SlurmUser ({owner}) may set SiteFactor; run as one of them "
                              "or without --apply (a dry run)")  # fmt: skip
    if ces:
        from schedlab.slurm.ces_live import check_power_saving

        check_power_saving(config)
    return config


class Service:
    """One service on one Slurm; ``say`` takes its log lines."""

    def __init__(self, client: SlurmClient, settings: ServeSettings, state_dir: Path,
                 say: Callable[[str], None]) -> None:  # fmt: skip
        self.client = client
        self.settings = settings
        self.state_dir = state_dir
        self.store = Store(state_dir / "serve.db")
        self.say = say
        self.history: Workload | None = None
        self.ces = None
        if settings.ces is not None:
            from schedlab.slurm.ces_live import LiveCES

            self.ces = LiveCES(client, self.store, settings.ces, apply=settings.apply, say=say)
        self.recovered = False

    def close(self) -> None:
        self.store.close()

    # ----- one cycle -------------------------------------------------------------------------
    def cycle(self) -> CycleResult:
        """Read the queue, rank it, write the factors that changed (with ``apply``), record."""
        t0 = time.monotonic()
        now = time.time()
        cycle = self.store.next_cycle()
        queue = self.client.queue()
        nodes = self.client.nodes()
        cluster = live_cluster(nodes)
        pending = pending_workload(queue, cluster, now)
        pending_ids = set(pending.jobs["job_id"])
        order = rank(self.settings.policy, pending, cluster, params=self.settings.params,
                     history=self._history(now), seed=self.settings.seed)  # fmt: skip
        known = self.store.factors()
        wanted = site_factors(order, {job: f for job, f in known.items() if job in pending_ids})
        rows = [(job, i, known.get(job), factor) for i, (job, factor) in enumerate(wanted.items())
                if known.get(job) != factor]  # fmt: skip
        errors: list[str] = []
        if rows and self.settings.apply:
            errors = self._write(rows)
        gone = [job for job in known if job not in pending_ids]
        self.store.record_cycle(cycle, now, rows, applied=self.settings.apply, gone=gone)
        self.store.export(self.state_dir)
        for job, i, old, new in rows[:20]:
            verb = "set" if self.settings.apply else "would set"
            self.say(f"cycle {cycle}: {verb} job {job} SiteFactor {old if old is not None else '-'} -> {new} "
                     f"(rank {i + 1} of {len(order)})")  # fmt: skip
        if len(rows) > 20:
            self.say(f"cycle {cycle}: ... and {len(rows) - 20} more")
        if self.ces is not None:
            if not self.recovered:
                self.ces.recover(nodes)
                self.recovered = True
            self.ces.step(now, nodes, queue)
            self.store.export(self.state_dir)
        return CycleResult(cycle, len(pending), len(rows), self.settings.apply, errors, time.monotonic() - t0)

    def _write(self, rows: list[tuple[str, int, int | None, int]]) -> list[str]:
        """All of a cycle's updates through one ``scontrol``; jobs that left the queue meanwhile
        are reported, not fatal."""
        lines = [f"update JobId={job} SiteFactor={new}" for job, _, _, new in rows]
        try:
            out = self.client.scontrol_batch(lines)
        except SlurmCommandError as exc:
            out = str(exc)
        return [line for line in out.splitlines() if "error" in line.lower()]

    def _history(self, now: float) -> Workload | None:
        """QSSF's training jobs: ``sacct`` of the last ``history_days``, read again once every
        ``refit_every_s`` (the model is refit on the same rows until then); kept in the state
        directory, so a restarted service predicts as before."""
        if self.settings.policy != "qssf":
            return None
        path = self.settings.history_file or self.state_dir / "history.json"
        read_at = float(self.store.get("history_read_at") or "-inf")
        stale = now - read_at >= self.settings.refit_every_s or not path.exists()
        if stale and self.settings.history_file is None:
            since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - self.settings.history_days * 86400))
            try:
                text = self.client.run(["sacct", "--json", "-a", "-X", "-S", since], timeout_s=120)
            except (SlurmCommandError, SlurmUnavailable) as exc:
                self.say(f"no job history from sacct ({exc}); QSSF predicts from its prior")
                text = None
            if text is not None:
                tmp = path.with_suffix(".tmp")
                tmp.write_text(text)
                tmp.replace(path)
                self.store.put("history_read_at", repr(now))
                self.history = None
        if self.history is None and path.exists():
            from schedlab.workload.loaders import load_trace

            try:
                self.history = load_trace(str(path), "sacct")
            except Exception as exc:  # noqa: BLE001 - an empty or odd history must not stop the service
                self.say(f"the sacct history was not usable ({exc}); QSSF predicts from its prior")
                return None
        return history_on_axis(self.history, now) if self.history is not None else None

    # ----- the loop ----------------------------------------------------------------------------
    def run(self, *, cycles: int | None = None, on_cycle: Callable[[CycleResult], None] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        """Cycle every ``interval_s`` (``cycles`` times, or until interrupted); a controller
        that does not answer is retried with backoff (doubling to a minute)."""
        done, backoff = 0, self.settings.interval_s
        while cycles is None or done < cycles:
            started = time.monotonic()
            try:
                result = self.cycle()
            except SlurmUnavailable as exc:
                self.say(f"slurmctld does not answer ({exc}); retrying in {backoff:.0f} s")
                sleep(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * 2)
                continue
            backoff = self.settings.interval_s
            done += 1
            if on_cycle is not None:
                on_cycle(result)
            if cycles is not None and done >= cycles:
                break
            sleep(max(0.0, self.settings.interval_s - (time.monotonic() - started)))
