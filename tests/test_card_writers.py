"""Saving a card someone else wrote meanwhile: a live refresh on other lines is merged in
and said so; anything else is a conflict page that names who wrote the card."""

import pytest
from django.urls import reverse
from django.utils import timezone

from curator import cards
from curator.models import CardAuthor, CardRevision, Fact, Owner
from lifecycle import refresh

pytestmark = pytest.mark.django_db
NOTES = "\n## Notes\n\n- 周五下午不开会\n"


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


def fact(content: str) -> Fact:
    return Fact.objects.create(
        owner=Owner.default(), scope="user", type="preference", subject="李雷", content=content
    )


def live_refresh() -> None:
    refresh.refresh_cards(timezone.now(), {}, note="live_refresh")


@pytest.fixture
def opened():
    """User.md as the editor opened it: the person's heading and a generated section."""
    cards.save("user", "# User.md\n\nLi Lei, backend engineer.\n", CardAuthor.PERSON)
    fact("Prefers pytest over unittest")
    live_refresh()
    return cards.read("user")


def save(client, base: str, content: str):
    return client.post(
        reverse("card", args=["user"]), {"base": base, "content": content, "action": "save"}
    )


def test_an_edit_on_other_lines_than_a_live_refresh_keeps_both_and_says_so(client_in, opened):
    fact("偏好简洁的中文回答")
    live_refresh()  # the person confirmed a fact while the editor was open
    refreshed = cards.read("user")
    assert refreshed != opened

    response = save(client_in, opened, opened + NOTES)

    assert response.status_code == 302
    text = cards.read("user")
    assert "偏好简洁的中文回答" in text and text.endswith(NOTES)
    assert text == cards.normalise(refreshed + NOTES)
    latest = cards.latest_revision("user")
    assert (latest.author, latest.note) == (CardAuthor.PERSON, cards.MERGED_NOTE)
    page = client_in.get(response.url).content.decode()
    assert "merged" in page and "the live refresh (after facts changed)" in page


def test_the_merge_message_is_in_chinese_too(chinese_client, opened):
    fact("偏好简洁的中文回答")
    live_refresh()
    response = save(chinese_client, opened, opened + NOTES)
    page = chinese_client.get(response.url).content.decode()
    assert "已合并" in page and "实时刷新" in page


def test_an_edit_of_a_line_the_refresh_rewrote_is_a_conflict_naming_the_refresh(client_in, opened):
    Fact.objects.filter(content="Prefers pytest over unittest").update(content="Prefers pytest")
    live_refresh()
    mine = opened.replace("Prefers pytest over unittest", "Prefers pytest, always")

    response = save(client_in, opened, mine)

    page = response.content.decode()
    assert response.status_code == 200 and 'id="conflict"' in page
    assert 'data-writer="live_refresh"' in page
    assert "the live refresh (after facts changed)" in page
    assert "Prefers pytest, always" not in cards.read("user")


@pytest.mark.parametrize(
    ("write", "code", "label"),
    [
        (
            lambda key, dir_: (dir_ / "shared" / "User.md").write_text("# edited in vim\n"),
            "outside",
            "a file edited on disk",
        ),
        (
            lambda key, dir_: cards.restore(key, CardRevision.objects.filter(card=key).last()),
            "restored",
            "a restore of an older revision",
        ),
        (
            lambda key, dir_: refresh.refresh_cards(timezone.now(), {}, note="nightly_refresh"),
            "nightly_refresh",
            "the nightly card compile",
        ),
        (
            lambda key, dir_: cards.save(key, cards.read(key) + "- other tab\n", "person"),
            "person",
            "you, in another tab or window",
        ),
    ],
)
def test_other_writers_are_never_merged_and_the_conflict_page_names_them(
    client_in, opened, memory_dir, write, code, label
):
    fact("偏好简洁的中文回答")  # something for a refresh to add
    write("user", memory_dir)
    before = cards.read("user")
    assert before != opened

    response = save(client_in, opened, opened + NOTES)

    page = response.content.decode()
    assert 'id="conflict"' in page and f'data-writer="{code}"' in page and label in page
    assert cards.read("user") == before  # nothing overwritten


def test_the_conflict_page_names_the_writer_in_chinese(chinese_client, opened, memory_dir):
    (memory_dir / "shared" / "User.md").write_text("# 在 vim 里改过\n")
    page = save(chinese_client, opened, opened + NOTES).content.decode()
    assert 'data-writer="outside"' in page and "磁盘上的文件" in page


def test_writers_since_lists_each_revision_after_the_opened_text_newest_first(opened):
    fact("偏好简洁的中文回答")
    live_refresh()
    cards.save("user", cards.read("user") + "- more\n", "person")
    codes = [w.code for w in cards.writers_since("user", opened)]
    assert codes == ["person", "live_refresh"]
    assert cards.writers_since("user", cards.read("user")) == []


def test_a_text_no_revision_holds_any_more_was_replaced_by_a_restore_or_an_import(
    opened, memory_dir
):
    # what restoring a backup leaves: its files and its revisions, none holding `opened`
    CardRevision.objects.all().delete()
    restored = "# User.md\n\nfrom the backup\n"
    (memory_dir / "shared" / "User.md").write_text(restored)
    CardRevision.objects.create(card="user", content=restored, author=CardAuthor.PERSON)
    assert [w.code for w in cards.writers_since("user", opened)] == ["person", "history"]
