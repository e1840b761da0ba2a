"""Multi-agent sessions as message sequence charts, and Causal Past Logic guards over them.

Pure (no Django): an implementation of paper 001, "Causal Past Logic for Runtime Verification of
Distributed LLM Agent Workflows".

MSCs (definition 1) - ``studio.causal.msc``::

    msc = build_msc(events)          # canonical event dicts of one session, in log order
    msc.lifelines, msc.events        # MscEvent: index, lifeline, position, kind, message_id,
                                     #   peer, partner, guards, data, valuation, step, timestamp
    msc.in_transit                   # sends not (yet) received
    msc.vector_clock(i)              # events of each lifeline in the causal past of event i
    causal_past(msc, i) -> set[int]  # non-strict causal past (what the view highlights)
    msc.linearisation(), msc.log_order()

  ``build_msc`` raises ``MscError`` (``.index``, ``.step``, ``.lifeline``, ``.message_id``,
  ``.message``, ``.problems``) for a receive without its send, a message sent or received twice,
  a peer that contradicts the matched event, a lifeline going backwards in step or time, and a
  causal cycle.  A choice event is an event whose ``data["choice"]`` names its guard(s).

CPL (definition 2) - ``studio.causal.parser`` / ``studio.causal.formula``::

    parse_cpl('TestRunner.cand == cand & @TestRunner (status != "failed" S status == "passed")')

  ``Y phi`` previous local event, ``phi S psi`` since, ``@B phi`` phi at the latest visible event
  of B, ``B.x`` variable x there, ``x`` the current store, comparisons ``== != < <= > >=``,
  ``! & | -> <->`` (and Unicode), ``P phi`` / ``P[B] phi`` causal past, ``O`` / ``H`` sugar.
  Errors: ``CplSyntaxError(line, column, expected, message)``.  Formulas are interned.

Semantics (definition 3) - ``studio.causal.semantics``::

    evaluate_denotational(msc, guard, i)                       # the oracle, causal reading
    evaluate_denotational(msc, guard, i, reading="sequential")  # "latest" from the log order

The online monitor (definitions 4-5, algorithms 1-2, theorem 5.1) - ``studio.causal.monitor``::

    monitor = CausalMonitor(lifelines, {"merge_ok": {"owner": "Committer", "cpl": "..."}})
    for event in events:                   # any order consistent with causality
        for d in monitor.process(event):   # GuardDecision(event_index, lifeline, guard,
            ...                            #   guard_text, causal_value, sequential_value,
                                           #   disagrees, causal_clock, log_clock, step)
    run_monitor(msc, guards)               # every decision of a built MSC

  Guards may be given as a mapping name -> CPL text, formula, ``Guard`` or
  ``{"cpl": text, "owner": lifeline}``.  The monitor also computes each guard in the sequential
  reading (a single log) and flags decisions where the two disagree.

The merge scenario of the paper's section 2 is in ``studio.causal.examples``.
"""

from .formula import CplFormula
from .monitor import CausalMonitor, Guard, GuardDecision, MonitorError, run_monitor
from .msc import Msc, MscError, MscEvent, build_msc, causal_past
from .parser import CplSyntaxError, parse_cpl
from .semantics import DenotationalSemantics, evaluate_denotational

__all__ = [
    "CausalMonitor",
    "CplFormula",
    "CplSyntaxError",
    "DenotationalSemantics",
    "Guard",
    "GuardDecision",
    "MonitorError",
    "Msc",
    "MscError",
    "MscEvent",
    "build_msc",
    "causal_past",
    "evaluate_denotational",
    "parse_cpl",
    "run_monitor",
]
