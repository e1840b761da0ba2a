"""A multi-agent session drawn as a message sequence chart: server-side SVG, and the table of
the same events for people who do not read the picture.

Time runs down: one row per event, in a causal order that follows the log wherever causality
allows (``Msc.linearisation``), so every message points down.  Each lifeline is a column; an
event is a link that selects it (``?event=<step>``), which works without JavaScript.  Sends and
receives are joined by an arrow; a message still in transit is a dashed arrow that stops short
of its receiver.  A choice event is a diamond with its guards' values in both readings (causal,
and a sequential log's), and the rules' verdicts appear where they change, per event, and at the
foot of each lifeline.  With an event selected, its causal past (and the part of each lifeline
it covers) is marked and everything else dimmed.  Looks come from classes styled by the static
``msc.css``: the Content-Security-Policy forbids inline styles.

Built as a list of strings joined once (a 10,000-event chart in well under a second; see
``bench/msc_svg.py``).  Every text that comes from a log - lifelines, message ids, peers, event
texts, guard names, rule names - goes through ``escape``; nothing else touches Django.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from django.utils.html import escape

from studio.causal import Msc
from studio.monitor.verdicts import verdict_glyph, verdict_words

# Geometry, in SVG user units (pixels at 100 % zoom).
COLUMN = 250            # width of one lifeline's column
AXIS = 56               # the lifeline's axis, from the column's left edge
MARGIN = 16
HEAD_TOP = 12
HEAD_HEIGHT = 34
FIRST_ROW = HEAD_TOP + HEAD_HEIGHT + 26
ROW = 26                # one event
EXTRA_LINE = 14         # each line of guard values or verdicts under an event
FOOT_GAP = 24
FOOT_LINE = 16
LABEL_CHARS = 30        # event text shown on the chart; the rest is in its tooltip and the table
TITLE_CHARS = 300
MESSAGE_LABEL_CHARS = 22
ZOOM_LEVELS = (25, 50, 75, 100, 150, 200)   # percent
KIND_WORDS = {"local": "local action", "send": "send", "receive": "receive",
              "choice": "choice"}


@dataclass(frozen=True)
class GuardMark:
    """A guard's value at a choice event, in the causal reading and in a sequential log's."""

    guard: str
    causal: bool
    sequential: bool | None
    disagrees: bool

    def describe(self) -> str:
        text = f"{self.guard}: {'true' if self.causal else 'false'} (causal)"
        if self.sequential is not None:
            text += f", {'true' if self.sequential else 'false'} (sequential log)"
        if self.disagrees:
            text += ", the readings disagree"
        return text


@dataclass(frozen=True)
class VerdictMark:
    """A rule's verdict (TRAC) at a step, and the violations detected there."""

    rule: str
    verdict: str
    detected: int = 0

    @property
    def word(self) -> str:
        """The verdict as every page and file says it: complied, violated or open."""
        return verdict_words(self.verdict)

    def describe(self) -> str:
        text = f"{self.rule}: {self.word}"
        if self.detected:
            text += f", {self.detected} violation{'s' if self.detected != 1 else ''} detected"
        return text


@dataclass
class ChartInput:
    """What the chart shows besides the MSC itself.  Event indexes are the MSC's."""

    msc: Msc
    title: str
    link: Callable[[int], str]                 # step -> URL that selects it (no fragment)
    texts: Sequence[str] | None = None         # per event; default: event_text of its source
    steps: Sequence[int] | None = None         # per event, its step; default: MscEvent.step
    guards: Mapping[int, Sequence[GuardMark]] = field(default_factory=dict)
    verdicts: Mapping[int, Sequence[VerdictMark]] = field(default_factory=dict)
    lifeline_verdicts: Mapping[str, Sequence[VerdictMark]] = field(default_factory=dict)
    selected: int | None = None
    past: Set[int] = frozenset()
    zoom: int = 100                            # percent, one of ZOOM_LEVELS


# ---------------------------------------------------------------------------------------------
# Texts

def event_text(source: Mapping | None) -> str:
    """One line saying what an event did: its output, else its input (tool calls as
    ``tool(args)``); empty when it has neither."""
    if not source:
        return ""
    for key in ("output", "input"):
        value = source.get(key)
        if value is None or value == "" or value == {} or value == []:
            continue
        if isinstance(value, str):
            return " ".join(value.split())
        if isinstance(value, dict) and isinstance(value.get("tool"), str):
            args = value.get("args")
            shown = json.dumps(args, ensure_ascii=False, default=str) if args else ""
            return f"{value['tool']}({shown[:200]})"
        return json.dumps(value, ensure_ascii=False, default=str)[:TITLE_CHARS * 2]
    return ""


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def event_summary(event, step, text: str) -> str:
    """The event in words (its tooltip, and what a screen reader says for its link)."""
    parts = [f"Step {step}", event.lifeline, KIND_WORDS.get(event.kind, event.kind)]
    if event.message_id is not None:
        direction = "to" if event.kind == "send" else "from"
        message = f"message {event.message_id}"
        if event.peer:
            message += f" {direction} {event.peer}"
        if event.kind == "send" and event.partner is None:
            message += " (in transit)"
        parts.append(message)
    if event.guards:
        parts.append("guard " + ", ".join(event.guards))
    if text:
        parts.append(cut(text, TITLE_CHARS))
    return " · ".join(parts)


# ---------------------------------------------------------------------------------------------
# The SVG

@dataclass
class _Layout:
    x_of: dict[str, float]
    y: list[float]          # per event index
    bottom: float
    width: float
    height: float


def _layout(chart: ChartInput, order: list[int]) -> _Layout:
    msc = chart.msc
    x_of = {name: MARGIN + i * COLUMN + AXIS for i, name in enumerate(msc.lifelines)}
    y = [0.0] * len(msc.events)
    at = float(FIRST_ROW)
    for index in order:
        y[index] = at
        extra = len(chart.guards.get(index, ())) + (1 if chart.verdicts.get(index) else 0)
        at += ROW + extra * EXTRA_LINE
    bottom = at + ROW  # room for in-transit arrows below the last event
    rules = max((len(v) for v in chart.lifeline_verdicts.values()), default=0)
    height = bottom + (FOOT_GAP + (rules + 1) * FOOT_LINE if rules else 0) + MARGIN
    width = 2 * MARGIN + max(1, len(msc.lifelines)) * COLUMN
    return _Layout(x_of, y, bottom, width, height)


def render_svg(chart: ChartInput) -> str:
    """The chart as one ``<svg>`` element (a string of safe markup)."""
    msc = chart.msc
    events = msc.events
    order = msc.linearisation()
    layout = _layout(chart, order)
    texts = chart.texts if chart.texts is not None else [event_text(e.source) for e in events]
    steps = _steps(chart)
    selected = chart.selected
    past = chart.past if selected is not None else frozenset()
    scale = chart.zoom / 100
    in_transit = msc.in_transit
    messages = sum(1 for e in events if e.kind == "send")
    root_class = "msc has-selection" if selected is not None else "msc"

    out: list[str] = []
    add = out.append
    add(f'<svg xmlns="http://www.w3.org/2000/svg" class="{root_class}" '
        f'width="{layout.width * scale:.0f}" height="{layout.height * scale:.0f}" '
        f'viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" '
        f'aria-labelledby="msc-title" aria-describedby="msc-desc">')
    add(f'<title id="msc-title">{escape(chart.title)}</title>')
    description = (f"{len(events)} event{'s' if len(events) != 1 else ''} on "
                   f"{len(msc.lifelines)} lifeline{'s' if len(msc.lifelines) != 1 else ''} "
                   f"({', '.join(msc.lifelines)}); {messages} message"
                   f"{'s' if messages != 1 else ''}, {len(in_transit)} still in transit. "
                   "Time runs down; each event is a link that selects it.")
    if selected is not None:
        description += (f" Selected: step {steps[selected]} on "
                        f"{events[selected].lifeline}; its causal past holds {len(past)} "
                        f"event{'s' if len(past) != 1 else ''}, marked, the others dimmed.")
    add(f'<desc id="msc-desc">{escape(description)}</desc>')
    add('<defs>'
        '<marker id="msc-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path class="arrowhead" '
        'd="M0,0 L10,5 L0,10 z"/></marker>'
        '<marker id="msc-arrow-past" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path class="arrowhead in-past" '
        'd="M0,0 L10,5 L0,10 z"/></marker>'
        '<marker id="msc-arrow-open" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path class="arrowhead open" '
        'd="M0,0 L10,5 L0,10"/></marker>'
        '</defs>')

    # Lifelines: a head, the axis, and with a selection the part its causal past covers.
    clock = msc.vector_clock(selected) if selected is not None else None
    add('<g class="lifelines">')
    for position, name in enumerate(msc.lifelines):
        x = layout.x_of[name]
        left = x - AXIS + 8
        add(f'<g class="lifeline"><rect class="head" x="{left:.0f}" y="{HEAD_TOP}" '
            f'width="{COLUMN - 16}" height="{HEAD_HEIGHT}" rx="4"/>'
            f'<text class="head-label" x="{left + (COLUMN - 16) / 2:.0f}" '
            f'y="{HEAD_TOP + HEAD_HEIGHT / 2 + 5:.0f}">{escape(cut(name, 32))}</text>'
            f'<line class="axis" x1="{x:.0f}" y1="{HEAD_TOP + HEAD_HEIGHT}" x2="{x:.0f}" '
            f'y2="{layout.bottom:.0f}"/>')
        if clock is not None and clock[position]:
            latest = msc.by_lifeline[name][clock[position] - 1]
            add(f'<line class="axis-past" x1="{x:.0f}" y1="{HEAD_TOP + HEAD_HEIGHT}" '
                f'x2="{x:.0f}" y2="{layout.y[latest]:.0f}"/>')
        add('</g>')
    add('</g>')

    # Messages under the events, so the event marks stay on top.
    add('<g class="messages">')
    y = layout.y
    for event in events:
        if event.kind != "send":
            continue
        x1, y1 = layout.x_of[event.lifeline], y[event.index]
        label = escape(cut(event.message_id or "", MESSAGE_LABEL_CHARS))
        if event.partner is not None:
            receive = events[event.partner]
            x2, y2 = layout.x_of[receive.lifeline], y[receive.index]
            inside = event.index in past and receive.index in past
            css = "msg in-past" if inside else "msg"
            marker = "msc-arrow-past" if inside else "msc-arrow"
            tooltip = escape(f"message {event.message_id}: {event.lifeline} (step "
                             f"{steps[event.index]}) to {receive.lifeline} (step "
                             f"{steps[receive.index]})")
            if x1 == x2:  # a message to itself: a loop to the right of the axis
                add(f'<path class="{css}" d="M{x1:.0f},{y1:.0f} C{x1 + 60:.0f},{y1:.0f} '
                    f'{x2 + 60:.0f},{y2:.0f} {x2 + 6:.0f},{y2:.0f}" '
                    f'marker-end="url(#{marker})"><title>{tooltip}</title></path>')
                lx, ly = x1 + 48, (y1 + y2) / 2
            else:
                end = x2 - 6 if x2 > x1 else x2 + 6
                add(f'<line class="{css}" x1="{x1:.0f}" y1="{y1:.0f}" x2="{end:.0f}" '
                    f'y2="{y2:.0f}" marker-end="url(#{marker})"><title>{tooltip}</title>'
                    '</line>')
                # Short of the middle, which is another lifeline's axis when one lies between.
                lx, ly = x1 + (x2 - x1) * 0.4, y1 + (y2 - y1) * 0.4 - 4
            add(f'<text class="msg-label" x="{lx:.0f}" y="{ly:.0f}">{label}</text>')
        else:
            # A stub pointing towards the receiver, stopping before the next lifeline's axis.
            target = layout.x_of.get(event.peer) if event.peer else None
            toward_left = target is not None and target < x1
            x2 = x1 - COLUMN * 0.6 if toward_left else x1 + COLUMN * 0.6
            y2 = y1 + ROW
            inside = event.index in past
            peer = f" to {event.peer}" if event.peer else ""
            tooltip = escape(f"message {event.message_id}{peer}: sent at step "
                             f"{steps[event.index]}, "
                             "not received (in transit)")
            add(f'<line class="msg in-transit{" in-past" if inside else ""}" x1="{x1:.0f}" '
                f'y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" marker-end="url(#msc-arrow-open)">'
                f'<title>{tooltip}</title></line>')
            add(f'<text class="msg-label in-transit-label" x="{(x1 + x2) / 2:.0f}" '
                f'y="{y2 + 12:.0f}">{label}{escape(cut(peer, 28))} (in transit)</text>')
    add('</g>')

    # Events.
    add('<g class="events">')
    link = chart.link
    for index in order:
        event = events[index]
        x, ey = layout.x_of[event.lifeline], y[index]
        css = f"ev ev-{event.kind}"
        if index in past:
            css += " in-past"
        if index == selected:
            css += " is-selected"
        step = steps[index]
        text = texts[index]
        guard_marks = chart.guards.get(index, ())
        verdict_marks = chart.verdicts.get(index, ())
        summary = event_summary(event, step, text)
        if guard_marks:
            summary += " · " + "; ".join(g.describe() for g in guard_marks)
        if verdict_marks:
            summary += " · rules: " + "; ".join(v.describe() for v in verdict_marks)
        add(f'<a class="{css}" id="msc-e{step}" href="{escape(link(step))}#msc-e{step}">'
            f'<title>{escape(summary)}</title>')
        if event.kind == "choice":
            add(f'<polygon class="mark" points="{x:.0f},{ey - 8:.0f} {x + 8:.0f},{ey:.0f} '
                f'{x:.0f},{ey + 8:.0f} {x - 8:.0f},{ey:.0f}"/>')
        else:
            add(f'<circle class="mark" cx="{x:.0f}" cy="{ey:.0f}" r="5"/>')
        label = _label(event, text)
        add(f'<text class="label" x="{x + 12:.0f}" y="{ey + 4:.0f}">'
            f'<tspan class="step">{step}</tspan> {escape(label)}</text>')
        line_y = ey + 4 + EXTRA_LINE
        for mark in guard_marks:
            css = "guard guard-true" if mark.causal else "guard guard-false"
            if mark.disagrees:
                css += " disagrees"
            words = f"{'✓ true' if mark.causal else '✗ false'}"
            if mark.sequential is not None:
                words += f" · log: {'true' if mark.sequential else 'false'}"
            if mark.disagrees:
                words += " ≠"
            add(f'<text class="{css}" x="{x + 12:.0f}" y="{line_y:.0f}">'
                f'{escape(cut(mark.guard, 18))}: {words}</text>')
            line_y += EXTRA_LINE
        if verdict_marks:
            add(f'<text class="verdicts" x="{x + 12:.0f}" y="{line_y:.0f}">')
            for mark in verdict_marks:
                detected = f" {mark.detected}" if mark.detected else ""
                add(f'<tspan class="verdict-{escape(mark.word)}">'
                    f'{verdict_glyph(mark.verdict)}{detected} {escape(cut(mark.rule, 16))} '
                    '</tspan>')
            add('</text>')
        add('</a>')
    add('</g>')

    # The rules' verdicts at the foot of each lifeline: after its last event.
    if chart.lifeline_verdicts:
        add('<g class="foot">')
        for name in msc.lifelines:
            marks = chart.lifeline_verdicts.get(name, ())
            if not marks:
                continue
            x = layout.x_of[name] - AXIS + 8
            fy = layout.bottom + FOOT_GAP
            add(f'<text class="foot-title" x="{x:.0f}" y="{fy:.0f}">Rules after its last '
                'event</text>')
            for mark in marks:
                fy += FOOT_LINE
                detected = (f", {mark.detected} detected here" if mark.detected else "")
                add(f'<text class="foot-verdict verdict-{escape(mark.word)}" x="{x:.0f}" '
                    f'y="{fy:.0f}">{verdict_glyph(mark.verdict)} {escape(cut(mark.rule, 20))}'
                    f': {escape(mark.word)}{detected}</text>')
        add('</g>')
    add('</svg>')
    return "".join(out)


def _steps(chart: ChartInput) -> Sequence:
    return chart.steps if chart.steps is not None else [e.step for e in chart.msc.events]


def _label(event, text: str) -> str:
    """The event's words on the chart: what it says, else what it does."""
    if text:
        return cut(text, LABEL_CHARS)
    if event.kind == "send":
        return cut(f"send {event.message_id}", LABEL_CHARS)
    if event.kind == "receive":
        return cut(f"receive {event.message_id}", LABEL_CHARS)
    if event.kind == "choice":
        return cut("choice " + ", ".join(event.guards), LABEL_CHARS)
    return ""


# ---------------------------------------------------------------------------------------------
# The same events as a table

def render_table(chart: ChartInput) -> str:
    """The events in the chart's order as table rows (``<tbody>`` content): step (a link that
    selects it), lifeline, kind, message, peer, guard values, rule verdicts, text, and whether
    it is in the selected event's causal past."""
    msc = chart.msc
    events = msc.events
    texts = chart.texts if chart.texts is not None else [event_text(e.source) for e in events]
    steps = _steps(chart)
    selected = chart.selected
    past = chart.past if selected is not None else frozenset()
    out: list[str] = []
    add = out.append
    for index in msc.linearisation():
        event = events[index]
        step = steps[index]
        css = []
        if index in past:
            css.append("in-past")
        if index == selected:
            css.append("is-selected")
        message = ""
        if event.message_id is not None:
            message = escape(event.message_id)
            if event.kind == "send" and event.partner is None:
                message += ' <span class="tag tag-transit">in transit</span>'
        guards = "<br>".join(escape(g.describe()) for g in chart.guards.get(index, ()))
        verdicts = "<br>".join(escape(v.describe()) for v in chart.verdicts.get(index, ()))
        where = ("selected" if index == selected else
                 "in the causal past" if index in past else "")
        current = ' aria-current="true"' if index == selected else ""
        row_class = f' class="{" ".join(css)}"' if css else ""
        add(f'<tr id="row-{step}"{row_class}>'
            f'<th scope="row"><a href="{escape(chart.link(step))}#selection"{current}>{step}</a>'
            '</th>'
            f'<td>{escape(event.lifeline)}</td><td>{KIND_WORDS.get(event.kind, event.kind)}</td>'
            f'<td>{message}</td><td>{escape(event.peer or "")}</td><td>{guards}</td>'
            f'<td>{verdicts}</td><td class="text">{escape(cut(texts[index], 200))}</td>'
            f'<td>{where}</td></tr>')
    return "".join(out)
