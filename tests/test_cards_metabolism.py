"""Card metabolism: each rule on crafted cards, preview before apply, stale previews refused."""

from datetime import UTC, datetime, timedelta

import pytest

from curator import cards, metabolism
from curator.models import CardRevision, Fact, FactStatus, Owner, Source

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


def _project(sections: int, lines_each: int) -> str:
    out = ["# Orchard", "Rolling log of the project.", ""]
    for n in range(sections):
        out += [f"## Week {n}"] + [f"- note {n}.{i}" for i in range(lines_each)] + [""]
    return "\n".join(out)


def test_cards_within_limits_need_nothing():
    cards.save("project", _project(2, 3), "person")
    assert metabolism.plan(NOW).empty


def test_state_reports_each_rule_against_its_card():
    cards.save("insights", "- a\n- b\n", "person")
    states = {s.key: s for s in metabolism.state()}
    assert set(states) == {"user", "project", "insights", "memory", "scratchpad"}
    assert states["insights"].usage.amount == 2 and states["insights"].usage.limit == 10


def test_project_over_100_lines_archives_the_oldest_sections(memory_dir):
    cards.save("project", _project(12, 10), "person")  # ~135 lines
    plan = metabolism.plan(NOW)
    (change,) = plan.changes
    assert change.archive[0] == memory_dir / "shared" / "archive" / "Project-2026-11-22.md"
    assert not change.archive[0].exists()  # a preview writes nothing
    metabolism.apply(plan.fingerprint, now=NOW)
    after = cards.read("project")
    assert cards.measure("project", after).amount <= 100
    assert after.startswith("# Orchard\nRolling log of the project.")
    assert "## Week 11" in after and "## Week 0" not in after  # the newest stay
    archive = change.archive[0].read_text()
    assert "## Week 0" in archive and "## Week 11" not in archive
    assert "archive/Project-2026-11-22.md" in after and "<!-- generated:archive" in after
    assert CardRevision.objects.filter(card="project").first().note == "metabolism"


def test_a_second_archive_run_adds_to_the_archive_log(memory_dir):
    cards.save("project", _project(12, 10), "person")
    metabolism.apply(None, now=NOW)
    grown = cards.read("project") + "\n" + _project(8, 10).split("\n", 3)[3]
    cards.save("project", grown.replace("## Week", "## Sprint"), "person")
    metabolism.apply(None, now=NOW + timedelta(days=1))
    after = cards.read("project")
    assert after.count("lines archived to") == 2
    assert (memory_dir / "shared" / "archive" / "Project-2026-11-23.md").exists()


def test_one_giant_section_is_reported_not_cut():
    cards.save("project", "# P\n## Only\n" + "- x\n" * 120, "person")
    plan = metabolism.plan(NOW)
    assert plan.empty and "split it by hand" in plan.warnings[0]


def test_insights_keep_the_ten_hottest_and_the_rest_become_facts():
    owner = Owner.default()
    hot = Fact.objects.create(owner=owner, content="hot lesson", access_count=50)
    lines = [f"- lesson {i}" for i in range(11)] + [f"- hot lesson <!-- facts:{hot.pk} -->"]
    cards.save("insights", "# Insights\n" + "\n".join(lines) + "\n", "person")
    plan = metabolism.plan(NOW)
    (change,) = plan.changes
    assert change.new_facts == ["lesson 9", "lesson 10"]  # the coldest: last in the card
    metabolism.apply(plan.fingerprint, now=NOW)
    after = cards.read("insights")
    assert cards.count_items(after) == 10 and "hot lesson" in after and "lesson 10" not in after
    sunk = Fact.objects.filter(source=Source.CONSOLIDATION, status=FactStatus.ACTIVE)
    assert sorted(sunk.values_list("content", flat=True)) == ["lesson 10", "lesson 9"]
    assert set(sunk.values_list("scope", flat=True)) == {"insight"}


def test_a_nested_detail_leaves_with_its_item():
    text = "".join(f"- lesson {i}\n" for i in range(10)) + "- cold one\n  - its detail\n"
    cards.save("insights", text, "person")
    metabolism.apply(None, now=NOW)
    assert "its detail" not in cards.read("insights")


def test_user_md_over_2kb_is_tidied_or_reported():
    line = "- 喜欢安静的工作环境，偏好异步沟通\n"
    cards.save("user", "# 小李\n" + line * 40 + "\n\n\n", "person")
    (change,) = metabolism.plan(NOW).changes
    assert change.after.count("喜欢安静") == 1
    varied = "".join(f"- 第{i}条不同的偏好说明文字\n" for i in range(120))
    cards.save("user", "# 小李\n" + varied, "person")
    plan = metabolism.plan(NOW)
    assert plan.empty and "shorten it by hand" in plan.warnings[0]


def test_apply_refuses_a_stale_preview():
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "person")
    plan = metabolism.plan(NOW)
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(13)), "person")
    with pytest.raises(metabolism.StalePlan):
        metabolism.apply(plan.fingerprint, now=NOW)
    assert cards.count_items(cards.read("insights")) == 13 and not Fact.objects.exists()


def test_a_failure_while_applying_changes_nothing(memory_dir, monkeypatch):
    cards.save("project", _project(12, 10), "person")
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "person")
    before = cards.read("project")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    real_save = cards.save

    def insights_fail(key, *args, **kwargs):
        return broken() if key == "insights" else real_save(key, *args, **kwargs)

    monkeypatch.setattr(cards, "save", insights_fail)
    with pytest.raises(OSError):
        metabolism.apply(None, now=NOW)
    assert cards.read("project") == before
    assert not (memory_dir / "shared" / "archive" / "Project-2026-11-22.md").exists()
    assert not Fact.objects.exists()


def test_the_page_applies_the_previewed_plan(client_in):
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "person")
    plan = metabolism.plan()
    response = client_in.post("/cards/metabolism/", {"fingerprint": plan.fingerprint}, follow=True)
    assert "Applied:" in response.content.decode()
    assert cards.count_items(cards.read("insights")) == 10


def test_the_page_refuses_a_stale_fingerprint(client_in):
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "person")
    response = client_in.post("/cards/metabolism/", {"fingerprint": "stale"}, follow=True)
    assert "changed since the preview" in response.content.decode()
    assert cards.count_items(cards.read("insights")) == 12
