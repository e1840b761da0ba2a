"""Readings sketched from what a sentence names when the grammar cannot read it: built from the
workspace's own events, limits and values, and never sure.  No database."""

from studio.grounding.sketch import SKETCHED, sketch, sketched, with_sketch
from studio.english.base import Formalisation
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace
from studio.logic.vocabulary import Vocabulary

SHOP = Vocabulary.from_entries([
    ("builtin", "tool_call:issue_store_credit", "", "tool_call:issue_store_credit", 9, []),
    ("builtin", "tool_call:verify_identity", "", "tool_call:verify_identity", 14, []),
    ("builtin", "tool_call:update_shipping_address", "", "tool_call:update_shipping_address",
     5, []),
    ("builtin", "tool_call:send_otp", "", "tool_call:send_otp", 6, []),
    ("path", "output.args.amount", "number", "tool_call:issue_store_credit", 9, [50, 300, 20]),
    ("path", "output.args.channel", "string", "tool_call:send_otp", 6, ["sms", "email"]),
])


def readings(english):
    found, _ = sketch(english, SHOP)
    return [f for f, why in found]


def means(found, text):
    return any(distinguishing_trace(f, parse(text)) is None for f in found)


def test_a_limit_on_the_named_calls_own_number():
    found = readings("Store credit: $300 max per credit.")
    assert found[0] == parse("G !(tool_call:issue_store_credit & output.args.amount > 300)")


def test_an_order_of_two_named_events_both_ways_of_before():
    assert means(readings("Identity verification comes first, then an address update."),
                 "G (tool_call:update_shipping_address -> O tool_call:verify_identity)")
    assert means(readings("Address update only once identity verification is done."),
                 "G (tool_call:update_shipping_address -> O tool_call:verify_identity)")


def test_a_count_of_the_named_event():
    found = readings("Max three identity verification attempts per conversation.")
    three = ("G (tool_call:verify_identity -> WX G (tool_call:verify_identity -> WX G "
             "(tool_call:verify_identity -> WX G !tool_call:verify_identity)))")
    assert means(found, three)


def test_a_value_the_calls_own_events_show_narrows_it():
    found = readings("OTP codes: email delivery is forbidden.")
    assert found[0] == parse('G !(tool_call:send_otp & output.args.channel == "email")')


def test_nothing_named_nothing_sketched_and_a_read_sentence_is_left_alone():
    assert sketch("blorp the frobnicator sideways", SHOP) == ([], [])
    refused = Formalisation(None, "", (), message="no reading")
    assert with_sketch(refused, "blorp", SHOP) is refused
    read = Formalisation(parse("G !a"), "G !a", ("a",))
    assert with_sketch(read, "never a", SHOP) is read


def test_sketched_readings_say_so_and_are_never_sure():
    refused = Formalisation(None, "", (), message="Could not place “max”")
    result = with_sketch(refused, "Store credit: $300 max per credit.", SHOP)
    assert result.ok and sketched(result)
    assert all(r.why == SKETCHED for r in result.readings)
    assert "could not read" in result.message and "max" in result.message
    assert [m.atom for m in result.mapping] == ["tool_call:issue_store_credit"]
