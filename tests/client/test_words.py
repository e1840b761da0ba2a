"""The verdict changes of the events route, in words: exactly complied, violated or open."""

from hypothesis import given
from hypothesis import strategies as st

from studio.client import change_words, end_words

rules = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=12)
steps = st.integers(0, 10_000)


@given(rules, steps, st.sampled_from(["complied", "violated", "open"]))
def test_a_verdict_reached_reads_as_its_word(rule, step, verdict):
    assert change_words({"rule": rule, "step": step, "verdict": verdict}) == (
        f"rule {rule} is {verdict} at step {step}")


@given(rules, steps, steps)
def test_a_violation_found_reads_as_violated_never_none(rule, step, trigger):
    words = change_words({"rule": rule, "step": step,
                          "violation": {"trigger": trigger, "detected": step}})
    assert words.startswith(f"rule {rule} is violated at step {step}: a violation counted")
    assert (f"triggered at step {trigger}" in words) == (trigger != step)
    assert "None" not in words


def test_an_unknown_word_is_said_not_guessed():
    assert "'satisfied'" in change_words({"rule": "r", "step": 1, "verdict": "satisfied"})
    assert end_words({"rule": "r", "verdict": "open"}) == "at the end, r is open"
