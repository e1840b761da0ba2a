"""The online monitor of paper 001 (definition 4, algorithms 1 and 2), compiled for speed.

State per lifeline l, as in definition 4:

* the *view*: for every lifeline B, a reference to the snapshot of the latest event of B that l
  has seen.  A snapshot is an immutable tuple ``(k, ...)``: k is the event's position on B, then
  the Boolean values of the formulas phi that some ``@B phi`` reads (the latest-value view
  beta(B, phi)), then the values of the variables x that some ``B.x`` reads (the variable view
  nu(B, x)).  The vector clock is ``V_l[B] = view[B][0]``; a lifeline nothing is known of has
  the absent snapshot ``(0, False..., MISSING...)``, so "no visible B-event" reads as false and
  undefined exactly as definition 3 wants, with no test at run time;
* the local store (the event valuation), updated with each event's ``data``;
* the previous-local copy pi(phi): the values at l's previous event (all false before the first).

Algorithm 1 for an event on l: on a receive, merge the view carried by the message - take
``carried[B]`` exactly when the message is ahead on B (its k is larger), which copies the clock
entry and both latest-value tables of B at once; then increment ``V_l[l]`` (the new snapshot's
k), update the store, evaluate the subformulas bottom-up (algorithm 2), publish l's new snapshot
into its own view, and on a send attach the view to the message (a tuple of references:
snapshots are immutable and shared, never copied).

Algorithm 2 is compiled, not interpreted: for each lifeline the subformulas it must evaluate at
every event (the arguments of ``Y``, every ``S``, and the arguments of ``@l`` read by other
lifelines) become one generated Python function whose body is straight-line code over local
variables, with the since recurrence ``psi or (phi and pi(phi S psi))`` and view reads
``view[b][offset]`` inlined.  Guards are compiled the same way into one function per (lifeline,
guard), run only at choice events.  ``P`` is unfolded to ``@B (true S phi)`` first (section 4).

The *sequential* reading is computed alongside with the same machinery: one view shared by all
lifelines, updated at every event, so "the latest event of B" is B's latest event earlier in the
log (the order events reach the monitor), whatever the causality.  A value that cannot differ
between the two readings (nothing remote under it) is computed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

from .formula import CplFormula, unfold_past
from .msc import CHOICE_KEY, RECEIVE, SEND, Msc
from .parser import MAX_DEPTH, parse_cpl
from .semantics import MISSING, compare_values, value_kind

__all__ = ["CausalMonitor", "Guard", "GuardDecision", "MonitorError", "run_monitor"]

_FIRST = itemgetter(0)   # a snapshot's position on its lifeline: a view's clock entry


@dataclass(frozen=True)
class Guard:
    """A named CPL guard; ``owners`` are the lifelines whose choice events may evaluate it
    (None: any lifeline).  Naming the owners lets the monitor skip the guard's bookkeeping on
    every other lifeline."""

    name: str
    formula: CplFormula
    owners: frozenset[str] | None = None

    @property
    def text(self) -> str:
        return self.formula.text


class GuardDecision(NamedTuple):
    """One guard evaluated at one choice event, in both readings.  ``causal_clock`` is the
    owner's vector clock at the event (how many events of each lifeline it has seen) and
    ``log_clock`` the same count in the sequential reading: where they differ is what one
    reading sees and the other does not.  (A named tuple: cheap to make, ``_asdict()`` for
    JSON.)"""

    event_index: int
    lifeline: str
    guard: str
    guard_text: str
    causal_value: bool
    sequential_value: bool | None
    disagrees: bool
    causal_clock: tuple[int, ...] = ()
    log_clock: tuple[int, ...] | None = None
    step: Any = None


class MonitorError(ValueError):
    """An event the monitor cannot process (an unknown lifeline, a receive whose send has not
    been processed - the events are not in a causal order - or a message sent twice)."""

    def __init__(self, message: str, index: int | None = None, *, lifeline: str | None = None,
                 message_id: str | None = None):
        self.message = message
        self.index = index
        self.lifeline = lifeline
        self.message_id = message_id
        where = [] if index is None else [f"event {index}"]
        if lifeline:
            where.append(f"lifeline {lifeline!r}")
        if message_id:
            where.append(f"message {message_id!r}")
        super().__init__((", ".join(where) + ": " if where else "") + message)


def normalise_guards(guards) -> list[Guard]:
    """Guards from a mapping name -> CPL text | CplFormula | Guard | {"cpl", "owner(s)"}, or an
    iterable of :class:`Guard`."""
    out: list[Guard] = []
    items = guards.items() if isinstance(guards, Mapping) else ((g.name, g) for g in guards)
    for name, spec in items:
        owners = None
        if isinstance(spec, Guard):
            out.append(spec if spec.name == name else Guard(name, spec.formula, spec.owners))
            continue
        if isinstance(spec, Mapping):
            owners = spec.get("owners", spec.get("owner"))
            if isinstance(owners, str):
                owners = [owners]
            spec = spec.get("cpl", spec.get("formula"))
        formula = parse_cpl(spec) if isinstance(spec, str) else spec
        if not isinstance(formula, CplFormula):
            raise ValueError(f"guard {name!r}: expected CPL text or a formula")
        out.append(Guard(name, formula, frozenset(owners) if owners is not None else None))
    return out


# --- compilation ----------------------------------------------------------------------------

_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CUT_DEPTH = 24
_NUMBER_CLASSES = (int, float)

# Comparisons of two variables, read at run time; the rule language's kinds (definition 3 leaves
# atoms to the application): undefined is false, kinds differ means unequal, order only within
# numbers or within strings.  By exact class: values come from JSON.
_KIND = {type(None): 0, bool: 1, int: 2, float: 2, str: 3}


def _equal(a, b) -> bool:
    return (a is not MISSING and b is not MISSING
            and _KIND.get(a.__class__, 4) == _KIND.get(b.__class__, 4) and a == b)


def _unequal(a, b) -> bool:
    return (a is not MISSING and b is not MISSING
            and not (_KIND.get(a.__class__, 4) == _KIND.get(b.__class__, 4) and a == b))


def _orderable(a, b) -> bool:
    kind = _KIND.get(a.__class__)
    return (kind == 2 or kind == 3) and kind == _KIND.get(b.__class__)


class _Compiler:
    """Turns the guards into per-lifeline step functions and per-(lifeline, guard) deciders."""

    def __init__(self, lifelines: Sequence[str], guards: list[Guard], sequential: bool):
        self.lifelines = tuple(lifelines)
        self.index = {name: i for i, name in enumerate(self.lifelines)}
        self.sequential = sequential
        n = len(self.lifelines)
        self.roots: dict[str, CplFormula] = {}
        self.owners: dict[str, tuple[int, ...]] = {}
        for guard in guards:
            if guard.formula.depth > MAX_DEPTH:
                raise ValueError(f"guard {guard.name!r} nests deeper than {MAX_DEPTH} levels")
            unknown = sorted(guard.formula.lifelines() - set(self.index))
            if unknown:
                raise ValueError(f"guard {guard.name!r} names lifelines that are not monitored: "
                                 f"{', '.join(unknown)}")
            if guard.owners is not None and not guard.owners <= set(self.index):
                raise ValueError(f"guard {guard.name!r} is owned by unknown lifelines")
            self.roots[guard.name] = unfold_past(guard.formula, self.lifelines)
            self.owners[guard.name] = (tuple(range(n)) if guard.owners is None
                                       else tuple(sorted(self.index[o] for o in guard.owners)))
        self._contexts()
        self._layout()

    # Which subformulas each lifeline evaluates: a guard at its owners; the argument of @B at B.
    def _contexts(self) -> None:
        self.context: dict[int, set[CplFormula]] = {b: set() for b in range(len(self.lifelines))}
        stack = [(root, l) for name, root in self.roots.items() for l in self.owners[name]]
        while stack:
            f, l = stack.pop()
            if f in self.context[l]:
                continue
            self.context[l].add(f)
            for child in f.args:
                stack.append((child, self.index[f.payload] if f.op == "at" else l))

    def _layout(self) -> None:
        n = len(self.lifelines)
        published_bools: list[dict[CplFormula, None]] = [{} for _ in range(n)]
        published_vars: list[dict[str, None]] = [{} for _ in range(n)]
        materialised: list[dict[CplFormula, None]] = [{} for _ in range(n)]
        for l in range(n):
            for f in sorted(self.context[l], key=lambda g: (g.depth, g.id)):
                if f.op == "at" and self.index[f.payload] != l:
                    published_bools[self.index[f.payload]][f.args[0]] = None
                elif f.op == "cmp":
                    for term in (f.payload[0], f.payload[2]):
                        if term[0] == "var" and term[1] is not None and self.index[term[1]] != l:
                            published_vars[self.index[term[1]]][term[2]] = None
                if f.op == "Y":
                    materialised[l][f.args[0]] = None
                elif f.op == "S" or f.depth % _CUT_DEPTH == 0:
                    # A since needs its previous value; a deep node gets a name so generated
                    # expressions stay within Python's nesting limits.
                    materialised[l][f] = None
        for b in range(n):
            for f in published_bools[b]:
                materialised[b][f] = None
        self.published_bools = [list(p) for p in published_bools]
        self.published_vars = [list(p) for p in published_vars]
        # Children before parents, so straight-line code can read earlier results.
        self.materialised = [sorted(m, key=lambda g: (g.depth, g.id)) for m in materialised]
        self.slot = [{f: i for i, f in enumerate(m)} for m in self.materialised]
        factor = 2 if self.sequential else 1
        self.bool_offset, self.seq_bool_offset, self.var_offset = [], [], []
        for b in range(n):
            nb = len(self.published_bools[b])
            self.bool_offset.append({f: 1 + i for i, f in enumerate(self.published_bools[b])})
            self.seq_bool_offset.append(
                {f: 1 + nb + i for i, f in enumerate(self.published_bools[b])})
            self.var_offset.append(
                {x: 1 + factor * nb + j for j, x in enumerate(self.published_vars[b])})
        self.absent = [
            (0,) + (False,) * (factor * len(self.published_bools[b]))
            + (MISSING,) * len(self.published_vars[b]) for b in range(n)]
        self._dependent: dict[tuple[int, int], bool] = {}

    def dependent(self, f: CplFormula, l: int) -> bool:
        """Whether f at lifeline l can read differently in the two readings (it reads another
        lifeline's latest event somewhere)."""
        key = (f.id, l)
        known = self._dependent.get(key)
        if known is None:
            if f.op == "at":
                b = self.index[f.payload]
                known = b != l or self.dependent(f.args[0], l)
            elif f.op == "cmp":
                known = any(t[0] == "var" and t[1] is not None and self.index[t[1]] != l
                            for t in (f.payload[0], f.payload[2]))
            else:
                known = any(self.dependent(a, l) for a in f.args)
            self._dependent[key] = known
        return known

    # --- code generation ---

    def generate(self) -> tuple[list, dict]:
        namespace = {"MISSING": MISSING, "NUM": _NUMBER_CLASSES, "EQ": _equal, "NE": _unequal,
                     "ORDERABLE": _orderable}
        source: list[str] = [self._merge_source()]
        for l in range(len(self.lifelines)):
            source.append(self._step_source(l))
        for name, root in self.roots.items():
            for l in self.owners[name]:
                source.append(self._decider_source(l, name, root))
        code = compile("\n\n".join(source), "<cpl monitor>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated code; user text is only repr()'d
        steps = [namespace[f"step_{l}"] for l in range(len(self.lifelines))]
        deciders = {(l, name): namespace[f"decide_{l}_{self._guard_id(name)}"]
                    for name in self.roots for l in self.owners[name]}
        self.source = "\n\n".join(source)
        return namespace["merge"], steps, deciders

    def _merge_source(self) -> str:
        # Algorithm 1's receive merge, unrolled: take the message's entry for lifeline b exactly
        # when the message is ahead on b (snapshots start with their position k on b).
        body = []
        for b in range(len(self.lifelines)):
            body += [f"s = sent[{b}]", f"if s[0] > view[{b}][0]:", f"    view[{b}] = s"]
        return "def merge(view, sent):\n" + _indent(body or ["pass"])

    def _guard_id(self, name: str) -> int:
        return list(self.roots).index(name)

    def _step_source(self, l: int) -> str:
        gen = _Expressions(self, l)
        lines = []
        for f in self.materialised[l]:
            slot = self.slot[l][f]
            lines.append(f"c{slot} = {gen.definition(f, 'c')}")
            gen.bind(f, "c", f"c{slot}")
            if self.sequential:
                if self.dependent(f, l):
                    lines.append(f"s{slot} = {gen.definition(f, 's')}")
                    gen.bind(f, "s", f"s{slot}")
                else:
                    gen.bind(f, "s", f"c{slot}")
        count = len(self.materialised[l])
        causal_values = _tuple_source([f"c{i}" for i in range(count)])
        snapshot = ["k"]
        snapshot += [gen.bound[("c", f)] for f in self.published_bools[l]]
        if self.sequential:
            snapshot += [gen.bound[("s", f)] for f in self.published_bools[l]]
        snapshot += [gen.local(x) for x in self.published_vars[l]]
        body = gen.reads() + lines
        if self.sequential:
            seq_values = _tuple_source([gen.bound[("s", f)] for f in self.materialised[l]])
            body.append(f"return {causal_values}, {seq_values}, {_tuple_source(snapshot)}")
        else:
            body.append(f"return {causal_values}, {_tuple_source(snapshot)}")
        return f"def step_{l}(store, cl, sl, cp, sp, k):\n" + _indent(body)

    def _decider_source(self, l: int, name: str, root: CplFormula) -> str:
        gen = _Expressions(self, l)
        for f in self.materialised[l]:
            slot = self.slot[l][f]
            gen.bind(f, "c", f"cv[{slot}]")
            gen.bind(f, "s", f"sv[{slot}]" if self.dependent(f, l) else f"cv[{slot}]")
        causal = gen.expression(root, "c")
        if self.sequential:
            result = f"return {causal}, {gen.expression(root, 's')}"
        else:
            result = f"return {causal}, None"
        body = gen.reads() + [result]
        return (f"def decide_{l}_{self._guard_id(name)}(store, cl, sl, cp, sp, cv, sv):\n"
                + _indent(body))


def _tuple_source(items: list[str]) -> str:
    if not items:
        return "()"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _indent(lines: list[str]) -> str:
    return "\n".join("    " + line for line in lines) + "\n"


class _Expressions:
    """Python expressions for formulas at one lifeline, in mode 'c' (causal) or 's' (log)."""

    def __init__(self, compiler: _Compiler, l: int):
        self.c = compiler
        self.l = l
        self.bound: dict[tuple[str, CplFormula], str] = {}
        self.locals: dict[str, str] = {}
        self.temps = 0

    def bind(self, f: CplFormula, mode: str, code: str) -> None:
        self.bound[(mode, f)] = code

    def local(self, name: str) -> str:
        var = self.locals.get(name)
        if var is None:
            var = self.locals[name] = f"v{len(self.locals)}"
        return var

    def reads(self) -> list[str]:
        if not self.locals:
            return []
        return ["get = store.get"] + [f"{var} = get({name!r}, MISSING)"
                                      for name, var in self.locals.items()]

    def expression(self, f: CplFormula, mode: str) -> str:
        if mode == "s" and (not self.c.sequential or not self.c.dependent(f, self.l)):
            mode = "c"
        code = self.bound.get((mode, f))
        if code is not None:
            return code
        return self.definition(f, mode)

    def definition(self, f: CplFormula, mode: str) -> str:
        if mode == "s" and not self.c.dependent(f, self.l):
            mode = "c"
        op = f.op
        if op == "true":
            return "True"
        if op == "false":
            return "False"
        if op == "cmp":
            return self._comparison(f.payload, mode)
        if op == "not":
            return f"(not {self.expression(f.args[0], mode)})"
        if op in ("and", "or"):
            # Drop the neutral constant (``true S phi`` gives ``phi or (True and ...)``).
            neutral, absorbing = ("True", "False") if op == "and" else ("False", "True")
            parts = [self.expression(a, mode) for a in f.args]
            if absorbing in parts:
                return absorbing
            parts = [p for p in parts if p != neutral]
            if not parts:
                return neutral
            return parts[0] if len(parts) == 1 else "(" + f" {op} ".join(parts) + ")"
        if op == "implies":
            a, b = (self.expression(g, mode) for g in f.args)
            return f"((not {a}) or {b})"
        if op == "iff":
            a, b = (self.expression(g, mode) for g in f.args)
            return f"({a} == {b})"
        if op == "Y":
            child = f.args[0]
            previous = "sp" if mode == "s" and self.c.dependent(child, self.l) else "cp"
            return f"{previous}[{self.c.slot[self.l][child]}]"
        if op == "S":
            phi, psi = (self.expression(g, mode) for g in f.args)
            previous = f"{'sp' if mode == 's' else 'cp'}[{self.c.slot[self.l][f]}]"
            held = previous if phi == "True" else "False" if phi == "False" else (
                f"({phi} and {previous})")
            return f"({psi} or {held})"
        if op == "at":
            b = self.c.index[f.payload]
            if b == self.l:  # non-strict: the current event itself
                return self.expression(f.args[0], mode)
            if mode == "s":
                return f"sl[{b}][{self.c.seq_bool_offset[b][f.args[0]]}]"
            return f"cl[{b}][{self.c.bool_offset[b][f.args[0]]}]"
        raise AssertionError(f"unexpected operator {op}")  # P is unfolded before compiling

    def _term(self, term: tuple, mode: str) -> str:
        _, lifeline, name = term
        b = self.l if lifeline is None else self.c.index[lifeline]
        if b == self.l:
            return self.local(name)
        view = "sl" if mode == "s" else "cl"
        return f"{view}[{b}][{self.c.var_offset[b][name]}]"

    def _temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def _comparison(self, payload: tuple, mode: str) -> str:
        left, op, right = payload
        if left[0] == "const" and right[0] == "const":
            return repr(compare_values(op, left[1], right[1]))
        if left[0] == "const":
            left, op, right = right, _FLIPPED[op], left
        value = self._term(left, mode)
        if right[0] == "var":
            other = self._term(right, mode)
            if op == "==":
                return f"EQ({value}, {other})"
            if op == "!=":
                return f"NE({value}, {other})"
            a, b = self._temp(), self._temp()
            return f"(ORDERABLE(({a} := {value}), ({b} := {other})) and {a} {op} {b})"
        constant = right[1]
        kind = value_kind(constant)
        t = self._temp()
        if kind == "string":
            if op == "==":
                return f"({value} == {constant!r})"
            if op == "!=":
                return f"(({t} := {value}) is not MISSING and {t} != {constant!r})"
            return f"(({t} := {value}).__class__ is str and {t} {op} {constant!r})"
        if kind == "number":
            if op == "==":
                return f"(({t} := {value}).__class__ in NUM and {t} == {constant!r})"
            if op == "!=":
                return (f"(({t} := {value}) is not MISSING and not ({t}.__class__ in NUM "
                        f"and {t} == {constant!r}))")
            return f"(({t} := {value}).__class__ in NUM and {t} {op} {constant!r})"
        # true, false, null: equal only to themselves, never ordered
        if op == "==":
            return f"({value} is {constant!r})"
        if op == "!=":
            return f"(({t} := {value}) is not MISSING and {t} is not {constant!r})"
        return "False"


# --- the monitor ----------------------------------------------------------------------------

class CausalMonitor:
    """Online monitor of CPL guards over a multi-agent session.

    ``process(event)`` takes one canonical event dict (see ``studio.causal.msc`` for the fields
    read); events must come in an order consistent with causality (a receive after its send), any
    such order.  It returns the :class:`GuardDecision` of each guard the event's choice names.
    With ``sequential=False`` only the causal reading is computed."""

    def __init__(self, lifelines: Iterable[str], guards, *, sequential: bool = True,
                 _shared_view: bool = False):
        self.lifelines = tuple(lifelines)
        if len(set(self.lifelines)) != len(self.lifelines):
            raise ValueError("lifelines must be distinct")
        self.guards = {g.name: g for g in normalise_guards(guards)}
        self.sequential = sequential and not _shared_view
        compiler = _Compiler(self.lifelines, list(self.guards.values()), self.sequential)
        self.source = ""
        self._merge, self._steps, self._deciders = compiler.generate()
        self.source = compiler.source
        n = len(self.lifelines)
        self._index = compiler.index
        self._shared_view = _shared_view
        if _shared_view:  # the log reading alone: one view, messages carry nothing
            shared = list(compiler.absent)
            self._views = [shared] * n
        else:
            self._views = [list(compiler.absent) for _ in range(n)]
        self._log_view = list(compiler.absent)
        empty = [(False,) * len(m) for m in compiler.materialised]
        self._causal_previous = list(empty)
        self._log_previous = list(empty)
        # The previous-local copies as they were before each lifeline's last event (what Y read
        # there), kept so a guard can be evaluated at that event afterwards (evaluate_now).
        self._causal_before = list(empty)
        self._log_before = list(empty)
        self._stores: list[dict] = [{} for _ in range(n)]
        self._counts = [0] * n
        self._transit: dict[str, tuple] = {}
        self._delivered: set[str] = set()
        self._processed = 0
        self.unknown_guards: list[tuple[int, str]] = []

    # -- inspection --

    def clock(self, lifeline: str) -> tuple[int, ...]:
        """The vector clock of ``lifeline`` after its last processed event."""
        return tuple(map(_FIRST, self._views[self._index[lifeline]]))

    def log_clock(self) -> tuple[int, ...]:
        """How many events of each lifeline the log has shown so far."""
        return tuple(map(_FIRST, self._log_view))

    @property
    def in_transit(self) -> list[str]:
        return list(self._transit)

    @property
    def processed(self) -> int:
        return self._processed

    # -- algorithm 1 --

    def process(self, event: Mapping, index: int | None = None, *,
                decide: bool = True) -> list[GuardDecision]:
        """Algorithm 1 for one event; the decisions of the guards its choice names (none with
        ``decide=False``: the caller decides with ``evaluate_now``)."""
        if index is None:
            index = self._processed
        lifeline = event.get("lifeline")
        l = self._index.get(lifeline)
        if l is None:
            raise MonitorError(f"unknown lifeline {lifeline!r}; the monitor watches "
                               f"{', '.join(self.lifelines)}", index, lifeline=lifeline)
        message = event.get("message")
        if message:
            mid = message.get("id")
            kind = message.get("kind")
            peer = message.get("peer")
        else:
            mid = event.get("message_id")
            kind = event.get("message_kind") if mid else None
            peer = event.get("message_peer")
        view = self._views[l]
        if kind is not None and not self._shared_view:
            if kind == RECEIVE:
                carried = self._transit.get(mid)
                if carried is None:
                    self._receive_error(mid, lifeline, index)
                sent_view, sender, receiver = carried
                if (receiver and receiver != lifeline) or (
                        peer and peer != self.lifelines[sender]):
                    raise MonitorError(f"message from {self.lifelines[sender]!r} to "
                                       f"{receiver!r} received on {lifeline!r} naming sender "
                                       f"{peer!r}", index, lifeline=lifeline, message_id=mid)
                del self._transit[mid]
                self._delivered.add(mid)
                self._merge(view, sent_view)
            elif mid in self._transit or mid in self._delivered:
                raise MonitorError("message sent twice", index, lifeline=lifeline,
                                   message_id=mid)
        self._processed += 1
        data = event.get("data")
        store = self._stores[l]
        if data:
            store.update(data)
        k = self._counts[l] = self._counts[l] + 1
        causal_previous = self._causal_previous[l]
        log_previous = self._log_previous[l]
        if self.sequential:
            causal_values, log_values, snapshot = self._steps[l](
                store, view, self._log_view, causal_previous, log_previous, k)
            self._log_view[l] = snapshot
            self._log_previous[l] = log_values
            self._log_before[l] = log_previous
        else:
            causal_values, snapshot = self._steps[l](
                store, view, None, causal_previous, None, k)
            log_values = None
        view[l] = snapshot
        self._causal_previous[l] = causal_values
        self._causal_before[l] = causal_previous
        if kind == SEND and not self._shared_view:
            self._transit[mid] = (tuple(view), l, peer)
        if decide and data and CHOICE_KEY in data:
            return self._decide(l, data[CHOICE_KEY], store, view, causal_previous, log_previous,
                                causal_values, log_values, index, event)
        return []

    def evaluate_now(self, lifeline: str, guard: str) -> tuple[bool, bool | None]:
        """(causal, sequential) value of ``guard`` at the last event processed on ``lifeline``,
        as a choice there would have decided it."""
        l = self._index[lifeline]
        decide = self._deciders.get((l, guard))
        if decide is None:
            raise KeyError(f"guard {guard!r} is not evaluated on lifeline {lifeline!r}")
        if self._counts[l] == 0:
            raise LookupError(f"no event of lifeline {lifeline!r} has been processed")
        return decide(self._stores[l], self._views[l], self._log_view, self._causal_before[l],
                      self._log_before[l], self._causal_previous[l], self._log_previous[l])

    def _receive_error(self, mid, lifeline, index):
        if mid in self._delivered:
            raise MonitorError("message received twice", index, lifeline=lifeline,
                               message_id=mid)
        raise MonitorError("receive before its send (the events are not in a causal order, or "
                           "the message was never sent)", index, lifeline=lifeline,
                           message_id=mid)

    def _decide(self, l, names, store, view, causal_previous, log_previous, causal_values,
                log_values, index, event) -> list[GuardDecision]:
        if isinstance(names, str):
            names = [names]
        elif not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise MonitorError(f"data.{CHOICE_KEY} must name a guard (a string or a list of "
                               "strings)", index, lifeline=self.lifelines[l])
        decisions = []
        for name in names:
            decide = self._deciders.get((l, name))
            if decide is None:
                if name in self.guards:
                    raise MonitorError(f"guard {name!r} is not owned by this lifeline", index,
                                       lifeline=self.lifelines[l])
                self.unknown_guards.append((index, name))
                continue
            causal, sequential = decide(store, view, self._log_view, causal_previous,
                                        log_previous, causal_values, log_values)
            decisions.append(GuardDecision(
                event_index=index, lifeline=self.lifelines[l], guard=name,
                guard_text=self.guards[name].text, causal_value=causal,
                sequential_value=sequential,
                disagrees=sequential is not None and causal != sequential,
                causal_clock=tuple(map(_FIRST, view)),
                log_clock=tuple(map(_FIRST, self._log_view)) if self.sequential else None,
                step=event.get("step")))
        return decisions


def run_monitor(msc: Msc, guards, *, sequential: bool = True) -> list[GuardDecision]:
    """Every guard decision of an MSC, ``event_index`` being the MSC's.  The causal reading
    processes a causal linearisation; the sequential one follows ``msc.log_order()`` (by
    timestamps), also when that order is not causally consistent (skewed clocks)."""
    guard_list = normalise_guards(guards)
    by_index = {e.index: e.source if e.source is not None else _as_event(e) for e in msc.events}
    if not sequential or msc.is_log_order_causal():
        monitor = CausalMonitor(msc.lifelines, guard_list, sequential=sequential)
        return [d for i in msc.linearisation() for d in monitor.process(by_index[i], i)]
    causal = CausalMonitor(msc.lifelines, guard_list, sequential=False)
    log = CausalMonitor(msc.lifelines, guard_list, _shared_view=True)
    causal_decisions = [d for i in msc.linearisation() for d in causal.process(by_index[i], i)]
    log_decisions = {(d.event_index, d.guard): d
                     for i in msc.log_order() for d in log.process(by_index[i], i)}
    out = []
    for d in causal_decisions:
        other = log_decisions[(d.event_index, d.guard)]
        out.append(GuardDecision(
            event_index=d.event_index, lifeline=d.lifeline, guard=d.guard,
            guard_text=d.guard_text, causal_value=d.causal_value,
            sequential_value=other.causal_value, disagrees=other.causal_value != d.causal_value,
            causal_clock=d.causal_clock, log_clock=other.causal_clock, step=d.step))
    return out


def _as_event(e) -> dict:
    message = ({"id": e.message_id, "peer": e.peer, "kind": e.kind}
               if e.message_id is not None else None)
    return {"lifeline": e.lifeline, "step": e.step, "data": e.data, "message": message}
