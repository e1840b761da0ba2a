"""A learned risk model drawn as a graph, and a live session's risk over time drawn as a line:
server-side SVG, with the same facts in words and tables for people who do not read pictures.

The model: each abstract state is a box - its atoms, the rules it still owes something to
("waits on"), the rules broken there (unsafe: red), and its samples against the PAC bound (too
few: dashed, "n of N samples").  Edges carry their learned probabilities.  At most
``MAX_STATES`` states are drawn, the most visited, and only edges of at least
``MIN_PROBABILITY``; what is left out is counted.  Layers follow the breadth-first depth from the
start state.

Looks come from classes styled by ``static/css/guard.css`` (the Content-Security-Policy forbids
inline styles).  Every text that comes from people or logs - atoms, rule names, residuals - goes
through ``escape``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from studio.monitor.explain import residual_reading
from studio.risk.predictor import RiskModel

MAX_STATES = 60
MIN_PROBABILITY = 0.10

# Geometry, in SVG user units.
MARGIN = 16
BOX_WIDTH = 200
BOX_HEIGHT = 78
COLUMN = 290          # one layer
ROW = 104             # one state in a layer
LINE = 14
TEXT_CHARS = 30       # per line in a box; the rest is in its tooltip and the table


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _percent(p: float) -> str:
    if p >= 0.995:
        return "100%" if p >= 1.0 else ">99%"
    if 0 < p < 0.01:
        return "<1%"
    return f"{p:.0%}"


@dataclass
class StateRow:
    """One drawn state, for the table beside the picture."""

    number: int
    kind: str
    atoms: list[str]
    waits_on: list[str]
    owes: list[tuple[str, str, str]]  # (rule, residual, in words) for the tooltip and the table
    met: list[str]
    broken: list[str]
    samples: int
    needed: int
    enough: bool
    visits: int


@dataclass
class ModelDrawing:
    svg: SafeString
    rows: list[StateRow]
    states_total: int
    states_hidden: int
    edges_drawn: int
    edges_small: int            # between drawn states, below MIN_PROBABILITY
    edges_to_hidden: int        # to or from states not drawn
    min_probability: float = MIN_PROBABILITY
    legend: list[str] = field(default_factory=list)


def _visits(model: RiskModel) -> np.ndarray:
    counts = model.chain.counts
    out = np.asarray(counts.sum(axis=1)).ravel()
    into = np.asarray(counts.sum(axis=0)).ravel()
    return np.maximum(out, into)


def _reading(model: RiskModel, i: int, start_configs) -> tuple[list, list, list]:
    """(rules it waits on with their residuals, rules met for good, rules broken here)."""
    state = model.states[i]
    rules = model.abstraction.rules
    broken = [name for name, v in zip(rules, state.violated) if v]
    owes, met = [], []
    for name, config, initial in zip(rules, state.monitors, start_configs):
        if config[0] == "instances":
            if config[2]:
                # several open instances: each says what it still owes
                owes.append((name, " | ".join(config[2]),
                             "; ".join(residual_reading(r) for r in config[2])))
        else:
            residual, settled = config[1], config[3]
            if residual == "true":
                if settled:
                    met.append(name)
            elif residual != "false" and residual != initial[1]:
                owes.append((name, residual, residual_reading(residual)))
    return owes, met, broken


def _start_index(model: RiskModel) -> int | None:
    return next((i for i, s in enumerate(model.states) if s.kind == "start"), None)


def draw_model(model: RiskModel) -> ModelDrawing:
    n = len(model.states)
    visits = _visits(model)
    start = _start_index(model)
    order = sorted(range(n), key=lambda i: (i != start, -visits[i], i))
    shown = order[:MAX_STATES]
    shown_set = set(shown)
    matrix = model.chain.matrix.tocoo()
    edges, small, to_hidden = [], 0, 0
    for i, j, p in zip(matrix.row.tolist(), matrix.col.tolist(), matrix.data.tolist()):
        if i not in shown_set or j not in shown_set:
            to_hidden += 1
        elif i == j and model.chain.absorbing[i]:
            continue      # an absorbing state stays where it is: nothing to draw
        elif p < MIN_PROBABILITY:
            small += 1
        else:
            edges.append((i, j, p))

    # Layers: breadth-first depth from the start over the transitions the sessions showed
    # (between drawn states); within a layer, states near their predecessors (barycentres).
    counts = model.chain.counts.tocoo()
    observed: dict[int, list[int]] = {}
    for i, j in zip(counts.row.tolist(), counts.col.tolist()):
        if i != j and i in shown_set and j in shown_set:
            observed.setdefault(i, []).append(j)
    depth: dict[int, int] = {}
    if start is not None:
        depth[start] = 0
        queue = deque([start])
        while queue:
            i = queue.popleft()
            for j in observed.get(i, ()):
                if j not in depth:
                    depth[j] = depth[i] + 1
                    queue.append(j)
    last = max(depth.values(), default=-1) + 1
    layers: dict[int, list[int]] = {}
    for i in shown:
        layers.setdefault(depth.get(i, last), []).append(i)
    into: dict[int, list[int]] = {}
    for i, targets in observed.items():
        for j in targets:
            into.setdefault(j, []).append(i)
    position = {}
    for layer in sorted(layers):
        members = layers[layer]
        if layer > 0:
            def centre(j, members=members):
                above = [position[i][1] for i in into.get(j, ()) if i in position]
                return (sum(above) / len(above) if above else float("inf"), -visits[j])
            members.sort(key=centre)
        for k, i in enumerate(members):
            position[i] = (MARGIN + layer * COLUMN, MARGIN + 24 + k * ROW)
    width = MARGIN * 2 + (max(layers, default=0) + 1) * COLUMN
    height = MARGIN * 2 + 24 + max((len(m) for m in layers.values()), default=1) * ROW

    start_configs = model.states[start].monitors if start is not None else ()
    rows: list[StateRow] = []
    samples = model.chain.samples()
    needed = model.chain.samples_needed(model.epsilon, model.delta)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="risk-model" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-labelledby="risk-model-title">',
             '<title id="risk-model-title">The learned risk model: states and the '
             'probabilities of moving between them (the table below lists the same)</title>',
             '<defs><marker id="gm-arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M0,0 L10,5 L0,10 z" class="gm-arrowhead"/></marker></defs>']
    for layer in sorted(layers):
        label = "start" if layer == 0 else (f"{layer} step{'s' if layer != 1 else ''} in"
                                             if layer < last else "not reached from these")
        parts.append(f'<text class="gm-layer" x="{MARGIN + layer * COLUMN}" '
                     f'y="{MARGIN + 10}">{escape(label)}</text>')

    # Edges first, boxes over them.
    for i, j, p in edges:
        x1, y1 = position[i]
        x2, y2 = position[j]
        title = escape(f"from state {i} to state {j}: {p:.3f}")
        back = False
        if i == j:
            cx, cy = x1 + BOX_WIDTH - 30, y1
            path = (f"M{cx},{cy} C{cx - 10},{cy - 34} {cx + 34},{cy - 34} "
                    f"{cx + 20},{cy}")
            lx, ly = cx + 10, cy - 28
        elif x2 > x1:
            sx, sy = x1 + BOX_WIDTH, y1 + BOX_HEIGHT / 2
            tx, ty = x2, y2 + BOX_HEIGHT / 2
            path = f"M{sx},{sy} L{tx},{ty}"
            lx, ly = sx + (tx - sx) * 0.35, sy + (ty - sy) * 0.35 - 3
        elif x2 == x1:
            # Within a layer: bow out into the gap on the right.
            sx, sy = x1 + BOX_WIDTH, y1 + BOX_HEIGHT / 2 + 8
            tx, ty = x2 + BOX_WIDTH, y2 + BOX_HEIGHT / 2 - 8
            bulge = x1 + BOX_WIDTH + 30 + min(abs(ty - sy), ROW * 3) / 8
            path = f"M{sx},{sy} C{bulge},{sy} {bulge},{ty} {tx},{ty}"
            lx, ly = bulge - 6, (sy + ty) / 2
            back = True
        else:
            # Back to an earlier layer: from the left side to the earlier box's right side.
            sx, sy = x1, y1 + BOX_HEIGHT / 2 + 12
            tx, ty = x2 + BOX_WIDTH, y2 + BOX_HEIGHT / 2 + 12
            path = f"M{sx},{sy} C{sx - 40},{sy} {tx + 40},{ty} {tx},{ty}"
            lx, ly = sx - 24, sy - 4
            back = True
        parts.append(f'<g class="gm-edge{" gm-back" if back else ""}"><title>{title}</title>'
                     f'<path d="{path}" marker-end="url(#gm-arrow)"/>'
                     f'<text class="gm-edge-label" x="{lx:.1f}" y="{ly:.1f}">'
                     f'{escape(_percent(p))}</text></g>')

    for i in shown:
        state = model.states[i]
        owes, met, broken = _reading(model, i, start_configs)
        enough = bool(model.enough[i])
        row = StateRow(i, state.kind, list(state.labels), [name for name, *_ in owes], owes,
                       met, broken, int(samples[i]), int(np.ceil(needed[i] - 1e-9)), enough,
                       int(visits[i]))
        rows.append(row)
        x, y = position[i]
        classes = ["gm-state", f"gm-{state.kind}"]
        if broken:
            classes.append("gm-unsafe")
        if not enough:
            classes.append("gm-few")
        head = {"start": "start", "end": "session ended", "step": "step"}[state.kind]
        lines = [(f"#{i} {head}", "gm-head")]
        if state.kind == "step":
            lines.append(("atoms: " + (", ".join(state.labels) or "none"), ""))
        if owes:
            lines.append(("waits on: " + ", ".join(name for name, *_ in owes), ""))
        if broken:
            lines.append((("breaks at the end: " if state.kind == "end" else "breaks: ")
                          + ", ".join(broken), "gm-broken"))
        if not enough:
            lines.append((f"{row.samples} of {row.needed} samples", "gm-few-text"))
        tooltip = [f"State {i} ({head}), visited {row.visits} times"]
        if state.kind == "step":
            tooltip.append("atoms: " + (", ".join(state.labels) or "none"))
        tooltip += [f"{name}: {reading}" for name, _, reading in owes]
        if met:
            tooltip.append("met for good: " + ", ".join(met))
        if broken:
            tooltip.append("unsafe, breaks: " + ", ".join(broken))
        tooltip.append(f"{row.samples} samples, the PAC bound asks for {row.needed}"
                       if not model.chain.absorbing[i] else "absorbing (the session ended)")
        parts.append(f'<g class="{" ".join(classes)}"><title>{escape(chr(10).join(tooltip))}'
                     f'</title><rect x="{x}" y="{y}" width="{BOX_WIDTH}" '
                     f'height="{BOX_HEIGHT}" rx="6"/>')
        for k, (text, cls) in enumerate(lines[:5]):
            parts.append(f'<text x="{x + 8}" y="{y + 16 + k * LINE}"'
                         f'{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>'
                         f'{escape(_cut(text))}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return ModelDrawing(mark_safe("".join(parts)), rows, n, n - len(shown), len(edges),
                        small, to_hidden)


# ---------------------------------------------------------------------------------------------
# A session's risk over time

CHART_WIDTH = 420
CHART_HEIGHT = 130
CHART_LEFT = 40
CHART_RIGHT = 12
CHART_TOP = 10
CHART_BOTTOM = 24


@dataclass
class RiskPoint:
    step: int                   # the stored step
    risk: float | None          # of breaking any rule within the horizon; None: unknown state
    backed: bool
    broken: list[str]           # rules broken at this step


def draw_risk(points: list[RiskPoint], threshold: float, label: str) -> SafeString:
    """A small line chart: risk (0 to 100%) after each step, the threshold dashed; a point
    is hollow when its estimate is not backed by the PAC bound, missing when unknown."""
    inner_w = CHART_WIDTH - CHART_LEFT - CHART_RIGHT
    inner_h = CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
    count = max(len(points), 2)

    def x(k: int) -> float:
        return CHART_LEFT + inner_w * k / (count - 1)

    def y(p: float) -> float:
        return CHART_TOP + inner_h * (1 - p)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="risk-chart" '
             f'width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
             f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img">'
             f'<title>{escape(label)}</title>',
             f'<line class="rc-axis" x1="{CHART_LEFT}" y1="{y(0)}" x2="{CHART_LEFT + inner_w}" '
             f'y2="{y(0)}"/>',
             f'<line class="rc-axis" x1="{CHART_LEFT}" y1="{y(0)}" x2="{CHART_LEFT}" '
             f'y2="{y(1)}"/>',
             f'<text class="rc-tick" x="{CHART_LEFT - 4}" y="{y(0) + 4}">0%</text>',
             f'<text class="rc-tick" x="{CHART_LEFT - 4}" y="{y(1) + 4}">100%</text>',
             f'<line class="rc-threshold" x1="{CHART_LEFT}" y1="{y(threshold):.1f}" '
             f'x2="{CHART_LEFT + inner_w}" y2="{y(threshold):.1f}"/>',
             f'<text class="rc-threshold-label" x="{CHART_LEFT + inner_w}" '
             f'y="{y(threshold) - 3:.1f}">threshold {escape(_percent(threshold))}</text>']
    if points:
        parts.append(f'<text class="rc-step" x="{x(0)}" y="{CHART_HEIGHT - 6}">step '
                     f'{points[0].step}</text>')
        if len(points) > 1:
            parts.append(f'<text class="rc-step rc-step-last" x="{x(len(points) - 1)}" '
                         f'y="{CHART_HEIGHT - 6}">step {points[-1].step}</text>')
    # The line, broken where the model gives no estimate.
    run: list[str] = []
    for k, point in enumerate(points + [RiskPoint(-1, None, False, [])]):
        if point.risk is None:
            if len(run) > 1:
                parts.append(f'<polyline class="rc-line" points="{" ".join(run)}"/>')
            run = []
        else:
            run.append(f"{x(k):.1f},{y(point.risk):.1f}")
    for k, point in enumerate(points):
        if point.risk is None:
            parts.append(f'<g><title>after step {point.step}: no estimate (a state the model '
                         f'never saw)</title><text class="rc-unknown" x="{x(k):.1f}" '
                         f'y="{y(0) - 3}">?</text></g>')
            continue
        classes = "rc-point" + ("" if point.backed else " rc-unbacked") + (
            " rc-broken" if point.broken else "")
        title = f"after step {point.step}: {_percent(point.risk)}"
        if point.broken:
            title += " (broke " + ", ".join(point.broken) + ")"
        if not point.backed:
            title += "; fewer samples than the PAC bound asks for"
        parts.append(f'<circle class="{classes}" cx="{x(k):.1f}" cy="{y(point.risk):.1f}" '
                     f'r="3.5"><title>{escape(title)}</title></circle>')
    parts.append("</svg>")
    return mark_safe("".join(parts))


def risk_words(points: list[RiskPoint], threshold: float, horizon: int) -> list[str]:
    """The chart in sentences, for a compliance officer, in the order things happened."""
    if not points:
        return ["No event yet."]
    within = f"within {horizon} step{'s' if horizon != 1 else ''}"
    bar = f"the guard's threshold is {_percent(threshold)}"
    events: list[tuple[int, str]] = []
    broken = next((k for k, p in enumerate(points) if p.broken), None)
    if broken is not None:
        p = points[broken]
        events.append((broken, f"At step {p.step} the session broke {', '.join(p.broken)}."))
    crossed = next((k for k, p in enumerate(points) if p.risk is not None and not p.broken
                    and p.risk >= threshold), None)
    known = [p for p in points if p.risk is not None]
    if crossed is not None:
        p = points[crossed]
        verb = "was already" if crossed == 0 else "rose to"
        events.append((crossed, f"After step {p.step} the chance of breaking a rule {within} "
                                f"{verb} {_percent(p.risk)} ({bar})."))
        below = next((k for k in range(crossed + 1, len(points))
                      if points[k].risk is not None and points[k].risk < threshold), None)
        if below is not None:
            events.append((below, f"After step {points[below].step} it fell back below the "
                                  f"threshold, to {_percent(points[below].risk)}."))
    elif known:
        top = max(known, key=lambda p: p.risk)
        events.append((-1, f"The chance of breaking a rule {within} stayed below the guard's "
                           f"threshold ({_percent(threshold)}); it was highest after step "
                           f"{top.step}, at {_percent(top.risk)}."))
    unknown = next((k for k, p in enumerate(points) if p.risk is None), None)
    if unknown is not None:
        events.append((unknown, f"After step {points[unknown].step} the session reached a state "
                                "the model never saw in the sessions it learned from, so it "
                                "gives no estimate there."))
    out = [sentence for _, sentence in sorted(events, key=lambda e: e[0])]
    last = points[-1]
    if last.risk is not None:
        out.append(f"Now, after step {last.step}, it is {_percent(last.risk)}.")
    if any(not p.backed for p in known):
        out.append("Some estimates rest on states with fewer samples than the PAC bound asks "
                   "for (hollow points): read them as rough.")
    return out
