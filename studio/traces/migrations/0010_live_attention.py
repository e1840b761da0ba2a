# A live session's place on the live page (attention, written by live deliveries and ends), the
# column the page orders by (live_order: open while no monitors are saved) and its index.

from django.db import migrations, models

# The index on Postgres only: SQLite (the embedded default) cannot put NULLS LAST in an index,
# and its pages are small enough to sort.  Not in the model's Meta for the same reason.
ORDER_INDEX = ("CREATE INDEX IF NOT EXISTS live_session_order ON traces_tracesession "
               "(workspace_id, live_order, last_event_at DESC NULLS LAST, id DESC) "
               "WHERE source = 'live'")


def add_order_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ORDER_INDEX)


def drop_order_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS live_session_order")


class Migration(migrations.Migration):

    dependencies = [
        ('traces', '0009_trace_session_link'),
        ('workspaces', '0008_invitations_and_secret_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='tracesession',
            name='attention',
            field=models.PositiveSmallIntegerField(choices=[(0, 'Violated'), (1, 'At Risk'), (2, 'Open'), (3, 'Complied')], default=2),
        ),
        migrations.AddField(
            model_name='tracesession',
            name='live_order',
            field=models.GeneratedField(db_persist=True, expression=models.Case(models.When(monitor_state__isnull=True, then=models.Value(2)), default=models.F('attention'), output_field=models.PositiveSmallIntegerField()), output_field=models.PositiveSmallIntegerField()),
        ),
        migrations.RunPython(add_order_index, drop_order_index, elidable=False),
    ]
