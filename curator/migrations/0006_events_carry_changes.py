"""Every event carries the `changes` undo reads.

Events written before the write path recorded `changes` (early installs, and the demo data
of earlier releases) held only before / after snapshots; undo used to translate them on every
read. They are translated once here, so undo reads one shape.
"""

from django.db import migrations


def _changes(event_type, fact_id, pending_id, payload):
    if event_type == "write" and fact_id:
        return [{"kind": "fact", "id": fact_id, "before": None, "after": {"status": "active"}}]
    if event_type == "pending" and pending_id:
        return [
            {"kind": "pending", "id": pending_id, "before": None, "after": {"status": "pending"}}
        ]
    before, after = payload.get("before"), payload.get("after")
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return []
    if before.get("id") and after.get("id") and before["id"] != after["id"]:
        # a supersede recorded as old snapshot -> new snapshot: the old one stepped back
        old = {"status": before.get("status", "active")}
        return [{"kind": "fact", "id": before["id"], "before": old, "after": {"status": "superseded"}}]
    fact_id = before.get("id") or after.get("id") or fact_id
    keys = [k for k in after if k != "id" and before.get(k) != after[k]]
    if not (fact_id and keys):
        return []
    return [
        {
            "kind": "fact",
            "id": fact_id,
            "before": {k: before.get(k) for k in keys},
            "after": {k: after[k] for k in keys},
        }
    ]


def add_changes(apps, schema_editor):
    MemoryEvent = apps.get_model("curator", "MemoryEvent")
    for event in MemoryEvent.objects.exclude(payload__has_key="changes").iterator():
        payload = dict(event.payload or {})
        payload["changes"] = _changes(event.event_type, event.fact_id, event.pending_id, payload)
        MemoryEvent.objects.filter(pk=event.pk).update(payload=payload)


class Migration(migrations.Migration):
    dependencies = [("curator", "0005_fact_newest_first_index")]
    operations = [migrations.RunPython(add_changes, migrations.RunPython.noop)]
