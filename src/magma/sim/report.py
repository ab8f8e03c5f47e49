"""The HTML report: one self-contained page (plotly.js inlined) with the plots people want to look at.

- GPU allocation over time, stacked by queue, against each queue's deserved share and guarantee;
- a Gantt chart of jobs: waiting, running, preempted;
- wait-time distribution per queue;
- the event log with the scheduler's reasons.
"""

from __future__ import annotations

from collections import defaultdict

import plotly.graph_objects as go
from jinja2 import Environment, select_autoescape

from magma.api.resources import GPU

from .runner import Simulation

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>magma simulation: {{ title }}</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
 h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
 table { border-collapse: collapse; font-size: 0.9em; } td, th { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: left; }
 .num { text-align: right; } .Warning { color: #a33; } .muted { color: #777; }
 .cards { display: flex; gap: 1em; flex-wrap: wrap; } .card { background: #f6f6f8; padding: 0.8em 1.2em; border-radius: 6px; }
 .card b { display: block; font-size: 1.4em; }
 .events { max-height: 480px; overflow-y: auto; }
</style>
{{ plotly_js | safe }}
</head><body>
<h1>magma simulation: {{ title }}</h1>
<p class="muted">Config: {{ config }} · virtual time 0–{{ end }} s · {{ summary.sessions }} sessions · stopped because {{ summary.stopReason }}</p>
<div class="cards">
 <div class="card">GPU allocation<b>{{ '%.1f' % (summary.gpuAllocation * 100) }} %</b></div>
 <div class="card">average wait<b>{{ '%.0f' % summary.avgWaitSeconds }} s</b></div>
 <div class="card">p99 wait<b>{{ '%.0f' % summary.p99WaitSeconds }} s</b></div>
 <div class="card">preempted pods<b>{{ summary.preemptions }}</b></div>
 <div class="card">jobs never started<b>{{ summary.jobsPending }}</b></div>
 {% if summary.reservedJobs or summary.backfilledJobs %}<div class="card">reserved / backfilled jobs<b>{{ summary.reservedJobs }} / {{ summary.backfilledJobs }}</b></div>{% endif %}
 <div class="card">session latency p99<b>{{ '%.1f' % summary.sessionLatencyMs.p99 }} ms</b></div>
</div>
<h2>GPU allocation by queue</h2>
<p>Stacked areas are GPUs allocated to each leaf queue; dashed lines are what the share plugin says each queue deserves, dotted lines its guarantee.</p>
{{ allocation | safe }}
<h2>Jobs</h2>
<p>Grey: waiting. Coloured by queue: running. ✕ marks a preemption or reclaim of one of the job's pods.
Hatched orange: waiting with a reservation (│ marks its last planned start).
◆ marks a job that started as backfill.</p>
{{ gantt | safe }}
<h2>Wait times per queue</h2>
{{ waits | safe }}
<h2>Queues at the end</h2>
<table><tr><th>queue</th><th>parent</th><th class="num">weight</th><th class="num">deserved GPUs</th><th class="num">allocated GPUs</th></tr>
{% for q in queues %}<tr><td>{{ q.name }}</td><td>{{ q.parent or '' }}</td><td class="num">{{ q.weight }}</td>
<td class="num">{{ q.deserved_gpu }}</td><td class="num">{{ q.allocated_gpu }}</td></tr>{% endfor %}
</table>
<h2>Jobs waiting at the end, and why</h2>
<table><tr><th>job</th><th>queue</th><th>phase</th><th>reason</th></tr>
{% for j in waiting %}<tr><td>{{ j.kind }} {{ j.namespace }}/{{ j.name }}</td><td>{{ j.queue }}</td><td>{{ j.phase }}</td><td>{{ j.reason or '' }}</td></tr>{% else %}<tr><td colspan="4" class="muted">none</td></tr>{% endfor %}
</table>
<h2>Event log</h2>
<div class="events"><table><tr><th class="num">time</th><th>type</th><th>reason</th><th>object</th><th>message</th></tr>
{% for e in events %}<tr class="{{ e.type }}"><td class="num">{{ e.time }}</td><td>{{ e.type }}</td><td>{{ e.reason }}</td><td>{{ e.object }}</td><td>{{ e.message }}</td></tr>{% endfor %}
</table>{% if events_cut %}<p class="muted">{{ events_cut }} more events in the JSON result.</p>{% endif %}</div>
</body></html>
"""

_COLORS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]
MAX_EVENTS = 2000


def _fig_html(fig: go.Figure) -> str:
    fig.update_layout(margin=dict(l=40, r=20, t=30, b=40), template="plotly_white")
    return fig.to_html(full_html=False, include_plotlyjs=False)


def _queue_colors(names) -> dict[str, str]:
    return {q: _COLORS[i % len(_COLORS)] for i, q in enumerate(sorted(names))}


def allocation_figure(sim: Simulation, colors: dict[str, str]) -> go.Figure:
    samples = sim.trace.samples
    times = [s.time for s in samples]
    state = sim.cluster.state()
    leaf_queues = sorted({q for s in samples for q in s.gpu_allocated})
    fig = go.Figure()
    for q in leaf_queues:
        fig.add_trace(go.Scatter(x=times, y=[s.gpu_allocated.get(q, 0) for s in samples], name=q, mode="lines",
                                 stackgroup="alloc", line=dict(width=0.5, shape="hv", color=colors.get(q))))
    for q in leaf_queues:
        if any(q in s.deserved for s in samples):
            fig.add_trace(go.Scatter(x=times, y=[s.deserved.get(q) for s in samples], name=f"{q} deserved",
                                     mode="lines", line=dict(dash="dash", shape="hv", color=colors.get(q))))
        queue = state.queues.get(q)
        if queue is not None and queue.guarantee()[GPU]:
            g = queue.guarantee()[GPU] / 1000
            fig.add_trace(go.Scatter(x=[times[0], times[-1]], y=[g, g], name=f"{q} guarantee", mode="lines",
                                     line=dict(dash="dot", color=colors.get(q))))
    if samples:
        fig.add_trace(go.Scatter(x=times, y=[s.gpu_total for s in samples], name="cluster GPUs", mode="lines",
                                 line=dict(color="#333", width=1, shape="hv")))
    fig.update_layout(xaxis_title="virtual time (s)", yaxis_title="GPUs", height=420)
    return fig


def gantt_figure(sim: Simulation, result: dict, colors: dict[str, str]) -> go.Figure:
    fig = go.Figure()
    end = result["endTime"] or 1.0
    jobs = sorted(result["jobs"], key=lambda j: (j["submitTime"], j["name"]))
    labels = [f"{j['namespace']}/{j['name']}" for j in jobs]
    shown: set[str] = set()
    runs_by_job: dict[str, list] = defaultdict(list)
    for uid, runs in sim.trace.pod_runs.items():
        for r in runs:
            owner = sim.trace.job_of_pod.get(r[4])
            if owner:
                runs_by_job[owner].append(r)
    for j, label in zip(jobs, labels):
        ident = f"{j['kind']} {j['namespace']}/{j['name']}"
        start = j["startTime"] if j["startTime"] is not None else end
        fig.add_trace(go.Bar(y=[label], x=[max(start - j["submitTime"], 0)], base=[j["submitTime"]], orientation="h",
                             marker_color="#ccc", showlegend="waiting" not in shown, name="waiting",
                             hovertext=f"{label}: waiting {start - j['submitTime']:.0f}s", hoverinfo="text"))
        shown.add("waiting")
        # running spans: union of the job's pod runs
        spans = sorted((r[0], r[1] if r[1] is not None else end) for r in runs_by_job.get(ident, []))
        merged: list[list[float]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        q = j["queue"]
        for a, b in merged:
            fig.add_trace(go.Bar(y=[label], x=[max(b - a, end / 1000)], base=[a], orientation="h",
                                 marker_color=colors.get(q, "#4C78A8"), name=q, showlegend=q not in shown,
                                 hovertext=f"{label}: running {a:.0f}–{b:.0f}s", hoverinfo="text"))
            shown.add(q)
        if merged and j["phase"] not in ("Running", "Completed", "Failed", "Aborted", "Terminated") \
                and merged[-1][1] < end:
            fig.add_trace(go.Bar(y=[label], x=[end - merged[-1][1]], base=[merged[-1][1]], orientation="h",
                                 marker_color="#ccc", showlegend=False, name="waiting",
                                 hovertext=f"{label}: waiting again from {merged[-1][1]:.0f}s", hoverinfo="text"))
        _reservation_marks(fig, j, label, end, shown)
        evictions = [r[1] for r in runs_by_job.get(ident, []) if r[3] in ("preempt", "reclaim") and r[1] is not None]
        if evictions:
            fig.add_trace(go.Scatter(y=[label] * len(evictions), x=evictions, mode="markers",
                                     marker=dict(symbol="x", size=10, color="#a00"), name="preempted",
                                     showlegend="preempted" not in shown))
            shown.add("preempted")
    fig.update_layout(barmode="overlay", height=max(300, 18 * len(jobs) + 120), xaxis_title="virtual time (s)",
                      yaxis=dict(autorange="reversed"))
    return fig


def _reservation_marks(fig: go.Figure, j: dict, label: str, end: float, shown: set[str]) -> None:
    """The reservation plugin's marks: the wait under a reservation (hatched), its planned start, a backfill start."""
    reserved = j.get("reservedAt")
    if reserved is not None:
        until = j["startTime"] if j["startTime"] is not None and j["startTime"] >= reserved else end
        planned = j.get("plannedStart")
        text = f"{label}: reserved from {reserved:.0f}s" + (f", planned start {planned:.0f}s" if planned is not None
                                                             else ", start unknown (nodes draining)")
        fig.add_trace(go.Bar(y=[label], x=[max(until - reserved, end / 1000)], base=[reserved], orientation="h",
                             marker=dict(color="rgba(242,165,65,0.35)", pattern=dict(shape="/", fgcolor="#d9822b")),
                             name="waiting with a reservation", showlegend="reserved" not in shown,
                             hovertext=text, hoverinfo="text"))
        shown.add("reserved")
        if planned is not None:
            fig.add_trace(go.Scatter(y=[label], x=[planned], mode="markers", name="planned start",
                                     marker=dict(symbol="line-ns-open", size=14, color="#d9822b", line=dict(width=2)),
                                     showlegend="planned" not in shown, hovertext=text, hoverinfo="text"))
            shown.add("planned")
    if j.get("backfilled") and j["startTime"] is not None:
        fig.add_trace(go.Scatter(y=[label], x=[j["startTime"]], mode="markers", name="started as backfill",
                                 marker=dict(symbol="diamond", size=8, color="#2a7"),
                                 showlegend="backfilled" not in shown,
                                 hovertext=f"{label}: started as backfill at {j['startTime']:.0f}s", hoverinfo="text"))
        shown.add("backfilled")


def waits_figure(result: dict, colors: dict[str, str]) -> go.Figure:
    fig = go.Figure()
    by_queue: dict[str, list[float]] = defaultdict(list)
    for j in result["jobs"]:
        if j["startTime"] is not None:
            by_queue[j["queue"]].append(j["startTime"] - j["submitTime"])
    for q in sorted(by_queue):
        fig.add_trace(go.Box(y=by_queue[q], name=q, boxpoints="all", marker_color=colors.get(q)))
    fig.update_layout(yaxis_title="wait (s)", height=360, showlegend=False)
    return fig


def render_report(sim: Simulation, result: dict, title: str) -> str:
    from plotly.offline import get_plotlyjs

    queues = [q for q in sim.cluster.state().queues]
    colors = _queue_colors(queues)
    env = Environment(autoescape=select_autoescape(default=True))
    page = env.from_string(_PAGE)
    events = result["events"]
    return page.render(
        title=title,
        config=result.get("config", ""),
        end=result["endTime"],
        summary=result["summary"],
        plotly_js=f"<script>{get_plotlyjs()}</script>",
        allocation=_fig_html(allocation_figure(sim, colors)),
        gantt=_fig_html(gantt_figure(sim, result, colors)),
        waits=_fig_html(waits_figure(result, colors)),
        queues=[{**q, "deserved_gpu": (q["deserved"] or {}).get(GPU, "–") if q["deserved"] is not None else "–",
                 "allocated_gpu": q["allocated"].get(GPU, 0)} for q in result["queues"]],
        waiting=[j for j in result["jobs"] if j["endTime"] is None and j["phase"] != "Running"],
        events=events[:MAX_EVENTS],
        events_cut=max(0, len(events) - MAX_EVENTS),
    )
