"""The single write path: every memory change goes through these functions.

Pages, the agent API and the background jobs all call the same plain functions, so a fact
written by an agent, confirmed on the review desk or archived by a job is recorded the same
way: one transaction holding the change and its MemoryEvent (actor, before / after, the
`changes` undo needs), then re-indexing queued for after the commit.

Routing of a proposed candidate (seed 000 sections 6-8, seed 003 4.1, seed 004):
  replayed operation_id -> the first outcome, nothing written
  matches a do-not-store rule (curator/guard) -> blocked: an event naming the rule, its kind
      and the match's length with a masked excerpt, nothing else kept (any source, any actor)
  suggested deletion    -> a pending item, never a deletion
  rejected before       -> dropped (the person is never asked twice)
  below CONFIDENCE_PENDING -> dropped, with an event saying why
  same content as an active fact (same subject + predicate) -> boost (hit_count, confidence)
  already waiting in the queue -> the waiting item, no second one
  matches a rule that sends to review (personal data, by default), proposed by anyone but
      the person -> pending (personal_data), whatever its confidence
  below CONFIDENCE_WRITE -> pending (low confidence, or "would replace fact N")
  new value for a subject + predicate -> supersede (the old fact keeps its place in the chain);
      a fact the person verified is only replaced by the person, so others go to review
  otherwise -> written
"""

from curator.writepath.clean import (  # noqa: F401
    Clean,
    clean_candidate,
    clean_content,
    clean_tags,
)
from curator.writepath.contradictions import resolve_contradiction  # noqa: F401
from curator.writepath.core import (  # noqa: F401
    BLOCKED,
    BOOST_STEP,
    BOOSTED,
    CONFIDENCE_CAP,
    DEFAULT_RETENTION,
    DELETED,
    DROPPED,
    DURATIONS,
    EDITABLE,
    FACT_FIELDS,
    MAX_CONTENT,
    MAX_LABEL,
    MAX_TAG,
    MAX_TAGS,
    OPEN,
    PENDING,
    SUPERSEDED,
    WRITTEN,
    ActiveConflict,
    AlreadyResolved,
    Blocked,
    Candidate,
    InvalidCandidate,
    MootPending,
    NotAllowed,
    OperationConflict,
    Result,
    StaleEdit,
    Work,
    WritePathError,
    new_batch,
    pending_snapshot,
    record_edit,
    snapshot,
)
from curator.writepath.facts import (  # noqa: F401
    ARCHIVABLE,
    BULK_ACTIONS,
    RESTORABLE,
    archive_fact,
    bulk_facts,
    change_fact,
    delete_fact,
    delete_for_good,
    edit_fact,
    pin_fact,
    purge_due,
    purge_fact,
    purge_when,
    restore_fact,
    revert_to,
)
from curator.writepath.pending import (  # noqa: F401
    ask_about,
    confirm_pending,
    due_pending,
    ignore_pending,
    moot_reason,
    retention_of,
    snooze_pending,
)
from curator.writepath.propose import (  # noqa: F401
    current_holder,
    propose,
    rejected_before,
    replay,
    request_fingerprint,
)
from curator.writepath.thresholds import set_threshold  # noqa: F401
