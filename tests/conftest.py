"""Shared fixtures.  The database is chosen by the ``tests.database`` plugin (see its doc)."""
