"""The card journal's repair, in-process: what it must never undo."""

import pytest
from django.db import transaction

from curator import card_journal, cards
from curator.models import CardAuthor

pytestmark = pytest.mark.django_db

A, B = "# User\n\n- A\n", "# User\n\n- B\n"


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MEMORY_DIR = tmp_path / "memory"


class Failed(Exception):
    pass


def test_a_record_left_by_a_failed_transaction_never_undoes_a_later_save(
    django_capture_on_commit_callbacks,
):
    cards.save("user", A, CardAuthor.PERSON)
    # A caller's transaction writes B, then fails: its files are put back, its record stays.
    with pytest.raises(Failed), cards.rollback_files(["user"]), transaction.atomic():
        cards.save_many({"user": B}, CardAuthor.ONBOARDING)
        raise Failed
    assert cards.read("user") == A
    cards.save("project", "# Project\n", CardAuthor.PERSON)  # the rolled-back id is reused
    with django_capture_on_commit_callbacks(execute=True):
        cards.save("user", B, CardAuthor.PERSON)  # later, the person saves the same text
    with transaction.atomic():
        card_journal.recover()
    assert cards.read("user") == B == cards.latest_revision("user").content
    assert not card_journal.pending()


def test_a_save_forgets_its_record_once_committed(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        cards.save("user", A, CardAuthor.PERSON)
    assert not card_journal.pending()
    assert [p.name for p in (cards.card_path("user").parent).iterdir()] == ["User.md"]
