"""An export taken while an agent writes is one consistent state: it always imports, and its
card files match its card history."""

import threading
import uuid

import pytest
from django.db import connection, transaction

from curator import cards
from curator.models import CardAuthor, ConversationTurn, Owner, Session
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from tests.archive_helpers import members, rows

RUNS = 10


class Writer(threading.Thread):
    """Writes a new session with its first turn, again and again, and every third time the
    User.md card too, each in its own transaction (as agents posting turns do)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.commits = 0
        self.changed = threading.Condition()
        self.error: BaseException | None = None

    def run(self):
        owner = Owner.default()
        try:
            while not self.stopping.is_set():
                with transaction.atomic():
                    session = Session.objects.create(owner=owner, external_id=uuid.uuid4().hex)
                    ConversationTurn.objects.create(
                        session=session, turn_index=0, role="user", content="hello"
                    )
                if self.commits % 3 == 0:
                    text = f"# User\n\n- version {self.commits}\n"
                    cards.save("user", text, CardAuthor.AGENT)
                with self.changed:
                    self.commits += 1
                    self.changed.notify_all()
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc
        finally:
            connection.close()

    def wait_for(self, more: int) -> None:
        with self.changed:
            goal = self.commits + more
            assert self.changed.wait_for(lambda: self.commits >= goal or self.error, 20)


def newest_user_card(path) -> str:
    revisions = [r for r in rows(path, "card_revisions") if r["card"] == "user"]
    return max(revisions, key=lambda r: (r["created_at"], r["id"]))["content"]


@pytest.mark.django_db(transaction=True)
def test_an_export_taken_while_an_agent_writes_always_restores(tmp_path, settings, monkeypatch):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"
    cards.save("user", "# User\n\n- first\n", CardAuthor.PERSON)
    writer = Writer()
    # Between reading the sessions and reading the turns, the export waits for two more
    # writes: rows read outside one snapshot would then surely hold a turn whose session is
    # missing, and a card file newer than the history beside it.
    write_rows = archive._write_rows

    def write_rows_while_writing(zf, kind):
        written = write_rows(zf, kind)
        if kind.name == "sessions":
            writer.wait_for(2)
        return written

    monkeypatch.setattr(archive, "_write_rows", write_rows_while_writing)
    writer.start()
    try:
        for run in range(RUNS):
            path = tmp_path / f"live-{run}.zip"
            archive.export(path)
            found = imp.read(path)  # what `import --dry-run` checks first: refused if broken
            assert imp.plan(found).counts()
            card = members(path)["files/memory/shared/User.md"].decode()
            assert card == newest_user_card(path)
    finally:
        writer.stopping.set()
        writer.join(20)
    assert writer.error is None and writer.commits >= 2 * RUNS
