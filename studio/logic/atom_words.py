"""The words for one thing that may hold at a step: an atom, a data atom, or a call with its
arguments, in every form the English of formulas needs (a clause, its denial, the past tense of a
report, an obligation, a noun).  Pure Python; the sentences are built in ``studio.logic.wording``.

The words speak of the workspace's own events ("the agent calls issue_refund", "a step labelled
contains_card_number", "amount (output.args.amount) is over 500"), never of formulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .formula import Formula, quote_atom, render_operand

STEP = "\x00"  # the place of "the step" in a clause's template


@dataclass(frozen=True)
class Noun:
    """What happened at a step, as a noun: alternatives of (article, words)."""

    alts: tuple[tuple[str, str], ...]

    def some(self) -> str:
        return " or ".join(f"{a} {w}" for a, w in self.alts)

    def none(self) -> str:
        """"no call to X", "no call to X, Y or Z", "none of a call to X or a step labelled L":
        the rules and the violation sentences say it alike."""
        words = [w for _, w in self.alts]
        if len(words) == 1:
            return f"no {words[0]}"
        calls = "call to "
        if all(w.startswith(calls) for w in words):
            tools = [w.removeprefix(calls) for w in words]
            return f"no call to {', '.join(tools[:-1])} or {tools[-1]}"
        return "none of " + ", ".join(f"{a} {w}" for a, w in self.alts[:-1]) + \
            f" or {self.alts[-1][0]} {self.alts[-1][1]}"

    def first(self) -> str:
        return "the first " + " or ".join(w for _, w in self.alts)


@dataclass(frozen=True)
class Words:
    """The words for one thing that may hold at a step.  ``subject``: the clauses are about the
    step itself (``STEP`` marks where it is named)."""

    clause: str          # "the agent calls X"
    negative: str        # "the agent does not call X"
    past: str            # "the agent called X" (what happened at a step, in a report)
    must: str            # "the agent must call X"
    must_not: str        # "the agent must not call X"
    noun: tuple[str, str]  # ("a", "call to X")
    subject: bool = False
    open_negative: bool = False  # the negative clause is a connective ("... or is missing")


_ROLES = {"user": ("a", "user message"), "assistant": ("an", "assistant message"),
          "tool": ("a", "tool result"), "system": ("a", "system message")}


def _tool_words(tool: str, field: str = "") -> Words:
    return Words(f"the agent calls {tool}{field}", f"the agent does not call {tool}{field}",
                  f"the agent called {tool}", f"the agent must call {tool}{field}",
                  f"the agent must not call {tool}{field}", ("a", f"call to {tool}"))


def _atom_words(name: str) -> Words:
    prefix, _, rest = name.partition(":")
    if rest and prefix == "tool_call":
        return _tool_words(rest)
    if rest and prefix == "stop_reason":
        return Words(f"the agent stops ({rest})", f"the agent does not stop ({rest})",
                      f"the agent stopped ({rest})", f"the agent must stop ({rest})",
                      f"the agent must not stop ({rest})", ("a", f"stop ({rest})"))
    if rest and prefix == "role":
        article, words = _ROLES.get(rest, ("a", f"message from {quote_atom(rest)}"))
        return Words(f"{STEP} is {article} {words}", f"{STEP} is not {article} {words}",
                      f"the step was {article} {words}", f"{STEP} must be {article} {words}",
                      f"{STEP} must not be {article} {words}", (article, words), subject=True)
    label = quote_atom(name)
    return Words(f"{STEP} is labelled {label}", f"{STEP} is not labelled {label}",
                  f"the step was labelled {label}", f"{STEP} must be labelled {label}",
                  f"{STEP} must not be labelled {label}", ("a", f"step labelled {label}"),
                  subject=True)


def _field(path: str) -> str:
    """``output.args.amount`` reads "amount (output.args.amount)": the word, and where it is."""
    last = path.rsplit(".", 1)[-1]
    if last == path or not last or last.isdigit():
        return path
    return f"{last} ({path})"


def _operand(operand: tuple) -> str:
    kind, value = operand
    if kind == "path":
        return _field(value)
    if kind == "prev":
        return f"the previous step's {_field(value)}"
    return render_operand(operand)


_ORDER_WORDS = {">": "over", ">=": "at least", "<": "under", "<=": "at most"}


def called_tool(f: Formula) -> str | None:
    """The tool a node says the agent calls: ``tool_call:X`` or ``output.tool == "X"``."""
    if f.op == "atom":
        prefix, _, rest = f.name.partition(":")
        return rest if prefix == "tool_call" and rest else None
    if f.op == "cmp":
        c = f.payload
        if (c.op == "==" and c.left == ("path", "output.tool") and c.right[0] == "const"
                and isinstance(c.right[1], str)):
            return c.right[1]
    return None


def _comparison_words(f: Formula) -> Words:
    """Data atoms are false when a value is missing (or of another kind: ``events.compare``),
    so the negative of ``!=`` says "or is missing"; "is not over 500" already includes it."""
    tool = called_tool(f)
    if tool is not None:
        return _tool_words(tool, " (output.tool)")
    c = f.payload
    left, right = _operand(c.left), _operand(c.right)
    const = c.right[0] == "const"
    if c.op in _ORDER_WORDS:
        rel = f"{_ORDER_WORDS[c.op]} {right}"
        return Words(f"{left} is {rel}", f"{left} is not {rel}", f"{left} was {rel}",
                      f"{left} must be {rel}", f"{left} must not be {rel}",
                      ("a", f"step where {left} is {rel}"))
    if c.op == "==":
        if const:
            return Words(f"{left} is {right}", f"{left} is not {right}", f"{left} was {right}",
                          f"{left} must be {right}", f"{left} must not be {right}",
                          ("a", f"step where {left} is {right}"))
        return Words(f"{left} equals {right}", f"{left} does not equal {right}",
                      f"{left} equalled {right}", f"{left} must equal {right}",
                      f"{left} must not equal {right}", ("a", f"step where {left} equals {right}"))
    missing = "is missing" if const else "one of them is missing"
    return Words(f"{left} differs from {right}", f"{left} equals {right} or {missing}",
                  f"{left} differed from {right}", f"{left} must differ from {right}",
                  f"{left} must equal {right} or {missing}",
                  ("a", f"step where {left} differs from {right}"), open_negative=True)


def _with_part(f: Formula) -> str | None:
    """A comparison that can follow "the agent calls X with": a field against a constant."""
    if f.op != "cmp" or called_tool(f) is not None:
        return None
    c = f.payload
    if c.left[0] != "path" or c.right[0] != "const":
        return None
    if c.op in _ORDER_WORDS:
        return f"{_field(c.left[1])} {_ORDER_WORDS[c.op]} {render_operand(c.right)}"
    if c.op == "==":
        return f"{_field(c.left[1])} equal to {render_operand(c.right)}"
    return None  # "!=" is false on a missing value: "with x other than 1" would hide that


def merged_call(parts: Sequence[Formula]) -> tuple[Words, list[Formula]] | None:
    """One call with its arguments, from the conjuncts ``parts`` of one step: "the agent calls
    issue_refund with amount (output.args.amount) over 500", and the conjuncts left over."""
    tools = [p for p in parts if called_tool(p) is not None]
    withs = [p for p in parts if _with_part(p) is not None]
    if len(tools) != 1 or not withs:
        return None
    tool = called_tool(tools[0])
    field = " (output.tool)" if tools[0].op == "cmp" else ""
    said = [_with_part(p) for p in withs]
    args = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    call = f"{tool}{field} with {args}"
    words = Words(f"the agent calls {call}", f"the agent does not call {call}",
                   f"the agent called {call}", f"the agent must call {call}",
                   f"the agent must not call {call}", ("a", f"call to {tool} with {args}"))
    rest = [p for p in parts if p is not tools[0] and p not in withs]
    return words, rest


def words_for(f: Formula) -> Words | None:
    """The words of an atom, a data atom, or a call with its arguments (nothing left over)."""
    if f.op == "atom":
        return _atom_words(f.name)
    if f.op == "cmp":
        return _comparison_words(f)
    if f.op == "and":
        merged = merged_call(f.args)
        if merged is not None and not merged[1]:
            return merged[0]
    return None


def order_of(f: Formula) -> int:
    """Calls first, then stops, roles, labels, data; denials last."""
    if f.op == "not":
        return 5
    if called_tool(f) is not None:
        return 0
    if f.op == "atom":
        prefix = f.name.partition(":")[0]
        return {"stop_reason": 1, "role": 2}.get(prefix, 3)
    return 4
