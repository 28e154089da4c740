"""Huey tasks of the retrieval app: thin callers of retrieval.reindex."""

from django.utils import timezone
from huey.contrib.djhuey import db_task

from retrieval.models import ReindexRun
from retrieval.reindex import reindex


@db_task()
def reindex_task(run_id: int) -> None:
    """Run a queued reindex, recording its progress on the ReindexRun row for the page."""
    run = ReindexRun.objects.filter(pk=run_id).first()
    if run is None or run.state not in (ReindexRun.State.QUEUED, ReindexRun.State.INTERRUPTED):
        return
    run.state, run.started_at = ReindexRun.State.RUNNING, timezone.now()
    run.save(update_fields=["state", "started_at"])

    def progress(p) -> None:
        ReindexRun.objects.filter(pk=run_id).update(done=p.done, total=p.total)

    try:
        summary = reindex(run.kind or None, reset_model=True, progress=progress)
    except Exception as exc:  # the page must say what went wrong, then the queue logs it
        ReindexRun.objects.filter(pk=run_id).update(
            state=ReindexRun.State.FAILED, error=str(exc)[:2000], finished_at=timezone.now()
        )
        raise
    ReindexRun.objects.filter(pk=run_id).update(
        state=ReindexRun.State.DONE,
        done=summary.done,
        total=summary.planned,
        error=summary.embed_error,
        finished_at=timezone.now(),
    )
