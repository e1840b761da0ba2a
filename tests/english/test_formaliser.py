"""The offline English-to-LTL formaliser (``studio.english``).

Answers are judged by meaning, never by text: a formalised rule is right when no trace tells it
apart from the expected formula (``studio.logic.review.distinguishing_trace``).  The scoped
patterns are also checked against their definition (Dwyer et al.'s intervals, read on finite
traces) by brute force through the finite-trace oracle.
"""

from __future__ import annotations

import itertools
import random
import time

import pytest

from studio.english import Formalisation, Formaliser, formalise
from studio.english.formaliser import OfflineFormaliser
from studio.english.lexing import lex
from studio.logic.finite import holds
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace
from tests.english.table import TABLE
from tests.logic.test_purity import _import_in_fresh_interpreter

GOAL = 0.9
MAX_LENGTH = 12


def _atom_names(f) -> set[str]:
    return {g.name for g in f.subformulas() if g.op == "atom"}


@pytest.fixture(scope="module")
def graded():
    """Every row of the table, formalised and compared with its expected formula."""
    rows = []
    started = time.perf_counter()
    for row in TABLE:
        answer = formalise(row.english)
        expected = parse(row.expected)
        trace = None
        if answer.formula is not None:
            trace = distinguishing_trace(answer.formula, expected, max_length=MAX_LENGTH)
        rows.append((row, answer, expected, trace))
    elapsed = time.perf_counter() - started
    return rows, elapsed


def _right(answer: Formalisation, trace) -> bool:
    return answer.formula is not None and trace is None


# ---------------------------------------------------------------------------------------------
# The table

def test_the_table_covers_the_patterns_and_the_papers_rules():
    assert len(TABLE) >= 60
    sources = {row.source.split()[0] for row in TABLE}
    assert {"pattern", "table2", "sec3.1", "ipc", "textworld", "scienceworld", "data"} <= sources
    assert len({row.english for row in TABLE}) == len(TABLE), "duplicate rows"
    for row in TABLE:
        parse(row.expected)  # every expected formula is well formed


def test_share_of_the_table_read_right(graded):
    rows, elapsed = graded
    failures = [(row, answer, trace) for row, answer, _, trace in rows
                if not _right(answer, trace)]
    share = 1 - len(failures) / len(rows)
    print(f"\noffline formaliser: {len(rows) - len(failures)}/{len(rows)} rules right "
          f"({share:.1%}); {elapsed:.1f}s for formalising and comparing the table")
    for row, answer, trace in failures:
        if answer.formula is None:
            print(f"  UNREAD  {row.english!r}: {answer.message} {answer.unplaced}")
        else:
            shown = [sorted(letter) for letter in trace]
            print(f"  WRONG   {row.english!r}\n          got {answer.text}\n"
                  f"          expected {row.expected}\n          they differ on {shown}")
    assert share >= GOAL


@pytest.mark.parametrize("source", ["ipc", "textworld", "scienceworld", "table2"])
def test_each_papers_rules_are_read(graded, source):
    rows, _ = graded
    mine = [(row, answer, trace) for row, answer, _, trace in rows
            if row.source.split()[0] == source]
    assert mine
    right = sum(_right(answer, trace) for _, answer, trace in mine)
    assert right / len(mine) >= GOAL, [row.english for row, a, t in mine if not _right(a, t)]


def test_every_answer_prints_to_text_that_parses_back_to_it(graded):
    rows, _ = graded
    for row, answer, _, _ in rows:
        if answer.formula is not None:
            assert answer.text == answer.formula.text
            assert parse(answer.text) is answer.formula, row.english
            assert answer.engine == "offline"
            assert answer.unplaced == () and answer.message == ""


def test_the_atoms_introduced_are_listed(graded):
    rows, _ = graded
    for row, answer, _, _ in rows:
        if answer.formula is not None:
            assert set(answer.atoms) == _atom_names(answer.formula), row.english
            assert len(set(answer.atoms)) == len(answer.atoms)


def test_atoms_are_listed_in_the_order_the_english_names_them():
    answer = formalise("If you take an item, you have to examine it in the next step.")
    assert answer.atoms == ("take_item", "examine_item")
    assert answer.formula is parse("G (take_item -> X examine_item)")
    assert formalise('never "tool_call:send_money"').atoms == ("tool_call:send_money",)
    # A data comparison reads the event: it is no atom to label.
    assert formalise("The amount must never exceed 10000.").atoms == ()


# ---------------------------------------------------------------------------------------------
# Failures: never an exception, always the words and where they are

def _check_unplaced(text: str, answer: Formalisation):
    assert answer.formula is None and answer.text == "" and answer.atoms == ()
    assert answer.message
    assert answer.unplaced
    for word, position in answer.unplaced:
        assert text[position:position + len(word)] == word


@pytest.mark.parametrize("text, words", [
    ("Always greet the customer politely although they are rude.", ["although"]),
    ("The agent sometimes sends money.", ["sometimes"]),
    ("never p q before", ["before"]),
    ("whenever p, eventually q @ r", ["@"]),
    ("The agent is polite.", ["agent", "polite"]),
    ("Never p and (q", ["("]),
])
def test_words_that_cannot_be_placed_are_reported_with_their_position(text, words):
    answer = formalise(text)
    _check_unplaced(text, answer)
    assert [w for w, _ in answer.unplaced] == words


def test_an_unplaceable_word_is_found_after_the_start():
    text = "Whenever p happens, eventually q happens, because r."
    answer = formalise(text)
    # "because" opens a justification, which carries no rule: it is left out, not unplaced.
    assert answer.formula is parse("G (p -> F q)")
    text = "Whenever p happens, eventually q happens although r."
    answer = formalise(text)
    _check_unplaced(text, answer)
    assert answer.unplaced == (("although", text.index("although")),)


@pytest.mark.parametrize("text", [
    "", "   ", ".", "!!!", "never", "always always", "before after until", "the the the",
    "whenever , then", "p at most 0.5 times", "within 99999999 steps p must happen",
    "whenever p, q within 20000 steps", "it", "never it", "(((((", "\"\"", "never \"\"",
    "p only", "after q, ", "x" * 5000, "never " + "p and " * 200 + "q",
    "Between q and r, p must happen in the next step.", "never p at most once",
    "the amount exceeds", "never exceeds 5",
])
def test_bad_english_gives_a_message_never_an_exception(text):
    answer = formalise(text)
    assert isinstance(answer, Formalisation)
    if answer.formula is None:
        assert answer.message
        for word, position in answer.unplaced:
            assert text[position:position + len(word)] == word
    else:
        assert parse(answer.text) is answer.formula


def test_a_wrong_argument_type_is_a_programming_error():
    with pytest.raises(TypeError):
        formalise(None)
    with pytest.raises(ValueError):
        formalise("never p", engine="no-such-engine")


def test_the_offline_engine_plugs_in_behind_the_engine_interface():
    engine = OfflineFormaliser()
    assert isinstance(engine, Formaliser)
    assert engine.name == "offline"
    assert engine.formalise("never p").formula is parse("G !p")


# ---------------------------------------------------------------------------------------------
# The scoped patterns mean what Dwyer et al. say, on finite traces

def _intervals(trace, scope: str) -> list[tuple[int, int]]:
    """The half-open intervals [a, b) of the trace that a scope selects."""
    n = len(trace)
    qs = [i for i, letter in enumerate(trace) if "q" in letter]
    rs = [i for i, letter in enumerate(trace) if "r" in letter]
    if scope == "global":
        return [(0, n)]
    if scope == "before":
        return [(0, rs[0])] if rs else []
    if scope == "after":
        return [(qs[0], n)] if qs else []
    out = []
    for i in qs:
        if "r" in trace[i]:
            continue
        closing = next((j for j in rs if j > i), None)
        if closing is not None:
            out.append((i, closing))
        elif scope == "after_until":
            out.append((i, n))
    return out


def _pattern_holds(trace, pattern: str, a: int, b: int) -> bool:
    at = range(a, b)
    if pattern == "absence":
        return not any("p" in trace[i] for i in at)
    if pattern == "universality":
        return all("p" in trace[i] for i in at)
    if pattern == "existence":
        return any("p" in trace[i] for i in at)
    if pattern == "precedence":  # s precedes p
        return all(any("s" in trace[j] for j in range(a, i + 1))
                   for i in at if "p" in trace[i])
    if pattern == "response":  # s responds to p
        return all(any("s" in trace[j] for j in range(i, b)) for i in at if "p" in trace[i])
    raise AssertionError(pattern)


SCOPES = {"global": "", "before": "Before r, ", "after": "After q, ",
          "between": "Between q and r, ", "after_until": "After q until r, "}
PATTERNS = {"absence": "p never happens.", "universality": "p must always hold.",
            "existence": "p must eventually happen.", "precedence": "p only after s.",
            "response": "every p is followed by s."}


def _traces(atoms: str, exhaustive_length: int, samples: int, seed: int = 7):
    letters = [frozenset(c) for k in range(len(atoms) + 1)
               for c in itertools.combinations(atoms, k)]
    for n in range(1, exhaustive_length + 1):
        yield from (list(t) for t in itertools.product(letters, repeat=n))
    rng = random.Random(seed)
    for _ in range(samples):
        yield [rng.choice(letters) for _ in range(rng.randint(exhaustive_length + 1, 9))]


TRACES = list(_traces("pqrs", 3, 1500))


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_scoped_patterns_agree_with_their_interval_definition(scope, pattern):
    """One of the readings offered is Dwyer et al.'s scoped pattern (for "before" and "after"
    it need not be the first: see the next test)."""
    answer = formalise(SCOPES[scope] + PATTERNS[pattern])
    assert answer.formula is not None, answer.message

    def agrees(f) -> bool:
        # Existence between q and r asks for p only in intervals that r closes; after q until
        # r also in the last, open one.  Every other pattern holds on every selected interval.
        return all(
            holds(f, [(letter, None) for letter in trace])
            == all(_pattern_holds(trace, pattern, a, b) for a, b in _intervals(trace, scope))
            for trace in TRACES)

    assert any(agrees(r.formula) for r in answer.readings), [r.text for r in answer.readings]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_before_and_after_scopes_are_first_read_as_people_mean_them(pattern):
    """"Before r, ..." first means "up to r, whether or not r comes" (not Dwyer's vacuous
    reading when r never happens); "After q, ..." means after every q, not only the first."""
    before = formalise(SCOPES["before"] + PATTERNS[pattern]).formula
    after = formalise(SCOPES["after"] + PATTERNS[pattern]).formula
    for trace in TRACES:
        rs = [i for i, letter in enumerate(trace) if "r" in letter]
        qs = [i for i, letter in enumerate(trace) if "q" in letter]
        # (existence before r is precedence: p by the first r, none needed without an r)
        if rs:
            end = rs[0] + 1 if pattern == "existence" else rs[0]
            until_r = _pattern_holds(trace, pattern, 0, end)
        else:
            until_r = pattern == "existence" or _pattern_holds(trace, pattern, 0, len(trace))
        assert holds(before, [(x, None) for x in trace]) == until_r, (before.text, trace)
        after_each_q = all(_pattern_holds(trace, pattern, i, len(trace)) for i in qs)
        assert holds(after, [(x, None) for x in trace]) == after_each_q, (after.text, trace)


@pytest.mark.parametrize("text, count_ok", [
    ("p must happen at most twice", lambda n: n <= 2),
    ("p may happen at most 3 times", lambda n: n <= 3),
    ("p must happen at least 3 times", lambda n: n >= 3),
    ("p must happen exactly twice", lambda n: n == 2),
])
def test_counting_rules_count(text, count_ok):
    f = formalise(text).formula
    for trace in _traces("p", 8, 0):
        count = sum("p" in letter for letter in trace)
        assert holds(f, [(letter, None) for letter in trace]) == count_ok(count), trace


def test_a_precedence_chain_needs_its_causes_in_order_before_the_effect():
    f = formalise("r only after p and then q").formula

    def allowed(trace) -> bool:
        for k, letter in enumerate(trace):
            if "r" in letter:
                return any("p" in trace[i] and any("q" in trace[j] for j in range(i + 1, k + 1))
                           for i in range(k))
        return True

    for trace in _traces("pqr", 4, 800):
        assert holds(f, [(letter, None) for letter in trace]) == allowed(trace), trace


# ---------------------------------------------------------------------------------------------
# The error search is bounded by steps, not by a clock

def test_the_message_for_unreadable_english_does_not_depend_on_the_clock(monkeypatch):
    # 21 parses find the two words to leave out: under a time limit a busy machine named
    # other words (or none).  A clock that jumps an hour at every reading changes nothing.
    text = "Never: the agent stops (max_tokens)."
    calm = formalise(text)
    assert calm.message.startswith("Could not place “agent”, “stops” in a rule pattern")
    clock = itertools.count(0.0, 3600.0)
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(time, "time", lambda: next(clock))
    busy = formalise(text)
    assert busy.message == calm.message and busy.unplaced == calm.unplaced


# ---------------------------------------------------------------------------------------------
# Purity

def test_the_english_package_imports_without_django():
    modules = ["studio.english", "studio.english.formaliser"]
    report = _import_in_fresh_interpreter(*modules)
    assert report["imported"] == modules
    assert report["django"] == []


# ---------------------------------------------------------------------------------------------
# Grounding in a workspace's vocabulary: guesses are offered as readings, never made silently

class _Vocabulary:
    def __init__(self, atoms, paths=None):
        self.atoms = frozenset(atoms)
        self.paths = {p: {t} for p, t in (paths or {}).items()}


def _offered(answer) -> list:
    return [r.formula for r in answer.readings]


def _among(expected: str, answer) -> bool:
    meant = parse(expected)
    return any(distinguishing_trace(f, meant, max_length=MAX_LENGTH) is None
               for f in _offered(answer))


MEETINGS = _Vocabulary({"tool_call:book_meeting", "tool_call:send_invite", "role:user"})


def test_words_the_vocabulary_does_not_cover_are_offered_as_a_restriction():
    answer = formalise("Meetings must never be booked outside business hours.",
                       vocabulary=MEETINGS)
    assert len(answer.readings) >= 2
    assert _among("G !(tool_call:book_meeting & outside_business_hours)", answer)
    assert _among("G !tool_call:book_meeting", answer)
    assert all(r.why for r in answer.readings)


def test_a_role_atom_names_who_speaks_not_what_is_said():
    answer = formalise("When the user reports a problem, the bot must book a meeting within "
                       "3 steps.", vocabulary=MEETINGS)
    assert all("role:user" not in r.text for r in answer.readings), answer.text
    assert _among("G (user_reports_problem -> F[0,3] tool_call:book_meeting)", answer)


def test_a_forbidden_amount_is_read_as_the_limit_of_each_event():
    vocabulary = _Vocabulary({"tool_call:refund"}, {"output.args.amount": "number"})
    answer = formalise("No single refund may exceed 200 dollars.", vocabulary=vocabulary)
    assert _among("G (tool_call:refund -> output.args.amount <= 200)", answer), answer.text
    answer = formalise("Never refund more than 200.", vocabulary=vocabulary)
    # the limit first (a refund whose amount is missing breaks it); a refund shown above the
    # limit, the only one that breaks the plain reading, offered second
    assert [r.text for r in answer.readings] == [
        "G (tool_call:refund -> output.args.amount <= 200)",
        "G !(output.args.amount > 200 & tool_call:refund)"]


def test_the_object_of_a_call_is_its_arguments_value():
    vocabulary = _Vocabulary({"tool_call:open", "tool_call:go"},
                             {"output.args.object": "string"})
    answer = formalise("Players must never open the trapdoor.", vocabulary=vocabulary)
    assert answer.text == 'G !(output.args.object == "trapdoor" & tool_call:open)'
    answer = formalise('Never open the door named "vault".', vocabulary=vocabulary)
    assert _among('G !(tool_call:open & output.args.object == "vault")', answer), answer.text


def test_a_failed_call_reads_its_status():
    vocabulary = _Vocabulary({"tool_call:kyc_check", "tool_call:transfer_funds"},
                             {"data.status": "string"})
    answer = formalise("If a KYC check fails, the bot must not transfer funds for the rest of "
                       "the session.", vocabulary=vocabulary)
    assert _among('G ((tool_call:kyc_check & data.status == "failed") -> '
                  'G !tool_call:transfer_funds)', answer), answer.text


def test_a_list_of_steps_after_commas_is_one_sequence():
    vocabulary = _Vocabulary({"tool_call:run_tests", "tool_call:commit",
                              "tool_call:request_review"})
    answer = formalise("The agent should run the tests, then commit, then request a review.",
                       vocabulary=vocabulary)
    assert len(answer.readings) == 1
    assert _among("F (tool_call:run_tests & F (tool_call:commit & F tool_call:request_review))",
                  answer), answer.text


def test_a_relative_clause_qualifies_the_object_and_a_negated_adjective_a_state():
    answer = formalise("Do not ship to an address that has not been verified.")
    assert _among("G (ship_to_address -> verified)", answer), answer.text
    answer = formalise("Never go west while the lantern is unlit.")
    assert _among("G (go_west -> lantern_lit)", answer), answer.text


# ---------------------------------------------------------------------------------------------
# Constructions found in rules written by people who never saw the grammar (issue 14): where
# the English leaves the meaning open, every reading is offered, never one silent guess

SHOP = _Vocabulary({"tool_call:ship_order", "tool_call:notify_customer", "tool_call:refund",
                    "tool_call:send_replacement", "tool_call:check_inventory",
                    "tool_call:place_order", "tool_call:book_flight", "tool_call:book_hotel",
                    "payment_pending"},
                   {"output.args.amount": "number"})


def _readings(text: str, vocabulary=SHOP) -> list[str]:
    return [r.text for r in formalise(text, vocabulary=vocabulary).readings]


@pytest.mark.parametrize("text, expected", [
    ("No more than two refunds may be issued.",
     "G (tool_call:refund -> WX G (tool_call:refund -> WX G !tool_call:refund))"),
    ("The agent must place exactly one order.",
     "F tool_call:place_order & G (tool_call:place_order -> WX G !tool_call:place_order)"),
])
def test_a_count_before_a_noun_counts_the_events(text, expected):
    assert _among(expected, formalise(text, vocabulary=SHOP)), _readings(text)


def test_within_k_steps_of_a_trigger_is_offered_counting_its_step_and_after_it():
    answer = formalise("Whenever an order ships, the customer must be notified within 3 steps.",
                       vocabulary=SHOP)
    assert _among("G (tool_call:ship_order -> F[0,3] tool_call:notify_customer)", answer)
    assert _among("G (tool_call:ship_order -> F[1,3] tool_call:notify_customer)", answer)
    answer = formalise("Customers must be notified within 3 steps of any shipment.",
                       vocabulary=SHOP)
    assert _among("G (tool_call:ship_order -> F[0,3] tool_call:notify_customer)", answer)


def test_a_ban_on_the_triggers_own_event_starts_at_the_next_step():
    answer = formalise("Once a refund has gone through, neither another refund nor a "
                       "replacement may be sent.", vocabulary=SHOP)
    assert answer.text == ("G (tool_call:refund -> WX G !(tool_call:refund | "
                           "tool_call:send_replacement))")


def test_an_opening_clause_without_its_comma_is_read():
    answer = formalise("Once the order ships the customer must be notified.", vocabulary=SHOP)
    assert _among("G (tool_call:ship_order -> F tool_call:notify_customer)", answer), \
        answer.text


def test_immediately_before_is_the_step_before():
    answer = formalise("The stock check has to happen right before an order is placed.",
                       vocabulary=SHOP)
    assert answer.text == "G (tool_call:place_order -> Y tool_call:check_inventory)"


def test_must_have_after_a_before_scope_is_precedence():
    answer = formalise("Before shipping an order, the agent must have checked the inventory.",
                       vocabulary=SHOP)
    assert _among("!tool_call:ship_order W tool_call:check_inventory", answer), answer.text


def test_while_inside_a_sentence_guards_the_rule():
    answer = formalise("No order may be placed while a payment is pending.", vocabulary=SHOP)
    assert _among("G (payment_pending -> !tool_call:place_order)", answer), answer.text


def test_a_phrase_that_fits_several_entries_equally_reads_as_any_of_them():
    answer = formalise("While a payment is pending, no other booking may be made.",
                       vocabulary=SHOP)
    assert answer.text == ("G (payment_pending -> !(tool_call:book_flight | "
                           "tool_call:book_hotel))")
    assert len(answer.readings) == 2    # the first entry alone, offered second


def test_a_reading_that_holds_on_every_session_is_never_offered():
    answer = formalise("Between shipping an order and shipping it, never refund.",
                       vocabulary=SHOP)
    for reading in answer.readings:
        assert distinguishing_trace(reading.formula, parse("true"),
                                    max_length=MAX_LENGTH) is not None


SUPPORT = _Vocabulary({"role:assistant", "role:user", "requests_pin", "dispute_raised",
                       "tool_call:refund", "manager_approved", "tool_call:issue_payout",
                       "tool_call:deny_claim"},
                      {"output.args.amount": "number", "data.balance": "number",
                       "output.args.temp_c": "number"})


def test_a_label_of_what_the_agent_says_is_offered_on_the_assistants_messages():
    answer = formalise("Never ask the customer for their full PIN.", vocabulary=SUPPORT)
    assert _among("G !(role:assistant & requests_pin)", answer), answer.text
    assert _among("G !requests_pin", answer)
    # named outright, the assistant's messages come first
    answer = formalise("Requests for a PIN never appear in assistant messages.",
                       vocabulary=SUPPORT)
    assert answer.readings[0].formula == parse("G !(role:assistant & requests_pin)") or \
        distinguishing_trace(answer.readings[0].formula,
                             parse("G !(role:assistant & requests_pin)"),
                             max_length=MAX_LENGTH) is None, answer.text


@pytest.mark.parametrize("text", [
    "Every dispute a customer raises must be acknowledged by the assistant within 3 steps.",
    "Every dispute gets a reply within 3 steps.",
])
def test_a_reply_is_a_message_of_the_assistant(text):
    answer = formalise(text, vocabulary=SUPPORT)
    assert _among("G (dispute_raised -> F[1,3] role:assistant)", answer) or _among(
        "G (dispute_raised -> F[0,3] role:assistant)", answer), answer.text


def test_a_label_before_a_colon_is_not_part_of_the_rule():
    plain = formalise("Refunds must never exceed 500 dollars.", vocabulary=SUPPORT)
    for label in ("PAY-412: ", "On-call note: ", "Per compliance, "):
        labelled = formalise(label + "refunds must never exceed 500 dollars.",
                             vocabulary=SUPPORT)
        assert [r.text for r in labelled.readings] == [r.text for r in plain.readings], label


def test_units_and_negative_values_are_comparisons():
    answer = formalise("The oven temperature must never be above 250 °C.", vocabulary=SUPPORT)
    assert answer.ok and "250" in answer.text and "°" not in answer.text, answer.message
    answer = formalise("The balance must never go negative.", vocabulary=SUPPORT)
    assert _among("G !(data.balance < 0)", answer), answer.text


def test_a_plural_subject_reads_each_one():
    answer = formalise("Refunds over 500 dollars must be approved by a manager.",
                       vocabulary=SUPPORT)
    assert distinguishing_trace(answer.formula, parse(
        "G (tool_call:refund & output.args.amount > 500 -> O manager_approved)"),
        max_length=MAX_LENGTH) is None, answer.text
    assert _among("F (manager_approved & output.args.amount > 500)", answer)


def test_words_that_name_another_call_make_the_grounding_a_guess():
    answer = formalise("No payout on a denied claim.", vocabulary=SUPPORT)
    assert len(answer.readings) >= 2, answer.text


DEPLOYS = _Vocabulary({"tool_call:deploy", "tests_passed", "tool_call:edit_file",
                       "tool_call:export_data", "user_opted_in", "user_opted_out",
                       "tool_call:run_migration", "tool_call:backup_database"})


@pytest.mark.parametrize("text, expected", [
    ("Before each deploy, the tests need to have passed since the last time code was edited.",
     "G (tool_call:deploy -> (!tool_call:edit_file S tests_passed))"),
    ("Deploys require that the tests have passed since the last edit.",
     "G (tool_call:deploy -> (!tool_call:edit_file S tests_passed))"),
    ("Data can only be exported if the user opted in and hasn't opted out again since.",
     "G (tool_call:export_data -> (!user_opted_out S user_opted_in))"),
    # at a migration, the last migration is an earlier one
    ("Don't migrate unless a backup has been taken since the last migration.",
     "G (tool_call:run_migration -> Y (!tool_call:run_migration S tool_call:backup_database))"),
])
def test_since_reads_what_came_after_the_latest_event(text, expected):
    answer = formalise(text, vocabulary=DEPLOYS)
    assert _among(expected, answer), [r.text for r in answer.readings] or answer.message


def test_since_at_the_start_of_a_sentence_is_not_read_as_a_time():
    # "since" there most often means "because"
    answer = formalise("Since the user is a minor, never sell alcohol.")
    assert not answer.ok


def test_the_words_before_a_colon_can_be_the_summary_of_the_rule_after_it():
    vocabulary = _Vocabulary({"role:user", "role:assistant"})
    answer = formalise("Users shouldn't be left waiting: an assistant reply is expected no "
                       "later than four steps after each user message.", vocabulary=vocabulary)
    assert _among("G (role:user -> F[1,4] role:assistant)", answer), answer.message
    assert all("summary" in r.why for r in answer.readings)


def test_a_count_in_words_after_at_most_is_the_bound():
    vocabulary = _Vocabulary({"tool_call:git_push"})
    answer = formalise("The agent may push at most three times per session.",
                       vocabulary=vocabulary)
    assert _among("!tool_call:git_push W (tool_call:git_push & WX (!tool_call:git_push W "
                  "(tool_call:git_push & WX G (tool_call:git_push -> WX G "
                  "!tool_call:git_push))))", answer), answer.message


def test_a_condition_can_require_an_order_of_events():
    vocabulary = _Vocabulary({"ambiguous_request", "clarifying_question", "tool_call:web_search"})
    answer = formalise("If the request is ambiguous, the agent asks a clarifying question before "
                       "doing any searching.", vocabulary=vocabulary)
    assert _among("G (ambiguous_request -> (!tool_call:web_search W clarifying_question))",
                  answer), answer.message


@pytest.mark.parametrize("text", ["Attendance is taken once per session, not more.",
                                  "Attendance is only taken once."])
def test_once_at_the_end_of_a_clause_is_a_count(text):
    vocabulary = _Vocabulary({"tool_call:mark_attendance", "tool_call:start_class"})
    answer = formalise(text, vocabulary=vocabulary)
    assert _among("G (tool_call:mark_attendance -> WX G !tool_call:mark_attendance)", answer), \
        answer.message


def test_a_colon_before_required_says_what_the_subject_requires():
    vocabulary = _Vocabulary({"tool_call:convert_currency", "manager_approved"},
                             {"output.args.amount": "number"})
    answer = formalise("Currency conversions over 1M: manager sign-off required.",
                       vocabulary=vocabulary)
    assert _among("G (tool_call:convert_currency & output.args.amount > 1000000 -> "
                  "O manager_approved)", answer), answer.message


def test_a_subject_before_a_colon_is_not_taken_for_a_label():
    # "over 1M" has a digit, "for a claim" the word "for": neither makes a label
    tokens = [t for t in lex("Medical records requested for a claim: HIPAA authorization "
                             "first.") if t.kind == "WORD"]
    assert [t.text for t in tokens][:2] == ["Medical", "records"]


def test_a_permission_before_but_forbids_nothing():
    vocabulary = _Vocabulary({"gives_legal_advice", "role:assistant"})
    answer = formalise("You may provide general legal information, but the assistant is not "
                       "allowed to give legal advice.", vocabulary=vocabulary)
    assert _among("G !(role:assistant & gives_legal_advice)", answer), answer.message


def test_ages_are_compared():
    vocabulary = _Vocabulary({"tool_call:send_link"}, {"data.learner_age": "number"})
    answer = formalise("Learners younger than 13 are not to be sent links, whatever the reason.",
                       vocabulary=vocabulary)
    assert _among("G !(tool_call:send_link & data.learner_age < 13)", answer), answer.message


def test_two_calls_required_together_are_each_required():
    vocabulary = _Vocabulary({"goodnight_requested", "tool_call:lock_all_doors",
                              "tool_call:lights_off"})
    answer = formalise("When the user says goodnight, all doors should be locked and the "
                       "lights turned off within five steps.", vocabulary=vocabulary)
    assert _among("G (goodnight_requested -> F[1,5] tool_call:lock_all_doors & "
                  "F[1,5] tool_call:lights_off)", answer), answer.message
    assert all("tool_call:lights_off & tool_call:lock_all_doors" not in r.text
               for r in answer.readings)


def test_at_least_in_a_condition_counts_the_earlier_events():
    vocabulary = _Vocabulary({"tool_call:record_hire_decision", "tool_call:log_interview"})
    answer = formalise("A hiring decision may be recorded only after at least two interviews "
                       "have been logged.", vocabulary=vocabulary)
    assert _among("G (tool_call:record_hire_decision -> O (tool_call:log_interview & "
                  "Y O tool_call:log_interview))", answer), answer.message


def test_only_after_one_event_and_before_another():
    vocabulary = _Vocabulary({"tool_call:run_background_check",
                              "tool_call:extend_conditional_offer", "tool_call:set_start_date"})
    answer = formalise("Background checks may be run only after a conditional offer has been "
                       "extended and before a start date has been set.", vocabulary=vocabulary)
    assert _among("G (tool_call:run_background_check -> O tool_call:extend_conditional_offer "
                  "& !O tool_call:set_start_date)", answer), answer.message


def test_what_a_subject_needs_before_an_event():
    vocabulary = _Vocabulary({"tool_call:pay_claim", "adjuster_approved"},
                             {"output.args.amount": "number"})
    answer = formalise("Claims over $10,000 need an adjuster's approval before they are paid.",
                       vocabulary=vocabulary)
    assert _among("G (tool_call:pay_claim & output.args.amount > 10000 -> O adjuster_approved)",
                  answer), answer.message


def test_a_reading_that_needs_two_calls_at_one_step_is_not_offered():
    vocabulary = _Vocabulary({"tool_call:deposit", "tool_call:kyc_check",
                              "tool_call:open_account"})
    answer = formalise("KYC has to be done before any deposit is accepted, and the account "
                       "can't be opened twice.", vocabulary=vocabulary)
    # every reading the grammar finds joins the deposit and the opening at one step
    assert not answer.ok and "two tool calls" in answer.message, [r.text for r in answer.readings]


def test_a_range_limits_each_event_it_names():
    vocabulary = _Vocabulary({"tool_call:set_thermostat", "tool_call:get_status"},
                             {"output.args.target_c": "number"})
    answer = formalise("Thermostat setpoints must stay between 16 and 28 °C inclusive.",
                       vocabulary=vocabulary)
    assert _among("G (tool_call:set_thermostat -> output.args.target_c >= 16 & "
                  "output.args.target_c <= 28)", answer), [r.text for r in answer.readings]


def test_amounts_in_euros_and_pounds_and_words_in_single_quotes():
    vocabulary = _Vocabulary({"tool_call:issue_refund", "supervisor_approved"},
                             {"output.args.amount": "number"})
    for currency in ("€", "£", "$"):
        answer = formalise(f"Refunds above {currency}500 need a supervisor's sign-off first.",
                           vocabulary=vocabulary)
        assert _among("G (tool_call:issue_refund & output.args.amount > 500 -> "
                      "O supervisor_approved)", answer), answer.message
    answer = formalise("Never send the word 'refund'.")
    assert answer.ok and "refund" in answer.atoms, answer.message


def test_a_state_lasts_from_the_event_that_begins_it_to_the_one_that_ends_it():
    vocabulary = _Vocabulary({"door_opened", "door_closed", "tool_call:move_arm"})
    answer = formalise("The robot arm must not move while the enclosure door is open.",
                       vocabulary=vocabulary)
    first = answer.readings[0]
    assert distinguishing_trace(first.formula, parse(
        "G ((!door_closed S door_opened) -> !tool_call:move_arm)"),
        max_length=MAX_LENGTH) is None, first.text
    assert "lasts until" in first.why
    assert _among("G (door_opened -> !tool_call:move_arm)", answer)


def test_before_every_event_offers_each_its_own_and_one_earlier():
    vocabulary = _Vocabulary({"tool_call:git_commit", "tool_call:run_linter"})
    answer = formalise("Run the linter before every commit.", vocabulary=vocabulary)
    assert _among("G (tool_call:git_commit -> Y (!tool_call:git_commit S tool_call:run_linter))",
                  answer), [r.text for r in answer.readings]
    assert _among("G (tool_call:git_commit -> Y O tool_call:run_linter)", answer)


def test_after_the_most_recent_event_is_since_it():
    vocabulary = _Vocabulary({"tool_call:open_pull_request", "tool_call:edit_file",
                              "tests_passed"})
    answer = formalise("A pull request can only be opened if the tests passed after the most "
                       "recent file edit.", vocabulary=vocabulary)
    assert _among("G (tool_call:open_pull_request -> (!tool_call:edit_file S tests_passed))",
                  answer), [r.text for r in answer.readings]


@pytest.mark.parametrize("text, expected", [
    ("Whenever a flight has been cancelled on our side, the agent's next message to the "
     "customer must include an apology.",
     "G (flight_cancelled_by_airline -> (!role:assistant W (role:assistant & apology_given)))"),
    ("The assistant's first message in a conversation must include a greeting.",
     "!role:assistant W (role:assistant & includes_greeting)"),
])
def test_the_next_or_first_message_of_the_assistant(text, expected):
    vocabulary = _Vocabulary({"flight_cancelled_by_airline", "apology_given", "role:assistant",
                              "role:user", "includes_greeting"})
    answer = formalise(text, vocabulary=vocabulary)
    assert _among(expected, answer), [r.text for r in answer.readings] or answer.message


def test_a_limit_is_offered_on_the_event_and_wherever_the_value_shows():
    vocabulary = _Vocabulary({"tool_call:charge_battery"}, {"data.soc_pct": "number"})
    answer = formalise("Battery state of charge must stay between 10% and 90% at all times.",
                       vocabulary=vocabulary)
    assert _among("G !(data.soc_pct < 10 | data.soc_pct > 90)", answer), \
        [r.text for r in answer.readings]
    assert len(answer.readings) >= 2 and all(r.why for r in answer.readings)
    answer = formalise("If grid frequency falls below 49.8 Hz, load shedding must start within "
                       "2 steps.", vocabulary=_Vocabulary({"tool_call:shed_load"},
                                                          {"data.frequency_hz": "number"}))
    assert _among("G (data.frequency_hz < 49.8 -> F[1,2] tool_call:shed_load)", answer), \
        answer.message


def test_x_means_y_is_a_condition():
    vocabulary = _Vocabulary({"sanctions_hit", "tool_call:release_payment"})
    answer = formalise("A sanctions hit means no payment may be released for the rest of the "
                       "session.", vocabulary=vocabulary)
    assert _among("G (sanctions_hit -> G !tool_call:release_payment)", answer), \
        [r.text for r in answer.readings] or answer.message


def test_only_before_an_event_means_none_after_it():
    vocabulary = _Vocabulary({"tool_call:refund_tuition", "census_date_passed"})
    answer = formalise("Tuition refunds may only be processed before the census date.",
                       vocabulary=vocabulary)
    assert _among("G (tool_call:refund_tuition -> !O census_date_passed)", answer), \
        [r.text for r in answer.readings]
    assert not _among("!census_date_passed W tool_call:refund_tuition", answer)


@pytest.mark.parametrize("text, expected", [
    ("Test fails if player HP ever goes negative.", "G !(data.player.hp < 0)"),
    ("The balance must never decrease from one step to the next.",
     "G !(data.balance < prev(data.balance))"),
])
def test_how_testers_and_analysts_write_a_ban(text, expected):
    vocabulary = _Vocabulary({"role:assistant"}, {"data.player.hp": "number",
                                                   "data.balance": "number"})
    assert _among(expected, formalise(text, vocabulary=vocabulary))


def test_a_condition_can_govern_both_parts_of_a_sentence():
    vocabulary = _Vocabulary({"sanctions_hit", "tool_call:release_payment",
                              "tool_call:escalate_to_compliance"})
    answer = formalise("A sanctions hit means no payment may be released for the rest of the "
                       "session, and the case has to be escalated to compliance.",
                       vocabulary=vocabulary)
    assert _among("G (sanctions_hit -> (G !tool_call:release_payment & "
                  "F tool_call:escalate_to_compliance))", answer), [r.text for r in answer.readings]
    assert _among("F tool_call:escalate_to_compliance & "
                  "G (sanctions_hit -> G !tool_call:release_payment)", answer)


def test_at_least_in_what_a_condition_requires_counts_the_earlier_events():
    vocabulary = _Vocabulary({"tool_call:end_chat", "abusive_language"})
    answer = formalise("The agent may end a chat only if the customer has been abusive at "
                       "least twice.", vocabulary=vocabulary)
    assert _among("G (tool_call:end_chat -> O (abusive_language & Y O abusive_language))",
                  answer), answer.message


def test_from_the_moment_x_until_y_is_a_scope():
    vocabulary = _Vocabulary({"freeze_announced", "freeze_lifted", "tool_call:deploy"})
    answer = formalise("From the moment a change freeze is announced until it is lifted, "
                       "nothing gets deployed.", vocabulary=vocabulary)
    assert _among("G (freeze_announced -> (!tool_call:deploy W freeze_lifted))", answer), \
        [r.text for r in answer.readings] or answer.message


@pytest.mark.parametrize("text, expected", [
    ("After three failed logins, the account must be locked.",
     "G ((login_failed & Y O (login_failed & Y O login_failed)) -> F tool_call:lock_account)"),
    ("If the customer shows frustration a second time, hand them over to a human agent.",
     "G ((frustration_detected & Y O frustration_detected) -> F tool_call:handoff_to_human)"),
])
def test_a_trigger_can_be_the_nth_occurrence(text, expected):
    vocabulary = _Vocabulary({"login_failed", "tool_call:lock_account", "frustration_detected",
                              "tool_call:handoff_to_human"})
    assert _among(expected, formalise(text, vocabulary=vocabulary))


def test_a_greeting_opens_no_rule_and_a_rule_that_bans_its_own_trigger_is_not_offered():
    vocabulary = _Vocabulary({"tool_call:refund", "tool_call:close_account", "user_confirmed"})
    assert _among("G (tool_call:refund -> WX G !tool_call:refund)",
                  formalise("Folks, never refund twice.", vocabulary=vocabulary))
    answer = formalise("Hey team, if a customer asks to close their account, get an explicit "
                       "confirmation from them before you actually call close_account.",
                       vocabulary=vocabulary)
    assert all(not (r.formula.op == "G" and r.formula.args[0].op == "implies"
                    and r.formula.args[0].args[0] == parse("tool_call:close_account")
                    and "!tool_call:close_account W" in r.text) for r in answer.readings), \
        [r.text for r in answer.readings]


def test_a_rule_that_answers_its_trigger_with_itself_is_not_offered():
    answer = formalise("Whenever a payment is declined, the payment decline must be logged "
                       "within 2 steps.", vocabulary=_Vocabulary({"payment_declined"}))
    assert not answer.ok and "calls for the very event that triggers it" in answer.message, \
        [r.text for r in answer.readings]


def test_a_number_no_reading_uses_is_reported():
    vocabulary = _Vocabulary({"tool_call:submit_bid"}, {"output.args.price_per_mwh": "number"})
    answer = formalise("The operator shall not submit any bid priced above the market cap of "
                       "1,000 per MWh.", vocabulary=vocabulary)
    assert not answer.ok and "1,000" in answer.message
    assert [w for w, _ in answer.unplaced] == ["1,000"]


@pytest.mark.parametrize("text", [
    "only before time",
    "don't are banned for every occurrence of is a violation",
    "on the next step at the next time step each time that are off the table",
])
def test_a_rule_part_that_names_nothing_is_a_message_not_a_crash(text):
    # found by random keyword strings: an empty clause had no first word to point at
    answer = formalise(text)
    assert not answer.ok and answer.message
