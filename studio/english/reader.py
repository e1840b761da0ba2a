"""Reading a text's syntax tree as formulas, one rule a sentence (conditionals, chains,
precedence, scopes)."""

from __future__ import annotations

from studio.logic.formula import And, F, Formula, G, Implies, Not, O, S, U, W, WX, X, Y
from studio.logic.patterns import precedence

from .clauses import _ClauseReader
from .shapes import (_describes_state, _first_token, _names_action_first, _names_an_action,
    _permits, _precedence_chain, _Rule, _scoped, _share_subject)
from .syntax import (_atom_names, AlwaysRule, Chain, Clause, Conditional, Guarded, Mod, NEGATIONS,
    Precedence, Rules, Scoped, Sequence, Simple, TEMPORAL, Until, UntilFirst)
from .tokens import NotUnderstood


class _Reader(_ClauseReader):
    """Reads the syntax tree of a text as formulas, one rule a sentence."""

    # -- constructions
    def read(self, nodes) -> list[Formula]:
        """The formulas of a text's sentences (their pattern kinds kept for naming)."""
        rules = [self.rule(n) for n in nodes]
        self.kinds = [r.kind for r in rules]
        return [r.formula for r in rules]

    def rule(self, node) -> _Rule:
        if isinstance(node, Simple):
            return self.top(node.clause)
        if isinstance(node, AlwaysRule):
            return self.rule(node.rule)
        if isinstance(node, Conditional):
            return self.conditional(node)
        if isinstance(node, Chain):
            return self.chain(node)
        if isinstance(node, Precedence):
            return self.precedence(node)
        if isinstance(node, Until):
            return self.top_until(node)
        if isinstance(node, Rules):
            rules = _share_subject(node.rules)
            if (len(rules) == 2 and isinstance(rules[0], Conditional)
                    and rules[0].style == "first"
                    and isinstance(rules[1], (Simple, Precedence))
                    and self.choose("shared_trigger", [
                        ("shared", "the condition governs both parts of the sentence"),
                        ("apart", "the part after “and” is a rule of its own")]) == "shared"):
                # "if the score exceeds 0.8, the claim must be referred and must not be
                # paid": both are what the condition calls for
                conditional = self.conditional(rules[0]).formula
                condition, required = conditional.args[0].args
                second = (self.obligation(rules[1]) if isinstance(rules[1], Precedence)
                          else self.consequent(rules[1].clause, "now"))
                return _Rule(G(Implies(condition, And(required, second))))
            return _Rule(And(*[self.rule(r).formula for r in rules]))
        if isinstance(node, Scoped):
            return self.scoped(node)
        if isinstance(node, Guarded):
            return self.guarded(node)
        if isinstance(node, UntilFirst):
            return self.until_first(node)
        raise AssertionError(type(node))  # pragma: no cover

    def _simple_rules(self, node, keyword: str) -> list[Simple]:
        rules = node.rules if isinstance(node, Rules) else [node]
        rules = _share_subject(rules)
        for r in rules:
            if not isinstance(r, Simple):
                raise NotUnderstood(f"after “{keyword}”, a plain rule (never Q, Q must hold)",
                                    [_first_token(getattr(r, "clause", None))])
        return rules

    def now(self, clause: Clause) -> Formula:
        """What a clause requires at the current step ("While P, never Q": not Q while P)."""
        segments = []
        for x in clause.segments:
            if isinstance(x, Mod) and x.name in ("ALWAYS", "HAPPEN", "EVERY"):
                continue
            if isinstance(x, Mod) and x.name == "NEVER":
                x = Mod("NOT", x.token)
            segments.append(x)
        return self.consequent(Clause(segments), "now")

    def guarded(self, node: Guarded) -> _Rule:
        if node.kind == "while":
            condition = And(*[self.state(c) for c in node.condition])
        else:
            (clause,) = node.condition
            exception = self.state(clause)
            action = _names_action_first(clause)
            choices = [("now", "the exception must hold at that very step"),
                       ("before", "the exception must have happened at that step or before")]
            how = self.choose("unless", choices[::-1] if action else choices)
            condition = Not(exception) if how == "now" else Not(O(exception))
        rules = self._simple_rules(node.rules, node.kind)
        return _Rule(And(*[G(Implies(condition, self.now(r.clause))) for r in rules]))

    def until_first(self, node: UntilFirst) -> _Rule:
        release = self.state(node.condition)
        out = []
        for r in self._simple_rules(node.rules, "until"):
            if self.negative(r.clause.mods):
                out.append(self._precedence([release], self.subject(r.clause)).formula)
            else:
                out.append(W(self.now(r.clause), release))
        return _Rule(And(*out))

    def obligation(self, node, default: str = "now") -> Formula:
        """The consequent of a conditional."""
        if isinstance(node, Until):
            left, right = self.state(node.left), self.state(node.right)
            if left.op == "not" and not node.after:
                # "if P, do not Q until R": R may never come (the ban then lasts), or must come
                how = self.choose("until", [
                    ("strong", "the releasing event must come"),
                    ("weak", "the ban lasts for the rest of the session if the releasing "
                             "event never comes")])
                ban = U(left, right) if how == "strong" else W(left, right)
            else:
                ban = U(left, And(right, left)) if node.after else U(left, right)
            if self.trigger_atoms & _atom_names(right):
                # "if a test run fails, do not commit until the tests are re-run": the release
                # is a later occurrence of the trigger's own event, not the trigger itself
                return WX(ban) if ban.op == "W" else X(ban)
            return ban
        if isinstance(node, Precedence):
            # "if the request is ambiguous, the agent asks a clarifying question before doing
            # any searching": from the trigger on, no search until the question
            return self.precedence(node).formula
        parts, links = node.parts, node.links
        rest = self.chain_tail(parts[1:], links) if len(parts) > 1 else None
        return self.consequent(parts[0], default, rest)

    def chain_tail(self, parts: list[Clause], links: list[str], first_link: bool = False):
        """What the chain still requires at the step of the element before ``parts[0]``."""
        part, link = parts[0], links[0]
        inner = self.chain_tail(parts[1:], links[1:]) if len(parts) > 1 else None
        if any(m.name in TEMPORAL for m in part.mods):
            return self.consequent(part, "now", inner)
        if link == "followed_next":
            body = self.subject(part, inner)
            return WX(Not(body)) if self.negative(part.mods) else X(body)
        default = "eventually" if (link == "followed" and first_link) else "later"
        return self.consequent(part, default, inner)

    def conditional(self, node: Conditional) -> _Rule:
        trigger_parts, consequent = node.trigger, node.consequent
        if node.style == "last":
            first = consequent.parts[0] if isinstance(consequent, Sequence) else None
            if first is not None and first.has("ONLY") and len(consequent.parts) == 1:
                # "only P if Q": P is the trigger, Q what it requires.
                condition = self.state(first)
                required = And(*[self.consequent(c, "now") for c in trigger_parts])
                return _Rule(G(Implies(condition, required)))
        if node.style == "only_if":
            condition = self.state(consequent)
            self.in_condition = True
            required = And(*[self.consequent(c, "now") for c in trigger_parts])
            self.in_condition = False
            if not all(_describes_state(c) for c in trigger_parts) and required.op != "not":
                # "delete files only if the user approved": the approval may be earlier
                choices = [("now", "the condition at that very step"),
                           ("before", "the condition at that step or before it")]
                if self.choose("only_if", choices) == "before":
                    required = O(required)
            return _Rule(G(Implies(condition, required)))
        condition = And(*[self.state(c) for c in trigger_parts])
        self.trigger_atoms = {a.name for a in (condition.args if condition.op == "and"
                                               else (condition,)) if a.op == "atom"}
        self.state_trigger = all(_describes_state(c) for c in trigger_parts)
        required = self.obligation(consequent, node.timing)
        f = G(Implies(condition, required))
        if required.op == "F":
            return _Rule(f, "response", p=condition, s=required.args[0])
        return _Rule(f)

    def chain(self, node: Chain) -> _Rule:
        head = node.parts[0]
        if (head.has("MODAL") and not head.has("NEVER", "NOT", "FORBIDDEN")
                and node.links[0] == "then" and _names_an_action(head)):
            # "the agent must open a ticket and then notify the customer": both, in order.
            rest = self.chain_tail(node.parts[1:], node.links)
            return _Rule(F(And(self.subject(head), rest)))
        if head.has("EVENTUALLY", "LATER"):
            # "at some point P, followed by Q, and then R": one strictly later than the other.
            rest = self.chain_tail(node.parts[1:], node.links)
            return self.top(head, rest)
        if head.has("NEVER", "NOT", "FORBIDDEN"):
            raise NotUnderstood("a negated chain", [m.token for m in head.mods
                                                   if m.name in NEGATIONS])
        condition = self.state(head)
        required = self.chain_tail(node.parts[1:], node.links, first_link=True)
        if not head.mods and node.links[0] == "then":
            # "open a ticket and then notify the customer": each time, or the two steps once
            how = self.choose("chain", [
                ("every", "every time the first happens, the next must follow"),
                ("once", "the steps must happen, in this order, at least once")])
            if how == "once":
                return _Rule(F(And(condition, required)))
        f = G(Implies(condition, required))
        if required.op == "F":
            return _Rule(f, "response", p=condition, s=required.args[0])
        return _Rule(f)

    def precedence(self, node: Precedence) -> _Rule:
        kind = node.kind
        if kind == "before" and len(node.first) == 1 and node.first[0].has("ONLY"):
            # "tuition refunds may only be processed before the census date": none after it
            effect = self.state(Clause([x for x in node.first[0].segments
                                        if not (isinstance(x, Mod) and x.name == "ONLY")]))
            return _Rule(G(Implies(effect, Not(O(self.state(node.second))))))
        if kind == "before" and node.second.has("EVERY") and len(node.first) == 1:
            # "run the linter before every commit": each commit has its own run, since the
            # commit before it; or (the author picks) some run at any time before it
            cause, effect = self.state(node.first[0]), self.state(Clause(
                [x for x in node.second.segments if not (isinstance(x, Mod)
                                                         and x.name == "EVERY")]))
            how = self.choose("before_each", [
                ("since", "each one needs its own, since the one before it"),
                ("strict", "one at any earlier step is enough"),
                ("once", "one at that step or any earlier one is enough")])
            if how == "since":
                return _Rule(G(Implies(effect, Y(S(Not(effect), cause)))))
            return _Rule(G(Implies(effect, Y(O(cause)) if how == "strict" else O(cause))))
        if kind == "before":
            # "verified at some point before money is sent": "at some point" adds nothing
            steps = [Clause([x for x in c.segments
                             if not (isinstance(x, Mod) and x.name == "EVENTUALLY")])
                     for c in node.first]
            target = self.state(node.second)
            if node.second.has("FORBIDDEN"):
                # "putting Q before measuring P is a violation": the verdict closes the
                # sentence but is about the whole of it.
                target = self.state(Clause([x for x in node.second.segments
                                            if not (isinstance(x, Mod) and x.name == "FORBIDDEN")]))
                if len(steps) != 1:
                    raise NotUnderstood("a sequence that is forbidden before something",
                                        [_first_token(steps[1])])
                effect = self.state(steps[0])
                return self._precedence([target], effect)
            if len(steps) == 1:
                first = self.state(steps[0])
                if first.op == "not":
                    # "no Q before P", "Q must not happen before P"
                    return self._precedence([target], first.args[0])
                if first.op == "and":
                    # "greet and identify yourself before X": each of them before X.
                    return _Rule(And(*[precedence(c, target) for c in first.args]))
            return self._precedence([self.state(s) for s in steps], target)
        if kind == "only_after":
            return self._precedence([self.state(s) for s in node.second], self.state(node.first))
        if kind == "precedes":
            return self._precedence([self.state(node.first)], self.state(node.second))
        if kind == "preceded_by":
            return self._precedence([self.state(s) for s in node.second], self.state(node.first))
        if kind == "requires":
            # "transfers above 5000 require a second approval": each needs one before it
            effect, cause = self.state(node.first), self.state(node.second)
            if cause.op == "Y" and cause.args[0].op == "O":
                # "refunds need a sign-off beforehand": the earlier-ness is the requirement's
                cause = cause.args[0].args[0]
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            # "unlocking requires both a verified identity and a completed challenge": each
            # of them before it (one event a step: rarely both at one step)
            causes = cause.args if cause.op == "and" and all(
                c.op in ("atom", "not") for c in cause.args) else (cause,)
            earlier = And(*[c if c.op == "S" else O(c) if how == "same" else Y(O(c))
                            for c in causes])
            return _Rule(G(Implies(effect, earlier)))
        if kind == "requires_before":
            # the subject qualifies the event it must come before: the payout of such a claim
            subject, event = node.first
            effect = And(self.state(subject), self.state(event))
            cause = self.state(node.second)
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            return _Rule(G(Implies(effect, O(cause) if how == "same" else Y(O(cause)))))
        if kind == "only_after_before":
            effect = self.state(node.first)
            after_steps, before = node.second
            earlier = And(*[O(self.state(x)) for x in after_steps])
            return _Rule(G(Implies(effect, And(earlier, Not(O(self.state(before)))))))
        if kind == "preceded_by_prev":
            return _Rule(G(Implies(self.state(node.first), Y(self.state(node.second)))))
        raise AssertionError(kind)  # pragma: no cover

    def _precedence(self, causes: list[Formula], effect: Formula) -> _Rule:
        if len(causes) == 1 and causes[0].op == "S":
            # "the tests must have passed since the last edit before each deploy": a condition
            # on what came before, read at every deploy
            return _Rule(G(Implies(effect, causes[0])))
        if len(causes) == 1:
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            if how == "strict":
                return _Rule(W(Not(effect), And(causes[0], Not(effect))))
            return _Rule(precedence(causes[0], effect), "precedence", p=effect, s=causes[0])
        return _Rule(_precedence_chain(causes, effect))

    def top_until(self, node: Until) -> _Rule:
        left, right = self.state(node.left), self.state(node.right)
        if left.op == "not":
            # "do not ship until paid": the ban lasts until payment, which need not come.
            if node.after:
                return _Rule(W(left, And(right, left)))
            return _Rule(precedence(right, left.args[0]), "precedence", p=left.args[0], s=right)
        if node.after:
            raise NotUnderstood("“until after” is read only with a prohibition (do not P until "
                                "after Q)", [_first_token(node.right)])
        # "the light must stay on until the door is closed": the door may never close (the
        # state then lasts), or must close; a lasting state ("stay", "remain") reads weak first
        choices = [("strong", "the releasing event must come"),
                   ("weak", "the state lasts for the rest of the session if the releasing "
                            "event never comes")]
        how = self.choose("until_top", choices[::-1] if node.left.has("HOLD") else choices)
        return _Rule(U(left, right) if how == "strong" else W(left, right))

    def scoped(self, node: Scoped) -> _Rule:
        scope = node.scope
        rule_node = node.rule
        if scope.kind == "global":
            return self.rule(rule_node)
        if (scope.kind == "before" and isinstance(rule_node, Simple)
                and rule_node.clause.has("PREVIOUSLY")
                and not self.negative(rule_node.clause.mods)):
            # "before measuring, the thermometer must have been picked up": precedence
            clause = Clause([x for x in rule_node.clause.segments
                             if not (isinstance(x, Mod) and x.name == "PREVIOUSLY")])
            return self._precedence([self.subject(clause)], self.state(scope.args[0]))
        if (scope.kind == "after" and isinstance(rule_node, Simple)
                and (rule_node.clause.has("ONLY") or (_permits(rule_node.clause)
                                                      and not self.negative(
                                                          rule_node.clause.mods)))):
            # "after the user is authenticated, the agent may read files": not before
            # "you may only ship after payment": precedence, not a scope.
            effect = self.subject(rule_node.clause)
            return self._precedence([self.state(scope.args[0])], effect)
        inner = self.rule(rule_node)
        args = [self.state(a) for a in scope.args]
        if scope.kind == "after":
            (q,) = args
            which = self.choose("after", [("every", "from every occurrence of the event on"),
                                          ("first", "from the first occurrence of the event on")])
            body = inner.formula
            if inner.kind == "absence":
                # "once the game is over, no further moves": the ban may start at that step
                # or at the next one
                start = self.choose("after_step", [
                    ("same", "the ban starts at the step of the event"),
                    ("next", "the ban starts at the step after the event")])
                if start == "next":
                    body = WX(body)
            if which == "every":
                return _Rule(G(Implies(q, body)))
            return _Rule(W(Not(q), And(q, body)))
        if inner.kind == "other":
            raise NotUnderstood(f"a “{scope.token.text if scope.token else scope.kind}” scope on "
                                "a rule that is not one of the scoped patterns (never, always, "
                                "eventually, precedence, response)", [scope.token])
        kind = scope.kind
        if kind == "before":
            reading = self.choose("before", [
                ("until", "up to that event, whether or not it ever happens"),
                ("dwyer", "only in sessions where that event happens")])
            kind = "before_until" if reading == "until" else "before"
        if kind == "between" and inner.kind != "existence":
            reading = self.choose("between", [
                ("until", "up to the closing event, whether or not it comes"),
                ("dwyer", "only in stretches that the closing event ends")])
            kind = "after_until" if reading == "until" else "between"
        return _Rule(_scoped(inner, kind, args))
