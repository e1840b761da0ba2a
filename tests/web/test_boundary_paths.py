"""NUL in a path parameter is refused at the one input boundary (``studio.boundary``).

A path parameter reaches a database query as it is, and Postgres refuses NUL in text: the
guard decision route, the members routes and the member page forms answered 500 with an HTML
body.  The routes are found by walking the URL resolver, so a route added later is covered
without editing this file.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from studio.workspaces.models import Membership

_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
# Converters that cannot match a NUL: the resolver finds no route, and the boundary refuses
# the path as a whole, naming no parameter.
_NUL_FREE_CONVERTERS = {"int", "slug", "uuid"}
METHODS = ("get", "post", "put", "patch", "delete")


def _routes(resolver: URLResolver | None = None, prefix: str = ""):
    """Every route pattern as a Django path string (``api/w/<slug>/members/<username>``)."""
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _routes(entry, pattern)
        elif isinstance(entry, URLPattern) and _PARAMETER.search(pattern):
            yield pattern


def _parameterised(prefix: str) -> list[str]:
    return sorted({r for r in _routes() if r.startswith(prefix) and "(?P<" not in r})


API_ROUTES = _parameterised("api/")
PAGE_ROUTES = _parameterised("w/")
HOSTILE = "a\x00b"


def _fill(route: str, hostile_parameter: str) -> str:
    """The route's URL with ``acme``/``ann``/``1`` in every parameter but one, which gets NUL."""
    def value(match: re.Match) -> str:
        name = match["name"]
        if name == hostile_parameter:
            return quote(HOSTILE)
        return {"slug": "acme", "username": "ann"}.get(name, "1")
    return "/" + _PARAMETER.sub(value, route)


def _cases(routes: list[str]):
    for route in routes:
        for match in _PARAMETER.finditer(route):
            yield pytest.param(route, match["name"], match["converter"] or "str",
                               id=f"{route}:{match['name']}")


def test_the_walk_finds_the_routes_the_probe_named():
    # The walk itself can fail: these are the routes the fault probe answered 500 on.
    assert "api/w/<slug>/live/sessions/<session_id>/guard/<decision_id>" in API_ROUTES
    assert "api/w/<slug>/members/<username>" in API_ROUTES
    assert "w/<slug:slug>/members/<str:username>/roles" in PAGE_ROUTES
    assert len(API_ROUTES) > 50


@pytest.fixture
def admin_client(world):
    client = Client()
    client.force_login(world.ann)  # admin of acme: every route goes as deep as it can
    return client


@pytest.mark.parametrize("route, parameter, converter", list(_cases(API_ROUTES)))
def test_nul_in_any_api_path_parameter_is_a_400_json_naming_it(
        world, admin_client, route, parameter, converter):
    url = _fill(route, parameter)
    token = world.token(world.acme)
    before = _memberships(world)
    for method in METHODS:
        bearer = {"Authorization": f"Bearer {token}"}
        for client, headers in ((admin_client, {}), (Client(), bearer)):
            response = getattr(client, method)(url, headers=headers)
            assert response.status_code == 400, (method, url, response.content[:300])
            assert response["Content-Type"].startswith("application/json"), (method, url)
            body = response.json()
            assert "NUL" in body["detail"]
            assert body["field"] == parameter, (method, url, body)
    assert _memberships(world) == before


def _memberships(world) -> list:
    return sorted(Membership.objects.filter(workspace=world.acme)
                  .values_list("user__username", "role"))


@pytest.mark.parametrize("route, parameter, converter", list(_cases(PAGE_ROUTES)))
def test_nul_in_any_page_path_parameter_is_a_400_page(
        world, admin_client, route, parameter, converter):
    url = _fill(route, parameter)
    for method in ("get", "post"):
        response = getattr(admin_client, method)(url)
        assert response.status_code == 400, (method, url, response.content[:300])
        assert response["Content-Type"].startswith("text/html")
        page = response.content.decode()
        assert "Not accepted" in page and "NUL" in page
        if converter not in _NUL_FREE_CONVERTERS:
            assert f"<code>{parameter}</code>" in page, page


def test_a_member_form_with_nul_in_the_username_changes_nothing(world, admin_client):
    before = _memberships(world)
    for action, data in (("roles", {"roles": ["auditor"]}), ("remove", {})):
        response = admin_client.post(f"/w/acme/members/rob%00/{action}", data)
        assert response.status_code == 400
        assert "<code>username</code> in the address must not contain NUL" in \
            response.content.decode()
    assert _memberships(world) == before


def test_nul_in_a_path_that_names_no_route_is_refused_too(admin_client):
    api = admin_client.get("/api/nothing%00here")
    assert api.status_code == 400
    assert "the address (URL path) must not contain NUL" in api.json()["detail"]
    page = admin_client.get("/nothing%00here/")
    assert page.status_code == 400 and b"Not accepted" in page.content


def test_an_ordinary_path_with_non_ascii_text_passes_the_boundary(world, admin_client):
    # The check looks past ASCII: text that can be stored is not refused.
    response = admin_client.delete("/api/w/acme/members/%C3%A9mile")
    assert response.status_code == 404, response.content


def test_under_asgi_nul_in_the_guard_poll_path_is_refused_the_same(db):
    # Production serves through ASGI (the guard's waiting polls are async): the boundary's
    # async path refuses the same, before the poll could wait.
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def poll():
        return await AsyncClient().get("/api/w/acme/live/sessions/a%00b/guard/1?wait=30")

    response = async_to_sync(poll)()
    assert response.status_code == 400
    assert response.json()["field"] == "session_id"


from tests.api.world import world  # noqa: E402,F401
