"""Invitations by email, and a name on every webhook secret (which sender uses it).

Secrets made before names existed are called "secret 1", "secret 2"... in each workspace, oldest
first, so that the page can tell them apart until an admin rotates them."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def name_existing_secrets(apps, schema_editor):
    WebhookSecret = apps.get_model("workspaces", "WebhookSecret")
    counts: dict[int, int] = {}
    for secret in WebhookSecret.objects.order_by("created_at", "id"):
        counts[secret.workspace_id] = counts.get(secret.workspace_id, 0) + 1
        secret.name = f"secret {counts[secret.workspace_id]}"
        secret.save(update_fields=["name"])


class Migration(migrations.Migration):

    dependencies = [
        ("workspaces", "0007_audit_log_redaction"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="webhooksecret",
            name="name",
            field=models.CharField(default="", max_length=100),
            preserve_default=False,
        ),
        migrations.RunPython(name_existing_secrets, migrations.RunPython.noop),
        migrations.CreateModel(
            name="Invitation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("email", models.EmailField(max_length=254)),
                ("roles", models.JSONField(default=list)),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField()),
                ("accepted_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                ("accepted_by", models.ForeignKey(
                    blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                    related_name="+", to=settings.AUTH_USER_MODEL)),
                ("created_by", models.ForeignKey(
                    blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                    related_name="+", to=settings.AUTH_USER_MODEL)),
                ("workspace", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, related_name="invitations",
                    to="workspaces.workspace")),
            ],
        ),
    ]
