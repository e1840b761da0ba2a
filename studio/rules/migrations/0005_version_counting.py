from django.db import migrations, models


def resolve_counting(apps, schema_editor):
    """Existing versions get their rule's default counting: per instance for ``G phi``, after
    each violation otherwise (so their audits keep the meaning the versions now state)."""
    from studio.logic.parser import parse
    from studio.logic.progression import nnf
    from studio.monitor.verdicts import default_counting

    RuleVersion = apps.get_model("rules", "RuleVersion")
    for version in RuleVersion.objects.filter(counting="").only("id", "formula"):
        try:
            globally = nnf(parse(version.formula)).op == "G"
        except ValueError:
            globally = False
        version.counting = default_counting(globally)
        version.save(update_fields=["counting"])


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0004_causal_guards'),
    ]

    operations = [
        migrations.AddField(
            model_name='ruleversion',
            name='counting',
            field=models.CharField(default='', max_length=20),
        ),
        migrations.RunPython(resolve_counting, migrations.RunPython.noop),
    ]
