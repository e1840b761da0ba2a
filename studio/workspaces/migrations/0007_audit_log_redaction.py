"""The audit log's one permitted change: a value erased.

An erasure (``studio.traces.erasure``) must leave no copy of the erased data, also not in the
log entries that describe a copy (a rule test case made from an erased session names its steps
and values).  The trigger of migration 0002 now lets an UPDATE through when it changes nothing
but ``details``, and the new details are the old ones with some values - at any depth - replaced
by the string ``"[erased]"``: the same keys, the same list lengths, every other value equal.
Who did what, when, to which object stays; rows are still never deleted.
"""

from django.db import migrations

TABLE = "workspaces_auditlogentry"

CREATE = [
    """CREATE OR REPLACE FUNCTION workspaces_auditlog_redacted(new_value jsonb, old_value jsonb)
    RETURNS boolean AS $$
    DECLARE
        key text;
        i integer;
    BEGIN
        IF new_value = old_value OR new_value = '"[erased]"'::jsonb THEN
            RETURN true;
        END IF;
        IF jsonb_typeof(new_value) = 'object' AND jsonb_typeof(old_value) = 'object' THEN
            IF (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(new_value) AS k)
               IS DISTINCT FROM
               (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(old_value) AS k) THEN
                RETURN false;
            END IF;
            FOR key IN SELECT jsonb_object_keys(new_value) LOOP
                IF NOT workspaces_auditlog_redacted(new_value -> key, old_value -> key) THEN
                    RETURN false;
                END IF;
            END LOOP;
            RETURN true;
        END IF;
        IF jsonb_typeof(new_value) = 'array' AND jsonb_typeof(old_value) = 'array' THEN
            IF jsonb_array_length(new_value) <> jsonb_array_length(old_value) THEN
                RETURN false;
            END IF;
            FOR i IN 0 .. jsonb_array_length(new_value) - 1 LOOP
                IF NOT workspaces_auditlog_redacted(new_value -> i, old_value -> i) THEN
                    RETURN false;
                END IF;
            END LOOP;
            RETURN true;
        END IF;
        RETURN false;
    END;
    $$ LANGUAGE plpgsql IMMUTABLE""",
    """CREATE OR REPLACE FUNCTION workspaces_auditlog_append_only() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'UPDATE'
           AND (NEW.id, NEW.workspace_id, NEW.actor_id, NEW.actor_token_id, NEW.action,
                NEW.target_type, NEW.target_id, NEW.at)
               IS NOT DISTINCT FROM
               (OLD.id, OLD.workspace_id, OLD.actor_id, OLD.actor_token_id, OLD.action,
                OLD.target_type, OLD.target_id, OLD.at)
           AND workspaces_auditlog_redacted(NEW.details, OLD.details) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit log entries are append-only';
    END;
    $$ LANGUAGE plpgsql""",
]

# Back to 0002's trigger function: no change at all.
DROP = [
    """CREATE OR REPLACE FUNCTION workspaces_auditlog_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'audit log entries are append-only';
    END;
    $$ LANGUAGE plpgsql""",
    "DROP FUNCTION IF EXISTS workspaces_auditlog_redacted(jsonb, jsonb)",
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
        ("workspaces", "0006_llm_endpoint"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
