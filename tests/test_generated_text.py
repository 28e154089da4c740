"""Text the product writes itself follows the reader's language, stored rows included."""

import importlib
import io
import zipfile

import pytest
from django.apps import apps
from django.utils import translation

from curator import cards
from curator.models import (
    CardAuthor,
    CardRevision,
    EventType,
    MemoryEvent,
    Outcome,
    Owner,
    Session,
)
from lifecycle.demo import load_demo
from lifecycle.sessions import end_session
from retrieval.context import assemble
from retrieval.explain import why_not
from tests.lifecycle_helpers import session, turn
from tests.search_helpers import fact

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
migration = importlib.import_module("curator.migrations.0009_generated_text")


def test_a_card_revision_note_reads_in_the_readers_language(client_in, settings, tmp_path):
    settings.MEMORY_DIR = tmp_path
    first = cards.save("memory", "one\n", CardAuthor.JOB, note="nightly_refresh")
    cards.save("memory", "two\n", CardAuthor.JOB, note="session_end")
    cards.restore("memory", first)
    zh = client_in.get("/cards/memory/revisions/", **ZH).content.decode()
    assert "夜间刷新" in zh and "会话结束" in zh and f"恢复了版本 #{first.pk}" in zh
    en = client_in.get("/cards/memory/revisions/").content.decode()
    assert "nightly refresh" in en and f"restored revision #{first.pk}" in en


def test_notes_stored_as_words_become_codes(db):
    old = [
        CardRevision.objects.create(card="memory", content="a", author="job", note=note)
        for note in ("nightly refresh", "会话结束", "restored revision #7", "my own words")
    ]
    migration.notes_to_codes(apps, None)
    rows = [CardRevision.objects.get(pk=r.pk) for r in old]
    assert [(r.note, r.note_params) for r in rows] == [
        ("nightly_refresh", {}),
        ("session_end", {}),
        ("restored", {"id": 7}),
        ("my own words", {}),  # a person's note stays as written
    ]
    with translation.override("zh-hans"):
        assert rows[0].note_text == "夜间刷新" and rows[3].note_text == "my own words"


def test_an_old_drop_reason_sentence_reads_in_chinese(client_in):
    owner = Owner.default()
    event = MemoryEvent.objects.create(
        owner=owner,
        event_type=EventType.DROP,
        actor="job",
        payload={
            "candidate": {"content": "李雷可能喜欢喝咖啡"},
            "reason": "confidence 0.40 is below the 0.60 drop threshold; not stored",
        },
    )
    migration.drop_reasons_to_codes(apps, None)
    event.refresh_from_db()
    assert event.payload["reason"] == "low_confidence"
    page = client_in.get("/activity/", **ZH).content.decode()
    assert "置信度 0.40 低于 0.60" in page and "drop threshold" not in page


def test_the_demo_stores_its_drop_reason_as_a_code(db):
    load_demo(index=False)
    drop = MemoryEvent.objects.get(event_type=EventType.DROP)
    assert drop.payload["reason"] == "low_confidence"


def test_an_episode_summary_follows_the_page_language(client_in):
    s = session("s-lang")
    turn(s, "帮我看看内存为什么涨了。")
    turn(s, "已经找到原因。", role="assistant")
    episode = end_session(s)
    zh = client_in.get(f"/episodes/{episode.pk}/", **ZH).content.decode()
    assert "目标：帮我看看内存为什么涨了。" in zh and "共 2 轮。" in zh
    en = client_in.get(f"/episodes/{episode.pk}/").content.decode()
    assert "Goal: 帮我看看内存为什么涨了。" in en and "2 turns." in en


def test_editing_a_rules_summary_unchanged_changes_nothing(client_in):
    s = session("s-edit")
    turn(s, "帮我看看内存为什么涨了。")
    episode = end_session(s)
    form = client_in.get(f"/episodes/{episode.pk}/edit/", **ZH).content.decode()
    assert "目标：" in form  # the editor shows the summary in the reader's words
    with translation.override("zh-hans"):
        shown = episode.display_summary
    data = {"summary": shown, "goal": episode.goal, "outcome": episode.outcome}
    client_in.post(f"/episodes/{episode.pk}/edit/", {**data, "importance": "0.5"}, **ZH)
    episode.refresh_from_db()
    assert episode.summary_parts  # still the rules' summary, still switching language
    assert not MemoryEvent.objects.filter(event_type=EventType.EPISODE_EDIT).exists()

    mine = {**data, "summary": "我自己写的", "importance": "0.5"}
    client_in.post(f"/episodes/{episode.pk}/edit/", mine, **ZH)
    episode.refresh_from_db()
    assert episode.summary_parts == [] and episode.display_summary == "我自己写的"


def test_an_ended_sessions_episode_is_never_called_ongoing(db):
    with translation.override("en"):
        assert str(Outcome.ONGOING.label) == "unfinished"
    with translation.override("zh-hans"):
        assert str(Outcome.ONGOING.label) == "未完成"


def test_a_session_the_agent_ended_shows_as_ended_at_once(api, client_in, monkeypatch):
    monkeypatch.setattr("lifecycle.tasks.sessions.run_end", lambda pk: None)  # job not run yet
    turn = {"session_id": "s-end", "turn_index": 0, "role": "user", "content": "hi"}
    assert api.post("/turns", turn).status_code == 201
    assert api.post("/sessions/s-end/end").status_code == 202
    assert Session.objects.get(external_id="s-end").ended_at is not None
    page = client_in.get("/sessions/", **ZH).content.decode()
    assert "进行中" not in page  # the still-open badge


def test_why_not_suggestions_name_the_weight_in_the_readers_language(db):
    owner = Owner.default()
    for _ in range(3):
        fact(owner, "杭州 orchard 记录", importance=0.5)
    target = fact(owner, "杭州 orchard 记录", importance=0.0)
    args = {"mode": "keyword", "weights": {"keyword": 1, "importance": 1}, "limit": 1}
    with translation.override("zh-hans"):
        answer = why_not("杭州 orchard", "fact", target.id, owner=owner, **args)
    text = " ".join(answer.suggestions)
    assert "importance" not in text and "重要性" in text


@pytest.mark.parametrize(
    ("language", "heading"), [("zh-hans", "## 相关记忆"), ("en", "## Relevant")]
)
def test_the_agents_context_headings_use_the_owners_language(db, language, heading):
    owner = Owner.default()
    owner.language = language
    owner.save()
    fact(owner, "用户上次面试的公司是网易")
    result = assemble("你还记得我上次面试的公司吗", owner=owner, record=False)
    assert heading in result.text


def test_the_context_language_can_be_set_apart_from_the_owners(client_in):
    Owner.objects.update_or_create(key="global", defaults={"language": "zh-hans"})
    response = client_in.post("/settings/language/", {"context_language": "en"})
    assert response.status_code == 302
    owner = Owner.default()
    assert owner.agent_language() == "en"
    fact(owner, "用户上次面试的公司是网易")
    assert "## Relevant memories" in assemble("你还记得上次面试吗", owner=owner, record=False).text
    assert client_in.post("/settings/language/", {"context_language": "fr"}).status_code == 302
    assert Owner.default().context_language == "en"  # an unknown language is refused


def test_a_file_that_is_no_zip_is_refused_in_chinese(client_in):
    upload = io.BytesIO(b"not a zip at all")
    upload.name = "backup.zip"
    page = client_in.post("/settings/import/", {"archive": upload}, **ZH).content.decode()
    assert "这个文件不是 zip 压缩包" in page and "File is not a zip file" not in page


def test_a_damaged_zip_is_refused_in_chinese(client_in):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("manifest.json", "{}" * 400)
    upload = io.BytesIO(buffer.getvalue()[:-30])
    upload.name = "backup.zip"
    page = client_in.post("/settings/import/", {"archive": upload}, **ZH).content.decode()
    assert "压缩包" in page and "zip file" not in page


def test_djangos_password_length_message_is_chinese(client, db):
    data = {"username": "li", "password1": "abc", "password2": "abc"}
    page = client.post("/setup/", data, **ZH).content.decode()
    assert "密码太短，至少需要 8 个字符。" in page and "too short" not in page
