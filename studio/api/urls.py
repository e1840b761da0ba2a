"""The one NinjaAPI, the composition root of the API: every app's router joined, OpenAPI at
/api/openapi.json, docs at /api/docs."""

from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from studio.audits.api import router as audits_router
from studio.boundary import JsonParser
from studio.errors import ServiceError
from studio.evidence.api import router as evidence_router
from studio.guard.api import router as guard_router
from studio.live.api import router as live_router
from studio.rules.api import router as rules_router
from studio.rules.authoring_api import router as authoring_router
from studio.rules.builder_api import router as builder_router
from studio.rules.guards_api import router as guards_router
from studio.traces.api import router as traces_router
from studio.workspaces.acting import AUTH
from studio.workspaces.api import router as workspaces_router

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


# Each app owns its router in <app>/api.py (rules also authoring_api.py, builder_api.py and
# guards_api.py).  The builder's rules/build comes before rules/{rule_id}, whose converter would
# take "build" as an id.
for prefix, router in [("/w/", workspaces_router), ("/", builder_router), ("/w/", rules_router),
                       ("/", authoring_router), ("/", guards_router), ("/w/", traces_router),
                       ("/w/", audits_router), ("/w/", evidence_router), ("/", live_router),
                       ("/", guard_router)]:
    api.add_router(prefix, router)
