"""Schemathesis against /api/openapi.json: no server errors on any route (RELIABILITY 18).

Runs in-process against the WSGI application, as an all-roles token of a seeded workspace: a
rule with an approved and a draft version, a rule set, a labeler, an upload with its sessions
and an audit.  Path parameters that name those objects are pointed at them (a random id only
ever meets a 404), everything else is generated from the schema: valid requests, then invalid
ones.  Examples are derandomised and bounded per operation, so the run is reproducible and takes
seconds; every 500 is reported with a curl command that reproduces it.

Strings are drawn from all of Unicode with NUL allowed, and a third, hostile round takes valid
requests and poisons every string of their query and body with NUL or a lone surrogate (which
schemathesis itself never draws: it cannot be encoded in a URL, only escaped in JSON).  Those
must be refused (400/422) - no 500, and never a 2xx that stored them.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode

from studio.rules import services as rules
from studio.wsgi import application
from tests.api.world import Api, make_world

POSITIVE_EXAMPLES = 12
NEGATIVE_EXAMPLES = 6
HOSTILE_EXAMPLES = 4
# What Postgres cannot store: NUL, and halves of a UTF-16 pair (high, low) with no other half.
POISONS = ("\x00", "\ud800", "\udfff")
JSONL = (b'{"session": "s1", "step": 0, "output": {"tool": "pay"}}\n'
         b'{"session": "s1", "step": 1, "output": {"tool": "ship"}}\n'
         b'{"session": "s2", "step": 0, "output": {"tool": "ship"}}\n')


def seed(world) -> dict[str, int]:
    """Objects of every kind in acme; their ids by the path parameter that names them."""
    acme, alice, rob = world.acme, world.alice, world.rob
    rule = rules.create_rule(acme, alice, "ship after payment",
                             "G (tool_call:ship -> O tool_call:pay)")
    rules.approve(rules.submit_for_review(rule.versions.get(), alice, "warnings known"), rob)
    rules.new_version(rule, alice, "G !tool_call:ship")
    rule_set = rules.create_rule_set(acme, alice, "production", rule_ids=[rule.id], live=True)
    labeler = rules.create_labeler(acme, alice, "big_payment", "field",
                                   {"path": "output.args.amount", "op": ">", "value": 100})
    ids = {"rule_id": rule.id, "number": 1, "rule_set_id": rule_set.id,
           "labeler_id": labeler.id}

    # The other slices' objects, made through their own routes.
    from django.core.files.uploadedfile import SimpleUploadedFile

    person = Api(user=world.ann)
    upload = person.client.post("/api/w/acme/uploads", {
        "file": SimpleUploadedFile("log.jsonl", JSONL), "format": "jsonl"})
    if upload.status_code in (200, 201):
        ids["upload_id"] = upload.json()["id"]
        sessions = person.get("w/acme/sessions").json()
        items = sessions.get("items", sessions) if isinstance(sessions, dict) else sessions
        if items:
            ids["session_id"] = items[0]["id"]
    audit = person.post("w/acme/audits", {"rule_set": rule_set.id})
    if audit.status_code == 201:
        ids["audit_id"] = audit.json()["id"]
    tokens = person.get("w/acme/tokens").json()
    if tokens:
        ids["token_id"] = tokens[0]["id"]
    return ids


def _poison(value, poison: str):
    """``value`` with ``poison`` put inside every string (keys included); how many it changed."""
    if isinstance(value, str):
        middle = len(value) // 2
        return value[:middle] + poison + value[middle:], 1
    if isinstance(value, dict):
        out, count = {}, 0
        for key, item in value.items():
            item, changed = _poison(item, poison)
            out[key] = item
            count += changed
        return out, count
    if isinstance(value, list):
        items = [_poison(item, poison) for item in value]
        return [item for item, _ in items], sum(changed for _, changed in items)
    return value, 0


def _poison_case(case, poison: str) -> int:
    """Poison the case's query (NUL only: a surrogate has no form in a URL) and its JSON or
    form body (a surrogate only where JSON escapes it).  Returns how many strings changed."""
    changed = 0
    if case.query and poison == "\x00":
        case.query, changed = _poison(case.query, poison)
    if (case.media_type or "").endswith("json") and isinstance(case.body, (dict, list, str)):
        body, count = _poison(case.body, poison)
        # Sent as the JSON text itself: a surrogate travels as its escape, "\ud800", and
        # schemathesis does not re-check bytes against the schema (its checker cannot hold one).
        case.body = json.dumps(body).encode()
        changed += count
    elif isinstance(case.body, dict) and poison == "\x00":  # a form: its text, not the file
        texts, count = _poison({k: v for k, v in case.body.items() if isinstance(v, str)},
                               poison)
        case.body = {**case.body, **texts}
        changed += count
    return changed


def _server_errors(operation, token: str, ids: dict, mode, examples: int,
                   hostile: bool = False) -> list[str]:
    found: list[str] = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode), real_ids=st.booleans(),
           poison=st.sampled_from(POISONS))
    def run(case, real_ids, poison):
        params = case.path_parameters or {}
        if "slug" in params:
            params["slug"] = "acme"
            if real_ids:  # otherwise the generated ids: almost always a 404
                for name in params:
                    if name in ids:
                        params[name] = ids[name]
        poisoned = _poison_case(case, poison) if hostile else 0
        headers = {"Authorization": f"Bearer {token}"}
        response = case.call(headers=headers)
        accepted = poisoned and response.status_code < 300
        if (response.status_code >= 500 or accepted) and len(found) < 3:
            what = "accepted NUL or a lone surrogate" if accepted else response.status_code
            found.append(f"{operation.label} -> {what}\n"
                         f"    {case.as_curl_command(headers=headers)}\n"
                         f"    {response.text[:300]!r}")

    try:
        run()
    except Unsatisfiable:
        if mode != GenerationMode.NEGATIVE:
            raise
        # Nothing in the operation can be made invalid (say, only a free-text path parameter).
    return found


@pytest.mark.django_db(transaction=True)  # each request commits, as in production
def test_no_route_answers_a_server_error(settings, tmp_path):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]  # the WSGI client's host
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    world = make_world()
    ids = seed(world)
    token = world.token(world.acme, name="schemathesis", by="ann")
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    # Any character, NUL included (codec None: all of Unicode; schemathesis leaves out lone
    # surrogates, which the hostile round adds).
    schema.config.generation.update(allow_x00=True, codec=None)

    errors = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20
    for operation in operations:
        for mode, examples in ((GenerationMode.POSITIVE, POSITIVE_EXAMPLES),
                               (GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES)):
            errors += _server_errors(operation, token, ids, mode, examples)
        errors += _server_errors(operation, token, ids, GenerationMode.POSITIVE,
                                 HOSTILE_EXAMPLES, hostile=True)

    assert not errors, "server errors:\n" + "\n".join(errors)
