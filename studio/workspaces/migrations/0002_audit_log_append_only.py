"""On Postgres, the database itself refuses to change or delete audit log rows.

TRUNCATE (test teardown, ``flush``) is not a row operation and still works.  SQLite gets no
trigger: its ``flush`` deletes rows one table at a time, and the model and queryset guards
already refuse changes from the application.
"""

from django.db import migrations

TABLE = "workspaces_auditlogentry"

CREATE = [
    """CREATE OR REPLACE FUNCTION workspaces_auditlog_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'audit log entries are append-only';
    END;
    $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER auditlog_append_only BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION workspaces_auditlog_append_only()""",
]

DROP = [
    f"DROP TRIGGER IF EXISTS auditlog_append_only ON {TABLE}",
    "DROP FUNCTION IF EXISTS workspaces_auditlog_append_only()",
]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("workspaces", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
