"""Domain predicates for the learned model's abstract states (paper 004, section 3.2), and the
proposals of the predicates that best tell violating futures from compliant ones.

The rules' atoms and monitor states are what the rule set itself distinguishes; they can miss
what decides the future.  "take knife" is one abstract state whether or not anything is left to
cut, though the first ends in a violation far more often.  A workspace may add predicates to the
state, each true or false at a step:

- ``label``: an atom of the workspace's labelers holds at the step (``{"kind": "label",
  "atom": "in_kitchen"}``);
- ``field``: a data field compared with a threshold or a class of values (``{"kind": "field",
  "path": "data.amount", "op": ">", "value": 10000}``, ``{"kind": "field", "path":
  "data.status", "op": "in", "value": ["held", "open"]}``), read as data atoms read fields (a
  missing path, or a value of another kind, is false);
- ``action``: the step's action, or one of the last ``within`` actions (``within`` 1 or 2), is
  the one named (``{"kind": "action", "action": "take knife", "within": 1}``).  An event's action
  is the tool it calls (``output.tool``, ``output.name`` or the first of ``output.tool_calls``),
  else its output when that is a short text (a TextWorld command).

``propose`` ranks candidate predicates drawn from what the training sessions show by how much
they add to the abstract state's information about "a violation within the horizon", chosen on
one half of the sessions and checked on the other (see its doc).

Pure Python: no Django.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from studio.logic.events import MISSING, compare_values, read_path

KINDS = ("label", "field", "action")
FIELD_OPS = (">", ">=", "<", "<=", "==", "!=", "in")
MAX_PREDICATES = 8          # on one model: each may double the states
MAX_WITHIN = 2              # the last k actions: k is 1 or 2
MAX_CLASS_VALUES = 30       # values in one "in" class
MAX_TEXT = 200              # an atom, path, action or string value, in characters
ACTION_TEXT_MAX = 120       # a longer output is no action


class PredicateError(ValueError):
    """A predicate that does not read; ``field`` names where (``predicates[2].op``)."""

    def __init__(self, message: str, field: str):
        super().__init__(f"{field}: {message}")
        self.message = message
        self.field = field


def action_of(event: Mapping) -> str | None:
    """The event's action: the tool it calls, else its output when a short text."""
    output = event.get("output")
    if isinstance(output, Mapping):
        tool = output.get("tool") or output.get("name")
        if isinstance(tool, str) and tool:
            return tool
        calls = output.get("tool_calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], Mapping):
            fn = calls[0].get("function")
            name = fn.get("name") if isinstance(fn, Mapping) else calls[0].get("name")
            if isinstance(name, str) and name:
                return name
        return None
    if isinstance(output, str):
        text = output.strip()
        if text and len(text) <= ACTION_TEXT_MAX:
            return text
    return None


def _quoted(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_OP_WORDS = {">": "is above", ">=": "is at least", "<": "is below", "<=": "is at most",
             "==": "is", "!=": "is not"}


@dataclass(frozen=True)
class Predicate:
    kind: str
    atom: str = ""              # label
    path: str = ""              # field
    op: str = ""                # field
    value: Any = None           # field: a number, text or true/false; "in": a tuple of them
    action: str = ""            # action
    within: int = 1             # action: this step (1), or this one or the one before (2)

    @property
    def name(self) -> str:
        """A short text that names the predicate (unique per predicate)."""
        if self.kind == "label":
            return f"label {self.atom}"
        if self.kind == "field":
            if self.op == "in":
                return f"{self.path} in {{{', '.join(_quoted(v) for v in self.value)}}}"
            return f"{self.path} {self.op} {_quoted(self.value)}"
        return f"action {_quoted(self.action)} within {self.within}"

    def words(self) -> str:
        """The predicate in plain English."""
        if self.kind == "label":
            return f"the step is labelled {self.atom}"
        if self.kind == "field":
            if self.op == "in":
                return f"{self.path} is one of {', '.join(_quoted(v) for v in self.value)}"
            return f"{self.path} {_OP_WORDS[self.op]} {_quoted(self.value)}"
        if self.within == 1:
            return f"the step's action is {self.action}"
        return f"one of the last {self.within} actions is {self.action}"

    def holds(self, event: Mapping, recent: Sequence[str | None] = ()) -> bool:
        """Whether it holds at ``event`` (a labelled monitor event); ``recent``: the actions
        of the steps before it, the latest last (only ``action`` predicates read them)."""
        if self.kind == "label":
            labels = event.get("labels")
            return isinstance(labels, (list, tuple, set, frozenset)) and self.atom in labels
        if self.kind == "field":
            found = read_path(event, self.path)
            if found is MISSING:
                return False
            if self.op == "in":
                return any(compare_values("==", found, v) for v in self.value)
            return compare_values(self.op, found, self.value)
        if action_of(event) == self.action:
            return True
        back = self.within - 1
        return back > 0 and any(a == self.action for a in list(recent)[-back:])

    def to_json(self) -> dict:
        if self.kind == "label":
            return {"kind": "label", "atom": self.atom}
        if self.kind == "field":
            value = list(self.value) if self.op == "in" else self.value
            return {"kind": "field", "path": self.path, "op": self.op, "value": value}
        return {"kind": "action", "action": self.action, "within": self.within}

    @classmethod
    def from_json(cls, data: Any, where: str = "predicate") -> Predicate:
        """The predicate ``to_json`` gave; ``PredicateError`` naming the field otherwise."""
        if not isinstance(data, Mapping):
            raise PredicateError("a predicate is an object with a kind", where)
        kind = data.get("kind")
        if kind not in KINDS:
            raise PredicateError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}",
                                 f"{where}.kind")
        allowed = {"label": {"kind", "atom"}, "field": {"kind", "path", "op", "value"},
                   "action": {"kind", "action", "within"}}[kind]
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise PredicateError(f"a {kind} predicate has no field {unknown[0]!r} (it has "
                                 f"{', '.join(sorted(allowed))})", f"{where}.{unknown[0]}")
        if kind == "label":
            return cls("label", atom=_text(data.get("atom"), f"{where}.atom"))
        if kind == "action":
            within = data.get("within", 1)
            if isinstance(within, bool) or not isinstance(within, int) or not (
                    1 <= within <= MAX_WITHIN):
                raise PredicateError(f"within must be a whole number from 1 to {MAX_WITHIN}",
                                     f"{where}.within")
            return cls("action", action=_text(data.get("action"), f"{where}.action"),
                       within=within)
        path = _text(data.get("path"), f"{where}.path")
        if any(not part for part in path.split(".")):
            raise PredicateError("a path is names joined by dots (data.amount)", f"{where}.path")
        op = data.get("op")
        if op not in FIELD_OPS:
            raise PredicateError(f"op must be one of {' '.join(FIELD_OPS)}, not {op!r}",
                                 f"{where}.op")
        if "value" not in data:
            raise PredicateError("a field predicate needs a value", f"{where}.value")
        value = data["value"]
        if op == "in":
            if not isinstance(value, list) or not value:
                raise PredicateError("op in takes a non-empty list of values", f"{where}.value")
            if len(value) > MAX_CLASS_VALUES:
                raise PredicateError(f"at most {MAX_CLASS_VALUES} values", f"{where}.value")
            items = [_scalar(v, f"{where}.value[{i}]") for i, v in enumerate(value)]
            return cls("field", path=path, op="in",
                       value=tuple(sorted(set(items), key=lambda v: (str(type(v)), v))))
        value = _scalar(value, f"{where}.value")
        if op in (">", ">=", "<", "<=") and (isinstance(value, bool)
                                             or not isinstance(value, (int, float, str))):
            raise PredicateError(f"op {op} compares with a number or a text", f"{where}.value")
        return cls("field", path=path, op=op, value=value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PredicateError("must be a non-empty text", where)
    if len(value) > MAX_TEXT:
        raise PredicateError(f"at most {MAX_TEXT} characters", where)
    return value.strip()


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, bool) or isinstance(value, str):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise PredicateError(f"at most {MAX_TEXT} characters", where)
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    raise PredicateError("a value is a number, a text or true/false", where)


def predicates_from_json(data: Any, field: str = "predicates") -> tuple[Predicate, ...]:
    """A list of predicates as data; ``PredicateError`` naming the item and field of the first
    that does not read, or of a repeated one."""
    if not isinstance(data, list):
        raise PredicateError("must be a list of predicates", field)
    if len(data) > MAX_PREDICATES:
        raise PredicateError(f"at most {MAX_PREDICATES} predicates on one model (each may "
                             "double the states)", field)
    out: list[Predicate] = []
    for i, item in enumerate(data):
        found = Predicate.from_json(item, f"{field}[{i}]")
        if found in out:
            raise PredicateError(f"repeats {field}[{out.index(found)}] ({found.name})",
                                 f"{field}[{i}]")
        out.append(found)
    return tuple(out)


def history_needed(predicates: Iterable[Predicate]) -> int:
    """How many actions before a step its predicates read."""
    return max((p.within - 1 for p in predicates if p.kind == "action"), default=0)


def features(predicates: Sequence[Predicate], event: Mapping,
             recent: Sequence[str | None] = ()) -> tuple[bool, ...]:
    return tuple(p.holds(event, recent) for p in predicates)


# ---------------------------------------------------------------------------------------------
# Proposing predicates


@dataclass
class Step:
    """What the proposer keeps of one step of a training session."""
    action: str | None
    before: str | None          # the action of the step before
    labels: frozenset
    fields: dict[str, Any]      # scalar values by path (input, output, data)


SCALAR_DEPTH = 4
SCALAR_PATHS = 60           # per event


def scalar_fields(event: Mapping) -> dict[str, Any]:
    """The event's scalar values (numbers, texts up to MAX_TEXT, true/false) by path under
    input, output and data, a few levels deep."""
    out: dict[str, Any] = {}

    def walk(value: Any, path: str, depth: int) -> None:
        if len(out) >= SCALAR_PATHS:
            return
        if isinstance(value, Mapping):
            if depth < SCALAR_DEPTH:
                for key, item in value.items():
                    if isinstance(key, str) and key and "." not in key:
                        walk(item, f"{path}.{key}", depth + 1)
        elif isinstance(value, bool) or (isinstance(value, (int, float))
                                         and math.isfinite(value)):
            out[path] = value
        elif isinstance(value, str) and 0 < len(value) <= MAX_TEXT:
            out[path] = value

    for root in ("input", "output", "data"):
        walk(event.get(root), root, 0)
    return out


@dataclass
class SplitCount:
    steps: int
    violate: float | None       # the share of those steps followed by a violation

    def to_json(self) -> dict:
        return {"steps": self.steps, "violate": self.violate}


@dataclass
class Proposal:
    predicate: Predicate
    gain: float                 # bits per step it adds, on the choosing half
    held_out_gain: float        # the same on the other half
    holds: SplitCount           # choosing half: steps where it holds ...
    otherwise: SplitCount       # ... and where not
    held_out_holds: SplitCount
    held_out_otherwise: SplitCount
    context: str                # where it matters most: the commonest action there
    context_holds: SplitCount
    context_otherwise: SplitCount
    held_out_context_holds: SplitCount
    held_out_context_otherwise: SplitCount
    horizon: int

    @property
    def confirmed(self) -> bool:
        """The other half agrees: it adds information there too, the split the same way."""
        a, b = self.context_holds.violate, self.context_otherwise.violate
        c, d = self.held_out_context_holds.violate, self.held_out_context_otherwise.violate
        same_way = (a is not None and b is not None and c is not None and d is not None
                    and (a - b) * (c - d) > 0)
        return self.held_out_gain > 0 and same_way

    def sentence(self) -> str:
        def pct(share):
            return "no step" if share is None else f"{round(100 * share)}%"

        where = f"after {self.context}, " if self.context else ""
        text = (f"{where}where {self.predicate.words()}: {pct(self.context_holds.violate)} of "
                f"steps are followed by a violation within {self.horizon} steps, against "
                f"{pct(self.context_otherwise.violate)} otherwise; on the held-out sessions "
                f"{pct(self.held_out_context_holds.violate)} against "
                f"{pct(self.held_out_context_otherwise.violate)}.")
        return text[0].upper() + text[1:]

    def to_json(self) -> dict:
        return {"predicate": self.predicate.to_json(), "name": self.predicate.name,
                "words": self.predicate.words(), "sentence": self.sentence(),
                "gain_bits": round(self.gain, 6), "held_out_gain_bits":
                    round(self.held_out_gain, 6), "confirmed": self.confirmed,
                "horizon": self.horizon, "context": self.context,
                "split": {"holds": self.holds.to_json(),
                          "otherwise": self.otherwise.to_json()},
                "held_out_split": {"holds": self.held_out_holds.to_json(),
                                   "otherwise": self.held_out_otherwise.to_json()},
                "context_split": {"holds": self.context_holds.to_json(),
                                  "otherwise": self.context_otherwise.to_json()},
                "held_out_context_split": {
                    "holds": self.held_out_context_holds.to_json(),
                    "otherwise": self.held_out_context_otherwise.to_json()}}


def future_violations(violated: Sequence[bool], horizon: int) -> list[bool]:
    """Per position of an abstract trace (its states' "violated any rule" flags): whether one
    of the next ``horizon`` states is violated."""
    n = len(violated)
    out = [False] * n
    last = None   # the nearest violated position after i
    for i in range(n - 1, -1, -1):
        out[i] = last is not None and last - i <= horizon
        if violated[i]:
            last = i
    return out


class ProposalData:
    """The steps of training sessions the proposer reads: per step, its abstract state (in the
    model's abstraction, with the predicates it has), whether a violation follows within the
    horizon, and what the step shows (action, labels, scalar fields).  Steps whose own state is
    violated are left out (the exact check sees those).  Sessions alternate between the half
    that chooses and the half that checks.  At most ``max_steps`` steps are kept."""

    def __init__(self, horizon: int, max_steps: int = 60_000):
        if horizon < 1:
            raise ValueError("horizon: at least one step")
        self.horizon = horizon
        self.max_steps = max_steps
        self.steps: list[Step] = []
        self.state: list[int] = []
        self.future: list[bool] = []
        self.half: list[int] = []
        self.sessions = 0
        self._states: dict = {}

    @property
    def full(self) -> bool:
        return len(self.steps) >= self.max_steps

    def add(self, events: Sequence[Mapping], states: Sequence) -> None:
        """One session: its labelled events and its abstract trace (start state, one state per
        event, then the end state if any), as ``Abstraction.session`` gives."""
        if self.full:
            return
        half = self.sessions % 2
        self.sessions += 1
        violated = [any(s.violated) for s in states]
        future = future_violations(violated, self.horizon)
        before = None
        for k, event in enumerate(events):
            state = states[k + 1]
            action = action_of(event)
            if not violated[k + 1]:
                number = self._states.setdefault(state, len(self._states))
                labels = event.get("labels")
                self.steps.append(Step(action, before,
                                       frozenset(labels) if isinstance(labels, list) else
                                       frozenset(), scalar_fields(event)))
                self.state.append(number)
                self.future.append(future[k + 1])
                self.half.append(half)
            before = action


def _entropy(pos: np.ndarray, total: np.ndarray) -> np.ndarray:
    p = np.divide(pos, total, out=np.zeros(len(total)), where=total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(p > 0, p * np.log2(p), 0.0) + np.where(p < 1, (1 - p) * np.log2(1 - p),
                                                             0.0))
    return np.nan_to_num(h)


def conditional_entropy(groups: np.ndarray, y: np.ndarray) -> float:
    """H(Y | group), in bits per step."""
    if len(y) == 0:
        return 0.0
    _, inverse = np.unique(groups, return_inverse=True)
    inverse = inverse.ravel()
    total = np.bincount(inverse).astype(np.float64)
    pos = np.bincount(inverse, weights=y.astype(np.float64))
    return float((total * _entropy(pos, total)).sum() / len(y))


def _share(mask: np.ndarray, y: np.ndarray) -> SplitCount:
    n = int(mask.sum())
    return SplitCount(n, float(y[mask].mean()) if n else None)


class _Columns:
    """The steps of a ``ProposalData`` by column, so that a predicate is evaluated on all of them
    at once."""

    def __init__(self, steps: Sequence[Step]):
        self.n = len(steps)
        self.labels: dict[str, list[int]] = {}
        self.codes: dict[str, int] = {}
        action = np.full(self.n, -1, dtype=np.int64)
        before = np.full(self.n, -1, dtype=np.int64)
        self.fields: dict[str, list[tuple[int, Any]]] = {}
        for k, s in enumerate(steps):
            for atom in s.labels:
                if isinstance(atom, str):
                    self.labels.setdefault(atom, []).append(k)
            if s.action is not None:
                action[k] = self.codes.setdefault(s.action, len(self.codes))
            if s.before is not None:
                before[k] = self.codes.setdefault(s.before, len(self.codes))
            for path, value in s.fields.items():
                self.fields.setdefault(path, []).append((k, value))
        self.action, self.before = action, before
        self._numbers: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def numbers(self, path: str) -> tuple[np.ndarray, np.ndarray]:
        found = self._numbers.get(path)
        if found is None:
            pairs = [(k, v) for k, v in self.fields.get(path, ())
                     if isinstance(v, (int, float)) and not isinstance(v, bool)]
            found = self._numbers[path] = (np.array([k for k, _ in pairs], dtype=np.int64),
                                           np.array([v for _, v in pairs], dtype=np.float64))
        return found

    def column(self, p: Predicate) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        if p.kind == "label":
            out[self.labels.get(p.atom, [])] = True
        elif p.kind == "action":
            code = self.codes.get(p.action)
            if code is not None:
                out = self.action == code
                if p.within > 1:
                    out = out | (self.before == code)
        elif p.op in (">", ">=", "<", "<=") and not isinstance(p.value, str):
            at, values = self.numbers(p.path)
            compare = {">": np.greater, ">=": np.greater_equal, "<": np.less,
                       "<=": np.less_equal}[p.op]
            out[at[compare(values, p.value)]] = True
        else:
            for k, value in self.fields.get(p.path, ()):
                if (any(compare_values("==", value, v) for v in p.value) if p.op == "in"
                        else compare_values(p.op, value, p.value)):
                    out[k] = True
        return out


def candidates(data: ProposalData, exclude: Iterable[Predicate] = (),
               skip_atoms: Iterable[str] = (), min_support: int = 5,
               max_candidates: int = 400, columns: _Columns | None = None
               ) -> list[Predicate]:
    """Candidate predicates from the choosing half's steps: labeler atoms, each scalar field at
    thresholds (its smallest value and the 10/25/50/75/90% quantiles) or equal to a frequent
    value, one class of text values (the values sorted by how often a violation follows them,
    cut where the split is best), and the frequent actions (this step's, and within the last
    two).  Each must hold and fail on at least ``min_support`` steps of that half."""
    columns = columns or _Columns(data.steps)
    chosen = np.array(data.half, dtype=np.int8) == 0
    y_all = np.array(data.future, dtype=bool)
    chosen_at = np.flatnonzero(chosen)
    skip = set(skip_atoms)
    out: list[Predicate] = []
    atoms = sorted(((int(chosen[idx].sum()), a) for a, idx in columns.labels.items()
                    if a not in skip), reverse=True)
    out += [Predicate("label", atom=a) for _, a in atoms[:60] if len(a) <= MAX_TEXT]
    actions = Counter(data.steps[k].action for k in chosen_at
                      if data.steps[k].action is not None)
    for action, _ in actions.most_common(30):
        if len(action) <= MAX_TEXT:
            out += [Predicate("action", action=action, within=1),
                    Predicate("action", action=action, within=2)]
    for path, found in sorted(columns.fields.items(), key=lambda kv: -len(kv[1]))[:80]:
        found = [(k, v) for k, v in found if chosen[k]]
        numbers = [v for _, v in found if isinstance(v, (int, float)) and not isinstance(v, bool)]
        texts = [(k, v) for k, v in found if isinstance(v, str)]
        if len(numbers) >= min_support:
            array = np.array(numbers, dtype=np.float64)
            cuts = {float(array.min()), *(float(q) for q in np.quantile(
                array, [0.1, 0.25, 0.5, 0.75, 0.9]))}
            for cut in sorted(cuts):
                if cut < array.max():
                    value = int(cut) if cut.is_integer() else round(cut, 6)
                    out.append(Predicate("field", path=path, op=">", value=value))
        if any(isinstance(v, bool) for _, v in found):
            out.append(Predicate("field", path=path, op="==", value=True))
        if texts:
            counted = Counter(v for _, v in texts)
            frequent = [v for v, c in counted.most_common(MAX_CLASS_VALUES) if c >= min_support]
            if len(counted) > 1:
                out += [Predicate("field", path=path, op="==", value=v) for v in frequent[:10]]
            if len(frequent) > 2:
                out += _value_class(path, texts, frequent, counted, y_all)
    excluded = set(exclude)
    supported, seen = [], set()
    for p in out:
        if p in excluded or p.name in seen:
            continue
        seen.add(p.name)
        holding = int(columns.column(p)[chosen].sum())
        if min_support <= holding <= len(chosen_at) - min_support:
            supported.append(p)
        if len(supported) >= max_candidates:
            break
    return supported


def _value_class(path: str, texts: list, frequent: list, counted: Counter,
                 y: np.ndarray) -> list[Predicate]:
    """The class of text values that best splits (values sorted by how often a violation
    follows them; for a yes/no outcome the best two-way split of the values is such a cut)."""
    hits: Counter = Counter()
    for k, v in texts:
        if y[k]:
            hits[v] += 1
    rate = {v: hits[v] / counted[v] for v in frequent}
    ordered = sorted(frequent, key=lambda v: (-rate[v], v))
    total_n = sum(counted[v] for v in ordered)
    total_pos = sum(hits[v] for v in ordered)
    best, cut_at, n, pos = -1.0, 0, 0, 0
    for i, v in enumerate(ordered[:-1]):
        n += counted[v]
        pos += hits[v]
        score = n * (total_n - n) * (pos / n - (total_pos - pos) / (total_n - n)) ** 2
        if score > best:
            best, cut_at = score, i + 1
    if cut_at <= 1:   # one value: an equality, already a candidate
        return []
    return [Predicate("field", path=path, op="in", value=tuple(sorted(ordered[:cut_at])))]


def _commonest_action(steps: Sequence[Step]) -> str:
    counted = Counter(s.action for s in steps if s.action is not None)
    return counted.most_common(1)[0][0] if counted else ""


def propose(data: ProposalData, exclude: Iterable[Predicate] = (),
            skip_atoms: Iterable[str] = (), limit: int = 5, min_gain: float = 1e-3,
            min_support: int = 5) -> list[Proposal]:
    """The predicates that best separate steps followed by a violation within the horizon from
    the others, given what the abstract state already tells: greedily, the candidate of most
    conditional information gain H(Y | state, chosen) - H(Y | state, chosen, candidate) on the
    choosing half, then the next given the ones chosen, up to ``limit`` and while the gain is at
    least ``min_gain`` bits per step.  Each is checked on the other half (its gain there, and
    the split in the state where it gains most on the choosing half)."""
    if not data.steps:
        return []
    columns = _Columns(data.steps)
    pool = candidates(data, exclude, skip_atoms, min_support, columns=columns)
    if not pool:
        return []
    halves = np.array(data.half, dtype=np.int8)
    y_all = np.array(data.future, dtype=bool)
    state_all = np.array(data.state, dtype=np.int64)
    values = np.array([columns.column(p) for p in pool], dtype=bool)
    masks = [halves == 0, halves == 1]
    y = [y_all[m] for m in masks]
    groups = [state_all[m] for m in masks]
    out: list[Proposal] = []
    taken: list[int] = []
    for _ in range(limit):
        base = conditional_entropy(groups[0], y[0])
        best, best_gain = None, min_gain
        for c in range(len(pool)):
            if c in taken:
                continue
            joint = groups[0] * 2 + values[c][masks[0]]
            gain = base - conditional_entropy(joint, y[0])
            if gain > best_gain + 1e-12:
                best, best_gain = c, gain
        if best is None:
            break
        held_base = conditional_entropy(groups[1], y[1])
        held_gain = held_base - conditional_entropy(groups[1] * 2 + values[best][masks[1]],
                                                   y[1])
        holds = [values[best][m] for m in masks]
        # The state where it gains most on the choosing half.
        g, h = groups[0], holds[0]
        _, inverse = np.unique(g, return_inverse=True)
        inverse = inverse.ravel()
        weight = np.bincount(inverse).astype(np.float64)
        pos = np.bincount(inverse, weights=y[0].astype(np.float64))
        key2 = inverse * 2 + h
        n2 = np.bincount(key2, minlength=2 * len(weight)).astype(np.float64)
        p2 = np.bincount(key2, weights=y[0].astype(np.float64), minlength=2 * len(weight))
        split_h = (n2[0::2] * _entropy(p2[0::2], n2[0::2])
                   + n2[1::2] * _entropy(p2[1::2], n2[1::2]))
        contribution = weight * _entropy(pos, weight) - split_h
        top = int(np.argmax(contribution))
        top_state = int(g[inverse == top][0])
        in_top = [groups[k] == top_state for k in (0, 1)]
        chosen_steps = [data.steps[i] for i in np.flatnonzero(masks[0])[in_top[0]]]
        context = _commonest_action(chosen_steps)
        out.append(Proposal(
            pool[best], best_gain, held_gain,
            _share(holds[0], y[0]), _share(~holds[0], y[0]),
            _share(holds[1], y[1]), _share(~holds[1], y[1]),
            context,
            _share(holds[0] & in_top[0], y[0]), _share(~holds[0] & in_top[0], y[0]),
            _share(holds[1] & in_top[1], y[1]), _share(~holds[1] & in_top[1], y[1]),
            data.horizon))
        taken.append(best)
        # The next is chosen given this one: the state now includes it.
        groups = [groups[k] * 2 + holds[k] for k in (0, 1)]
    return out
