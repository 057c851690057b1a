"""The checked actions a policy takes through its context: start, fork, preempt, pause,
migrate, resize, colocate, timers and node power.

Every action validates first and changes the run only when it is possible; an impossible one
raises :class:`ActionError` naming the policy and the job. The GPUs of a paused, preempted or
migrated job are freed at once; the checkpoint model's save and restore time is charged as a
stall when the job runs again.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from schedlab.errors import ActionError
from schedlab.sim.checkpoint import StopCost
from schedlab.sim.job import PENDING, RUNNING, STATE_NAMES, Job
from schedlab.sim.ledger import NODE_ON, TIMER, RunLedger

Alloc = Sequence[tuple[int, int]]  # (node, GPU count) pairs


class Actions(RunLedger):
    """The run's bookkeeping with the actions a policy may take on it."""

    def _reject(self, job: Job | None, message: str) -> ActionError:
        return ActionError(self.policy_name, job.id if job is not None else None, message)

    def start(self, job: Job, alloc: Alloc) -> None:
        """Start a pending job on ``alloc``: (node, GPUs) pairs; a fractional job gives one (node, 1)."""
        if job.state != PENDING:
            raise self._reject(job, f"cannot start a job that is {STATE_NAMES[job.state]}")
        self._claim(job, self._validated(job, alloc))
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        self._begin_run(job)

    def fork(self, job: Job, copies: Sequence[Alloc], overhead_s: float = 0.0) -> None:
        """Start a pending job as forked copies (HadarE §V): each copy is an allocation of the
        job's whole GPU count, no node holds two copies, and the job progresses at the sum of its
        copies' rates (the tracker merges their steps). ``overhead_s`` (forking and merging) is
        stalled before it progresses, on top of any restore it owes."""
        if job.state != PENDING:
            raise self._reject(job, f"cannot fork a job that is {STATE_NAMES[job.state]}")
        if job.fractional or not copies:
            raise self._reject(job, "a fork needs whole-GPU copies and at least one of them")
        if not (overhead_s >= 0 and math.isfinite(overhead_s)):
            raise self._reject(job, f"fork overhead must be a non-negative number of seconds, got {overhead_s!r}")
        checked = [self._validated(job, c) for c in copies]
        nodes = [n for c in checked for n, _ in c]
        if len(set(nodes)) != len(nodes):
            raise self._reject(job, "a node appears in two copies of the fork")
        job.alloc = tuple((node, self.state.take_whole(node, count)) for c in checked for node, count in c)
        job.copies = tuple(tuple(n for n, _ in c) for c in checked)
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        job.restart_cost += overhead_s
        self._begin_run(job)

    def _validated(self, job: Job, alloc: Alloc, *, elastic: bool = False) -> list[tuple[int, int]]:
        s = self.state
        if not alloc:
            raise self._reject(job, "empty allocation")
        pool = self.pool_of(job)
        seen: set[int] = set()
        total = 0
        gpw = job.gpus_per_worker
        gang = gpw == gpw and gpw >= 1
        fractional = job.fractional
        num_nodes, on, node_pool, node_type, free = s.num_nodes, s.on, s.node_pool, s.node_type, s.free
        for node, count in alloc:
            if not 0 <= node < num_nodes:
                raise self._reject(job, f"node {node} does not exist")
            if node in seen:
                raise self._reject(job, f"node {node} appears twice in the allocation")
            seen.add(node)
            if not on[node]:
                raise self._reject(job, f"node {node} is powered off")
            if node_pool[node] != pool:
                raise self._reject(job, f"node {node} belongs to pool '{node_pool[node]}', the job may use '{pool}'")
            if job.gpu_type and node_type[node] != job.gpu_type:
                raise self._reject(job, f"node {node} has {node_type[node]} GPUs, the job needs {job.gpu_type}")
            if count <= 0 or count != int(count):
                raise self._reject(job, f"GPU count {count!r} on node {node} must be a positive whole number")
            if fractional:
                if not s.fraction_room(node, job.milli):
                    raise self._reject(job, f"node {node} has no room for {job.milli / 1000:g} of a GPU")
            elif free[node] < count:
                raise self._reject(job, f"node {node} has {free[node]} free GPUs, asked for {count}")
            if gang and count % gpw:
                raise self._reject(job, f"gang workers need {gpw:g} GPUs each on one node; got {count} on node {node}")
            total += count
        if fractional:
            if len(alloc) != 1 or total != 1:
                raise self._reject(job, "a fractional job takes exactly one GPU slot: [(node, 1)]")
        elif total != job.num_gpus and not elastic:
            raise self._reject(job, f"allocation has {total} GPUs, the job needs {job.num_gpus:g} (all or nothing)")
        return list(alloc)

    def _claim(self, job: Job, alloc: list[tuple[int, int]]) -> None:
        s = self.state
        if job.fractional:
            node = alloc[0][0]
            job.alloc = ((node, (s.take_fraction(node, job.milli),)),)
        elif len(alloc) == 1:
            node, count = alloc[0]
            job.alloc = ((node, s.take_whole(node, count)),)
        else:
            job.alloc = tuple((node, s.take_whole(node, count)) for node, count in alloc)

    def _requeue(self, job: Job) -> None:
        job.state = PENDING
        job.queued_since = self.now
        self.pending_count += 1
        self.actions += 1
        self.policy.on_stopped(self._ctx, job)

    def _running_or_fail(self, job: Job, what: str) -> None:
        if job.state != RUNNING:
            raise self._reject(job, f"cannot {what} a job that is {STATE_NAMES[job.state]}")

    def _charge(self, job: Job, cost: StopCost) -> None:
        """Set what a stopped job's next start costs: a checkpoint keeps all its work, a kill
        keeps the work up to its last periodic checkpoint (or explicit save)."""
        progress = job.work - job.remaining
        if cost.kill:
            saved = job.checkpointed(progress)
            job.lost_work += progress - saved
            job.remaining = job.work - saved
            progress = saved
        job.saved_progress = progress
        job.restart_cost = cost.stall_s

    def preempt(self, job: Job) -> None:
        """Evict a running job: it loses the work since its last periodic checkpoint and
        returns to pending; the next start pays ``restart_s`` (under every checkpoint model)."""
        self._running_or_fail(job, "preempt")
        self._stop_run(job)
        cost = self.checkpoints.eviction(job)
        self._charge(job, cost)
        job.restore_s += cost.restore_s
        job.preemptions += 1
        self._requeue(job)

    def pause(self, job: Job) -> None:
        """Suspend a running job; its next start pays the checkpoint model's save and restore
        (``fixed``: ``checkpoint_s + restore_s``). No work is lost, except under ``kill``, where
        a pause is an eviction."""
        self._running_or_fail(job, "pause")
        self._stop_run(job)
        cost = self.checkpoints.pause(job)
        self._charge(job, cost)
        job.pause_s += cost.save_s
        job.restore_s += cost.restore_s
        job.preemptions += 1
        self._requeue(job)

    def migrate(self, job: Job, alloc: Alloc) -> None:
        """Move a running job to ``alloc``; it stalls there for the checkpoint model's save and
        restore (``fixed``: ``checkpoint_s + restore_s``). No work is lost, except under
        ``kill``, where the job is killed and restarted on ``alloc`` from its last periodic
        checkpoint. The new allocation may reuse the job's own GPUs."""
        self._running_or_fail(job, "migrate")
        self._stop_run(job)
        checked = self._validated(job, alloc)  # a failure here aborts the run: no state to restore
        cost = self.checkpoints.migration(job)
        self._charge(job, cost)
        job.migration_s += cost.stall_s
        job.migrations += 1
        self._claim(job, checked)
        self._begin_run(job)
        self.policy.on_migrated(self._ctx, job)

    def resize(self, job: Job, alloc: Alloc) -> None:
        """Give a whole-GPU job an allocation of any size (elastic training, as Pollux does): a
        pending job starts on it; a running one is checkpointed and restarted on it (no work is
        lost; it stalls ``checkpoint_s + restore_s``, counted in ``migrations``), and the new
        allocation may reuse its own GPUs. The job then holds the allocation's GPUs
        (``held_gpus``) and runs at the perf model's rate on it."""
        if job.fractional or job.colocated or job.copies:
            raise self._reject(job, "only a whole-GPU job that runs alone and unforked can be resized")
        if job.state == PENDING:
            checked = self._validated(job, alloc, elastic=True)
            job.elastic = True
            self._claim(job, checked)
            self.pending_count -= 1
            job.queue_s += self.now - job.queued_since
            if job.first_start != job.first_start:
                job.first_start = self.now
            self._begin_run(job)
            return
        self._running_or_fail(job, "resize")
        self._stop_run(job)
        checked = self._validated(job, alloc, elastic=True)  # a failure here aborts the run
        job.saved_progress = job.work - job.remaining
        job.migrations += 1
        job.restart_cost = self.config.checkpoint_s + self.config.restore_s
        job.elastic = True
        self._claim(job, checked)
        self._begin_run(job)

    def colocate(self, job: Job, host: Job) -> None:
        """Start pending ``job`` time-sharing the GPUs of running ``host`` (same GPU count)."""
        if job.state != PENDING:
            raise self._reject(job, "only a pending job can be colocated")
        if host.state != RUNNING:
            raise self._reject(job, f"host job '{host.id}' is not running")
        if job.num_gpus != host.num_gpus or job.fractional or host.copies:
            raise self._reject(job, f"colocation needs the same whole GPU count as host '{host.id}'")
        if job.gpu_type and any(self.state.node_type[n] != job.gpu_type for n in host.nodes):
            raise self._reject(job, f"host '{host.id}' runs on another GPU type than the job needs")
        if any(self.state.node_pool[n] != self.pool_of(job) for n in host.nodes):
            raise self._reject(job, f"host '{host.id}' runs outside the job's pool")
        cap = self.cluster.max_jobs_per_gpu
        for node, gids in host.alloc:
            if any(self.state.gpu_jobs[node][g] >= cap for g in gids):
                raise self._reject(job, f"a GPU of host '{host.id}' already holds {cap} jobs (max_jobs_per_gpu)")
        for node, gids in host.alloc:
            self.state.share(node, gids, job.milli)
        job.alloc = host.alloc
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        for node, gids in job.alloc:
            for g in gids:
                self._colocated.setdefault((node, g), [host]).append(job)
        self._begin_run(job)
        self._rerate_sharers(job)

    def set_timer(self, at: float, payload: Any = None) -> None:
        """Call ``policy.on_timer(ctx, payload)`` at absolute time ``at`` (>= now)."""
        if not at >= self.now:
            raise self._reject(None, f"timer at {at!r} is in the past (now {self.now:g})")
        heapq.heappush(self._heap, (at, next(self._seq), TIMER, payload, 0))

    def power_off(self, node: int) -> None:
        """Power an idle node down; it leaves placement until powered on again."""
        s = self.state
        if not 0 <= node < s.num_nodes:
            raise self._reject(None, f"node {node} does not exist")
        if not s.on[node]:
            raise self._reject(None, f"node {node} is already off")
        if not s.idle(node) or any(s.gpu_used[node]):
            raise self._reject(None, f"node {node} is not idle and cannot be powered off")
        s.power_off(node)
        self.actions += 1

    def power_on(self, node: int) -> None:
        """Boot a powered-off node; it is usable ``boot_s`` later."""
        s = self.state
        if not 0 <= node < s.num_nodes:
            raise self._reject(None, f"node {node} does not exist")
        if s.on[node] or node in s.booting:
            raise self._reject(None, f"node {node} is already on or booting")
        s.booting.add(node)
        heapq.heappush(self._heap, (self.now + self.config.boot_s, next(self._seq), NODE_ON, node, 0))
        self.actions += 1
