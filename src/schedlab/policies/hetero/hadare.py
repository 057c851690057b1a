"""HadarE (Sultana et al., §V): Hadar with every job forked into copies on separate nodes.

* Job forker (§V-A): a job may run as up to ``max_copies`` copies (0: one per node, the paper's
  n copies on an n-node cluster), each on its own node(s) with the job's whole GPU count.
* Scheduling copies: each round Hadar's allocator (:class:`~.allocator.Allocator`: Eq. 5-7 prices,
  FIND_ALLOC, the DP) first gives jobs one copy each, exactly as Hadar; then, pass after pass over
  the queue, a job gets one more copy on nodes none of its copies uses while FIND_ALLOC finds one
  with a positive payoff. Nodes are thus left idle only when no job copy is left to place. A job
  that FIND_ALLOC's lower bound refuses is not asked again that round: while prices rise with
  the load, fewer free GPUs cannot make its next copy pay. The passes move servers between
  kinds in place and use the allocator's memoised search (:meth:`~.allocator.Allocator.search`):
  a job's next copy mostly meets servers of the kinds, in the order, it met before.
* Job tracker (§V-B): the job progresses at the sum of its copies' rates (the engine's
  :meth:`~schedlab.sim.engine.Simulation.fork`), which is the tracker summing the copies' steps
  when each copy gets a share of the remaining steps in proportion to its throughput: all
  copies of a round end together.
* Costs: at every round's end the tracker aggregates the copies and consolidates the model, so a
  forked job is checkpointed and re-forked every round: it pays the engine's checkpoint-restart
  (``checkpoint_s + restore_s``) plus ``fork_overhead_s`` (forking and merging; the paper gives no
  figure for it; 0 by default). A job running as a single copy whose allocation does not change
  keeps running, as under Hadar.
* Decisions: a round with an arrival or a completion since the last one re-decides every job on
  the whole cluster (Hadar's ``replan=True``; Hadar's default keeps running jobs, §IV-B, but a
  forked job is merged and re-forked every round anyway, §V-B); any other round gives each job
  the same copies again (the forked ones still pay the merge).

Deviation: the paper's physical clusters give every node one GPU and a copy one GPU; here a copy
holds the job's requested GPU count (a 4-GPU job's copies take 4 GPUs on each of their nodes).
The initial throughput estimate (Eq. 10) is not used: the measured table is the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedlab.errors import ConfigError
from schedlab.policies.hetero.hadar import Hadar
from schedlab.policies.hetero.rounds import Alloc, held
from schedlab.policies.params import help_field
from schedlab.sim.job import RUNNING
from schedlab.sim.policy import Context
from schedlab.sim.throughputs import GAVEL_BUILTIN, ThroughputTable

Copies = list[Alloc]


@dataclass(frozen=True)
class HadarEParams:
    """HadarE's round length, Hadar's allocator settings, copies per job and fork overhead."""

    round_s: float = help_field(360.0, "length of a scheduling round in seconds (§VI-D: 360 s for large mixes)")
    eta: float = help_field(1.0, "scaling factor eta of the price function (Eq. 5)")
    comm_fraction: float = help_field(0.05, "communication cost per extra server, as a share of the job's utility")
    dp_window: int = help_field(8, "queued jobs the dynamic programme decides jointly; the rest greedily")
    max_copies: int = help_field(0, "copies a job is forked into (0: one per node)")
    fork_overhead_s: float = help_field(0.0, "forking and merging stall per round of a forked job, on top of the "
                                        "checkpoint-restart")


class HadarE(Hadar):
    """Hadar with job forking and a tracker merging the copies' progress."""

    name = "hadare"
    memo_searches = True  # a job's next copy mostly meets the servers its last one met

    def __init__(self, *, round_s: float = 360.0, eta: float = 1.0, comm_fraction: float = 0.05, dp_window: int = 8,
                 max_copies: int = 0, fork_overhead_s: float = 0.0,
                 table: ThroughputTable | None = GAVEL_BUILTIN) -> None:  # fmt: skip
        super().__init__(round_s=round_s, eta=eta, comm_fraction=comm_fraction, dp_window=dp_window, table=table)
        if max_copies < 0 or not fork_overhead_s >= 0:
            raise ConfigError("hadare: max_copies and fork_overhead_s must be non-negative")
        self.max_copies = max_copies
        self.fork_overhead_s = fork_overhead_s
        self.forks = 0
        self.last: dict[int, Copies] = {}

    def plan(self, ctx: Context) -> dict[int, Copies]:  # type: ignore[override]  # a round plans copies, not one allocation
        if not self.dirty:  # no arrival or completion since the last round: same copies again
            return self.last
        self.dirty = False
        self.last = self._decide(ctx)
        return self.last

    def _decide(self, ctx: Context) -> dict[int, Copies]:
        views, alloc = self.allocator(ctx, list(ctx.active.values()))
        first, state = self.allocate(views, alloc, tuple(n.num_gpus for n in ctx.cluster.nodes))
        copies: dict[int, Copies] = {idx: [a] for idx, a in first.items()}
        used = {idx: {h for h, _ in a} for idx, a in first.items()}
        limit = self.max_copies or len(state)
        free = list(state)
        kinds = {kind: list(hs) for kind, hs in alloc.kinds(state).items()}  # placed on in place
        refused: set[int] = set()  # jobs refused by a margin: with rising prices, fewer free GPUs cannot help
        added = True
        while added and any(free):  # more copies, one per job per pass, on nodes the job does not use yet
            added = False
            for v in views:
                have = copies.get(v.idx)
                if have is None or len(have) >= limit or v.idx in refused:
                    continue
                refusal, found = alloc.search(v, free, alloc.usable(v, kinds, used[v.idx]))
                if refusal and alloc.rising:
                    refused.add(v.idx)
                elif found is not None:
                    have.append(found[1])
                    used[v.idx].update(h for h, _ in found[1])
                    alloc.place(free, kinds, found[1])
                    added = True
        return copies

    def apply(self, ctx: Context, target: dict[int, Copies]) -> None:  # type: ignore[override]  # applies copies (plan)
        """Pause forked jobs (the tracker merges them) and jobs whose allocation changes; then
        start single copies and fork the rest."""
        changed = False
        for job in list(ctx.running.values()):
            copies = target.get(job.idx)
            if job.copies or copies is None or len(copies) > 1 or sorted(copies[0]) != held(job):
                changed = changed or not job.copies
                ctx.pause(job)
        self.changed_rounds += changed
        for idx, copies in sorted(target.items()):
            job = ctx.active[idx]
            if job.state == RUNNING:
                continue
            if len(copies) == 1:
                ctx.start(job, copies[0])
            else:
                ctx.fork(job, copies, self.fork_overhead_s)
                self.forks += 1

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().report(jobs), "forks": self.forks}
