"""English to LTL through a chat model: a few-shot prompt, the answer read by our own grammar.

The model is shown the formula language (DESIGN.md) and worked examples - the behavioural
constraints of paper 000, Appendix F, and the rules of its section 3.1 - and answers with one
formula.  The answer is untrusted text: it is only ever given to ``studio.logic.parser.parse``.
When it does not parse (or puts a future operator inside a past one, which no monitor runs), the
model is told where and why - line, column, what was expected there - and asked again, up to
``attempts`` times in all; then the formaliser gives up with a message saying what went wrong.
It never raises for bad English, a bad answer or an unreachable endpoint.

Several answers are drawn (``samples``, at a temperature above 0, each cached apart so asking
again gives the same answers), each read as above; answers that mean the same (no trace up to
``MERGE_LENGTH`` steps tells them apart) are merged, and the readings are ordered by how many
answers agree ("2 of 3 model answers").  The model is shown the workspace's vocabulary with its
evidence (tools with their own argument fields and example values, labels, other fields),
bounded in size; every atom and field a reading uses is listed as a phrase (``mapping``), so
the evidence layer (``studio.grounding``) offers candidates for names the model invented or
guessed.  Nothing the model says is trusted raw.

The chat client is ``studio.labeling.llm`` (no Django), so this module stays pure.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studio.labeling.llm import ChatClient, LLMError, shared_client

from studio.logic import review, wording
from studio.logic.formula import PAST_OPS, Formula
from studio.logic.parser import FormulaSyntaxError, parse
from .base import Formalisation, Reading
from .ground_atoms import Grounding

ENGINE = "llm"
DEFAULT_ATTEMPTS = 3
# Answers drawn per rule, and the temperature they are drawn at (one answer: greedy, 0).
DEFAULT_SAMPLES = 3
MAX_SAMPLES = 10
SAMPLE_TEMPERATURE = 0.7
# Two answers are one reading when no trace up to this many steps tells them apart (the offline
# engine's bound), searched over at most this many states.
MERGE_LENGTH = 8
MERGE_STATE_CAP = 20_000
# The vocabulary shown to the model: at most this many characters, this many argument fields
# per tool and example values per field, each example cut to this many characters.
VOCABULARY_LIMIT = 6000
TOOL_FIELDS = 8
FIELD_EXAMPLES = 3
EXAMPLE_CHARS = 30
ENGLISH_LIMIT = 4000
# How much of a bad answer a message quotes back.
ANSWER_QUOTED = 200

SYSTEM_PROMPT = """\
You translate a compliance rule about an AI agent, written in English, into one formula of \
linear temporal logic over the steps of the agent's log (finite traces).

The formula language:
- constants: true false
- atoms: lower-case names made of a-z 0-9 _ : . - (for example take, tool_call:send_money, \
deliver_package1); quote any other name in double quotes ("stop_reason:end_turn" may stay bare; \
"Send Email" must be quoted). Upper-case single letters are operators, never atoms.
- boolean: ! (not), & (and), | (or), -> (implies), <-> (if and only if)
- future: X f (f at the next step, which must exist), WX f (f at the next step if there is \
one), F f (eventually), G f (always), f U g (f until g, and g happens), f W g (f until g, or f \
forever), f R g (release), F[a,b] f and G[a,b] f (between a and b steps from now)
- past: Y f (at the previous step), Z f (at the previous step if there is one), O f (once, \
at some step so far), H f (at every step so far), f S g (f since g). A past operator may \
contain only atoms, data atoms and other past operators.
- data atoms compare a field of the step: output.args.amount > 10000, data.status == "passed", \
data.balance < prev(data.balance); operators == != < <= > >=
- binding, loosest first: <->, ->, |, &, then U W R S, then the unary operators; binary \
operators group to the right. Use parentheses whenever in doubt.

Name atoms after the event they describe, in snake_case, reusing the names you are given. \
When the workspace's logs are listed, use their names: tool_call:NAME for a call of the tool \
NAME, that tool's own argument fields (output.args.ARG) in comparisons tied to it \
(tool_call:NAME & output.args.ARG > 100), and a new name only for what nothing listed says.
Answer with the formula alone, on one line: no explanation, no code fence."""

# (English, formula) pairs: the behavioural constraints of paper 000's experiments (Appendix F)
# and the rules of its section 3.1.
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("If you take an item, you have to examine it in the next step.",
     "G(take -> X examine)"),
    ("Do not drop things.", "G !drop"),
    ("Only take the knife if you will use it to chop, slice, or dice something within the "
     "next four steps.",
     "G(take_knife -> F[1,4] (chop | slice | dice))"),
    ("You must not look around twice in a row.",
     "G(look_around -> WX !look_around)"),
    ("You must measure the temperature of substance B with a thermometer before you put "
     "substance B into a box.",
     "G(put_b_in_box -> O measure_b)"),
    ("package2 should be delivered before package1 is delivered.",
     "!deliver_package1 W deliver_package2"),
    ("Package1 should be loaded into a truck at most once.",
     "G(load_package1 -> WX G !load_package1)"),
    ("Do not process a transaction above $10,000 without human authorization.",
     "G(output.args.amount > 10000 -> O human_authorization)"),
    ("Always warmly greet the customer and provide your agent identification number before "
     "engaging in further conversation.",
     "!converse W (greet & give_agent_id)"),
)


def _answer_formula(text: str) -> str:
    """The formula in the model's answer: without a code fence, backticks or a label."""
    answer = text.strip()
    fenced = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", answer, re.DOTALL)
    if fenced:
        answer = fenced.group(1).strip()
    answer = re.sub(r"^(?:formula|ltl)\s*:\s*", "", answer, flags=re.IGNORECASE)
    if len(answer) >= 2 and answer[0] == answer[-1] == "`":
        answer = answer.strip("`").strip()
    return answer


def _past_problem(formula: Formula) -> str:
    for sub in formula.subformulas():
        if sub.op in PAST_OPS and any(arg.has_future for arg in sub.args):
            return (f"in {sub.text[:80]} a past operator contains a future one; a past "
                    "operator (Y Z O H S) may contain only atoms, data atoms and other past "
                    "operators")
    return ""


def _quoted(answer: str) -> str:
    return answer if len(answer) <= ANSWER_QUOTED else answer[:ANSWER_QUOTED] + "…"


# ---------------------------------------------------------------------------------------------
# Readings that mean the same

def same_reading(a: Formula, b: Formula) -> tuple[bool, tuple]:
    """Whether ``a`` and ``b`` mean the same as far as the review's search sees (no trace of up
    to ``MERGE_LENGTH`` steps tells them apart; data comparisons read as independent
    propositions, so two comparisons are only one when they read alike), and a shortest trace
    on which they differ (empty when they are one).  A search the review refuses (too many
    atoms) leaves them apart unless they are the same formula."""
    if a is b:
        return True, ()
    try:
        found = review.find_distinguishing_trace(a, b, MERGE_LENGTH, state_cap=MERGE_STATE_CAP)
    except review.ReviewLimitError:
        return False, ()
    if found.trace is None:
        return True, ()
    return False, tuple(frozenset(step) for step in found.trace)


@dataclass
class Merged:
    formula: Formula
    answers: int                 # how many answers read this way
    first: int                   # the first answer that did (ties keep the answers' order)


def merge(formulas: Sequence[Formula]) -> list[Merged]:
    """``formulas`` (one per answer, in the answers' order) merged by meaning, the readings
    most answers agree on first.  A reading is written the way most of its answers wrote it
    (the earliest such answer on a tie), so the same answers give the same reading in
    whatever order they came."""
    merged: list[Merged] = []
    written: list[dict[str, list]] = []   # per reading: text -> [answers, first index, formula]
    for index, f in enumerate(formulas):
        for m, forms in zip(merged, written):
            if same_reading(m.formula, f)[0]:
                m.answers += 1
                forms.setdefault(f.text, [0, index, f])[0] += 1
                break
        else:
            merged.append(Merged(f, 1, index))
            written.append({f.text: [1, index, f]})
    for m, forms in zip(merged, written):
        m.formula = max(forms.values(), key=lambda form: (form[0], -form[1]))[2]
    merged.sort(key=lambda m: (-m.answers, m.first))
    return merged


# ---------------------------------------------------------------------------------------------
# The workspace's vocabulary, shown to the model

def _example(value) -> str:
    if isinstance(value, str):
        text = value if len(value) <= EXAMPLE_CHARS else value[:EXAMPLE_CHARS] + "…"
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _types(types) -> str:
    words = {"string": "text", "number": "number", "boolean": "true/false"}
    return "/".join(words[t] for t in sorted(types or ()) if t in words)


# Fields that only repeat what an atom says (the tool's name is ``tool_call:NAME``).
_REPEATED_FIELDS = frozenset({"output.tool", "output.name"})


def _readable_path(path: str, types) -> bool:
    """A field a comparison can read: a number, text or true/false, not a list element."""
    return ("." in path and bool(_types(types)) and path not in _REPEATED_FIELDS
            and not any(part.isdigit() for part in path.split(".")))


def _carrier_words(carrier: str) -> str:
    if carrier.startswith("tool_call:"):
        return carrier
    if carrier.startswith("role:"):
        return {"role:user": "user messages", "role:assistant": "assistant messages",
                "role:tool": "tool results"}.get(carrier, carrier)
    return "other events"


def vocabulary_prompt(vocabulary, atoms: Sequence[str] = (),
                      limit: int = VOCABULARY_LIMIT) -> str:
    """The workspace's vocabulary as the model reads it: each tool with its own argument fields
    and example values, the labels and roles, and other fields, the most often seen first; at
    most ``limit`` characters.  ``vocabulary`` is any object with ``.atoms`` and ``.paths``
    (``studio.logic.vocabulary.Vocabulary``, whose evidence adds counts and examples)."""
    names = sorted(set(getattr(vocabulary, "atoms", ()) or ()) | set(atoms))
    paths = dict(getattr(vocabulary, "paths", {}) or {})
    evidence = bool(getattr(vocabulary, "evidence", ()))

    def events(name: str, carrier: str | None = None) -> int:
        return vocabulary.events_of(name, carrier) if evidence else 0

    def counted(name: str) -> str:
        n = events(name)
        return f"{name} ({n} event{'s' if n != 1 else ''})" if n else name

    def examples(path: str, carrier: str | None = None) -> str:
        if not evidence:
            return ""
        found = vocabulary.examples_of(path, carrier, limit=FIELD_EXAMPLES)
        return f" e.g. {', '.join(_example(v) for v in found)}" if found else ""

    readable = {p: t for p, t in paths.items() if _readable_path(p, t)}
    tools = sorted((a for a in names if a.startswith("tool_call:")), key=lambda a: -events(a))
    roles = [a for a in names if a.startswith(("role:", "stop_reason:"))]
    labels = sorted((a for a in names if a not in tools and a not in roles),
                    key=lambda a: (-events(a), a))
    lines: list[str] = []
    listed: set[str] = set()
    if tools:
        lines.append("Tools (tool_call:NAME holds at a step that calls the tool; its own "
                     "fields follow):")
        for tool in tools:
            own = []
            if evidence:
                own = sorted((p for p in readable if p.startswith("output.")
                              and vocabulary.carriers_of(p).get(tool)),
                             key=lambda p: (-vocabulary.carriers_of(p)[tool], p))[:TOOL_FIELDS]
            listed.update(own)
            fields = "; ".join(f"{p} ({_types(readable[p])}){examples(p, tool)}" for p in own)
            lines.append(f"- {counted(tool)}" + (f": {fields}" if fields else ""))
    if labels:
        lines.append("Labels (atoms the labelers or the logs give a step):")
        for label in labels:
            where = ""
            if evidence:
                carriers = vocabulary.carriers_of(label)
                if carriers and len(carriers) <= 3:
                    where = " on " + ", ".join(_carrier_words(c) for c in carriers)
            lines.append(f"- {counted(label)}{where}")
    if roles:
        lines.append("Roles and stop reasons: " + ", ".join(roles))
    others = sorted((p for p in readable if p not in listed),
                    key=lambda p: (-(events(p)), p))
    if others:
        lines.append("Other fields:")
        for path in others:
            where = ""
            if evidence:
                carriers = vocabulary.carriers_of(path)
                if carriers and len(carriers) <= 3:
                    where = ", on " + ", ".join(_carrier_words(c) for c in carriers)
            lines.append(f"- {path} ({_types(readable[path])}{where}){examples(path)}")
    if not lines:
        return ""
    out = ["The workspace's logs contain (use these names):"]
    used = len(out[0])
    for k, line in enumerate(lines):
        if used + len(line) + 1 > limit:
            out.append(f"(and {len(lines) - k} more entries, not listed)")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# The phrases a reading uses

_PREFIX = re.compile(r"^(tool_call|role|stop_reason):")


def _phrase_of(name: str, path: bool) -> str:
    if path:
        name = name.rsplit(".", 1)[-1]
    words = re.split(r"[_:.\-\s]+", _PREFIX.sub("", name))
    return " ".join(w for w in words if w) or name


def _full_phrase(name: str) -> str:
    return " ".join(w for w in re.split(r"[_:.\-\s]+", name) if w) or name


def phrases_of(formulas: Sequence[Formula], vocabulary=None,
               atoms: Sequence[str] = ()) -> tuple[Grounding, ...]:
    """Every atom and data path ``formulas`` use, each as a phrase of its own words
    (``Grounding(phrase, atom, grounded)``; grounded when the vocabulary, or ``atoms``, has
    it), so the evidence layer can offer candidates for it.  Roles and stop reasons the logs
    have are exact names, not phrases."""
    known = set(getattr(vocabulary, "atoms", ()) or ()) | set(atoms)
    used_atoms: list[str] = []
    used_paths: list[str] = []
    for f in formulas:
        for g in f.subformulas():
            if g.op == "atom" and g.name not in used_atoms:
                used_atoms.append(g.name)
            elif g.op == "cmp":
                for side in (g.payload.left, g.payload.right):
                    if side[0] in ("path", "prev") and side[1] not in used_paths:
                        used_paths.append(side[1])
    out: list[Grounding] = []
    taken: set[str] = set()
    for name, path in [(a, False) for a in used_atoms] + [(p, True) for p in used_paths]:
        if path:
            types = (vocabulary.path_types(name) if hasattr(vocabulary, "path_types")
                     else (getattr(vocabulary, "paths", {}) or {}).get(name))
            grounded = types is not None
        else:
            grounded = name in known
            if grounded and name.startswith(("role:", "stop_reason:")):
                continue
        phrase = _phrase_of(name, path)
        if phrase in taken:
            phrase = _full_phrase(name)
        if phrase in taken:
            phrase = name
        taken.add(phrase)
        out.append(Grounding(phrase, name, grounded))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The engine

@dataclass
class _Answer:
    formula: Formula | None = None
    problem: str = ""            # why the last answer was refused
    answer: str = ""             # the last answer
    error: str = ""              # the endpoint could not be asked


class LLMFormaliser:
    """A ``Formaliser`` (``studio.english.base``) asking a chat model.

    ``samples`` answers are drawn (at ``temperature``, default ``SAMPLE_TEMPERATURE``; one
    answer is drawn at 0) and merged by meaning; ``vocabulary`` (the workspace's, with its
    evidence) is shown to the model and says which names are grounded; ``atoms`` are names
    already in use (shown when there is no vocabulary)."""

    name = ENGINE

    def __init__(self, client: ChatClient | Callable[[], ChatClient] | None = None, *,
                 model: str | None = None, attempts: int = DEFAULT_ATTEMPTS,
                 atoms: Sequence[str] = (), vocabulary=None, samples: int = DEFAULT_SAMPLES,
                 temperature: float | None = None):
        self._client_source = client
        self.model = model
        self.attempts = max(1, attempts)
        self.atoms = tuple(atoms)
        self.vocabulary = vocabulary
        self.samples = max(1, min(MAX_SAMPLES, samples))
        if temperature is None:
            temperature = SAMPLE_TEMPERATURE if self.samples > 1 else 0.0
        self.temperature = temperature

    def messages(self, english: str) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}]
        for rule, formula in EXAMPLES:
            messages.append({"role": "user", "content": f"Rule: {rule}"})
            messages.append({"role": "assistant", "content": formula})
        logs = vocabulary_prompt(self.vocabulary, self.atoms) if self.vocabulary else ""
        if logs:
            known = "\n\n" + logs
        else:
            known = f"\nAtoms already in use: {', '.join(self.atoms)}" if self.atoms else ""
        messages.append({"role": "user", "content": f"Rule: {english}{known}"})
        return messages

    def formalise(self, english: str) -> Formalisation:
        english = (english or "").strip()
        if not english:
            return self._failed("there is no rule to formalise: write one in English")
        if len(english) > ENGLISH_LIMIT:
            return self._failed(f"the rule is {len(english)} characters long; the LLM "
                                f"formaliser reads at most {ENGLISH_LIMIT}")
        try:
            client = self._client()
            answers = self._answers(client, self.messages(english))
        except LLMError as exc:
            return self._failed(f"the LLM could not be asked: {exc.message}")
        return self._merged(answers)

    def _answers(self, client: ChatClient, messages: list) -> list[_Answer]:
        """``samples`` answers, each asked again with the reason while it does not parse (up to
        ``attempts`` times), in rounds: the answers of a round are asked at once."""
        answers = [_Answer() for _ in range(self.samples)]
        pending = {k: messages for k in range(self.samples)}
        for _ in range(self.attempts):
            if not pending:
                break
            keys = list(pending)
            replies = self._ask(client, [(pending[k], k if self.samples > 1 else None)
                                         for k in keys])
            asked_again = {}
            for k, reply in zip(keys, replies):
                out = answers[k]
                if isinstance(reply, LLMError):
                    out.error = reply.message
                    continue
                out.answer = _answer_formula(reply.text)
                try:
                    formula = parse(out.answer)
                except FormulaSyntaxError as exc:
                    expected = (f" Expected there: {', '.join(exc.expected)}."
                                if exc.expected else "")
                    out.problem = f"line {exc.line}, column {exc.column}: {exc.message}"
                    feedback = (f"That formula does not parse: line {exc.line}, column "
                                f"{exc.column}: {exc.message}.{expected}\n{exc.context()}\n"
                                "Answer again with the corrected formula alone.")
                else:
                    out.problem = _past_problem(formula)
                    if not out.problem:
                        out.formula = formula
                        continue
                    feedback = (f"That formula cannot be monitored: {out.problem}.\n"
                                "Answer again with the corrected formula alone.")
                asked_again[k] = [*pending[k], {"role": "assistant", "content": out.answer},
                                  {"role": "user", "content": feedback}]
            pending = asked_again
        return answers

    def _ask(self, client: ChatClient, prompts: list) -> list:
        """Each prompt's completion, or the ``LLMError`` it met."""
        kwargs: dict = {"model": self.model}
        if _accepts(client, "temperature"):
            kwargs["temperature"] = self.temperature
        many = getattr(client, "complete_many", None)
        if many is not None:
            return many(prompts, **kwargs)
        out = []
        for messages, sample in prompts:
            extra = {"sample": sample} if sample is not None and _accepts(client, "sample") else {}
            try:
                out.append(client.complete(messages, **kwargs, **extra))
            except LLMError as exc:
                out.append(exc)
        return out

    def _merged(self, answers: list[_Answer]) -> Formalisation:
        asked = [a for a in answers if not a.error]
        if not asked:
            return self._failed(f"the LLM could not be asked: {answers[0].error}")
        valid = [a.formula for a in asked if a.formula is not None]
        if not valid:
            last = asked[-1]
            tries = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
            if len(asked) == 1:
                said = f"the model's formula was still not valid after {tries}"
            else:
                said = (f"none of the model's {len(asked)} answers was a valid formula after "
                        f"{tries} each")
            return self._failed(f"{said}: {last.problem} (its last answer: "
                                f"{_quoted(last.answer)!r})")
        merged = merge(valid)
        total = len(asked)
        readings = []
        for k, m in enumerate(merged):
            trace, against = (), None
            if len(merged) > 1:
                against = 1 if k == 0 else 0
                trace = same_reading(m.formula, merged[against].formula)[1]
            readings.append(Reading(m.formula, m.formula.text, wording.explain(m.formula),
                                    f"{m.answers} of {total} model answer"
                                    f"{'s' if total != 1 else ''}", trace, against))
        first = merged[0].formula
        atoms = tuple(sorted({g.name for g in first.subformulas() if g.op == "atom"}))
        notes = []
        failed = [a for a in answers if a.error]
        if failed:
            notes.append(f"{len(failed)} of {len(answers)} answers could not be asked: "
                         f"{failed[0].error}")
        refused = total - len(valid)
        if refused:
            notes.append(f"{refused} of {total} answers gave no valid formula")
        return Formalisation(first, first.text, atoms, message="; ".join(notes), engine=ENGINE,
                             readings=tuple(readings),
                             mapping=phrases_of([m.formula for m in merged], self.vocabulary,
                                                self.atoms))

    def _failed(self, message: str) -> Formalisation:
        return Formalisation(None, "", (), message=message, engine=ENGINE)

    def _client(self) -> ChatClient:
        source = self._client_source
        if source is None:
            return shared_client()
        # a client (anything with ``complete``), or a function giving one
        return source if hasattr(source, "complete") else source()


def _accepts(client, parameter: str) -> bool:
    """Whether ``client.complete`` takes ``parameter`` (a stand-in client may not)."""
    try:
        params = inspect.signature(client.complete).parameters
    except (TypeError, ValueError):
        return False
    return parameter in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
