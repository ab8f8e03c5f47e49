"""Switches for the scheduler's fast paths (docs: BENCHMARKS.md, "Scheduling speed").

Every fast path gives the decisions of the straightforward code it shortcuts; tests run small random clusters
with each switch on and off and compare binds, evictions, phases and reasons (tests/property/
test_fast_paths.py). The switches exist for those tests and for measuring; nothing else should turn them off.

- `shared_groups` (allocate): a group of identical tasks (same shape, request and score inputs) keeps its
  feasibility masks and a heap of node scores for the whole action, not only for one job's turn; after each
  placement only the rows that changed are re-checked and re-scored (a few rows in plain ints, keyed by
  `Session.node_state_key`; rows the group's predicates fail are skipped). A row's node state key is kept for
  all groups until the row changes, and a commit logs only the rows it changes (a pipelined task's, a refused
  bind's: an allocated task that binds leaves its node as it was). Used when every score function scores a
  node from that node's own state (`Session.node_scores_key`), without node sampling or reservations.
- `backfill_groups` (backfill): the same for backfill's BestEffort tasks: tasks with equal predicate inputs,
  request and score inputs keep the rows that pass and fit Idle with their scores in a heap for the whole
  action, re-checking and re-scoring only the rows placed on since; off for the rest of the action once a
  placement-sensitive pod is placed.
- `job_order_key` (enqueue, allocate, backfill): when every JobOrder function says which key it compares
  (`Session.job_order_key`), the job heaps order jobs by that key taken at push time instead of calling the
  plugins' comparison functions at every comparison; a job's JobOrder figures do not change while it waits in
  these heaps.
- `queue_order_memo` (enqueue, allocate, backfill): the queue heap keeps each pair's QueueOrder answer until
  the next allocate or deallocate event, when every queue-order function's plugin says its order follows those
  events alone (`Session.queue_order_cmp_memo`).
- `queue_bound_memo` (allocate's reasons): the queue-bound reason of a refused job is kept per queue and need
  until the next allocate or deallocate event (its figures change only then): `reasons.queue_bound_reason`.
- `incremental_snapshot` (scheduler): the scheduler keeps the previous session's records and applies only the
  objects the cluster reports as changed since (`MemoryCluster.changes_since`); a cluster without a change log
  gets a full snapshot every session. `Scheduler.ingest()` applies them outside a session, as objects arrive
  (Volcano's informers); the session's snapshot then takes only what arrived since.
- `preempt_pruning` (preempt, reclaim): before comparing victim plans node by node, a preemptor task's candidate
  nodes are narrowed with numpy to those where a plan can exist: the node's future idle plus everything the
  victims a plan could use might free there (scope "queue": jobs of the preemptor's queue of its priority or
  lower, its own job left out; scope "cross": queues the victim-set constraints do not refuse outright, e.g. a
  queue not above its deserved share) holds the task. Nodes left out would give no plan, and a node without a
  plan changes nothing in the search; when none is left, the task fails before its nodes are scored. The nodes
  left are then tried in an order that needs no scores until one gives a plan (those plans are kept for the
  search): when none does, the task fails unscored, as the search would have found nothing in any order. When no
  node has the room even with every possible victim gone, the task fails before the predicates are run; across
  queues, so does a task that no queue is open to (all refused outright) and free room cannot serve.
- `preempt_caches` (preempt, reclaim): within the action, node scores (when every score function scores a node
  from its own state: `Session.node_scores_key`) and the share plugin's queue figures (of the queues asked
  about only: a preemptor queue's chain) are computed once per version of the session and kept for later
  preemptor tasks of equal keys; any eviction, pipelining, discard or commit of the action starts a new version.
- `scores_across_sessions` (preempt, reclaim, with preempt_caches): the node scores kept by score key and node
  state are kept across sessions too (per scheduler configuration and NodeTable dimensions): such a score is a
  function of the key, the task's shape and request, and the node's state alone.
- `job_index` (scheduler, with the incremental snapshot): per job, what the plugins' opens sum per queue
  (allocated, request, inqueue, elastic, overcommit's inqueue), drf's share and the resources it names, and
  whether the job is quiet (nothing to place, ready, valid, its PodGroup status already what close writes) are
  kept across sessions and updated for the jobs that changed only (framework/jobindex.py). The plugins read
  their per-queue sums from it; enqueue, allocate, backfill and close visit only the jobs that are not quiet
  and those the session changed.
- `preempt_active_jobs` (preempt, reclaim): preemptors are looked for among the jobs a session visits
  (`session_jobs`: with the job index, not the quiet ones, which have no Pending task), and a job without a
  Pending task is passed over before the plugins are asked whether it is valid and starving.
- `preempt_free_room` (preempt, reclaim, with preempt_pruning): when free room is the first plan found and the
  queue need not give anything back, the search would stop at its first node, a free one; that node (lowest
  victim priority, best score, lowest row among the free nodes) is taken with scores of the free nodes only. As
  the search then visits free nodes only (they come first in both its orders), the other nodes are not bounded
  (`_workable`).
- `drf_vote_bound` (drf's Preemptable vote): a candidate job whose whole allocation's share is already below
  what the vote asks is refused at once, and once one of its tasks is refused so are the ones offered after it,
  without a share computed per task: evicting tasks only lowers the share. The preemptor's own share is computed
  once per allocation of its job (not for every node its vote is asked for).
- `proportion_memo` (proportion): what proportion's open computes from few inputs is kept by those inputs and
  taken again when they come back: the queues' bounds (guarantee, capability, realCapability, floor: from the
  cluster total, the resources, the queue tree and specs) and each water-fill's deserved shares (from the pool
  and every sibling's weight, realCapability, request and floor); with the job index, the whole set of queue
  figures at open is kept by everything it is built from (bounds' inputs, weights, priorities, per-queue sums)
  and copied when they come back.
- `event_driven_controller` (controller): the job controller syncs only the jobs whose Job, PodGroup or pods
  were written since its previous sync (the cluster's change log), whose commands arrived or whose timers
  (delayed actions, ttl) are due, as Volcano's work queue of job keys does; the queue controller keeps its
  PodGroup counts from the same log. A cluster without a change log gets a full sync every time.
- `incremental_recorder` (simulator): the recorder and the virtual kubelet follow the pods the change log names
  instead of scanning every pod at every step; the kubelet's next completion takes the earliest end of the
  started units' work off its heap of ends when the top is current (every started unit has its end there).
- `incremental_job_stats` (info.py): a task's status change moves its job's counts per status (and the counts
  per set of statuses) by one instead of dropping them for a recount of the job's tasks at the next question
  (gang's readiness after every placement); the figures derived from them are dropped as before.
- `skip_quiet_sessions` (simulator): a session that bound and evicted nothing is not run again while what was
  written since it opened is nothing it reads: Jobs, Commands, the Queues' status (its own close writes the queues'
  allocated resources). Its result is reused and its events are recorded again (sim/runner.py says when this is
  exact).
- `skip_inert_writes` (simulator, with skip_quiet_sessions and the incremental snapshot): nor while the pods and
  PodGroups written since it opened changed no record of the kept snapshot (`SnapshotCache.records_version`):
  pods no job, task, node or skipped-pod record reflects (the finished pods of a job whose PodGroup is gone,
  deleted at its ttl), PodGroup status writes that keep each job's phase (its own close's: counts, conditions).
  The session would see what it saw, decide the same and find its statuses written; of its events, those that
  report a change of a PodGroup condition it wrote (`Session.record_event(once=True)`: gang's Unschedulable) are
  not recorded again.
- `node_facts_kept` (predicates, nodeorder: plugins/_nodeindex.py): what the node index derives from the nodes
  alone (names, label columns, the rows of node selector requirements and of required node affinities, taint
  classes) is kept across sessions while the session's node list is the same list object with the same rows:
  the incremental snapshot keeps its node list until a node changes, and then builds a new one.
- `queues_kept` (incremental snapshot, cache.py): the sessions' QueueInfo records are kept while no Queue was
  written (the change log names none) and no full build happened; each session gets its own dict of them.
- `queue_status_kept` (close): a queue whose Queue object (in a cluster that keeps its objects in memory: one with a
  change log) already holds the status close computed for it is not written again: the write would set the same
  values (as close already does for PodGroup statuses).
- `allocate_scores_kept` (allocate, with shared_groups): a shared group's scores by node state are kept across
  sessions, per scheduler configuration, NodeTable dimensions, `Session.node_scores_key` and the order in which the
  task's request names its resources (a score may add per-resource parts in that order): such a score is a
  function of these and the node's `Session.node_state` alone (the contract of `node_scores_key`, on which the
  group's memo within an action already rests), and the configuration fixes the score plugins and their weights.
- `placed_rows_kept` (predicates, nodeorder: plugins/_nodeindex.py): the node index's first question about placed
  pods that needs no label selector (the terms they carry, NonZeroRequested) is answered by a scan instead of the
  build of the facts classes. Per node row the scan keeps, across sessions, the uids of its tasks with a pod, those
  carrying terms (in the node's order) and their NonZeroRequested extras, while the node list is the same (as
  node_facts_kept) and the node holds the same task objects (a task object's pod, shape and request never change:
  the snapshot makes a new task for a written pod); a changed row is read again. It counts the pods `_build` counts
  (a pod on a node, not removed by an event), in `_build`'s order, and the event handlers then move the counts as
  `_add` and `_remove` would (a task is counted when `_build`'s placed dict would hold it); a later build of the
  facts classes leaves the carried terms counted so far alone.
- `water_fill_ints` (proportion's deserved: `_queuetree.water_fill`): the water-filling rounds run on the plain
  dicts of ints the Resources vectors hold, step by step as the Resources operations do them (the same rule for
  absent names, zeros dropped, the same floor division by the reduced weight fraction), so every round gives the
  same amounts without making the intermediate vectors.
- `enqueue_verdicts_kept` (proportion's JobEnqueueable): a refusal's texts (the job's reason and the event's message)
  are kept by everything they are made from: the refusing queue's name and, per resource it refuses in the order
  they are listed, the job's need and the queue's allocated, inqueue, elastic and realCapability amounts (which
  queue refuses, and on which resources, is still found in plain ints every time). A job waiting for room is
  refused again with the same figures session after session.
- `plugin_setup_kept` (overcommit, nodeorder, binpack, predicates): overcommit's factor, nodeorder's and binpack's
  weights and the predicates' switches read from the plugin's arguments are kept by those arguments, and the
  over-committed total (total x factor) by the total and the factor: all are pure functions of these, and the
  plugins are made and opened afresh every session (each plugin gets its own copy of a kept dict). Overcommit's used
  and idle vectors at open are kept by the node table's columns and its used amounts summed over the nodes (the row's
  bytes), the total and the factor: the same vectors of the same amounts (vectors never change in place).
- `proportion_open_lean` (proportion's open): the queue records (QueueAttr) are made with the one empty vector for
  the figures filled in after (Resources never change in place; adding to an empty vector gives the other one, as
  adding to a new empty vector does), and copied by their dict (what copy.copy does for them).
- `enqueue_idle` (enqueue): a session without a Pending job (in a queue of the session) returns at once, before
  sorting the jobs and listing the queues, which would decide nothing. With Pending jobs in one queue only, those
  jobs are considered in job order without ordering the queues (each other queue would be popped once and dropped;
  asking the queue-order functions changes nothing, as their plugins' lazy figures, drf's queue tree, are made on
  the first question from the same state instead).
- `vector_memos` (the share plugins' `_queuetree.no_pods` and `finite`): their answers are kept by the vector given
  (its amounts, names in their order, which the answer keeps), a function of it alone (a Resources never changes);
  the same few vectors (minResources, queue bounds, the figures of queue reports) come back at every session.
- `score_keys_kept` (nodeorder's `score_key`): a task's score key is kept within the session until a placed pod's
  terms are counted or uncounted (the node index's `carried_version`); the rest of what it reads (weights, the
  task's terms and request, which nodes have taints it does not tolerate) does not change during a session.
- `predicates_kept` (predicates): the plugin's per-shape static codes (unschedulable, node selector and required
  node affinity, taints: from the node facts alone) are kept with the node facts they were made from (kept across
  sessions by node_facts_kept), per set of enabled predicates; and a task's verdict over all rows, when its
  `predicate_key` says nothing but those codes decides (no inter-pod terms of its own or of placed pods, no hard
  spread), is kept with its codes (read-only arrays).
- `fast_template_copy` (controller): a new pod's spec is copied from its task template with `api.copying.deep_copy`
  instead of pydantic's `model_copy(deep=True)`: the same copy (models, dicts and lists copied field by field,
  values reached twice shared as in the original, anything else through `copy.deepcopy`), except that quantities,
  which are never changed, are shared with the template.
- `job_defaults_check` (controller): a Job seen for the first time is given Volcano's mutating defaults only when
  `api.defaults.job_defaults_missing` finds one missing; when it finds none, `default_job` would set nothing and
  return an equal spec, so the copy and the comparison of the two specs are skipped (Jobs from a scenario
  arrive defaulted).
- `queue_counts_settle` (controller, with event_driven_controller): the queue controller's shortcut for a sync
  after which nothing it reads changed is taken after a sync that wrote only PodGroup counts, not only after one
  that wrote nothing: such a sync changed no state, so each queue's state logic ran on the states that hold
  after it, and its counts now match what it wrote; run again, it would write nothing.
- `preempt_vote_bound` (preempt, with preempt_pruning): within the preemptor's queue, the room a node's victims
  could free counts only the jobs that may give a unit: the Preemptable vote may give some of their tasks and they
  run more than minAvailable (a partial unit), or it may give every task they run (a whole one), as `_units`
  builds units of voted tasks alone. What the vote may give of a job is bounded tier by tier from the vote
  functions' own job-level bounds (`Session.victim_job_bounds`: a tier gives a task only when each of its
  non-abstaining functions does): priority gives a job of lower priority than the preemptor's, whole, or none of
  it; drf gives no task of a job whose whole allocation's share is below the preemptor's, and not all of a job's
  running tasks when the share left after evicting them all is (evicting only lowers a share). A node without
  room from such jobs gives no plan (preempt_pruning's argument). Neither that room nor free room depends on the
  predicates: a task with neither on any node fails before they are run. Used for preemptor queues of at most
  `VOTED_JOBS` jobs (for more, the kept per-priority sums are cheaper; either bound is exact). The bounds are
  functions of the preemptor's job and request: the room is kept by those for one version of the session, and
  drf keeps a job's two shares in the job's memo (its tasks' statuses, allocation and the total name them).
- `preempt_job_quota` (preempt's phase 2, scope "job"): only nodes holding a victim of the job's own are plans
  there (as Volcano's ValidateVictims). When one of them passing the predicates has free room for the task, that
  free room is the first plan found (nodes with room come first in both orders) and the cheapest, so the search
  ends applying it; it evicts nothing, so whether it holds is up to the queue's Allocatable alone, whatever the
  node. When Allocatable refuses the task, the task fails before any plan is made or node scored (applying and
  discarding an empty plan leaves the session and its version as they were).
- `preempt_lazy_setup` (preempt, reclaim): the eviction engine sums each queue's allocation when first read (most
  actions never read it), and indexes a queue's possible victims when a place first takes victims from it (the
  preemptor's queue; every queue across queues) or an eviction first changes one of its tasks, instead of all
  queues at the first place. Both come out as they would have been at the start: the only allocated statuses the
  action changes are its own evictions and their discards, which it counts; an index is made from the Bound and
  Running tasks, which only evictions change, and from the jobs unsettled when the action began. Node state ids
  (for the node scores kept by state) are made for the rows whose scores are asked for only: an id only names a
  state.
- `queue_status_memo` (close): close's queue status (each queue's allocation plus its descendants', as quantities)
  is kept by the queue tree (names in order, children) and the per-queue allocations it rolls up: it is a pure
  function of those. Each session gets fresh dicts of the kept texts (the cluster keeps the dicts it is given).
- `water_fill_lean` (proportion, with water_fill_ints): a round's weighted part floor(v * w / W) is taken from the
  weights themselves rather than from Fraction(w, W) reduced to lowest terms (the same rational: the same floor);
  and the trim after the rounds, which rebuilds every deserved unchanged when no dimension's sum exceeds the pool,
  is skipped then (checked on the members' deserved as they are).
- `proportion_skeleton` (proportion's open, with proportion_memo, proportion_open_lean and the job index): when the
  whole set of figures is not kept, what the build makes before summing the jobs (each taking-part queue's
  weight, priority, guarantees, capability, realCapability and floor, and which parents' fills to run in which
  order) is kept by what it reads: the queue bounds' key (cluster total, resources, and per queue its parent,
  guarantee and capability: the tree's shape and order follow from the parents), the weights and priorities, and
  the queues holding jobs. Copies of it then get the same sums, root's deserved and fills, in the same order.
- `preempt_figures_memo` (preempt, reclaim): whether a preemptor's branch is entitled to grow across queues
  (`Evictor.entitlement`) and what its queue must give back first (`Evictor._quota_shortfall`, after the queue's
  Allocatable vote, which is still asked every time) are computed from the share plugin's figures of the queue's
  chain and the task's request alone; they are kept by (version of the session, queue, request). A version names
  one state of the session (every eviction, pipelining or commit of the action makes a new one, and discarding a
  statement goes back to the version before it: preempt_caches keeps the figures themselves the same way), so
  the many jobs of a queue that fail in turn at the same version, asking with equal requests, share the answer.
  An entitlement judged by the Preemptive vote (no figures for the queue) is not kept.
- `preempt_fit_once` (preempt, reclaim): applying a plan asks whether the task fits its node now (resources, the
  queue's Allocatable, the predicates) once, and again only after it evicted more of the queue's work; the
  straightforward code asks a second time with nothing changed in between.
- `preempt_gang_bound` (preempt): before a job's turn in phase 1, the placements the turn could make at most
  (`Evictor.cannot_pipeline`: per task request, the tasks each node's future idle plus everything its possible
  victims could free holds, bounds that only shrink during the turn; free room alone when no victim is possible)
  are compared with the placements JobPipelined needs before it can hold (`Session.pipeline_need`: gang's
  minAvailable less the ready and pipelined tasks). When fewer, the turn would place some tasks and discard them
  all: it is passed over as a failed turn, its statement empty and discarded. Also passed over: a turn that can
  evict nothing of the job's queue and whose queue's share lets in fewer tasks than that need (`_quota_left`,
  `Session.allocatable_left`): each placement only adds to the queue's allocation and nothing lowers it.
- `pod_facts_kept` (incremental snapshot): a written pod that is the same object as when its record was made keeps
  that record's request and task shape (what predicates read) instead of deriving them again: a stored pod is
  changed in place only in its status, node name, annotations and deletion time (bind, the kubelet, eviction);
  a pod with other containers, labels or constraints is another object (`Cluster.update` / `add`).
- `index_moves_in_place` (job index): a changed job that stays in its queue (not its only job) under the same key,
  place and resources has its old figures taken out and its new ones put in only where they differ
  (`JobIndex._move`): integer sums, so q - r + r is q; taking out and putting in is still done where it would
  reorder a sum's resources or the resource counts, so every list and dict is left as the long way leaves it.
- `index_status_writes_kept` (job index): a job whose PodGroup's status was written, the job kept whole with its
  phase (`SnapshotCache._status_only`) and none of its pods written, keeps its figures in the index (sums, drf
  share, resources); only whether it is quiet is asked again. The figures are computed from the job's tasks and
  their statuses, its phase, its fixed fields and the cluster total, none of which such a write changes (a
  changed total rebuilds the index); quiet also reads the PodGroup's status.
- `index_visits_kept` (job index): the jobs a session's steps visit (`JobIndex.visit`) are found again only when
  the session touched more tasks or jobs since the last visit, or the index's active jobs changed: the session's
  touched tasks and jobs only grow while it runs (they are put back between sessions, each with its own dict of
  touched tasks), and the jobs visited are the active ones and those touched, in the snapshot's job order.
- `queue_sync_recounted` (controller, with event_driven_controller): after such a quiet sync, when only PodGroup
  counts moved since (no Command, no Queue read differently), the queue controller visits only the queues whose
  counts moved, in the same name order, and every queue after the first that acts. Any other queue reads what it
  read when it was last visited and left as it was (its state, annotation, counts, its PodGroups' phases, its
  parent's state, since no queue acted before it in this sync): run, it would do nothing.
- `light_podgroup_syncs` (controller, with event_driven_controller): a Pending or Running job named by writes of
  its PodGroup alone since its last sync ended at a fixed point (the scheduler's status writes: conditions, a
  phase), with no request (command, pod event, Unknown PodGroup, due action), is not taken through its state pass
  again when the PodGroup still exists, is still Pending or still not, and its spec is what the job asks for: that
  pass reads nothing else of the PodGroup, and everything else it reads is as when it wrote nothing. Nor are its
  Job and pods looked at again (nothing was written to them: its memory of the pods matches them, and forgetting
  the pods that sync deleted itself waits for the next full sync). The PodGroupPending event and the ttl are still
  looked at.
- `settled_pass_skipped` (controller): the job's state pass (Pending, Running, Restarting) is not run again after a
  pass whose writes cannot change what it reads: no pod deletion was tried, the job has no plugins and its PodGroup
  exists (made or set to what the job asks for). Run again, the pass would count the same pods (those it made
  included) into the same status and take the same decisions; only its status update function may differ, when the
  phase changed. The same function changed nothing the first time (a new job's first Pending keeps it); another is
  tried on a copy of the status, and must leave the phase as it is. So for a finished job's pass (Completed, Failed,
  Terminated, Aborted) that tried no pod deletion and ran no plugin: the next would find the same pods, the status
  it wrote and no PodGroup. Requests handled in between that write anything make the pass run.
- `ttl_syncs_light` (controller, with event_driven_controller): a finished job whose ttl runs out, with nothing
  written that names it since its last sync ended at a fixed point with its state pass settled (as
  settled_pass_skipped takes it: the last pass tried no pod deletion, ran no plugin, and nothing was written after
  it), and no command or due delayed action, is not observed or taken through its state pass again: its Job, pods
  and PodGroup are as that sync left them, so its memory of the pods and of the PodGroup's phase match them (no pod
  event, no Unknown turn; forgetting the pods that sync deleted itself waits for the next full sync), and the pass
  would write nothing (a finished job's pass does not read the time). The PodGroupPending event and the ttl are
  looked at, as the full sync does after its passes.
- `podgroup_quantities_shared` (controller): the quantities of a PodGroup's minResources are read once per text and
  shared by every PodGroup the controller makes or sets right, instead of being read for each (as
  `fast_template_copy` shares a template's quantities with its pods): a quantity read from a text holds that text
  and its value, and is never changed.
- `water_fill_columns` (proportion, with water_fill_lean): when the pool and every member's realCapability, request
  and floor hold positive amounts only, the rounds run on one list of amounts per member, a column per resource
  (absent = 0): no amount ever goes below 0, so no dict step drops a zero or meets a negative limit, and each step
  is the same per column (weighted part, min with realCapability and request, max with the floor, the met test,
  the remaining pool). The amounts are the same; a deserved vector may list its resources in another order, which
  nothing reads (Resources compare and hash by amounts; reports and reasons sort the names).
- `allocate_quota_bound` (allocate): a gang job whose tasks are one group, when every Allocatable function says
  how many more such tasks its queue's share lets in (k, `Session.allocatable_left(exact=True)`: proportion's
  deserved less allocated along the queue's path) and the nodes hold k of them: its turn would place k tasks, have
  the queue refuse the next, fall short of JobReady and JobPipelined and discard them all. It is passed over with
  that outcome (nothing placed; the refused task's queue bound on the job, read after the discard as before).
- `allocate_node_bound` (allocate): the same for a gang job (its gang is every task it has) whose queue lets in more
  of its tasks than the nodes hold (c, the copies of one task that fit the future idle of the nodes its tasks pass):
  its turn would place c tasks, every node then holding exactly its copies (a placement takes one task's room on
  one node), find no node for the next, fall short of JobReady and JobPipelined and discard them all. It is passed
  over with that outcome: nothing placed, and that task's node-fit summary on the job, made from the future idle
  less each node's copies and from the predicate result of the tasks' predicate key (equal keys, equal results:
  what a shared group's result already stands for).
- `queue_bound_kept` (allocate's reasons): a queue-bound reason's text is kept across sessions by everything it
  says (its verdict: the label, the queue named and, per resource named, the figures shown; the text is written
  from the verdict alone), instead of being written again each session for a job refused for the same figures.
- `fit_summaries_kept` (allocate's and backfill's reasons): a node-fit summary is kept across sessions by everything
  it reads: the predicate result itself when its arrays are read-only (its contents cannot change; a kept result
  comes back session after session), the candidate rows, the task's request, what the rows that pass are offered,
  the node count and the table's columns.
- `anti_carriers_kept` (predicates: plugins/_nodeindex.py): "does any placed pod carry a required anti-affinity
  term?" is answered no without the node index's scan when the snapshot cache counted no such pod on its nodes
  (`Snapshot.anti_carriers`, kept through every pod added, written and removed; checked against a full build when
  `SnapshotCache.verify`) and no node the session changed holds one now: the untouched nodes hold the records'
  tasks, and the scan counts only tasks on nodes. Any other case scans, as before.
- `pod_terms_kept` (predicates, nodeorder: plugins/_nodeindex.py): a pod's parsed scheduling terms are kept across
  sessions by its shape (node selector, affinity, tolerations, spread constraints, labels, namespace: everything
  the parse reads), as the node index already keeps them within a session.
- `predicate_sums_kept` (`Session.predicate`): when every predicate plugin returns a result whose arrays are
  read-only (the predicates plugin's kept verdicts over all rows), the combination of those very objects is kept
  (read-only too) and given again for the same objects: it is a function of their contents, which cannot change.
- `proportion_key_parts` (proportion's open, with proportion_memo and the job index): what the kept figures' key reads
  of each queue record (its part of the bounds key, its weight and priority, the resources its bounds name) is kept
  by the record object: a record is never changed once made (the incremental snapshot makes a new one for a Queue
  written since), and the parent comes from the tree the part was made with; when a session has the last one's tree,
  records (the same objects), cluster total and resources named by jobs, the parts made then are taken whole. The
  bounds key, and each fill's fixed inputs (weights, real capabilities, floors), go into the kept figures' and the
  fills' keys as small int tokens (`proportion._token`): equal inputs get the same token while it is kept, a token
  is never given to other inputs (a counter from 1), so equal tokens mean equal keys, and inputs whose token was
  dropped only miss.
- `proportion_attrs_lent` (proportion's open, with proportion_memo and the job index): the session gets the kept
  figures themselves instead of copies, and the memo keeps copies of them (as they were) only before the session's
  first change to them (an allocate or deallocate event, an enqueued job): a session that changes none leaves them
  as kept, so later sessions read the same values as from copies. Everything that reads the figures (reservation
  included) holds the session's records, which stay the ones changed. A second session asking for figures another
  one holds before it closed gets copies.
- `queue_status_writes_kept` (incremental snapshot, with queues_kept): a written Queue that is still the object its
  record was made from, in the same state, keeps its record: the record reads the Queue's spec and metadata, which
  are never changed in place (a changed Queue is another object: `Cluster.update` / `add`, as for pods in
  pod_facts_kept), and of its status the state alone; the writes in place are status writes (close's allocations,
  the queue controller's counts and state).
- `plugin_flags_kept` (session): which plugins of each tier a plugin flag enables (enablePreemptable, ...) is found
  once per scheduler configuration and shared by its sessions, instead of once per session: it reads the
  configuration's plugin options alone (their names and flags), which are never changed once loaded; each session
  still keeps only the plugins that registered a function for the extension point. So are the facts plugins read
  from those options alone (`Session.config_fact`: drf's hierarchy switch).
- `queue_tree_kept` (QueueTree.of, at every proportion, capacity or fairshare open): the last tree is given again for
  the same queue names and the same queue records in the same order, without reading each record's parent: a
  record is never changed once made (the snapshot makes a new one for a Queue written since), and a tree reads
  only the names and parents.
- `job_bounds_kept` (preempt: `Session.victim_job_bounds`): each job's pair (may the vote give some, every task
  of it) is kept with the job's counts (`JobInfo.memo`: renewed when a task of the job changes status or the job's
  tasks change) under what the bounds read besides the job's tasks and fixed fields, when every bound says it
  (`job_bounds_key`: drf's preemptor job allocation, preemptor request and cluster total, which give the preemptor's
  share; priority's preemptor job and its priority), with the tiers' layout (which plugins' functions each tier
  holds, with a bound or not: it decides how the bounds combine, and a scheduler may be given another
  configuration), the key standing as a small int token (never given to another key; at most 64 keys per job).
  The tiers combine the bounds per job, so a job's pair does not depend on the others asked with it. A queue's
  running jobs are asked again for each waiting preemptor, session after session, with the same answers.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

shared_groups = True
backfill_groups = True
job_order_key = True
queue_order_memo = True
queue_bound_memo = True
incremental_snapshot = True
preempt_pruning = True
preempt_caches = True
job_index = True
preempt_active_jobs = True
drf_vote_bound = True
preempt_free_room = True
scores_across_sessions = True
proportion_memo = True
event_driven_controller = True
incremental_recorder = True
skip_quiet_sessions = True
incremental_job_stats = True
node_facts_kept = True
queues_kept = True
skip_inert_writes = True
queue_status_kept = True
allocate_scores_kept = True
placed_rows_kept = True
water_fill_ints = True
enqueue_verdicts_kept = True
plugin_setup_kept = True
proportion_open_lean = True
enqueue_idle = True
vector_memos = True
score_keys_kept = True
predicates_kept = True
fast_template_copy = True
job_defaults_check = True
queue_counts_settle = True
preempt_vote_bound = True
preempt_job_quota = True
preempt_lazy_setup = True
queue_status_memo = True
water_fill_lean = True
proportion_skeleton = True
preempt_figures_memo = True
preempt_fit_once = True
preempt_gang_bound = True
allocate_quota_bound = True
allocate_node_bound = True
queue_bound_kept = True
anti_carriers_kept = True
fit_summaries_kept = True
pod_facts_kept = True
index_moves_in_place = True
index_status_writes_kept = True
index_visits_kept = True
queue_sync_recounted = True
light_podgroup_syncs = True
settled_pass_skipped = True
podgroup_quantities_shared = True
water_fill_columns = True
pod_terms_kept = True
predicate_sums_kept = True
proportion_key_parts = True
proportion_attrs_lent = True
queue_status_writes_kept = True
plugin_flags_kept = True
ttl_syncs_light = True
queue_tree_kept = True
job_bounds_kept = True

_NAMES = ("shared_groups", "backfill_groups", "job_order_key", "queue_order_memo", "queue_bound_memo",
          "incremental_snapshot", "preempt_pruning", "preempt_caches", "job_index", "preempt_active_jobs",
          "drf_vote_bound", "preempt_free_room", "scores_across_sessions", "proportion_memo",
          "event_driven_controller", "incremental_recorder", "skip_quiet_sessions", "incremental_job_stats",
          "node_facts_kept", "queues_kept", "skip_inert_writes", "queue_status_kept", "allocate_scores_kept",
          "placed_rows_kept", "water_fill_ints", "enqueue_verdicts_kept", "plugin_setup_kept", "proportion_open_lean",
          "enqueue_idle", "vector_memos", "score_keys_kept", "predicates_kept", "fast_template_copy",
          "job_defaults_check", "queue_counts_settle", "preempt_vote_bound", "preempt_job_quota",
          "preempt_lazy_setup", "queue_status_memo", "water_fill_lean", "proportion_skeleton", "preempt_figures_memo",
          "preempt_fit_once", "preempt_gang_bound", "allocate_quota_bound", "pod_facts_kept", "index_moves_in_place",
          "index_status_writes_kept", "index_visits_kept",
          "queue_sync_recounted", "light_podgroup_syncs", "settled_pass_skipped", "podgroup_quantities_shared",
          "water_fill_columns", "pod_terms_kept", "predicate_sums_kept",
          "proportion_key_parts", "proportion_attrs_lent", "queue_status_writes_kept", "plugin_flags_kept",
          "allocate_node_bound", "queue_bound_kept", "fit_summaries_kept", "ttl_syncs_light", "queue_tree_kept",
          "anti_carriers_kept", "job_bounds_kept")


@contextmanager
def disabled(*names: str) -> Iterator[None]:
    """Turn the named fast paths (all when none is named) off inside the block."""
    names = names or _NAMES
    g = globals()
    before = {n: g[n] for n in names}
    try:
        for n in names:
            g[n] = False
        yield
    finally:
        g.update(before)
