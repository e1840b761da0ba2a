"""The one NinjaAPI: a router per app, OpenAPI at /api/openapi.json, docs at /api/docs."""

from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from studio.errors import ServiceError

from .boundary import JsonParser
from .core import AUTH

api = NinjaAPI(title="Compliance Studio API", version="1", auth=AUTH, urls_namespace="api",
               docs_url="/docs", parser=JsonParser())


@api.exception_handler(ServiceError)
def service_error(request, exc: ServiceError):
    body = {"detail": exc.message}
    if exc.field:
        body["field"] = exc.field
    if exc.details:
        body["details"] = exc.details
    return api.create_response(request, body, status=exc.status)


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    # ninja wraps what the body parser raises in a bare 400; the boundary's refusal (NUL, a
    # lone surrogate, nesting too deep) names its field, so it is answered as itself.
    if isinstance(exc.__cause__, ServiceError):
        return service_error(request, exc.__cause__)
    return api.create_response(request, {"detail": exc.message}, status=exc.status_code)


@api.exception_handler(Http404)
def not_found(request, exc):
    return api.create_response(request, {"detail": "not found"}, status=404)


@api.exception_handler(AuthenticationError)
def unauthenticated(request, exc):
    return api.create_response(request, {"detail": "authentication required: a bearer token "
                                         "or a signed-in session"}, status=401)


@api.exception_handler(ValidationError)
def invalid(request, exc: ValidationError):
    return api.create_response(request, {"detail": "invalid request", "errors": exc.errors},
                               status=422)


def _register_routers() -> None:
    # Each app owns its router in <app>/api.py (and rules also authoring_api.py and
    # builder_api.py); imported here so URL loading wires them all.  The builder's
    # rules/build comes before rules/{rule_id}, whose converter would take "build" as an id.
    from importlib import import_module

    for module_name, prefix in [("workspaces.api", "/w/"), ("rules.builder_api", "/"),
                                ("rules.api", "/w/"), ("rules.authoring_api", "/"),
                                ("rules.guards_api", "/"),
                                ("traces.api", "/w/"),
                                ("audits.api", "/w/"), ("evidence.api", "/w/"), ("live.api", "/"),
                                ("guard.api", "/")]:
        api.add_router(prefix, import_module(f"studio.{module_name}").router)


_register_routers()
