"""The review aids read data atoms as data (issue 17): traces are real events, and two versions
that differ only on letters no event produces are equivalent."""

from studio.rules.authoring import review_aids


def test_a_contradiction_in_the_data_has_no_satisfying_trace():
    aids = review_aids("G(data.balance >= 0) & F(data.balance < 0 & data.balance > 10)")
    assert aids["satisfying"]["steps"] is None and aids["satisfying"]["exact"]
    assert "data atoms read as data" in aids["satisfying"]["message"]
    assert len(aids["violating"]["events"]) == 1  # e.g. a balance that is null, or below 0
    assert [w["kind"] for w in aids["warnings"]] == ["unsatisfiable"]
    valid = review_aids("G(data.x > 5 -> data.x > 3)")
    assert [w["kind"] for w in valid["warnings"]] == ["valid"]


def test_versions_compared_on_real_values():
    aids = review_aids("G(data.x > 5)", compare_to="G(data.x > 3)")
    found = aids["equivalence"]
    assert not found["equivalent"] and found["exact"]
    assert 3 < found["events"][0]["data"]["x"] <= 5
    assert found["other_holds"] and not found["this_holds"]
    same = review_aids("G(data.x > 5 & data.x > 3)", compare_to="G(data.x > 5)")["equivalence"]
    assert same["equivalent"] and same["exact"]
