"""capacity: queues with an explicit `spec.deserved` (Volcano's capacity plugin), flat or hierarchical.

Flat (the default): only queues with jobs take part.
- realCapability = min((total - sum of every queue's guarantee)+ + guarantee, capability) (capability: cpu or
  memory <= 0 and unnamed resources are unlimited);
- deserved = max(min(spec.deserved, realCapability), guarantee);
- share = max_r allocated_r / deserved_r; a queue without deserved is best-effort with share 1.

Hierarchical (`enableHierarchy: true` on the capacity entry): every queue takes part, along Queue spec.parent.
- root's capability is unlimited unless set; a child's capability inherits every resource it does not name
  from its parent's; realCapability_child = min((realCapability_parent - sum of the siblings' guarantees)+
  + guarantee_child, capability_child); root's guarantee and deserved are the sums of its children's;
  deserved = max(spec.deserved, guarantee);
- allocated, request, inqueue and elastic are summed up the ancestors; only leaf queues hold jobs.

Extension points:
- QueueOrder: higher spec.priority first; then (hierarchical) leaves before parents, and two leaves by the shares
  of their branches below their lowest common ancestor; lower share first; at equal shares a queue with deserved
  before a best-effort one.
- Allocatable: queue Open (and a leaf, when hierarchical); allocated + request <= realCapability on the resources
  the task requests, for the queue and every ancestor. The bound is realCapability, not deserved.
- Preemptive: the same bound, and on some requested resource the queue's allocation with the task stays within
  deserved (or, with `ancestorReclaimLevel` N, that of one of its N nearest ancestors below root).
- Reclaimable: in victim order, a candidate sharing no resource with the reclaimer is skipped; one whose eviction
  would take its queue below its guarantee is skipped (reclaim keeps the guarantee); otherwise it is a victim when
  it uses no resource its queue has a deserved for, or when its queue's allocation exceeds deserved on a
  resource it uses; with `ancestorReclaimLevel` N the reclaimee's ancestors up to N levels that the reclaimer does
  not share must exceed their deserved too.
- JobEnqueueable: Reject in a non-leaf queue (hierarchical) or a queue not Open; Permit without minResources;
  else minResources + allocated + inqueue - elastic <= realCapability on minResources' resources, for the queue
  and its ancestors; otherwise Reject with the event "queue resource quota insufficient" and `job.reason`.
- JobEnqueued: inqueue += minResources (up the ancestors). Event handlers keep allocations current.

Deliberate differences from Volcano: a queue with `reclaimable: false` gives no victims here either (Volcano
leaves that to the reclaim action); ancestors' shares follow allocations during the session (Volcano updates only
the leaf's); a job in a non-leaf queue is refused on its own instead of stopping the whole session; a queue tree
that does not reach root (missing parent, cycle) is hung under root instead of failing the session.
"""

from __future__ import annotations

from typing import Any

from magma.api.resources import CPU, MEMORY, Resources

from ..framework import ABSTAIN, PERMIT, REJECT, EventHandler, JobInfo, QueueInfo, Session, TaskInfo, plugin
from ._queuetree import (
    ROOT,
    QueueAttr,
    QueueTree,
    amount,
    capability_names,
    exceeding_on,
    has_min_resources,
    job_elastic,
    job_inqueue,
    job_min_resources,
    job_request,
    limit_vector,
    no_pods,
    plugin_flag,
    requested_dims,
    share_dims,
    typed_argument,
    victim_order,
)
from .proportion import quota_reason

NAME = "capacity"


def capacity_share(at: QueueAttr) -> float:
    if at.deserved.is_empty():
        return 1.0
    best = 0.0
    for k, d in at.deserved.items():
        if d > 0:
            best = max(best, at.allocated[k] / d)
    return best


@plugin(NAME)
class CapacityPlugin:
    # Its queue order reads only allocations and shares, which change by allocate/deallocate events
    # (Session.queue_order_cmp_memo).
    queue_order_follows_placements = True

    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        self.attrs: dict[str, QueueAttr] = {}
        self.ancestor_level = 0

    # ---------------------------------------------------------------- build
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.hierarchy = plugin_flag(ssn, NAME, "enableHierarchy")
        level = typed_argument(NAME, self.arguments, "ancestorReclaimLevel", 0)
        self.ancestor_level = int(level) if isinstance(level, (int, float)) and level > 0 else 0
        self.tree = QueueTree.of(ssn.queues)
        if self.hierarchy:
            self._build_hierarchical(ssn)
        else:
            self._build_flat(ssn)
        for at in self.attrs.values():
            at.share = capacity_share(at)

        ssn.add_fn("queue_order", NAME, self.queue_order)
        ssn.add_fn("allocatable", NAME, self.allocatable)
        ssn.add_fn("preemptive", NAME, self.preemptive)
        ssn.add_fn("reclaimable", NAME, lambda actor, cands: (self.reclaim_victims(actor, cands), False))
        ssn.add_fn("job_enqueueable", NAME, self.job_enqueueable)
        ssn.add_fn("job_enqueued", NAME, self.job_enqueued)
        ssn.add_event_handler(EventHandler(allocate=lambda t: self._move(t, 1), deallocate=lambda t: self._move(t, -1)))

    def _new_attr(self, name: str, q: QueueInfo | None, dims: set[str], inherit: Resources | None) -> QueueAttr:
        cap_spec = no_pods(q.capability) if q else Resources()
        return QueueAttr(
            name=name, weight=q.weight if q else 1, priority=q.priority if q else 0,
            guarantee=no_pods(q.guarantee) if q else Resources(),
            capability=limit_vector(cap_spec, dims, inherit, named=capability_names(q)),
            deserved=no_pods(q.deserved_spec) if q else Resources(),
        )

    def _add_jobs(self, ssn: Session, up: bool) -> None:
        index = getattr(ssn, "job_index", None)
        if index is not None:  # the same sums per queue, kept across sessions (fastpath.job_index)
            for q in index.queue_names():
                if q not in self.attrs:
                    continue
                sums = [index.queue_sum(q, name) for name in ("allocated", "request", "inqueue", "elastic")]
                for n in (q, *self.tree.ancestors(q)) if up else (q,):
                    at = self.attrs.get(n)
                    if at is None:
                        continue
                    at.has_jobs = at.has_jobs or n == q
                    at.allocated, at.request = at.allocated + sums[0], at.request + sums[1]
                    at.inqueue, at.elastic = at.inqueue + sums[2], at.elastic + sums[3]
            return
        for job in ssn.jobs.values():
            if job.queue not in self.attrs:
                continue
            a = job.allocated()
            names = (job.queue, *self.tree.ancestors(job.queue)) if up else (job.queue,)
            for n in names:
                at = self.attrs.get(n)
                if at is None:
                    continue
                at.has_jobs = at.has_jobs or n == job.queue
                at.allocated = at.allocated + a
                at.request = at.request + job_request(job)
                at.inqueue = at.inqueue + job_inqueue(job, a)
                at.elastic = at.elastic + job_elastic(job, a)

    def _build_flat(self, ssn: Session) -> None:
        dims = share_dims(ssn, (CPU, MEMORY), with_deserved=True)
        total_g = sum((no_pods(q.guarantee) for q in ssn.queues.values()), Resources())
        free = (ssn.total - total_g).clamp_min_zero()
        index = getattr(ssn, "job_index", None)
        for name in index.queue_names() if index is not None else (job.queue for job in ssn.jobs.values()):
            if name in self.attrs or name not in ssn.queues:
                continue
            at = self._new_attr(name, ssn.queues[name], dims, None)
            at.real_capability = Resources({d: min(free[d] + at.guarantee[d], at.capability[d]) for d in dims})
            at.deserved = at.deserved.min_with(at.real_capability, "zero").max_with(at.guarantee)
            self.attrs[name] = at
        self._add_jobs(ssn, up=False)

    def _build_hierarchical(self, ssn: Session) -> None:
        dims = share_dims(ssn, (CPU, MEMORY), with_deserved=True)
        tree = self.tree
        for n in tree.top_down():
            q = ssn.queues.get(n)
            parent = tree.parent(n)
            inherit = self.attrs[parent].capability if parent is not None else None
            self.attrs[n] = self._new_attr(n, q, dims, inherit)
        root = self.attrs[ROOT]
        root.real_capability = root.capability
        for n in tree.top_down():
            kids = tree.children(n)
            if not kids:
                continue
            at = self.attrs[n]
            for c in kids:
                self.attrs[c].deserved = self.attrs[c].deserved.max_with(self.attrs[c].guarantee)
            sum_g = sum((self.attrs[c].guarantee for c in kids), Resources())
            if n == ROOT:
                at.guarantee = sum_g
                at.deserved = sum((self.attrs[c].deserved for c in kids), Resources())
            free = (at.real_capability - sum_g).clamp_min_zero()
            for c in kids:
                ca = self.attrs[c]
                ca.real_capability = (free + ca.guarantee).min_with(ca.capability, "zero")
        self._add_jobs(ssn, up=True)

    # ---------------------------------------------------------------- helpers
    def chain(self, queue: str) -> list[QueueAttr]:
        """The queue, then (hierarchical) its ancestors, nearest first."""
        names = (queue, *self.tree.ancestors(queue)) if self.hierarchy else (queue,)
        return [self.attrs[n] for n in names if n in self.attrs]

    def _move(self, task: TaskInfo, sign: int) -> None:
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return
        for at in self.chain(job.queue):
            at.allocated = at.allocated + task.resreq if sign > 0 else at.allocated - task.resreq
            at.share = capacity_share(at)

    def _is_leaf(self, name: str) -> bool:
        return not self.hierarchy or self.tree.is_leaf(name)

    # ---------------------------------------------------------------- order
    def _compare_share(self, a: QueueAttr | None, b: QueueAttr | None) -> int:
        if a is None or b is None:
            return 0
        if a.share == b.share:
            ad, bd = not a.deserved.is_empty(), not b.deserved.is_empty()
            return 0 if ad == bd else (-1 if ad else 1)
        return -1 if a.share < b.share else 1

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        if a.priority != b.priority:
            return -1 if a.priority > b.priority else 1
        if not self.hierarchy:
            return self._compare_share(self.attrs.get(a.name), self.attrs.get(b.name))
        la, lb = self.tree.is_leaf(a.name), self.tree.is_leaf(b.name)
        if la != lb:
            return -1 if la else 1
        if not la:
            return self._compare_share(self.attrs.get(a.name), self.attrs.get(b.name))
        x, y = self.tree.divergence(a.name, b.name)
        return self._compare_share(self.attrs.get(x), self.attrs.get(y))

    # ---------------------------------------------------------------- allocate / preempt
    def not_allocatable(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        if queue.state != "Open":
            return f"queue {queue.name} is {queue.state}, not Open"
        if not self._is_leaf(queue.name):
            return f"queue {queue.name} is not a leaf queue; only leaf queues hold jobs"
        dims = requested_dims(task.resreq)
        for at in self.chain(queue.name):
            bad = exceeding_on(at.allocated + task.resreq, at.real_capability, dims)
            if bad:
                return f"queue {at.name}: " + ", ".join(
                    f"{r} real capability {amount(r, at.real_capability[r])}, allocated {amount(r, at.allocated[r])}, "
                    f"task needs {amount(r, task.resreq[r])}" for r in bad)
        return None

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.not_allocatable(queue, task) is None

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != "Open":
            return False
        at = self.attrs.get(queue.name)
        if at is None:
            return False
        req = task.resreq
        dims = requested_dims(req)
        future = at.allocated + req
        if exceeding_on(future, at.real_capability, dims):
            return False
        if _within_on_some(future, at.deserved, dims):
            return True
        if self.hierarchy and self.ancestor_level > 0:
            anc = self.tree.ancestors(queue.name)
            for level in range(1, self.ancestor_level + 1):
                if level > len(anc) or anc[level - 1] == ROOT:
                    continue
                aa = self.attrs.get(anc[level - 1])
                if aa is not None and _within_on_some(aa.allocated + req, aa.deserved, dims):
                    return True
        return False

    # ---------------------------------------------------------------- reclaim
    def reclaim_victims(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        ssn = self.ssn
        rjob = ssn.jobs.get(reclaimer.job)
        if rjob is None or rjob.queue not in self.attrs:
            return []
        rqueue = rjob.queue
        running: dict[str, Resources] = {}

        def alloc(n: str) -> Resources:
            if n not in running:
                running[n] = self.attrs[n].allocated
            return running[n]

        victims = []
        for t in victim_order(ssn, candidates):
            job = ssn.jobs.get(t.job)
            if job is None or job.queue not in self.attrs:
                continue
            qname = job.queue
            at = self.attrs[qname]
            q = ssn.queues.get(qname)
            if q is not None and not q.reclaimable:
                continue
            if not (set(requested_dims(t.resreq)) & set(requested_dims(reclaimer.resreq))):
                continue
            after = alloc(qname) - t.resreq
            if not at.guarantee.less_equal(after, "zero"):
                continue
            ancestors_checked: list[str] = []
            if not _uses_deserved(t, at.deserved):
                if (self.hierarchy and self.ancestor_level > 0 and self._shares_ancestor(rqueue, qname)
                        and not _uses_deserved(reclaimer, self.attrs[rqueue].deserved)):
                    continue
            elif not _exceeds_on_relevant(alloc(qname), at.deserved, t.resreq):
                continue
            if self.hierarchy and self.ancestor_level > 0:
                ok = True
                for level in range(1, self.ancestor_level + 1):
                    anc = self._ancestor_to_check(rqueue, qname, level)
                    if anc is None:
                        continue
                    aa = self.attrs.get(anc)
                    if aa is None:
                        ok = False
                        break
                    if _uses_deserved(t, aa.deserved) and not _exceeds_on_relevant(alloc(anc), aa.deserved, t.resreq):
                        ok = False
                        break
                    ancestors_checked.append(anc)
                if not ok:
                    continue
            running[qname] = after
            for anc in ancestors_checked:
                running[anc] = alloc(anc) - t.resreq
            victims.append(t)
        return victims

    def _ancestor_at(self, queue: str, level: int) -> str | None:
        anc = self.tree.ancestors(queue)
        return anc[level - 1] if 0 < level <= len(anc) else None

    def _ancestor_to_check(self, reclaimer_q: str, reclaimee_q: str, level: int) -> str | None:
        mine = self._ancestor_at(reclaimee_q, level)
        if mine is None or mine == ROOT:
            return None
        if self._ancestor_at(reclaimer_q, level) == mine:
            return None
        return mine

    def _shares_ancestor(self, a: str, b: str) -> bool:
        sa = {self._ancestor_at(a, i) for i in range(1, self.ancestor_level + 1)} - {None, ROOT}
        sb = {self._ancestor_at(b, i) for i in range(1, self.ancestor_level + 1)} - {None, ROOT}
        return bool(sa & sb)

    # ---------------------------------------------------------------- enqueue
    def job_enqueueable(self, job: JobInfo) -> int:
        ssn = self.ssn
        queue = ssn.queues.get(job.queue)
        if queue is None or job.queue not in self.attrs:
            return ABSTAIN
        if not self._is_leaf(queue.name):
            job.reason = f"queue {queue.name} is not a leaf queue; only leaf queues hold jobs"
            return REJECT
        if queue.state != "Open":
            job.reason = f"queue {queue.name} is {queue.state}, not Open"
            return REJECT
        if not has_min_resources(job):
            return PERMIT
        need = job_min_resources(job)
        dims = requested_dims(need)
        for at in self.chain(queue.name):
            bad = exceeding_on(need + at.allocated + at.inqueue - at.elastic, at.real_capability, dims)
            if bad:
                job.reason = quota_reason(at, need, bad)
                ssn.record_event("Normal", "Unschedulable", "PodGroup", job.key,
                                 "queue resource quota insufficient: "
                                 + ", ".join(f"insufficient {r}" for r in bad) + f" ({job.reason})")
                return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if not has_min_resources(job):
            return
        need = job_min_resources(job)
        for at in self.chain(job.queue):
            at.inqueue = at.inqueue + need

    # ---------------------------------------------------------------- close
    def report(self) -> dict[str, dict[str, Any]]:
        return {n: at.report() for n, at in self.attrs.items()
                if not (n == ROOT and self.tree.virtual_root)}

    def report_of(self, name: str) -> dict[str, Any] | None:
        """`report()`'s entry for one queue (None when it has none): reasons ask for a few queues at a time."""
        at = self.attrs.get(name)
        if at is None or (name == ROOT and self.tree.virtual_root):
            return None
        return at.report()

    def on_session_close(self, ssn: Session) -> None:
        shares = getattr(ssn, "queue_shares", None)
        if not isinstance(shares, dict):
            shares = ssn.queue_shares = {}
        shares.update(self.report())


# ---------------------------------------------------------------- Volcano's partial comparisons


def _within_on_some(future: Resources, deserved: Resources, dims: list[str]) -> bool:
    """LessEqualPartlyWithDimensionZeroFiltered: on some requested resource (not zero on both sides),
    future <= deserved."""
    return any(future[r] <= deserved[r] for r in dims if future[r] > 0 or deserved[r] > 0)


def _uses_deserved(task: TaskInfo, deserved: Resources) -> bool:
    return any(task.resreq[r] > 0 and deserved[r] > 0 for r in task.resreq)


def _exceeds_on_relevant(allocated: Resources, deserved: Resources, req: Resources) -> bool:
    """GreaterPartlyWithRelevantDimensions: allocated > deserved on a resource the request uses and deserved names."""
    return any(req[r] > 0 and deserved[r] > 0 and allocated[r] > deserved[r] for r in req)
