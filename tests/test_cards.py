"""The card files: atomic writes, revisions, conflicts, diffs, merges, generated sections, HTML."""

import os

import pytest

from curator import cards
from curator.models import CardAuthor, CardRevision, Owner, Scratchpad


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


def test_cards_live_where_the_seed_says(memory_dir):
    assert cards.card_path("persona") == memory_dir / "system" / "ShiYi.md"
    assert cards.card_path("user") == memory_dir / "shared" / "User.md"
    assert cards.card_path("project") == memory_dir / "shared" / "Project.md"
    assert cards.card_path("insights") == memory_dir / "shared" / "Insights.md"
    assert cards.card_path("memory") == memory_dir / "shared" / "MEMORY.md"
    assert cards.card_path("scratchpad") is None


def test_a_missing_card_reads_as_empty(db):
    assert cards.read("user") == ""


def test_save_writes_the_file_and_a_revision(db, memory_dir):
    revision = cards.save("user", "# Li\r\n- likes tea", CardAuthor.PERSON)
    assert (memory_dir / "shared" / "User.md").read_text() == "# Li\n- likes tea\n"
    assert revision.author == "person" and revision.content == "# Li\n- likes tea\n"
    assert cards.save("user", "# Li\n- likes tea\n", CardAuthor.PERSON) is None  # unchanged
    assert CardRevision.objects.filter(card="user").count() == 1


def test_save_leaves_no_temp_files(db, memory_dir):
    cards.save("project", "# P\n", CardAuthor.PERSON)
    assert os.listdir(memory_dir / "shared") == ["Project.md"]


def test_a_failed_rename_keeps_the_old_file_and_no_revision(db, memory_dir, monkeypatch):
    cards.save("user", "old\n", CardAuthor.PERSON)

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        cards.save("user", "new\n", CardAuthor.PERSON)
    assert cards.read("user") == "old\n"
    assert CardRevision.objects.filter(card="user").count() == 1
    assert os.listdir(memory_dir / "shared") == ["User.md"]


def test_write_files_puts_back_the_first_file_when_the_second_rename_fails(tmp_path, monkeypatch):
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("one old")
    two.write_text("two old")
    real = os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("boom")
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(OSError):
        cards.write_files({one: "one new", two: "two new"})
    monkeypatch.setattr(os, "replace", real)
    assert one.read_text() == "one old" and two.read_text() == "two old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.md", "two.md"]


def test_a_change_on_disk_is_refused_with_both_versions(db, memory_dir):
    cards.save("user", "base\n", CardAuthor.PERSON)
    (memory_dir / "shared" / "User.md").write_text("edited in vim\n")
    with pytest.raises(cards.CardConflict) as caught:
        cards.save("user", "mine\n", CardAuthor.PERSON, base="base\n")
    assert caught.value.theirs == "edited in vim\n" and caught.value.mine == "mine\n"
    assert cards.read("user") == "edited in vim\n"


def test_an_outside_edit_becomes_a_revision_before_the_next_save(db, memory_dir):
    cards.save("user", "base\n", CardAuthor.PERSON)
    (memory_dir / "shared" / "User.md").write_text("outside\n")
    assert cards.last_change("user").outside
    cards.save("user", "mine\n", CardAuthor.PERSON, base="outside\n")
    contents = list(CardRevision.objects.filter(card="user").values_list("content", flat=True))
    assert contents == ["mine\n", "outside\n", "base\n"]


def test_line_endings_do_not_count_as_a_conflict(db):
    cards.save("user", "a\nb\n", CardAuthor.PERSON)
    assert cards.save("user", "a\nc\n", CardAuthor.PERSON, base="a\r\nb\r\n") is not None


def test_restore_is_a_new_revision(db):
    first = cards.save("memory", "one\n", CardAuthor.JOB)
    cards.save("memory", "two\n", CardAuthor.PERSON)
    restored = cards.restore("memory", first)
    assert cards.read("memory") == "one\n"
    assert restored.pk > first.pk and f"#{first.pk}" in restored.note_text
    assert CardRevision.objects.filter(card="memory").count() == 3


def test_the_scratchpad_is_a_card_in_the_database(db):
    cards.save("scratchpad", "## 当前项目\n- 记忆系统\n", CardAuthor.PERSON)
    assert Scratchpad.objects.get(owner=Owner.default()).content == "## 当前项目\n- 记忆系统\n"
    assert cards.read("scratchpad").startswith("## 当前项目")
    assert CardRevision.objects.filter(card="scratchpad").count() == 1


def test_last_change_says_who(db):
    assert cards.last_change("insights") is None
    cards.save("insights", "- x\n", CardAuthor.JOB)
    last = cards.last_change("insights")
    assert last.author == "job" and not last.outside


@pytest.mark.parametrize(
    ("key", "text", "amount", "over"),
    [
        ("user", "字" * 682 + "\n", 2047, False),  # 3 bytes per CJK character + newline
        ("user", "字" * 683 + "\n", 2050, True),
        ("project", "line\n" * 100, 100, False),
        ("project", "line\n" * 101, 101, True),
        ("insights", "".join(f"- item {i}\n  - detail\n" for i in range(10)), 10, False),
        ("insights", "".join(f"{i}. item\n" for i in range(11)), 11, True),
        ("memory", "x" * 1500, 1500, False),
        ("memory", "x" * 1501, 1501, True),
    ],
)
def test_limits_are_measured_in_the_unit_of_each_card(key, text, amount, over):
    usage = cards.measure(key, text)
    assert (usage.amount, usage.over) == (amount, over)


def test_the_persona_has_no_file_limit():
    usage = cards.measure("persona", "x" * 10_000)
    assert usage.limit is None and not usage.over


def test_diff_lists_added_and_removed_lines():
    result = cards.diff("a\nb\nc\n", "a\nB\nc\nd\n")
    kinds = [(row.kind, row.text) for row in result.rows]
    assert ("del", "b") in kinds and ("add", "B") in kinds and ("add", "d") in kinds
    assert (result.added, result.removed) == (2, 1)
    assert cards.diff("same\n", "same\r\n").empty


def test_merge_keeps_edits_that_do_not_overlap():
    merged, conflicts = cards.merge("a\nb\nc\nd\n", "A\nb\nc\nd\n", "a\nb\nc\nD\n")
    assert (merged, conflicts) == ("A\nb\nc\nD\n", 0)


def test_merge_marks_edits_to_the_same_line():
    merged, conflicts = cards.merge("a\nb\nc\n", "a\nmine\nc\n", "a\ntheirs\nc\n")
    assert conflicts == 1
    assert merged.splitlines()[1].startswith("<<<<<<< ")
    assert "mine" in merged and "theirs" in merged and "=======" in merged


def test_merge_of_identical_edits_is_clean():
    assert cards.merge("a\n", "b\n", "b\n") == ("b\n", 0)


def test_replace_generated_keeps_hand_edits_around_it():
    text = "# Me\nhand line\n"
    once = cards.replace_generated(text, "facts", [("- likes tea", [3, 4])])
    edited = once.replace("hand line", "hand line, edited") + "\nafter the block\n"
    twice = cards.replace_generated(edited, "facts", [("- likes coffee", [5])])
    assert "hand line, edited" in twice and "after the block" in twice
    assert "likes tea" not in twice and "- likes coffee <!-- facts:5 -->" in twice
    assert twice.count("<!-- generated:facts") == 1
    assert cards.generated_fact_ids(twice) == [5]


def test_write_generated_records_a_job_revision(db):
    cards.save("memory", "# MEMORY\nmine\n", CardAuthor.PERSON)
    revision = cards.write_generated("memory", "top", [("- fact one", [1])])
    assert revision.author == "job"
    assert cards.read("memory").startswith("# MEMORY\nmine\n")


def test_generated_lines_link_to_their_facts():
    text = cards.replace_generated("", "facts", [("- likes tea", [7, 8])])
    html = cards.render(text)
    assert 'class="generated"' in html
    assert '<a href="/facts/7/">#7</a>' in html and '<a href="/facts/8/">#8</a>' in html
    assert "&lt;!--" not in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](javascript:alert(1))",
        "![x](javascript:alert(1))",
        '<a href="javascript:alert(1)">x</a>',
        "| a |\n|---|\n| <script>alert(1)</script> |",
        "<svg onload=alert(1)>",
        '<!-- generated:x -->\n- <script>alert(1)</script> <!-- facts:1"><script> -->\n'
        "<!-- /generated:x -->",
    ],
)
def test_raw_html_in_a_card_is_shown_as_text(hostile):
    html = cards.render(hostile)
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert 'href="javascript:' not in html and 'src="javascript:' not in html


def test_render_supports_tables_and_lists():
    html = cards.render("| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n1. first\n")
    assert "<table>" in html and "<td>1</td>" in html
    assert "<ul>" in html and "<li>two</li>" in html and "<ol>" in html
