"""Two indexes for the write path's routing reads (curator/writepath/propose.py, Known):
facts by their words (owner, content key, subject, status), and review items by their
candidate's content key. Without them SQLite read every active fact of the owner (through
fact_newest_first) and parsed every review item's candidate, for every memory proposed."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curator', '0015_guard_rule_action'),
        ('memsite', '0003_proxy'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='fact',
            index=models.Index(fields=['owner', 'content_key', 'subject', 'status'], name='fact_same_words'),
        ),
        migrations.AddIndex(
            model_name='pendingitem',
            index=models.Index(models.Func(models.F('candidate'), models.Value('$.content_key'), function='json_extract'), name='pending_content_key'),
        ),
    ]
