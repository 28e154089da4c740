"""The Blocked log names its agent by foreign key, like facts, events and turns do: it kept a
bare token id, which outlived a deleted token and could not be joined. Ids of tokens that
still exist are carried over; a deleted token's become "no agent"."""

import django.db.models.deletion
from django.db import migrations, models


def carry_over(apps, schema_editor):
    GuardHit = apps.get_model("curator", "GuardHit")
    ApiToken = apps.get_model("memsite", "ApiToken")
    tokens = set(ApiToken.objects.values_list("pk", flat=True))
    for hit in GuardHit.objects.exclude(agent_token_id=None).only("pk", "agent_token_id"):
        if hit.agent_token_id in tokens:
            GuardHit.objects.filter(pk=hit.pk).update(agent_id=hit.agent_token_id)


def carry_back(apps, schema_editor):
    GuardHit = apps.get_model("curator", "GuardHit")
    for hit in GuardHit.objects.exclude(agent=None).only("pk", "agent_id"):
        GuardHit.objects.filter(pk=hit.pk).update(agent_token_id=hit.agent_id)


class Migration(migrations.Migration):
    dependencies = [
        ("curator", "0011_insight"),
        ("memsite", "0002_agents_identity"),
    ]

    operations = [
        migrations.AddField(
            model_name="guardhit",
            name="agent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="memsite.apitoken",
                verbose_name="agent",
            ),
        ),
        migrations.RunPython(carry_over, carry_back),
        migrations.RemoveField(model_name="guardhit", name="agent_token_id"),
    ]
