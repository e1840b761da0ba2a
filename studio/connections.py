"""The one rule for a database connection that failed in a worker (used by uploads and audits).

A worker has no request cycle to drop a broken connection, so the code that caught the error
drops it, and the next query opens a new one."""

from django.db import connection


def drop_broken_connection() -> None:
    """Close a connection that failed, so the next query opens a new one.  Not inside a
    transaction someone else holds (in-process tasks): that one is theirs to end."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
