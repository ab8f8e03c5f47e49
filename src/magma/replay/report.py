"""The replay's HTML report: one self-contained page (plotly.js inlined), like the simulator's.

- GPU allocation against arrived GPU demand, mean over seeds, one line per policy (the FGD paper's figure);
- fragmentation over arrived load: FGD's expected fragment of the idle GPUs against the target workload, as a
  share of the cluster's GPU capacity, mean over seeds;
- a table of the values at 100% and at the end, failed tasks and seconds per seed.
"""

from __future__ import annotations

import html
from typing import Sequence

import plotly.graph_objects as go

from .protocol import ReplayResult

_COLORS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D",
           "#BAB0AC"]


def _fig_html(fig: go.Figure) -> str:
    fig.update_layout(margin=dict(l=50, r=20, t=30, b=50), template="plotly_white", height=480,
                      legend=dict(orientation="h", y=-0.2))
    return fig.to_html(full_html=False, include_plotlyjs=False)


def allocation_figure(results: Sequence[ReplayResult]) -> go.Figure:
    fig = go.Figure()
    top = max((r.top for r in results), default=130)
    fig.add_trace(go.Scatter(x=[0, 100, top], y=[0, 100, 100], mode="lines", name="all arrived GPU allocated",
                             line=dict(color="#999", dash="dot")))
    for i, r in enumerate(results):
        pts = r.curve()
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=r.policy,
                                 line=dict(color=_COLORS[i % len(_COLORS)])))
    fig.update_xaxes(title="arrived GPU demand, % of GPU capacity")
    fig.update_yaxes(title="GPU allocated, % of capacity")
    return fig


def fragmentation_figure(results: Sequence[ReplayResult]) -> go.Figure:
    fig = go.Figure()
    for i, r in enumerate(results):
        pts = r.curve("frag")
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=r.policy,
                                 line=dict(color=_COLORS[i % len(_COLORS)])))
    fig.update_xaxes(title="arrived GPU demand, % of GPU capacity")
    fig.update_yaxes(title="fragmented idle GPU, % of capacity")
    return fig


def render_report(results: Sequence[ReplayResult], title: str, nodes_path: str, pods_path: str) -> str:
    from plotly.offline import get_plotlyjs

    seeds = results[0].seeds if results else []
    rows = []
    for r in results:
        n = max(len(r.seeds), 1)
        rows.append(
            f"<tr><td>{html.escape(r.policy)}</td><td class=num>{_fmt(r.mean_at(100))}</td>"
            f"<td class=num>{_fmt(r.mean_at(r.top))}</td><td class=num>{_fmt(r.mean_at(100, 'frag'))}</td>"
            f"<td class=num>{sum(r.failed.values()) / n:.0f}</td><td class=num>{sum(r.tasks.values()) / n:.0f}</td>"
            f"<td class=num>{sum(r.seconds.values()) / n:.2f}</td></tr>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>magma replay: {html.escape(title)}</title>
<style>
 body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
 h1 {{ font-size: 1.5em; }} h2 {{ margin-top: 2em; border-bottom: 1px solid #ddd; }}
 table {{ border-collapse: collapse; font-size: 0.9em; }} td, th {{ padding: 3px 10px; border-bottom: 1px solid #eee; }}
 .num {{ text-align: right; }} .muted {{ color: #777; }}
</style>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>magma replay: {html.escape(title)}</h1>
<p class="muted">FGD's protocol (USENIX ATC'23): tasks arrive one at a time and never leave, a task that fits nowhere
is dropped; arrived demand tuned to {results[0].tune if results else 0:g} x the GPU capacity; seeds
{html.escape(_seed_text(seeds))}. Nodes {html.escape(nodes_path)}, tasks {html.escape(pods_path)}.</p>
<table><tr><th>policy</th><th class=num>GPU allocated at 100% arrived</th><th class=num>at the end</th>
<th class=num>fragmented at 100%</th><th class=num>failed tasks / seed</th><th class=num>tasks / seed</th>
<th class=num>seconds / seed</th></tr>
{''.join(rows)}
</table>
<h2>GPU allocation against arrived demand</h2>
<p>Mean over seeds of the share of GPU capacity (milli-GPU) allocated when the arrived GPU demand reaches each
percentage of the capacity. The dotted line is every arrived GPU placed.</p>
{_fig_html(allocation_figure(results))}
<h2>Fragmentation over arrived load</h2>
<p>FGD's fragmentation measure summed over nodes: idle GPU that the typical tasks of the trace could not use where it
lies (too small a share, too little cpu, wrong model), as a share of the GPU capacity. Mean over seeds.</p>
{_fig_html(fragmentation_figure(results))}
</body></html>
"""


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _seed_text(seeds: Sequence[int]) -> str:
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(str(x) for x in s)
