"""The domain's errors live below the HTTP layer, and the API answers each as its status and
``{"detail", "field", "details"}`` body, through real routes."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio import errors
from studio.workspaces import services as ws
from tests.api.world import Api, world  # noqa: F401
from tests.test_layers import imports_in, module_name

STUDIO = Path(__file__).resolve().parent.parent / "studio"


def test_a_plain_refusal_is_400_with_its_field(world):
    answer = Api(user=world.ann).post("w/acme/tokens", {"name": "ci", "roles": ["wizard"]})
    assert answer.status_code == 400
    assert answer.json() == {"detail": "unknown roles: wizard; roles are "
                                       "author, reviewer, auditor, admin", "field": "roles"}


def test_a_refusal_with_its_own_status(world):
    answer = Api(user=world.ann).post("w/acme/tokens", {"name": "  ", "roles": ["auditor"]})
    assert answer.status_code == 422
    assert answer.json() == {"detail": "give the token a name of 1 to 100 characters "
                                       "(what uses it)", "field": "name"}


def test_permission_denied_is_403_without_a_field(world):
    secret = world.token(world.acme)
    answer = Api(token=secret).post("w/acme/tokens", {"name": "ci", "roles": ["auditor"]})
    assert answer.status_code == 403
    assert answer.json() == {"detail": "tokens are managed by people, not by other tokens"}


def test_conflict_is_409(world):
    answer = Api(user=world.ann).delete("w/acme/members/ann")
    assert answer.status_code == 409
    assert answer.json() == {"detail": "ann is the last admin of workspace 'acme': make "
                                       "someone else an admin first", "field": "roles"}


def test_details_are_answered_with_the_field(world):
    answer = Api(user=world.alice).post("w/acme/guards", {"name": "g", "cpl": "(("})
    assert answer.status_code == 422
    body = answer.json()
    assert set(body) == {"detail", "field", "details"}
    assert body["field"] == "cpl"
    assert body["detail"].startswith("the CPL formula is not valid: line 1, column ")
    assert {"line", "column", "message", "expected"} <= set(body["details"])


def test_the_errors_are_one_family():
    assert issubclass(errors.PermissionDenied, errors.ServiceError)
    assert issubclass(errors.Conflict, errors.ServiceError)
    assert (errors.ServiceError("x").status, errors.PermissionDenied("x").status,
            errors.Conflict("x").status) == (400, 403, 409)
    assert errors.ServiceError("x", status=404, field="f").status == 404


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (and every ``module.name`` it takes), function-local
    imports included, relative ones resolved: the finder tests/test_layers.py checks."""
    found = set()
    for _, module, name in imports_in(path.read_text(), module_name(path),
                                      path.name == "__init__.py"):
        found.update({module, f"{module}.{name}"} if name else {module})
    return found


# The service modules: services.py, the upload services traces splits in two, and live
# monitoring's, split by concern (studio/live: events in, ingest, reading, ...).
LIVE_SERVICES = ("context", "ending", "errors", "events", "ingest", "reading", "snapshots",
                 "storage")
SERVICES = sorted([*STUDIO.glob("*/services.py"), STUDIO / "traces" / "intake.py",
                   STUDIO / "traces" / "loading.py",
                   *(STUDIO / "live" / f"{name}.py" for name in LIVE_SERVICES)])


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_no_services_module_imports_the_api(path):
    reaching_up = sorted(m for m in _imported_modules(path)
                         if m == "studio.api" or m.startswith("studio.api."))
    assert not reaching_up, f"{path.relative_to(STUDIO.parent)} imports {reaching_up}"


def test_the_import_check_sees_relative_and_local_imports():
    # The check above must not pass by missing an import written another way: rules/services.py
    # imports its models relatively (local imports: tests/test_layers.py's finder test).
    seen = _imported_modules(STUDIO / "rules" / "services.py")
    assert {"studio.rules.models", "studio.workspaces.services.record"} <= seen
    assert len(SERVICES) >= 7


def test_the_errors_module_knows_nothing_of_http():
    imported = _imported_modules(STUDIO / "errors.py")
    assert not {m for m in imported if m.startswith(("django", "ninja", "studio"))}
