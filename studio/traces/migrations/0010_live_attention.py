# A live session's place on the live page (attention, written by live deliveries and ends), the
# column the page orders by (live_order: open while no monitors are saved) and its index.

from django.db import migrations, models


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
        migrations.AddIndex(
            model_name='tracesession',
            index=models.Index(models.F('workspace'), models.F('live_order'), models.OrderBy(models.F('last_event_at'), descending=True, nulls_last=True), models.OrderBy(models.F('id'), descending=True), condition=models.Q(('source', 'live')), name='live_session_order'),
        ),
    ]
