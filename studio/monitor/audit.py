"""The offline audit: rule files and JSONL logs in, per-session verdicts out, streamed.

Rules files hold one rule per line, ``name: formula``; ``#`` starts a comment line and blank lines
are ignored.  Logs hold one JSON object per line::

    {"session": str, "step": int (optional), "labels": [atom, ...] (optional),
     "input": ..., "output": ..., "data": {...}, ...free fields}

Lines are read one at a time; only the sessions' monitors are kept, never the events, so memory
depends on the number of sessions, not on the length of the log.  A bad line is reported with its
file, number and reason and skipped; every other line is audited.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from studio.logic.anticipation import WORDS as COMPLETE_WORDS
from studio.logic.parser import FormulaSyntaxError, parse

from .automaton import RuleError, compile_rule
from .anticipation import SessionAnticipation
from .fast import FastSessionMonitor
from .session import RuleSet
from .verdicts import verdict_words

RULE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\- ]*")


class RulesFileError(ValueError):
    """A rules file that cannot be used; names the file, line and column."""

    def __init__(self, path: str, line: int, column: int, message: str):
        self.path, self.line, self.column, self.message = path, line, column, message
        super().__init__(f"{path}:{line}:{column}: {message}")


@dataclass(frozen=True)
class LineError:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def parse_rules_text(text: str, path: str = "<rules>",
                     counting: str | None = None) -> list[tuple[str, str, str | None]]:
    """``(name, formula text, counting)`` triples, checked: every formula parses and runs on a
    monitor with that counting (``None``: each rule's default)."""
    rules: list[tuple[str, str, str | None]] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if ":" not in raw:
            raise RulesFileError(path, number, len(raw) - len(raw.lstrip()) + 1,
                                 "expected `name: formula`")
        name_part, formula_text = raw.split(":", 1)
        name = name_part.strip()
        name_column = len(name_part) - len(name_part.lstrip()) + 1
        if not RULE_NAME.fullmatch(name):
            raise RulesFileError(path, number, name_column,
                                 f"bad rule name {name!r}: use letters, digits, _ . - and spaces")
        if name in seen:
            raise RulesFileError(path, number, name_column,
                                 f"rule {name!r} is already defined on line {seen[name]}")
        seen[name] = number
        offset = len(name_part) + 1  # characters before the formula on this line
        try:
            formula = parse(formula_text)
            compile_rule(name, formula, counting)
        except FormulaSyntaxError as exc:
            column = exc.column + (offset if exc.line == 1 else 0)
            raise RulesFileError(path, number + exc.line - 1, column,
                                 f"rule {name!r}: {exc.message}") from None
        except RuleError as exc:
            start = offset + len(formula_text) - len(formula_text.lstrip()) + 1
            raise RulesFileError(path, number, start, str(exc)) from None
        rules.append((name, formula_text.strip(), counting))
    if not rules:
        raise RulesFileError(path, 1, 1, "no rules found (expected lines of `name: formula`)")
    return rules


def load_rules(path: str | Path,
               counting: str | None = None) -> list[tuple[str, str, str | None]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesFileError(str(path), 0, 0, f"cannot read rules: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RulesFileError(str(path), 0, 0, "rules file is not UTF-8 text") from None
    return parse_rules_text(text, str(path), counting)


def json_kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def read_log(path: str | Path, errors: Callable[[LineError], None]) -> Iterator[tuple[int, dict]]:
    """``(line number, event)`` for every valid line; bad lines go to ``errors``."""
    name = str(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw.decode("utf-8"))  # str: json skips guessing the encoding
            except UnicodeDecodeError:
                errors(LineError(name, number, "not UTF-8 text"))
                continue
            except ValueError as exc:
                errors(LineError(name, number, f"not valid JSON ({exc.msg} at column {exc.colno})"))
                continue
            problem = check_event(event)
            if problem:
                errors(LineError(name, number, problem))
                continue
            yield number, event


def check_event(event) -> str | None:
    if not isinstance(event, dict):
        return f"expected a JSON object, got {json_kind(event)}"
    session = event.get("session")
    if isinstance(session, bool) or not isinstance(session, (str, int)) or session == "":
        return "field 'session' is required and must be a non-empty string"
    step = event.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        return f"field 'step' must be a whole number, got {json_kind(step)}"
    labels = event.get("labels")
    if labels is not None:
        if not isinstance(labels, list):
            return f"field 'labels' must be a list of atom names, got {json_kind(labels)}"
        for i, label in enumerate(labels):
            if not isinstance(label, str) or not label:
                return f"field 'labels' item {i} must be a non-empty string"
    data = event.get("data")
    if data is not None and not isinstance(data, dict):
        return f"field 'data' must be an object, got {json_kind(data)}"
    return None


class Audit:
    """Sessions in order of first appearance, each with its monitor and last step number."""

    def __init__(self, rules: Iterable[tuple], witnesses: bool = False,
                 anticipate: bool = False):
        """``anticipate``: also follow every rule's four-valued verdict (paper 002,
        ``studio.monitor.anticipation``): the report then gives ``complete`` and
        ``complete_step`` per rule."""
        self.ruleset = RuleSet(rules)
        self.witnesses = witnesses
        self.anticipations: dict[str, SessionAnticipation] | None = {} if anticipate else None
        self.sessions: dict[str, FastSessionMonitor] = {}
        self.last_step: dict[str, int] = {}
        self.errors: list[LineError] = []

    def add_file(self, path: str | Path, on_error: Callable[[LineError], None] | None = None):
        def report(error: LineError) -> None:
            self.errors.append(error)
            if on_error is not None:
                on_error(error)

        for number, event in read_log(path, report):
            session = str(event["session"])
            step = event.get("step")
            monitor = self.sessions.get(session)
            if step is not None:
                last = self.last_step.get(session)
                if last is not None and step <= last:
                    report(LineError(str(path), number,
                                     f"session {session!r}: step {step} comes after step {last}; "
                                     "steps must increase within a session"))
                    continue
                self.last_step[session] = step
            if monitor is None:
                monitor = self.sessions[session] = FastSessionMonitor(self.ruleset,
                                                                      self.witnesses)
                if self.anticipations is not None:
                    self.anticipations[session] = SessionAnticipation(monitor)
            monitor.ingest(event)
            if self.anticipations is not None:
                self.anticipations[session].observe(event)

    def report(self) -> dict:
        return {"sessions": [
            {"session": name, "steps": monitor.steps,
             "rules": self._rules_json(name, monitor)}
            for name, monitor in self.sessions.items()]}

    def _rules_json(self, name: str, monitor: FastSessionMonitor) -> list[dict]:
        rules = [r.to_json() for r in monitor.results()]
        if self.anticipations is not None:
            # A log's sessions have ended: their last step settles every verdict.
            for rule, complete in zip(rules, self.anticipations[name].results(ended=True)):
                rule["complete"] = complete["complete"]
                rule["complete_step"] = complete["complete_step"]
                rule["complete_reason"] = complete["reason"]
        return rules


def render_text(report: dict) -> str:
    """A human-readable summary of ``Audit.report()``."""
    lines = []
    for session in report["sessions"]:
        lines.append(f"session {session['session']} ({session['steps']} steps)")
        width = max((len(r["rule"]) for r in session["rules"]), default=4)
        for r in session["rules"]:
            when = (f" at step {r['first_verdict_step']}"
                    if r["first_verdict_step"] is not None else "")
            found = r["violations"]
            listed = ", ".join(f"{v['trigger']}->{v['detected']}" for v in found[:10])
            more = f" (+{len(found) - 10} more)" if len(found) > 10 else ""
            lines.append(
                f"  {r['rule']:<{width}}  {verdict_words(r['verdict'])}{when}; "
                f"at end {verdict_words(r['final'])}; "
                f"{len(found)} violation{'s' if len(found) != 1 else ''}"
                + (f" [{listed}{more}]" if found else ""))
            if "complete" in r:
                since = (f" since step {r['complete_step']}"
                         if r["complete_step"] is not None else "")
                lines.append(f"  {'':<{width}}  complete: {COMPLETE_WORDS[r['complete']]}"
                             f"{since} ({r['complete_reason']})")
            if r["verdict"] == "pending":
                lines.append(f"  {'':<{width}}  residual: {r['residual']}")
    return "\n".join(lines) + ("\n" if lines else "")
