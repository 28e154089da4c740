"""Guardrails get an action: block (as before) or send to review. Personal-data detectors
(e-mail, phone, resident id, bank card, IBAN, address) now send matching memories to review by
default instead of being off. An install's detectors that were never touched since they were
created (off, as the old default made them) change to that default; one the person switched
on keeps blocking, one they changed in any way is left as they set it (docs/guardrails.md)."""

from datetime import timedelta

from django.db import migrations, models

PERSONAL = ("email", "phone", "resident_id", "bank_card", "iban", "address")


def personal_to_review(apps, schema_editor):
    GuardRule = apps.get_model("curator", "GuardRule")
    for rule in GuardRule.objects.filter(detector__in=PERSONAL, enabled=False):
        untouched = abs(rule.updated_at - rule.created_at) < timedelta(seconds=2)
        if untouched and not (rule.agents or rule.fact_types or rule.scopes):
            GuardRule.objects.filter(pk=rule.pk).update(enabled=True, action="review")


class Migration(migrations.Migration):
    dependencies = [("curator", "0014_fact_source_learned")]

    operations = [
        migrations.AddField(
            model_name="guardrule",
            name="action",
            field=models.CharField(
                choices=[("block", "block"), ("review", "send to review")],
                default="block",
                max_length=10,
                verbose_name="action",
            ),
        ),
        migrations.AlterField(
            model_name="pendingitem",
            name="reason",
            field=models.CharField(
                choices=[
                    ("low_confidence", "confidence below the write threshold"),
                    ("conflict", "would replace an existing fact"),
                    ("deletion", "the agent suggests removing a fact"),
                    ("promotion", "could become core memory, which never decays"),
                    (
                        "personal_data",
                        "holds personal data",
                    ),
                ],
                max_length=20,
                verbose_name="why pending",
            ),
        ),
        migrations.RunPython(personal_to_review, migrations.RunPython.noop),
    ]
