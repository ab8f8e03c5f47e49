"""The Queue controller: queue states and PodGroup counts (Volcano's pkg/controllers/queue, restated).

`QueueController(cluster).sync()`:

- Commands (`bus.volcano.sh/v1alpha1` Command with targetObject kind Queue; what `vcctl queue operate -a
  open|close` issues) are executed and deleted: OpenQueue, CloseQueue.
- States: a queue without a state is Open. CloseQueue on an Open (or Unknown) queue -> Closing while some of
  its PodGroups still run, else Closed; Closing -> Closed once none does. OpenQueue on a Closed, Closing or
  Unknown queue -> Open. `root` cannot be closed. The scheduler admits no new work from a queue that is not Open.
- Hierarchy: closing a queue closes its open children too (marking them `volcano.sh/closed-by-parent: "true"`);
  opening it reopens the children it closed. A queue whose parent is Closed or Closing cannot be opened.
- status: pending, inqueue, running, unknown, completed = how many of the queue's PodGroups are in each
  phase; written (with the state) only when they change.
- Events on the Queue: OpenQueue, CloseQueue (Normal on success, Warning when refused).

Deliberate difference: Volcano moves Closing -> Closed only once the queue has no PodGroup at all, so a queue
holding a finished or never-admitted PodGroup stays Closing for ever; magma closes it once none of its PodGroups
is Running or Unknown (the phases in which pods run), which is what "drain, then close" means.
"""

from __future__ import annotations

from magma.api.objects import Command, Queue
from magma.cluster.interface import Cluster, ClusterError, ClusterState
from magma.scheduler.framework import fastpath

OPEN = "Open"
CLOSED = "Closed"
CLOSING = "Closing"
UNKNOWN = "Unknown"
OPEN_QUEUE = "OpenQueue"
CLOSE_QUEUE = "CloseQueue"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
ROOT = "root"
#: PodGroup phases that keep a Closing queue from closing.
BUSY_PHASES = frozenset({"Running", "Unknown"})
COUNTED = (("Pending", "pending"), ("Inqueue", "inqueue"), ("Running", "running"), ("Unknown", "unknown"),
           ("Completed", "completed"))


def _read(q: Queue | None) -> tuple | None:
    """What a sync reads of a queue (its state, parent, PodGroup counts, closed-by-parent mark)."""
    if q is None:
        return None
    s = q.status
    # the counts are extra fields: a Queue applied again without a status has none until the next sync
    get = _extra(s).get
    counts = (get("pending"), get("inqueue"), get("running"), get("unknown"), get("completed"))
    # (the same object, so the same name: its spec's parent stands for `parent_name`)
    return (id(q), s.state, q.spec.parent, counts, q.metadata.annotations.get(CLOSED_BY_PARENT))


def _extra(status) -> dict:
    """The status fields beyond `state` (the PodGroup counts), read directly: `getattr(status, "pending", None)`
    looks them up there too, through pydantic's slower `__getattr__`."""
    return status.__pydantic_extra__ or {}


def _time(ts: object) -> float:
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return float(ts)
    return 0.0


class QueueController:
    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._changed = False
        # PodGroup counts kept from the cluster's change log (fastpath.event_driven_controller)
        self._version: int | None = None
        self._seen: dict[str, tuple[str, str]] = {}  # PodGroup key -> (queue, phase) counted
        self._kept: dict[str, dict[str, int]] = {}  # queue -> phase -> PodGroups
        self._moved = True  # the last `_kept_counts` rebuilt the counts or saw a Command written
        self._recounted: set[str] = set()  # queues whose PodGroup counts the last `_kept_counts` moved
        self._queues_written: set[str] = set()  # queues written since the sync before
        self._quiet: dict[str, tuple] | None = None  # after a sync that wrote nothing: what it read of each queue
        self._acted = False  # this sync wrote something other than PodGroup counts

    # ---------------------------------------------------------------- public
    def sync(self) -> bool:
        """Execute queue Commands, then bring every queue's state and counts up to date. True if anything changed."""
        if self._quiet is not None and self._version is not None and fastpath.event_driven_controller and \
                self.cluster.version == self._version:  # type: ignore[attr-defined]
            return False  # nothing written since a quiet sync: it would write nothing again (see below)
        self._changed = self._acted = False
        state = self.cluster.state()
        counts = self._kept_counts(state)
        quiet = self._quiet if self._version is not None and not self._moved else None
        if quiet is not None and \
                not all(quiet.get(name) == _read(state.queues.get(name)) for name in self._queues_written):
            quiet = None
        if quiet is not None and not self._recounted:
            # Nothing it reads changed since a sync that wrote nothing but counts (the scheduler's writes of a
            # queue's allocated resources are not read): it would write nothing again.
            return False
        # Only the PodGroup counts of some queues moved since a quiet sync: the other queues would do nothing
        # (fastpath.queue_sync_recounted), until a queue acts.
        visit = self._recounted if quiet is not None and fastpath.queue_sync_recounted else None
        for cmd in self._queue_commands(state):
            self._consume(cmd)
            name = cmd.target_object.name if cmd.target_object else ""
            queue = state.queues.get(name)
            if queue is None:
                self.cluster.record_event("Warning", cmd.action or "Command", "Command", cmd.key,
                                          f"Queue {name} not found; command {cmd.action} dropped")
                continue
            if cmd.action == OPEN_QUEUE:
                self._open(state, queue)
            elif cmd.action == CLOSE_QUEUE:
                self._close(state, queue)
            else:
                self.cluster.record_event("Warning", "Command", "Queue", queue.name,
                                          f"unknown queue action {cmd.action!r} (OpenQueue, CloseQueue)")
        visited = []
        for name in sorted(state.queues):
            if visit is not None and name not in visit and not self._acted:
                continue
            visited.append(name)
            self._sync_queue(state, state.queues[name], counts.get(name, {}))
        self._quiet = None
        if self._version is not None and not (self._acted if fastpath.queue_counts_settle else self._changed):
            # A sync that wrote no state, annotation or command is a fixed point once its count writes are read
            # back: the states it read are the states after it, and the counts match (fastpath.queue_counts_settle).
            if visit is None:
                self._quiet = {name: _read(q) for name, q in state.queues.items()}
            else:  # the queues not visited read as before
                assert quiet is not None
                for name in visited:
                    quiet[name] = _read(state.queues[name])
                self._quiet = quiet
        if self._version is not None:
            # Its own writes need no reading back: they are Queue writes (read above, after them, when it is quiet;
            # not looked at when it is not) and Command deletions (after which it is not quiet).
            self._version = self.cluster.version  # type: ignore[attr-defined]
        return self._changed

    # ---------------------------------------------------------------- commands
    @staticmethod
    def _queue_commands(state: ClusterState) -> list[Command]:
        cmds = [c for c in state.commands.values()
                if c.target_object is not None and c.target_object.kind == "Queue"]
        return sorted(cmds, key=lambda c: (_time(c.metadata.creation_timestamp), c.name))

    def _consume(self, cmd: Command) -> None:
        self.cluster.delete("Command", cmd.key)
        self._changed = self._acted = True

    # ---------------------------------------------------------------- state machine
    @staticmethod
    def _state(queue: Queue) -> str:
        return queue.status.state or OPEN

    def _busy(self, state: ClusterState, name: str) -> int:
        return sum(1 for pg in state.podgroups.values()
                   if (pg.spec.queue or "default") == name and (pg.status.phase or "Pending") in BUSY_PHASES)

    def _set_state(self, queue: Queue, new: str, reason: str, message: str, type_: str = "Normal") -> None:
        if self._state(queue) == new and queue.status.state == new:
            return
        self.cluster.update_queue_status(queue.name, {"state": new})
        self._changed = self._acted = True
        if message:
            self.cluster.record_event(type_, reason, "Queue", queue.name, message)

    def _annotate(self, queue: Queue, value: str) -> None:
        if queue.metadata.annotations.get(CLOSED_BY_PARENT) == value:
            return
        if value == "false" and CLOSED_BY_PARENT not in queue.metadata.annotations:
            return
        queue.metadata.annotations[CLOSED_BY_PARENT] = value
        try:
            self.cluster.update(queue)
        except ClusterError:
            return
        self._changed = self._acted = True

    def _children(self, state: ClusterState, name: str) -> list[Queue]:
        return [q for q in state.queues.values() if q.name != ROOT and q.parent_name == name]

    def _close(self, state: ClusterState, queue: Queue) -> None:
        if queue.name == ROOT:
            self.cluster.record_event("Warning", CLOSE_QUEUE, "Queue", queue.name, "the root queue cannot be closed")
            return
        current = self._state(queue)
        if current in (OPEN, UNKNOWN):
            for child in self._children(state, queue.name):
                if self._state(child) not in (CLOSED, CLOSING):
                    self._annotate(child, "true")
                    self._close(state, child)
        busy = self._busy(state, queue.name)
        if current == CLOSED:
            return
        if busy:
            self._set_state(queue, CLOSING, CLOSE_QUEUE,
                            f"Closing queue: {busy} PodGroups still running; it closes when they finish")
        else:
            self._set_state(queue, CLOSED, CLOSE_QUEUE, "Close queue succeed")

    def _open(self, state: ClusterState, queue: Queue) -> None:
        current = self._state(queue)
        if current != OPEN:
            parent = state.queues.get(queue.parent_name or "") if queue.parent_name not in (None, ROOT) else None
            if parent is not None and self._state(parent) in (CLOSED, CLOSING):
                self.cluster.record_event(
                    "Warning", OPEN_QUEUE, "Queue", queue.name,
                    f"cannot open queue {queue.name}: its parent {parent.name} is {self._state(parent)}; open the "
                    f"parent first")
                return
            self._set_state(queue, OPEN, OPEN_QUEUE, f"Open queue succeed (was {current})")
        for child in self._children(state, queue.name):
            if child.metadata.annotations.get(CLOSED_BY_PARENT) == "true":
                self._open(state, child)
        self._annotate(queue, "false")

    def _sync_queue(self, state: ClusterState, queue: Queue, counts: dict[str, int]) -> None:
        current = queue.status.state
        if not current:
            self._set_state(queue, OPEN, OPEN_QUEUE, "")
        elif current == CLOSING and not self._busy(state, queue.name):
            self._set_state(queue, CLOSED, CLOSE_QUEUE, "Close queue succeed: no PodGroup runs any more")
        elif current == OPEN and queue.name != ROOT:
            parent = state.queues.get(queue.parent_name or "")
            if parent is not None and self._state(parent) in (CLOSED, CLOSING):
                # the parent closed while this child was open (e.g. a manifest's initial state): follow it
                self._annotate(queue, "true")
                self._close(state, queue)
        get = _extra(queue.status).get
        # only the fields that differ: writing an equal value again leaves the status as it is
        status = {f: n for phase, f in COUNTED if get(f) != (n := counts.get(phase, 0))}
        if status:
            self.cluster.update_queue_status(queue.name, status)
            self._changed = True

    def _kept_counts(self, state: ClusterState) -> dict[str, dict[str, int]]:
        """`_counts(state)`, kept up to date from the PodGroups written since the last sync when the cluster keeps
        a change log (only the queue and phase of a PodGroup count)."""
        changes_since = getattr(self.cluster, "changes_since", None)
        if not fastpath.event_driven_controller or changes_since is None:
            self._version = None
            return self._counts(state)
        changes = changes_since(self._version) if self._version is not None else None
        self._version = self.cluster.version  # type: ignore[attr-defined]
        self._moved = changes is None
        self._queues_written = set()
        self._recounted = set()
        if changes is None:
            self._seen = {k: _queue_and_phase(pg) for k, pg in state.podgroups.items()}
            self._kept = self._counts(state)
        else:
            for kind, key in changes:
                if kind != "PodGroup":
                    if kind == "Queue":
                        self._queues_written.add(key)
                    elif kind == "Command":
                        self._moved = True
                    continue
                pg = state.podgroups.get(key)
                now = _queue_and_phase(pg) if pg is not None else None
                if now == self._seen.get(key):
                    continue
                old = self._seen.pop(key, None)
                if old is not None:
                    self._recounted.add(old[0])
                    per = self._kept[old[0]]
                    per[old[1]] -= 1
                    if not per[old[1]]:
                        del per[old[1]]
                    if not per:
                        del self._kept[old[0]]
                if now is not None:
                    q, phase = now
                    self._recounted.add(q)
                    self._seen[key] = now
                    per = self._kept.setdefault(q, {})
                    per[phase] = per.get(phase, 0) + 1
        return self._kept

    @staticmethod
    def _counts(state: ClusterState) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for pg in state.podgroups.values():
            q, phase = _queue_and_phase(pg)
            per = out.setdefault(q, {})
            per[phase] = per.get(phase, 0) + 1
        return out


__all__ = ["QueueController", "OPEN", "CLOSED", "CLOSING", "UNKNOWN", "OPEN_QUEUE", "CLOSE_QUEUE",
           "CLOSED_BY_PARENT"]


def _queue_and_phase(pg) -> tuple[str, str]:
    """The queue a PodGroup counts in and its phase, with Volcano's defaults."""
    return pg.spec.queue or "default", pg.status.phase or "Pending"
