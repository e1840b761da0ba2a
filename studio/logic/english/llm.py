"""English to LTL through a chat model: a few-shot prompt, the answer read by our own grammar.

The model is shown the formula language (DESIGN.md) and worked examples - the behavioural
constraints of paper 000, Appendix F, and the rules of its section 3.1 - and answers with one
formula.  The answer is untrusted text: it is only ever given to ``studio.logic.parser.parse``.
When it does not parse (or puts a future operator inside a past one, which no monitor runs), the
model is told where and why - line, column, what was expected there - and asked again, up to
``attempts`` times in all; then the formaliser gives up with a message saying what went wrong.
It never raises for bad English, a bad answer or an unreachable endpoint.

The chat client is ``studio.labeling.llm`` (no Django), so this module stays pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from studio.labeling.llm import ChatClient, LLMError, shared_client

from ..formula import PAST_OPS, Formula
from ..parser import FormulaSyntaxError, parse
from .base import Formalisation

ENGINE = "llm"
DEFAULT_ATTEMPTS = 3
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

Name atoms after the event they describe, in snake_case, reusing the names you are given.
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


class LLMFormaliser:
    """A ``Formaliser`` (``studio.logic.english.base``) asking a chat model."""

    name = ENGINE

    def __init__(self, client: ChatClient | Callable[[], ChatClient] | None = None, *,
                 model: str | None = None, attempts: int = DEFAULT_ATTEMPTS,
                 atoms: Sequence[str] = ()):
        self._client_source = client
        self.model = model
        self.attempts = max(1, attempts)
        self.atoms = tuple(atoms)

    def messages(self, english: str) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}]
        for rule, formula in EXAMPLES:
            messages.append({"role": "user", "content": f"Rule: {rule}"})
            messages.append({"role": "assistant", "content": formula})
        known = (f"\nAtoms already in use: {', '.join(self.atoms)}" if self.atoms else "")
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
            return self._formalise(client, english)
        except LLMError as exc:
            return self._failed(f"the LLM could not be asked: {exc.message}")

    def _formalise(self, client: ChatClient, english: str) -> Formalisation:
        messages = self.messages(english)
        problem = ""
        for _ in range(self.attempts):
            answer = _answer_formula(client.complete(messages, model=self.model,
                                                     temperature=0).text)
            try:
                formula = parse(answer)
            except FormulaSyntaxError as exc:
                expected = f" Expected there: {', '.join(exc.expected)}." if exc.expected else ""
                problem = (f"line {exc.line}, column {exc.column}: {exc.message}")
                feedback = (f"That formula does not parse: line {exc.line}, column "
                            f"{exc.column}: {exc.message}.{expected}\n{exc.context()}\n"
                            "Answer again with the corrected formula alone.")
            else:
                problem = _past_problem(formula)
                if not problem:
                    atoms = tuple(sorted({sub.name for sub in formula.subformulas()
                                          if sub.op == "atom"}))
                    return Formalisation(formula, formula.text, atoms, engine=ENGINE)
                feedback = (f"That formula cannot be monitored: {problem}.\n"
                            "Answer again with the corrected formula alone.")
            messages = [*messages, {"role": "assistant", "content": answer},
                        {"role": "user", "content": feedback}]
        return self._failed(f"the model's formula was still not valid after {self.attempts} "
                            f"attempt{'s' if self.attempts != 1 else ''}: {problem} "
                            f"(its last answer: {_quoted(answer)!r})")

    def _failed(self, message: str) -> Formalisation:
        return Formalisation(None, "", (), message=message, engine=ENGINE)

    def _client(self) -> ChatClient:
        source = self._client_source
        if source is None:
            return shared_client()
        return source if isinstance(source, ChatClient) else source()
