"""Workspace isolation and authentication on every route of the API (RELIABILITY 15).

The routes come from the OpenAPI document, so a route another slice adds is covered the day it
appears.  Workspace ``beta`` holds one row of every model of the project, each with primary key
``FOREIGN`` (and ``FOREIGN`` in its text and number fields), so any id in a path - whatever it
names - is the id of a real object of beta.  A member of acme with every role, asking:

* with no credentials at all: 401, on every route;
* for beta's objects through beta's slug: 404, as a session and as a token (or 401 for a kind
  of caller the route does not take, as its OpenAPI security says);
* for beta's objects through acme's slug (ids of another workspace in the path): 404;
* with beta's ids in a request body (a rule set's rules, an audit's rule set): 404 or 422;
* for a name inside acme that beta uses too (a live session's external id): acme's own object,
  beta's untouched;

and nothing in the database changes.  Routes without a workspace in their path are listed in
``WORKSPACE_LESS`` and tested one by one; a new one fails the test until it is listed there.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import uuid

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client
from django.utils import timezone

from studio.api.urls import api
from studio.workspaces.models import Workspace
from tests.api.world import Api

pytestmark = pytest.mark.django_db

FOREIGN = 777777
FOREIGN_TEXT = str(FOREIGN)

# Routes whose path names no workspace, each with its own isolation test below.
WORKSPACE_LESS = {("GET", "/api/w/")}


@functools.cache
def _schema() -> dict:
    return api.get_openapi_schema()


def _operations() -> list[tuple[str, str, dict]]:
    return [(method.upper(), path, op) for path, ops in _schema()["paths"].items()
            for method, op in ops.items()]


def _resolve(schema: dict, spec: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def _kinds(schema: dict, spec: dict) -> set:
    schema = _resolve(schema, spec)
    kinds = {schema.get("type")}
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            kinds |= _kinds(option, spec)
    if schema.get("type") == "array":
        kinds |= {"array of " + str(k) for k in _kinds(schema.get("items", {}), spec)}
    return kinds


def _refers(schema: dict, spec: dict) -> bool:
    """Whether a body property may hold object ids: integers or lists of them."""
    return bool(_kinds(schema, spec) & {"integer", "array of integer"})


OPERATIONS = _operations()
SCOPED = [(m, p, op) for m, p, op in OPERATIONS if "{slug}" in p]


def _path_keys(op: dict, kind: str) -> list[str]:
    return [x["name"] for x in op.get("parameters", []) if x["in"] == "path"
            and x["name"] != "slug" and x.get("schema", {}).get("type") == kind]


# Integer path parameters are ids; string ones are names inside the workspace (a live session's
# external id), which another workspace may use too.
WITH_IDS = [(m, p, op) for m, p, op in SCOPED if _path_keys(op, "integer")]
# Integer body properties that are amounts, not ids (a workspace's retention in days, a guard
# request's resample count).
NOT_IDS = {"retention_days", "attempt"}
WITH_BODY_REFS = [(m, p, op) for m, p, op in SCOPED if not _path_keys(op, "integer") and any(
    _refers(prop, _schema()) for content in op.get("requestBody", {}).get("content", {}).values()
    for name, prop in _resolve(content["schema"], _schema()).get("properties", {}).items()
    if name not in NOT_IDS)]
WITH_NAMES = [(m, p, op) for m, p, op in SCOPED
              if _path_keys(op, "string") and not _path_keys(op, "integer")]


def _id(case) -> str:
    return f"{case[0]} {case[1]}"


# --- beta: one row of every model, all numbered FOREIGN ---------------------------------------

def _project_models() -> list[type[models.Model]]:
    found = [m for config in apps.get_app_configs() if config.name.startswith("studio.")
             for m in config.get_models() if not m._meta.auto_created and m is not Workspace]
    ordered, placed = [], set()
    while found:  # models after the models their required foreign keys point to
        progress = False
        for model in list(found):
            needs = {f.related_model for f in model._meta.concrete_fields
                     if f.is_relation and not f.null and f.related_model in found
                     and f.related_model is not model}
            if not needs - placed:
                ordered.append(model)
                placed.add(model)
                found.remove(model)
                progress = True
        assert progress, f"foreign keys form a cycle among {found}"
    return ordered


def _value(field: models.Field, made: dict, workspace, user):
    if field.is_relation:
        target = field.related_model
        if target is Workspace:
            return workspace
        if target is get_user_model():
            return user
        return made.get(target)
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, (models.SmallIntegerField, models.PositiveSmallIntegerField)):
        return 7
    if isinstance(field, models.IntegerField):  # and its big and positive kinds
        return FOREIGN
    if isinstance(field, (models.FloatField, models.DecimalField)):
        return 1
    if isinstance(field, models.DateTimeField):
        return timezone.now()
    if isinstance(field, models.DateField):
        return dt.date.today()
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.JSONField):
        return {}
    if isinstance(field, models.CharField | models.TextField | models.FileField):
        limit = getattr(field, "max_length", None) or len(FOREIGN_TEXT)
        return FOREIGN_TEXT[:limit]
    raise AssertionError(f"no value for {field.model.__name__}.{field.name} ({type(field)})")


def seed_foreign(workspace) -> dict:
    """One row of every project model in ``workspace``, each with primary key FOREIGN."""
    user = get_user_model().objects.create_user(f"member-of-{workspace.slug}")
    made: dict = {}
    for model in _project_models():
        values = {model._meta.pk.attname: FOREIGN}
        for field in model._meta.concrete_fields:
            if field.primary_key or field.generated or getattr(field, "auto_now", False) or getattr(
                    field, "auto_now_add", False):
                continue
            value = _value(field, made, workspace, user)
            if value is None and not field.null and not field.has_default():
                raise AssertionError(f"cannot fill {model.__name__}.{field.name}")
            if value is not None or field.null:
                values[field.name] = value
        instance = model(**values)
        # bulk_create: plain INSERTs, past save() guards such as the append-only log's.
        model._base_manager.bulk_create([instance])
        made[model] = instance
    for model, instance in made.items():
        for m2m in model._meta.many_to_many:
            if m2m.related_model in made:
                getattr(instance, m2m.name).add(made[m2m.related_model])
    return made


def row_counts() -> dict[str, int]:
    return {m.__name__: m._base_manager.count() for m in _project_models()} | {
        "Workspace": Workspace.objects.count()}


# --- requests from the OpenAPI document -------------------------------------------------------

def minimal(schema: dict, spec: dict, name: str = ""):
    """The smallest instance of ``schema`` that validates, with FOREIGN for anything that reads
    like an id, so bodies that refer to objects refer to beta's."""
    schema = _resolve(schema, spec)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(s, spec) for s in schema[key]]
            options = [s for s in options if s.get("type") != "null"] or options
            return minimal(options[0], spec, name)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        wanted = set(schema.get("required", [])) | {k for k in props if _refers(props[k], spec)}
        return {k: minimal(props[k], spec, k) for k in props if k in wanted}
    if kind == "array":
        item = minimal(schema.get("items", {}), spec, name)
        return [item] * max(schema.get("minItems", 0), 1 if _refers(schema, spec) else 0)
    if kind == "integer":
        return max(schema.get("minimum", FOREIGN), min(FOREIGN, schema.get("maximum", FOREIGN)))
    if kind == "number":
        return 1
    if kind == "boolean":
        return False
    if kind == "string":
        if schema.get("format") == "date-time":
            return timezone.now().isoformat()
        return FOREIGN_TEXT if schema.get("maxLength", 6) >= 6 else "x"
    return {}


def request(client: Client, method: str, path: str, op: dict, slug: str, headers: dict):
    spec = _schema()
    url = path
    query = {}
    for param in op.get("parameters", []):
        value = slug if param["name"] == "slug" else minimal(param.get("schema", {}), spec,
                                                             param["name"])
        if param["in"] == "path":
            url = url.replace("{" + param["name"] + "}", str(value))
        elif param["in"] == "query" and param.get("required"):
            query[param["name"]] = value
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    kwargs: dict = {"headers": headers}
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        kwargs["data"] = json.dumps(minimal(content["application/json"]["schema"], spec))
        kwargs["content_type"] = "application/json"
    elif "multipart/form-data" in content:
        form = _resolve(content["multipart/form-data"]["schema"], spec)
        data = {}
        for key, prop in form.get("properties", {}).items():
            prop = _resolve(prop, spec)
            if prop.get("format") == "binary":
                data[key] = SimpleUploadedFile("log.jsonl", b'{"session": "s", "step": 0}\n')
            elif key in form.get("required", []) or _refers(prop, spec):
                data[key] = minimal(prop, spec, key)  # ids refer to beta's objects
        kwargs["data"] = data
    return getattr(client, method.lower())(url, **kwargs)


def _accepts(op: dict, kind: str) -> bool:
    schemes = {name for requirement in op.get("security", []) for name in requirement}
    return bool(schemes & ({"PersonAuth"} if kind == "session" else {"TokenAuth",
                                                                     "BearerAuth"}))


@pytest.fixture(autouse=True)
def _uploads_elsewhere(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"  # should a refused upload be stored anyway


@pytest.fixture
def attack(world):
    """beta seeded with FOREIGN rows; callers: acme's all-roles member as a session and as a
    token."""
    seed_foreign(world.beta)
    callers = {"session": Api(user=world.ann), "token": Api(token=world.token(world.acme))}
    return world, callers


def _check(callers, method, path, op, slug):
    before = row_counts()
    answers = {}
    for kind, caller in callers.items():
        response = request(caller.client, method, path, op, slug, caller.headers)
        expected = 404 if _accepts(op, kind) else 401
        answers[kind] = (response.status_code, expected, response.content[:300])
    assert row_counts() == before, "a refused request changed the database"
    wrong = {k: v for k, v in answers.items() if v[0] != v[1]}
    assert not wrong, f"{method} {path} with {slug!r}: " + "; ".join(
        f"{kind} got {got} instead of {want}: {body!r}" for kind, (got, want, body) in
        wrong.items())


# --- the tests --------------------------------------------------------------------------------

def test_the_schema_has_routes_from_several_slices():
    tags = {tag for _, _, op in OPERATIONS for tag in op.get("tags", [])}
    assert {"workspaces", "rules"} <= tags
    assert SCOPED and WITH_IDS


@pytest.mark.parametrize("case", OPERATIONS, ids=_id)
def test_without_credentials_every_route_is_401(world, case):
    method, path, op = case
    seed_foreign(world.beta)
    before = row_counts()

    response = request(Client(enforce_csrf_checks=True), method, path, op, "beta", {})

    assert response.status_code == 401, response.content[:300]
    assert row_counts() == before


def test_the_schema_lists_every_route_the_api_serves():
    # A route hidden from the schema (include_in_schema=False) would escape every test here.
    # The document itself, its viewer and ninja's root (a redirect to the viewer) are public.
    public = {"openapi-json", "openapi-view", "api-root"}
    patterns, _, _ = api.urls
    served = {"/api/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(p.pattern))
              for p in patterns if p.name not in public}
    assert served == set(_schema()["paths"])


def test_every_route_names_its_workspace_or_is_listed():
    unlisted = {(m, p) for m, p, _ in OPERATIONS if "{slug}" not in p} - WORKSPACE_LESS
    assert not unlisted, f"routes without {{slug}}: give each an isolation test: {unlisted}"


@pytest.mark.parametrize("case", SCOPED, ids=_id)
def test_another_workspace_is_404_on_every_route(attack, case):
    _, callers = attack

    _check(callers, *case, slug="beta")


@pytest.mark.parametrize("case", WITH_IDS, ids=_id)
def test_ids_of_another_workspace_are_404_through_your_own(attack, case):
    _, callers = attack

    _check(callers, *case, slug="acme")


@pytest.mark.parametrize("case", WITH_BODY_REFS, ids=_id)
def test_ids_of_another_workspace_in_a_body_are_refused(attack, case):
    _, callers = attack
    method, path, op = case
    before = row_counts()

    for kind, caller in callers.items():
        response = request(caller.client, method, path, op, "acme", caller.headers)
        assert response.status_code in (404, 422), (kind, response.content[:300])

    assert row_counts() == before


def beta_rows(made: dict) -> dict:
    """Every field of beta's seeded rows."""
    return {model.__name__: model._base_manager.filter(pk=FOREIGN).values().first()
            for model in made}


@pytest.mark.parametrize("case", WITH_NAMES, ids=_id)
def test_names_used_in_another_workspace_reach_your_own_objects_only(world, case):
    made = seed_foreign(world.beta)
    before = beta_rows(made)
    method, path, op = case

    for caller in (Api(user=world.ann), Api(token=world.token(world.acme))):
        response = request(caller.client, method, path, op, "acme", caller.headers)
        assert response.status_code < 500
        assert f'"steps": {FOREIGN}' not in response.content.decode()

    assert beta_rows(made) == before


def test_a_workspace_nobody_has_is_404_like_one_you_are_not_in(world):
    api = Api(user=world.ann)

    assert api.get("w/nope/rules").status_code == api.get("w/beta/rules").status_code == 404
    assert api.get("w/beta/rules").json() == api.get("w/nope/rules").json()


def test_the_workspace_listing_shows_only_your_own(attack):
    _, callers = attack

    for caller in callers.values():
        listed = caller.get("w/").json()
        assert [w["slug"] for w in listed] == ["acme"]


def test_otlp_traces_need_a_token_and_land_in_its_workspace(attack):
    # /v1/traces is outside the API (OTLP fixes its path); its token names the workspace.
    world, callers = attack
    anonymous = Client(enforce_csrf_checks=True).post("/v1/traces", data="{}",
                                                      content_type="application/json")
    assert anonymous.status_code == 401
    before = row_counts()

    response = Client().post("/v1/traces", data='{"resourceSpans": []}',
                             content_type="application/json", headers=callers["token"].headers)

    assert response.status_code == 200
    assert row_counts() == before
    session = Client()
    session.force_login(world.ann)
    assert session.post("/v1/traces", data="{}",
                        content_type="application/json").status_code == 401


def test_member_routes_are_walked_and_reach_only_your_own_members(world):
    walked = {(m, p) for m, p, _ in SCOPED}
    named = {(m, p) for m, p, _ in WITH_NAMES}
    members = {("GET", "/api/w/{slug}/members"), ("POST", "/api/w/{slug}/members"),
               ("PUT", "/api/w/{slug}/members/{username}"),
               ("DELETE", "/api/w/{slug}/members/{username}")}
    assert members <= walked
    assert {("PUT", "/api/w/{slug}/members/{username}"),
            ("DELETE", "/api/w/{slug}/members/{username}")} <= named
    before = row_counts()
    ann = Api(user=world.ann)
    # oscar belongs to beta only: acme's admin cannot reach him through acme's slug.
    assert ann.put("w/acme/members/oscar", {"roles": ["auditor"]}).status_code == 404
    assert ann.delete("w/acme/members/oscar").status_code == 404
    assert ann.delete("w/beta/members/oscar").status_code == 404
    assert row_counts() == before
