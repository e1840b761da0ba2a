"""Grounding English phrases onto a workspace's vocabulary (``studio.english.grounding``).

Each test formalises a rule with a small vocabulary and checks the readings by meaning
(``distinguishing_trace``), never by text: the intended formula must be one of the readings, and
where a grounding would be wrong, no reading may use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.english import formalise
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace


@dataclass(frozen=True)
class Vocab:
    atoms: frozenset
    paths: dict = field(default_factory=dict)


def vocab(atoms, paths=None) -> Vocab:
    return Vocab(frozenset(atoms), {p: {t} for p, t in (paths or {}).items()})


def readings(english: str, vocabulary: Vocab) -> list:
    answer = formalise(english, vocabulary=vocabulary)
    return [r.formula for r in answer.readings]


def same(f, expected: str) -> bool:
    return distinguishing_trace(f, parse(expected), max_length=8) is None


def has_reading(english: str, vocabulary: Vocab, expected: str) -> bool:
    return any(same(f, expected) for f in readings(english, vocabulary))


def atoms_of(f) -> set:
    return {g.name for g in f.subformulas() if g.op == "atom"}


# ---------------------------------------------------------------------------------------------
# Entries whose words tie: the one closest to how the phrase is written

LIGHTS = vocab({"tool_call:lights_on", "tool_call:lights_off", "motion_detected"})


def test_the_particle_tells_on_from_off():
    rule = "When motion is detected, the lights must be turned on within 2 steps."
    found = readings(rule, LIGHTS)
    assert any(same(f, "G (motion_detected -> F[1,2] tool_call:lights_on)") for f in found)
    assert not any(same(f, f"G (motion_detected -> F[{k},2] tool_call:lights_off)")
                   for f in found for k in (0, 1))
    assert all("tool_call:lights_on" not in atoms_of(f)
               for f in readings("The lights must never be switched off.", LIGHTS))


def test_the_phrase_own_word_before_a_synonym():
    shop = vocab({"tool_call:apply_coupon", "tool_call:apply_discount", "role:user"},
                 {"output.args.percent": "number"})
    found = readings("Never apply a discount above 30 percent.", shop)
    assert any(same(f, "G !(tool_call:apply_discount & output.args.percent > 30)")
               for f in found)
    assert all("tool_call:apply_coupon" not in atoms_of(f) for f in found)


def test_a_call_named_by_its_object_is_the_plain_one():
    mail = vocab({"tool_call:draft_email", "tool_call:send_email", "role:user"})
    found = readings("Emailing is never allowed.", mail)
    assert any(same(f, "G !tool_call:send_email") for f in found)
    assert all("tool_call:draft_email" not in atoms_of(f) for f in found)


def test_a_label_and_a_call_that_tie_are_not_settled_by_the_generic_verb():
    # "read" is a generic verb (get): it must not make the call win over the label
    from studio.english.ground_atoms import ground_ties
    tied = ground_ties("secrets_shown", {"contains_secret", "tool_call:read_secret"})
    assert "contains_secret" in tied


# ---------------------------------------------------------------------------------------------
# The words beyond a call's own: irregular verbs, flags and values together, several words

GAME = vocab({"tool_call:go", "tool_call:take", "tool_call:examine"},
             {"output.args.direction": "string", "output.args.object": "string"})


def test_an_irregular_form_names_the_call():
    found = readings("Going west is never allowed.", GAME)
    assert any(same(f, 'G !(tool_call:go & output.args.direction == "west")') for f in found)
    assert all(atoms_of(f) <= GAME.atoms for f in found)


def test_a_value_of_several_words():
    assert has_reading("Never take the silver key.", GAME,
                       'G !(tool_call:take & output.args.object == "silver key")')
    assert has_reading("No going west until the player has picked up the silver key.", GAME,
                       '!(tool_call:go & output.args.direction == "west") W '
                       '(tool_call:take & output.args.object == "silver key")')


def test_several_words_are_no_value_when_more_follows():
    from studio.english.ground_phrases import ground_phrase
    grounded, _ = ground_phrase("opening_level_means_unlocking",
                                {"tool_call:open", "tool_call:unlock"},
                                {"output.args.object": {"string"}})
    assert "level" not in grounded.text


def test_a_flag_and_a_value_hold_together():
    git = vocab({"tool_call:git_push", "tool_call:git_commit"},
                {"output.args.force": "boolean", "output.args.branch": "string"})
    found = readings("Force-pushing to develop is not allowed.", git)
    assert same(found[0], 'G !(tool_call:git_push & output.args.force == true & '
                          'output.args.branch == "develop")')


def test_a_word_before_the_call_is_not_where_it_goes():
    records = vocab({"tool_call:share_record", "consent_given"},
                    {"output.args.recipient": "string"})
    found = readings("Never share patient records without consent.", records)
    assert same(found[0], "G (tool_call:share_record -> O consent_given)")
    assert has_reading("Never share records with the insurer.", records,
                       'G !(tool_call:share_record & output.args.recipient == "insurer")')


# ---------------------------------------------------------------------------------------------
# A state that lasts until a call ends it: "stays shut" is "is not opened"

def test_a_state_is_the_call_that_ends_it_not_happening():
    game = vocab({"tool_call:unlock", "tool_call:examine", "tool_call:go"},
                 {"output.args.object": "string"})
    rule = "The safe stays locked until the player has examined the note."
    found = readings(rule, game)
    assert same(found[0], 'G (tool_call:unlock & output.args.object == "safe" -> '
                          'O (tool_call:examine & output.args.object == "note"))')
    # a guess: the invented state is offered beside it
    assert any(atoms_of(f) - game.atoms for f in found)
    quiz = vocab({"tool_call:show_results", "tool_call:finish_exam"})
    found = readings("Exam results stay hidden until the exam is finished.", quiz)
    assert same(found[0], "G (tool_call:show_results -> O tool_call:finish_exam)")
    assert all(not same(f, "tool_call:show_results W tool_call:finish_exam") for f in found)
    office = vocab({"tool_call:share_report", "tool_call:schedule_audit", "audit_closed"})
    found = readings("Audit reports are to be kept confidential until the audit is closed.",
                     office)
    assert same(found[0], "!tool_call:share_report W audit_closed")


def test_a_state_the_logs_record_is_kept():
    house = vocab({"tool_call:unlock", "door_locked", "tool_call:examine"},
                  {"output.args.object": "string"})
    found = readings("The door stays locked until the player has examined the note.", house)
    assert all("tool_call:unlock" not in atoms_of(f) for f in found)
    assert any("door_locked" in atoms_of(f) for f in found)


# ---------------------------------------------------------------------------------------------
# An argument's value beside a call named loosely; who speaks

def test_a_value_beside_a_call_named_loosely():
    rule = "Until the customer's age has been verified, no tobacco can go into the basket."
    shop = vocab({"tool_call:add_to_basket", "tool_call:checkout", "age_verified"},
                 {"output.args.category": "string"})
    assert has_reading(rule, shop, '!(tool_call:add_to_basket & '
                                   'output.args.category == "tobacco") W age_verified')
    # an identifier holds no English word
    ids = vocab({"tool_call:add_to_basket", "tool_call:checkout", "age_verified"},
                {"output.args.item_id": "string"})
    assert all(g.op != "cmp" for f in readings(rule, ids) for g in f.subformulas())


def test_the_assistant_telling_about_something_is_its_message():
    shop = vocab({"order_cancelled", "role:assistant", "tool_call:cancel_order",
                  "tool_call:charge_card"})
    rule = ("Whenever an order is cancelled, the assistant has to tell the customer about the "
            "card charge within two steps.")
    found = readings(rule, shop)
    assert any(same(f, "G (order_cancelled -> F[1,2] role:assistant)") for f in found)
    assert all("tool_call:charge_card" not in atoms_of(f) for f in found)


def test_words_left_over_that_name_a_label_restrict_the_call():
    notes = vocab({"tool_call:update_traveller_notes", "contains_passport", "contains_pii",
                   "role:user"}, {"output.args.note_text": "string"})
    assert has_reading("Don't store passports in the traveller notes.", notes,
                       "G !(tool_call:update_traveller_notes & contains_passport)")


def test_no_value_is_a_preposition_or_a_word_of_another_call():
    shell = vocab({"tool_call:run_shell", "tool_call:read_file"},
                  {"output.args.user": "string"})
    for f in readings("The agent may not run shell commands as root.", shell):
        assert all(g.op != "cmp" or "as" not in str(g.payload.right[1]).split()
                   for g in f.subformulas())


def test_a_content_label_is_offered_on_the_call_that_carries_it():
    shifts = vocab({"contains_card_number", "contains_pii", "role:assistant",
                    "tool_call:write_shift_report"})
    found = readings("Shift reports must not include card numbers.", shifts)
    assert any(same(f, "G !(tool_call:write_shift_report & contains_card_number)")
               for f in found)
    # the label alone stays a reading: the author picks
    assert any(same(f, "G !contains_card_number") for f in found)


def test_a_label_that_is_no_content_is_not_put_on_a_call():
    shop = vocab({"customer_confirmed", "tool_call:create_order", "tool_call:charge_card"})
    found = readings("We never charge a card until the customer has confirmed the order total.",
                     shop)
    assert all("tool_call:create_order" not in atoms_of(f) for f in found)


def test_what_the_other_side_asks_is_a_user_message():
    desk = vocab({"role:user", "role:assistant", "tool_call:lookup_fares"})
    found = readings("Every passenger question must be answered by the assistant in the next "
                     "step.", desk)
    assert any(same(f, "G (role:user -> X role:assistant)") for f in found)
    # being told is not speaking
    told = readings("The passenger must be told within two steps whenever the fare changes.",
                    desk)
    assert all("role:user" not in atoms_of(f) for f in told)


def test_a_result_is_the_tool_message():
    db = vocab({"role:assistant", "role:tool", "tool_call:run_query"})
    assert has_reading("Every query the agent runs must be immediately followed by its result.",
                       db, "G (tool_call:run_query -> X role:tool)")


# ---------------------------------------------------------------------------------------------
# Data: an argument named by its own word, a field named by initials, a change

def test_an_argument_named_by_its_own_word_takes_the_word_before():
    yard = vocab({"tool_call:route_truck", "tool_call:open_gate"},
                 {"output.args.lane": "string"})
    assert has_reading("No truck may be routed through the express lane.", yard,
                       'G !(tool_call:route_truck & output.args.lane == "express")')


def test_a_field_named_by_the_initials_of_the_words():
    loans = vocab({"tool_call:approve_loan", "tool_call:decline_loan"},
                  {"output.args.ltv_pct": "number"})
    assert has_reading("Never approve a loan when the loan-to-value ratio is above 90%.", loans,
                       "G !(tool_call:approve_loan & output.args.ltv_pct > 90)")


def test_a_change_measured_against_the_previous_step():
    cars = vocab({"tool_call:set_speed", "in_school_zone"}, {"data.speed_kph": "number"})
    assert has_reading("The speed must never increase from the previous step.", cars,
                       "G !(data.speed_kph > prev(data.speed_kph))")
    from studio.english.ground_phrases import ground_change
    went_up = ground_change("cart_total_goes_up_compared_with_previous_step",
                            {"data.cart_total": {"number"}})
    assert went_up is not None and same(went_up, "data.cart_total > prev(data.cart_total)")
    # more than what it is measured against: not a change
    assert ground_change("cart_total_goes_up_for_premium_members",
                         {"data.cart_total": {"number"}}) is None


def test_initials_in_the_phrase_name_an_entry_spelled_out():
    buying = vocab({"tool_call:create_purchase_order", "tool_call:screen_vendor",
                    "tool_call:get_order"})
    assert has_reading("No PO may be issued before the vendor is screened.", buying,
                       "!tool_call:create_purchase_order W tool_call:screen_vendor")
    # a short word of English is no one's initials ("go" is not get_order)
    for f in readings("Never go ahead without screening the vendor.", buying):
        assert "tool_call:get_order" not in atoms_of(f)


def test_a_message_from_the_other_side_is_a_user_message():
    hotel = vocab({"role:user", "role:assistant", "tool_call:lookup_booking"})
    assert has_reading("Every message from a guest must be answered by the assistant in the "
                       "next step.", hotel, "G (role:user -> X role:assistant)")


def test_a_noun_of_a_verb_names_its_call():
    from studio.english.ground_atoms import ground_atom
    claims = {"tool_call:approve_claim", "tool_call:deny_claim", "tool_call:get_claim"}
    assert ground_atom("claim_denial", claims) == "tool_call:deny_claim"


def test_a_generic_verb_is_no_value():
    from studio.english.ground_phrases import ground_phrase
    grounded, _ = ground_phrase("marketing_emails_go_to", {"tool_call:send_marketing_email"},
                                {"output.args.recipient": {"string"}})
    assert '"go"' not in grounded.text


def test_personal_data_is_pii_and_an_agents_blame_is_said_to_the_customer():
    vocabulary = vocab({"tool_call:call_external_llm", "contains_pii", "blames_customer",
                        "role:assistant"})
    assert has_reading("Messages containing personal data must never be sent to the external "
                       "LLM API.", vocabulary, "G !(tool_call:call_external_llm & contains_pii)")
    assert has_reading("Agents must never blame the customer.", vocabulary,
                       "G !(role:assistant & blames_customer)")


# ---------------------------------------------------------------------------------------------
# What the other phrases of the rule name; quoted words that name a label


def test_a_quoted_word_names_the_label_the_logs_put_on_it():
    desk = vocab({"hold_requested", "continue_requested", "tool_call:place_order", "role:user"})
    rule = "Between the user saying 'hold' and saying 'continue', the agent must not place any order."
    found = readings(rule, desk)
    assert any(same(f, "G (hold_requested -> !tool_call:place_order W continue_requested)")
               for f in found)
    # the label has more words than were quoted: the quoted word itself is offered too
    assert any("hold" in atoms_of(f) for f in found)


def test_the_response_is_not_the_trigger_own_event_when_its_words_name_another():
    books = vocab({"tool_call:pay_invoice", "tool_call:archive_record"})
    found = readings("Whenever an invoice is paid, the agent must archive it within 2 steps.",
                     books)
    assert any(same(f, "G (tool_call:pay_invoice -> F[0,2] tool_call:archive_record)")
               for f in found)
    assert not any(same(f, f"G (tool_call:pay_invoice -> F[{k},2] tool_call:pay_invoice)")
                   for f in found for k in (0, 1))


def test_a_repeated_event_stays_the_trigger_own_event():
    shop = vocab({"tool_call:issue_refund", "tool_call:lookup_order"})
    found = readings("Once a refund has been issued, another refund must not be issued.", shop)
    assert any(same(f, "G (tool_call:issue_refund -> WX G !tool_call:issue_refund)")
               for f in found)
    assert all("tool_call:lookup_order" not in atoms_of(f) for f in found)


def test_phrases_at_one_step_name_one_call():
    claims = vocab({"tool_call:pay_refund", "tool_call:get_refund", "manager_approved"},
                   {"output.args.amount": "number"})
    found = readings("Refunds over $500 need a manager's approval before payout.", claims)
    assert any(same(f, "G (tool_call:pay_refund & output.args.amount > 500 -> O manager_approved)")
               for f in found)
    assert all("tool_call:get_refund" not in atoms_of(f) for f in found)


# ---------------------------------------------------------------------------------------------
# Comparisons: what a field measures the age of, its latest value; days named as values

ORDERS = vocab({"tool_call:waive_late_fee", "tool_call:place_order"},
               {"output.args.order_age_hours": "number", "output.args.order_id": "string"})


def test_a_thing_made_hours_ago_is_the_age_field_not_an_event():
    rule = "Late fees may be waived only if the order was placed less than 48 hours ago."
    found = readings(rule, ORDERS)
    assert any(same(f, "G (tool_call:waive_late_fee -> output.args.order_age_hours < 48)")
               for f in found)
    assert all("tool_call:place_order" not in atoms_of(f) for f in found)


def test_the_latest_reading_is_the_last_value_shown():
    bank = vocab({"tool_call:approve_loan", "tool_call:get_credit_score"},
                 {"data.credit_score": "number"})
    found = readings("A loan may be approved only if the latest credit score is above 600.",
                     bank)
    assert any(same(f, "G (tool_call:approve_loan -> "
                       "!(data.credit_score <= 600) S data.credit_score > 600)") for f in found)


def test_contacting_someone_is_the_call_that_sends_them_a_message():
    crm = vocab({"customer_unsubscribed", "tool_call:send_customer_message",
                 "tool_call:lookup_customer"})
    found = readings("Once a customer unsubscribes, the agent must not contact them again.", crm)
    assert any(same(f, "G (customer_unsubscribed -> G !tool_call:send_customer_message)")
               for f in found)
    # a guess: the invented atom is offered beside it
    assert len(found) > 1


def test_a_weekday_is_the_value_of_the_day_field():
    ci = vocab({"tool_call:release_build", "tool_call:run_tests"},
               {"data.weekday": "string", "output.args.branch": "string"})
    found = readings("No releases on Sundays.", ci)
    assert any(same(f, 'G !(tool_call:release_build & data.weekday == "Sunday")') for f in found)
    assert not any('"sundays"' in f.text for f in found)


# ---------------------------------------------------------------------------------------------
# Words: outcomes, nouns of verbs, specific words for generic verbs, tool use


def test_passing_a_check_is_the_entry_that_says_it_went_well():
    shop = vocab({"tool_call:ship_order", "identity_verified", "identity_failed", "role:user"})
    found = readings("No order ships until the customer has passed the identity check.", shop)
    assert any(same(f, "!tool_call:ship_order W identity_verified") for f in found)
    assert all("identity_failed" not in atoms_of(f) for f in found)


def test_short_forms_of_die_are_the_logs_death():
    game = vocab({"hero_died", "tool_call:buy_potion", "role:tool"})
    found = readings("Once the hero dies, no potion may be bought.", game)
    assert any(same(f, "G (hero_died -> G !tool_call:buy_potion)") for f in found)


def test_a_noun_and_its_verb_are_one_word():
    desk = vocab({"tool_call:issue_refund", "complaint_logged", "role:user"})
    found = readings("Refunds are not issued unless the customer has complained.", desk)
    assert any(same(f, "G (!complaint_logged -> !tool_call:issue_refund)") for f in found)
    grid = vocab({"tool_call:override_price", "tool_call:restore_price"})
    found = readings("Every price override must be reverted within 5 steps.", grid)
    assert any(same(f, "G (tool_call:override_price -> F[0,5] tool_call:restore_price)")
               for f in found)


def test_a_specific_word_for_a_generic_verb_names_the_call():
    bank = vocab({"tool_call:send_money", "tool_call:get_balance"},
                 {"output.args.amount": "number"})
    found = readings("No wire over 5,000 goes out.", bank)
    assert any(same(f, "G !(tool_call:send_money & output.args.amount > 5000)") for f in found)


def test_calling_tools_is_the_tools_messages_when_no_call_is_named():
    found = readings("When the user asks to stop, the agent must stop calling tools.",
                     vocab({"stop_requested", "role:tool"}))
    assert any(same(f, "G (stop_requested -> G !role:tool)") for f in found)


# ---------------------------------------------------------------------------------------------
# Words again ("re-"), kinds of a thing, who is spoken to, pronouns that copy their antecedent


def test_a_re_word_is_the_event_again():
    school = vocab({"tool_call:cancel_class", "tool_call:send_reminder", "tool_call:book_class",
                    "role:user"})
    rule = "Class reminders must not be sent between a cancellation and the rebooking."
    assert has_reading(rule, school, "G (tool_call:cancel_class -> "
                                     "!tool_call:send_reminder W tool_call:book_class)")


def test_the_kind_before_a_noun_names_the_call_first():
    mail = vocab({"tool_call:send_welcome", "tool_call:send_email", "role:user"})
    found = readings("At most one welcome email may be sent in a session.", mail)
    assert any(same(f, "G (tool_call:send_welcome -> WX G !tool_call:send_welcome)")
               for f in found)


def test_stating_something_to_the_customer_is_the_assistant_speaking():
    shop = vocab({"tool_call:place_order", "states_price", "role:assistant", "role:user"})
    rule = "The agent should state the total price to the customer before placing the order."
    assert has_reading(rule, shop, "!tool_call:place_order W (role:assistant & states_price)")


def test_a_pronoun_antecedent_inside_a_phrase_does_not_name_it():
    # "stop sending newsletters to them": "them" copies who asked, but the phrase's head is
    # the sending, not the request again
    news = vocab({"unsubscribe_requested", "tool_call:send_newsletter", "role:user"})
    found = readings("Once someone has asked to unsubscribe, stop sending newsletters to them.",
                     news)
    assert any(same(f, "G (unsubscribe_requested -> G !tool_call:send_newsletter)")
               for f in found)
    promo = vocab({"cancellation_requested", "contains_promotion", "role:assistant",
                   "tool_call:cancel_subscription"})
    found = readings("Once someone has asked to cancel, stop pushing promotions at them.", promo)
    assert not any(same(f, "G (cancellation_requested -> WX G !cancellation_requested)")
                   for f in found)


def test_giving_something_is_providing_it():
    clinic = vocab({"dob_provided", "asks_dob", "role:assistant", "role:user"})
    rule = "Once the patient has given their date of birth, the agent must not ask for it again."
    found = readings(rule, clinic)
    assert any(same(f, "G (dob_provided -> G !asks_dob)") for f in found)
    assert not any(same(f, "G (asks_dob -> WX G !asks_dob)") for f in found)


def test_commands_an_agent_runs_are_shell_commands():
    shell = vocab({"tool_call:run_shell", "stop_requested", "role:user"})
    found = readings("The agent must not run any commands after the user says stop.", shell)
    assert any(same(f, "G (stop_requested -> G !tool_call:run_shell)") for f in found)


def test_promotional_is_promo():
    social = vocab({"minor_flagged", "tool_call:send_promo_email", "role:user"})
    rule = "Once a user is flagged as a minor, no promotional emails may be sent to them."
    found = readings(rule, social)
    assert any(same(f, "G (minor_flagged -> G !tool_call:send_promo_email)") for f in found)


def test_one_label_said_by_two_sides_is_told_apart_by_the_speaker():
    chat = vocab({"role:assistant", "role:user", "mentions_refund", "tool_call:issue_refund"})
    rule = "Agents may talk about refunds only if the customer mentioned a refund first."
    assert has_reading(rule, chat, "G (role:assistant & mentions_refund -> "
                                   "O (role:user & mentions_refund))")


def test_speaking_is_saying():
    # the grammar reads "killed must not speak again" as one phrase: the words that name the
    # other call make the grounding a guess, so it is not the only reading
    game = vocab({"guard_killed", "tool_call:guard_say", "role:tool"})
    assert len(readings("A guard that has been killed must not speak again.", game)) > 1
