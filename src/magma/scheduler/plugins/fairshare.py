"""fairshare: classic HPC fair share, long-term fairness from decayed past usage (magma's own plugin).

Volcano has no such plugin (an unmerged Volcano PR, #5161, proposes one); the seed asks for "经典 HPC fair share".

Usage. A `FairshareLedger` keeps, per (queue, namespace), the exponentially decayed integral of what that
namespace held in that queue: for every resource, amount-seconds, and for the dominant share, share-seconds.
Between two observations the holding is taken as constant a, so over dt the usage becomes
U * d + a * tau * (1 - d), with d = 2^(-dt / half-life) and tau = half-life / ln 2 (exact for a constant holding;
about U + a * dt for short intervals). The ledger lives on the cluster object (`cluster.fairshare_ledger`,
created on first use) so that it survives from session to session as the scheduler (or the simulator) runs;
it is advanced at every session open and records the allocation after the session at close.

Ranking. A namespace's load is usage-weight * U / tau + what it holds now (U / tau is the decayed average of
what it held: both terms are in resource units). The unit is the argument `fairshare.resourceKey` (default
`nvidia.com/gpu`; `fairshare.resourceKey.<queue>` for jobs within that queue) when the cluster has that
resource, else the dominant share of the cluster.
- QueueOrder (Slurm fair-tree style): two queues are compared at the level where their paths from root part:
  the two sibling branches by load / weight (summed over the branch), lower first. Siblings' weights and loads
  are both normalised by the same parent totals, so the ratio decides; equal ratios leave the order to the
  next plugin.
- JobOrder: two jobs of the same queue by their namespaces' loads in that queue, lower first.
Event handlers keep "what it holds now" current during the session.

Arguments: `fairshare.half-life` (duration, default as the config documents it: 4h; `fairshare.halfLifeMinutes`
is the PR's spelling), `fairshare.usage-weight` (default 1; 0 ranks by current holding only),
`fairshare.targetQueues` ("a,b": only these queues are ordered; default all), `fairshare.resourceKey`,
`fairshare.resourceKey.<queue>`. The PR's persistence and enqueue-gate arguments are accepted and ignored: the
ledger is in memory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from magma.api.resources import Resources, scale

from ..framework import EventHandler, JobInfo, QueueInfo, Session, TaskInfo, plugin
from ._queuetree import QueueTree, dominant_share, typed_argument

NAME = "fairshare"
DOMINANT = "<dominant>"
DEFAULT_HALF_LIFE = 4 * 3600.0
Key = tuple[str, str]  # (queue, namespace)


class FairshareLedger:
    """Decayed usage per (queue, namespace), kept across sessions."""

    def __init__(self, half_life: float = DEFAULT_HALF_LIFE):
        self.half_life = half_life
        self.time: float | None = None
        self.usage: dict[Key, dict[str, float]] = {}
        self.rate: dict[Key, dict[str, float]] = {}

    @property
    def tau(self) -> float:
        return self.half_life / math.log(2)

    def advance(self, now: float) -> None:
        """Decay the usage to `now`, adding the holdings recorded at the last observation."""
        if self.time is None or now < self.time:
            self.time = now
            return
        dt = now - self.time
        if dt == 0:
            return
        d = 2.0 ** (-dt / self.half_life)
        gain = self.tau * (1.0 - d)
        for key in set(self.usage) | set(self.rate):
            u = self.usage.get(key, {})
            r = self.rate.get(key, {})
            new = {dim: u.get(dim, 0.0) * d + r.get(dim, 0.0) * gain for dim in set(u) | set(r)}
            new = {dim: v for dim, v in new.items() if v > 1e-12}
            if new:
                self.usage[key] = new
            else:
                self.usage.pop(key, None)
        self.time = now

    def observe(self, now: float, holdings: dict[Key, dict[str, float]]) -> None:
        """Advance to `now`, then record what is held from now on."""
        self.advance(now)
        self.rate = {k: dict(v) for k, v in holdings.items() if any(x > 0 for x in v.values())}

    def decayed(self, key: Key, unit: str) -> float:
        return self.usage.get(key, {}).get(unit, 0.0)


_FALLBACK: dict[int, FairshareLedger] = {}
_NO_CLUSTER = FairshareLedger()


def ledger_for(cluster: Any, half_life: float) -> FairshareLedger:
    """The cluster's ledger (created on first use); its half-life follows the current config."""
    if cluster is None:
        ledger = _NO_CLUSTER
    else:
        ledger = getattr(cluster, "fairshare_ledger", None)
        if not isinstance(ledger, FairshareLedger):
            ledger = _FALLBACK.get(id(cluster))
            if ledger is None:
                ledger = FairshareLedger(half_life)
                try:
                    setattr(cluster, "fairshare_ledger", ledger)
                except (AttributeError, TypeError):
                    _FALLBACK[id(cluster)] = ledger
    ledger.half_life = half_life
    return ledger


def holding(res: Resources, total: Resources) -> dict[str, float]:
    """A resource vector in ledger units: every resource in its natural unit, plus the dominant share."""
    out = {k: v / scale(k) for k, v in res.items() if v}
    out[DOMINANT] = dominant_share(res, total)[1]
    return out


@plugin(NAME)
class FairsharePlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        hl = typed_argument(NAME, self.arguments, "fairshare.half-life")  # default: the config's (4h)
        self.half_life = float(hl) if isinstance(hl, (int, float)) and hl > 0 else DEFAULT_HALF_LIFE
        w = typed_argument(NAME, self.arguments, "fairshare.usage-weight", 1.0)
        self.usage_weight = float(w) if isinstance(w, (int, float)) and w >= 0 else 1.0
        targets = typed_argument(NAME, self.arguments, "fairshare.targetQueues", ())
        self.targets = set(targets or ())
        key = typed_argument(NAME, self.arguments, "fairshare.resourceKey", "nvidia.com/gpu")
        self.resource_key = key if isinstance(key, str) and key else "nvidia.com/gpu"
        self.queue_keys = {k[len("fairshare.resourceKey."):]: v for k, v in self.arguments.items()
                           if k.startswith("fairshare.resourceKey.") and isinstance(v, str) and v}
        self.now: dict[Key, Resources] = {}

    # ---------------------------------------------------------------- session
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.tree = QueueTree.of(ssn.queues)
        self.ledger = ledger_for(ssn.cluster, self.half_life)
        self.ledger.advance(ssn.now)
        now: dict[Key, Resources] = defaultdict(Resources)
        for job in ssn.jobs.values():
            now[(job.queue, job.namespace)] = now[(job.queue, job.namespace)] + job.allocated()
        self.now = dict(now)
        self.ledger.rate = self._holdings()
        self._memo: dict[tuple[str, str], float] = {}
        ssn.add_fn("queue_order", NAME, self.queue_order)
        ssn.add_fn("job_order", NAME, self.job_order)
        ssn.add_event_handler(EventHandler(allocate=lambda t: self._move(t, 1), deallocate=lambda t: self._move(t, -1)))

    def on_session_close(self, ssn: Session) -> None:
        self.ledger.observe(ssn.now, self._holdings())

    def _holdings(self) -> dict[Key, dict[str, float]]:
        total = self.ssn.total
        return {k: holding(v, total) for k, v in self.now.items() if not v.is_empty()}

    def _move(self, task: TaskInfo, sign: int) -> None:
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return
        key = (job.queue, job.namespace)
        cur = self.now.get(key, Resources())
        self.now[key] = cur + task.resreq if sign > 0 else cur - task.resreq
        self._memo.clear()

    # ---------------------------------------------------------------- loads
    def unit(self, queue: str | None = None) -> str:
        key = self.queue_keys.get(queue, self.resource_key) if queue is not None else self.resource_key
        return key if self.ssn.total[key] > 0 else DOMINANT

    def load(self, key: Key, unit: str) -> float:
        """usage-weight * decayed average holding + current holding, in `unit`."""
        res = self.now.get(key, Resources())
        if unit == DOMINANT:
            current = dominant_share(res, self.ssn.total)[1]
        else:
            current = res[unit] / scale(unit)
        return self.usage_weight * self.ledger.decayed(key, unit) / self.ledger.tau + current

    def branch_load(self, queue: str, unit: str) -> float:
        memo_key = (queue, unit)
        if memo_key not in self._memo:
            keys = set(self.now) | set(self.ledger.usage)
            own = sum(self.load(k, unit) for k in keys if k[0] == queue)
            self._memo[memo_key] = own + sum(self.branch_load(c, unit) for c in self.tree.children(queue))
        return self._memo[memo_key]

    def _targeted(self, queue: str) -> bool:
        return not self.targets or queue in self.targets

    # ---------------------------------------------------------------- order
    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        if not (self._targeted(a.name) and self._targeted(b.name)):
            return 0
        x, y = self.tree.divergence(a.name, b.name)
        unit = self.unit()
        wx = ssn_weight(self.ssn, x)
        wy = ssn_weight(self.ssn, y)
        lx, ly = self.branch_load(x, unit) * wy, self.branch_load(y, unit) * wx
        if math.isclose(lx, ly, rel_tol=1e-12, abs_tol=1e-12):
            return 0
        return -1 if lx < ly else 1

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        if a.queue != b.queue or a.namespace == b.namespace or not self._targeted(a.queue):
            return 0
        unit = self.unit(a.queue)
        la, lb = self.load((a.queue, a.namespace), unit), self.load((b.queue, b.namespace), unit)
        if math.isclose(la, lb, rel_tol=1e-12, abs_tol=1e-12):
            return 0
        return -1 if la < lb else 1


def ssn_weight(ssn: Session, queue: str) -> int:
    q = ssn.queues.get(queue)
    return q.weight if q is not None and q.weight > 0 else 1
