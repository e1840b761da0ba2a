"""Shared fixtures.  The database is chosen by the ``tests.database`` plugin (see its doc)."""

import pytest
from django.test import override_settings

# Django 5.2's PBKDF2 runs 1,000,000 rounds: 1.4 s per password stored or checked on the 2-core
# CI machine, so a fixture with three members who sign in spent ~8 s before its test began.
# Tests check who may do what, not the hasher's strength: MD5 stands in for it everywhere, and
# tests/test_password_hashing.py keeps the production hasher itself under test.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True, scope="session")
def fast_password_hashing():
    # override_settings (not a plain assignment) so Django drops its cached hasher list.
    with override_settings(PASSWORD_HASHERS=FAST_PASSWORD_HASHERS):
        yield
