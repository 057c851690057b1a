"""CES on a live Slurm: Helios' Algorithm 2 (:mod:`schedlab.energy.ces`, the same checks as
``schedlab ces`` and ``simulate --ces``) deciding which nodes to power down and up, through
``scontrol update NodeName=... State=POWER_DOWN_ASAP`` / ``POWER_UP``.

- JobArrivalCheck, every service cycle: when the oldest pending job of a partition needs more
  whole nodes than are idle and powered there, wake the missing ones plus the buffer.
- PeriodicCheck, every ``check_s`` (10 minutes): record the nodes running work; when their
  number fell below the mean of the last ``history_checks`` records and the forecast does not
  rise, power idle nodes down to ``running + buffer`` (never in a partition with a job
  waiting). The forecast is the last value (FutureNodesTrend 0): the choice rule of
  :mod:`schedlab.predict.node_demand_eval` keeps it until a candidate wins by its margin on a
  validation window of 7 days after 14 of history, and this service keeps only the last hour of
  node counts, so it is always in that case and does not run the rule.

Each action is noted in the state store before it is sent and marked done after, so a service
killed in between never sends it twice (an action found noted but not done at start is
checked against the node's state and closed, not repeated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from schedlab.energy.ces import CESConfig, arrival_check, periodic_check
from schedlab.errors import ConfigError
from schedlab.slurm.client import NodeInfo, QueueJob, SlurmClient
from schedlab.slurm.store import Store

OFF_FLAGS = {"POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN"}
WAKING_FLAGS = {"POWERING_UP", "POWER_UP"}


def check_power_saving(config: dict[str, str]) -> None:
    """Refuse CES when Slurm's power saving is off, saying what to set."""
    suspend = config.get("SuspendTime", "NONE").split()[0].upper()
    missing = [k for k in ("SuspendProgram", "ResumeProgram") if config.get(k, "(null)") in ("(null)", "")]
    if missing or suspend in ("NONE", "INFINITE", "-1"):
        what = ", ".join(missing) if missing else f"SuspendTime={suspend}"
        raise ConfigError(f"--ces needs Slurm's power saving, which is off here ({what}); set SuspendProgram, "
                          "ResumeProgram and a large finite SuspendTime (e.g. `schedlab slurm up --power-saving`)")  # fmt: skip


def is_off(node: NodeInfo) -> bool:
    return bool(OFF_FLAGS & set(node.flags))


def is_waking(node: NodeInfo) -> bool:
    return bool(WAKING_FLAGS & set(node.flags))


def is_idle(node: NodeInfo) -> bool:
    return not is_off(node) and not is_waking(node) and node.gpus_used == 0 and node.state == "idle"


class LiveCES:
    """Algorithm 2 on the nodes ``sinfo`` shows; ``say`` takes log lines."""

    def __init__(self, client: SlurmClient, store: Store, config: CESConfig, *, apply: bool,
                 say: Callable[[str], None]) -> None:  # fmt: skip
        self.client = client
        self.store = store
        self.config = config
        self.apply = apply
        self.say = say

    def recover(self, nodes: Sequence[NodeInfo]) -> None:
        """Close the actions a killed service noted but did not mark done: done if the node is
        where the action was taking it, else abandoned; none is sent again."""
        by_name = {n.name: n for n in nodes}
        for row, name, action in self.store.open_power_actions():
            node = by_name.get(name)
            if node is None:
                reached = False
            elif action == "POWER_DOWN_ASAP":
                reached = is_off(node) or "DRAIN" in node.state.upper() or "drain" in node.state
            else:
                reached = not is_off(node)
            self.store.power_done(row, "done" if reached else "abandoned")

    def step(self, now: float, nodes: Sequence[NodeInfo], queue: Sequence[QueueJob]) -> list[tuple[str, str]]:
        """One service cycle: JobArrivalCheck, and PeriodicCheck when ``check_s`` has passed."""
        actions = self._arrival(nodes, queue)
        last = float(self.store.get("ces_checked_at") or "-inf")
        if now - last >= self.config.check_s and not actions:
            actions += self._periodic(now, nodes, queue)
            self.store.put("ces_checked_at", repr(now))
        for name, action in actions:
            self._act(now, name, action)
        return actions

    def _arrival(self, nodes: Sequence[NodeInfo], queue: Sequence[QueueJob]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for part, head in _heads(queue).items():
            members = [n for n in nodes if part in n.partitions and n.gpus > 0]
            if not members:
                continue
            size = max(n.gpus for n in members)
            need = max(head.nodes, math.ceil(head.gpus / size))
            idle_on = sum(is_idle(n) for n in members)
            booting = sum(is_waking(n) for n in members)
            off = [n.name for n in members if is_off(n) and not is_waking(n)]
            wake = arrival_check(need, idle_on, booting, len(off), self.config)
            out += [(name, "POWER_UP") for name in off[:wake]]
        return out

    def _periodic(self, now: float, nodes: Sequence[NodeInfo], queue: Sequence[QueueJob]) -> list[tuple[str, str]]:
        running = sum(1 for n in nodes if n.gpus_used > 0)
        powered = sum(1 for n in nodes if not is_off(n))
        past = [float(v) for v in (self.store.get("ces_running") or "").split(",") if v]
        history = (past + [float(running)])[-self.config.history_checks :]
        self.store.put("ces_running", ",".join(f"{v:g}" for v in history))
        waiting = set(_heads(queue))
        idle = [n.name for n in nodes if is_idle(n) and not (set(n.partitions) & waiting)]
        forecast = [float(running)] * self.config.future_steps  # last value: FutureNodesTrend = 0
        count = periodic_check(powered, len(idle), running, past[-self.config.history_checks :], forecast,
                               self.config)  # fmt: skip
        self.say(f"CES check: {running} nodes running, {powered} powered, {len(idle)} idle; power down {count}")
        return [(name, "POWER_DOWN_ASAP") for name in sorted(idle, key=_node_order, reverse=True)[:count]]

    def _act(self, now: float, name: str, action: str) -> None:
        verb = "powering" if self.apply else "would power"
        self.say(f"CES: {verb} {'down' if action == 'POWER_DOWN_ASAP' else 'up'} {name}")
        if not self.apply:
            return
        row = self.store.power_intent(now, name, action)
        try:
            self.client.run(["scontrol", "update", f"NodeName={name}", f"State={action}"])
        except Exception:
            self.store.power_done(row, "failed")
            raise
        self.store.power_done(row, "done")


def _heads(queue: Sequence[QueueJob]) -> dict[str, QueueJob]:
    """The oldest pending GPU job of each partition."""
    heads: dict[str, QueueJob] = {}
    for job in sorted(queue, key=lambda j: (j.submit, j.job_id)):
        if job.state == "PENDING" and job.gpus > 0:
            heads.setdefault(job.partition, job)
    return heads


def _node_order(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return stem, int(digits) if digits else -1
