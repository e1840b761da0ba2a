"""Shared fixtures.  The database is chosen by the ``tests.database`` plugin (see its doc)."""

import pytest
from django.test import override_settings

# Django 5.2's PBKDF2 runs 1,000,000 rounds: 1.4 s per password stored or checked on the 2-core
# CI machine, so a fixture with three members who sign in spent ~8 s before its test began.
# Tests check who may do what, not the hasher's strength: MD5 stands in for it everywhere, and
# tests/test_password_hashing.py keeps the production hasher itself under test.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def team_slug() -> str:
    """The shared team's workspace; a module names its own by overriding this fixture."""
    return "acme"


@pytest.fixture
def team(db, team_slug):
    """The shared workspace members (tests.audits.helpers.make_team): ``auditor``, ``author``,
    ``reviewer`` and an ``outsider`` of another workspace.  A module that needs rules or
    sessions too overrides ``team`` with a fixture that takes this one and adds them."""
    from tests.audits.helpers import make_team

    return make_team(team_slug)


# The shared people who sign in with a password, on the sign-in page's form or client.login.
PASSWORDS = {"ann": "author password 1", "rob": "reviewer password 1",
             "eve": "outsider password 1"}


@pytest.fixture
def people(db):
    """ann, rob and eve by name, with their PASSWORDS; a module gives them workspaces and
    roles."""
    from studio.workspaces.services import create_user

    return {name: create_user(name, password) for name, password in PASSWORDS.items()}


@pytest.fixture
def sign_in():
    """A test client signed in as one of the ``people``, with the password."""
    from django.test import Client

    def sign_in(user) -> Client:
        client = Client()
        assert client.login(username=user.username, password=PASSWORDS[user.username])
        return client

    return sign_in


@pytest.fixture(autouse=True, scope="session")
def fast_password_hashing():
    # override_settings (not a plain assignment) so Django drops its cached hasher list.
    with override_settings(PASSWORD_HASHERS=FAST_PASSWORD_HASHERS):
        yield


@pytest.fixture(autouse=True, scope="session")
def fast_flush():
    """Transactional tests empty the tables with DELETE instead of TRUNCATE (Postgres).

    A TRUNCATE of the ~50 tables makes new files for each table and index: 1-2 s after every
    transactional test on the 2-core CI machine, where deleting the few rows a test leaves takes
    milliseconds.  One transaction (Django's flush runs in one): the foreign keys are checked at
    the commit, by when every table is empty.  Tables with a trigger of ours (the audit log
    refuses DELETE: it is append-only) and a flush that resets sequences still truncate.
    """
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def delete_every_row(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=True,
                            allow_cascade=allow_cascade)
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger "
                           "WHERE NOT tgisinternal")
            guarded = {name.strip('"') for (name,) in cursor.fetchall()}
        kept = [table for table in tables if table in guarded]
        return (truncate(self, style, kept, allow_cascade=allow_cascade)
                + [f"DELETE FROM {self.quote_name(table)};" for table in tables
                   if table not in guarded])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", delete_every_row)
        yield



@pytest.fixture(autouse=True, scope="session")
def models_learned_in_the_request():
    # Without a broker the studio learns risk models on a background thread after the response
    # (studio.tasks.Background); tests learn them in the request, where they can look at the
    # result.  tests/guard/test_background_learning.py tests the background path itself.
    with override_settings(GUARD_MODEL_IN_BACKGROUND=False):
        yield


@pytest.fixture(autouse=True)
def anticipation_searches_done(request):
    """Searches a test's rules set off in the background (``studio.live.anticipation``: at
    approval, and states requests met undecided) finish before the next test, whose tables
    they would otherwise write into (and before the test database is dropped)."""
    yield
    if "django_db_setup" not in request.fixturenames:
        return
    from studio.live import anticipation

    background = anticipation.background()
    if background is not None:
        background.idle(120)
