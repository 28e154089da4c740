"""The cards pages through the Django client: overview, editor, conflicts, revisions, preview."""

import pytest

from curator import cards
from curator.models import CardRevision, Fact, Owner, Scratchpad

HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.CACHE_DIR = tmp_path / "cache"
    settings.LLM_BASE_URL = ""
    return settings.MEMORY_DIR


def _save(client, key, content, base, **extra):
    return client.post(f"/cards/{key}/", {"content": content, "base": base, **extra})


def test_the_overview_lists_every_card_with_size_and_last_change(client_in):
    cards.save("user", "# Li\n", "onboarding")
    Scratchpad.objects.create(owner=Owner.default(), content="## 当前项目\n")
    page = client_in.get("/cards/").content.decode()
    for key in ("persona", "user", "project", "insights", "memory", "scratchpad"):
        assert f'data-card="{key}"' in page
    assert "5 / 2048 bytes" in page and "onboarding" in page
    assert "shared/User.md" in page and "kept in the database" in page


def test_an_over_full_card_is_flagged(client_in):
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "job")
    assert "over the limit" in client_in.get("/cards/").content.decode()


def test_unknown_cards_are_404(client_in):
    assert client_in.get("/cards/secrets/").status_code == 404


def test_the_editor_shows_text_preview_and_base(client_in):
    cards.save("project", "# Orchard\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "person")
    page = client_in.get("/cards/project/").content.decode()
    assert 'name="content"' in page and 'name="base"' in page
    assert "<td>1</td>" in page and "/static/js/cards.js" in page


def test_saving_writes_the_card_and_redirects(client_in, memory_dir):
    response = _save(client_in, "user", "# Li\r\n- tea\r\n", "")
    assert response.status_code == 302 and response["Location"] == "/cards/user/"
    assert (memory_dir / "shared" / "User.md").read_text() == "# Li\n- tea\n"
    assert CardRevision.objects.get(card="user").author == "person"
    assert "Saved User.md." in client_in.get("/cards/user/").content.decode()


def test_htmx_save_returns_the_editor_partial(client_in):
    response = client_in.post("/cards/user/", {"content": "# x\n", "base": ""}, headers=HX)
    page = response.content.decode()
    assert "<html" not in page and "data-card-editor" in page and "Saved User.md." in page


def test_preview_button_renders_without_saving(client_in):
    response = _save(client_in, "user", "# Draft\n", "", action="preview")
    assert (
        "<h1>Draft</h1>" in response.content.decode()
        and "not saved yet" in response.content.decode()
    )
    assert cards.read("user") == ""


def test_live_preview_renders_script_as_text(client_in):
    response = client_in.post(
        "/cards/user/preview/", {"content": "<script>alert(1)</script>\n\n- a"}, headers=HX
    )
    page = response.content.decode()
    assert "&lt;script&gt;" in page and "<script>" not in page and "<li>a</li>" in page
    assert 'id="card-usage" hx-swap-oob="true"' in page
    assert client_in.get("/cards/user/preview/").status_code == 405


def test_xss_saved_in_a_card_never_reaches_a_page_as_html(client_in):
    hostile = (
        '<script>alert("x")</script>\n<img src=x onerror=alert(1)>\n[a](javascript:alert(1))\n'
    )
    cards.save("memory", hostile, "agent")
    for url in ("/cards/memory/", "/cards/memory/revisions/", "/cards/memory/diff/?a=current"):
        page = client_in.get(url).content.decode()
        assert '<script>alert("x")' not in page and "<img src=x" not in page
        assert 'href="javascript:' not in page


def test_a_change_on_disk_is_refused_with_both_versions_and_a_merge(client_in, memory_dir):
    cards.save("user", "line one\nline two\nline three\n", "person")
    (memory_dir / "shared" / "User.md").write_text("line one\nline two\nline three, from vim\n")
    response = _save(
        client_in,
        "user",
        "line one, mine\nline two\nline three\n",
        "line one\nline two\nline three\n",
    )
    page = response.content.decode()
    assert 'id="conflict"' in page and "Nothing was overwritten" in page
    assert 'data-version="theirs"' in page and 'data-version="mine"' in page
    assert "line one, mine\nline two\nline three, from vim" in page  # a clean merge offered
    assert cards.read("user").endswith("from vim\n")


def test_saving_the_merge_uses_the_disk_version_as_base(client_in, memory_dir):
    (memory_dir / "shared").mkdir(parents=True)
    (memory_dir / "shared" / "User.md").write_text("theirs\n")
    response = _save(client_in, "user", "merged\n", "theirs\n", action="merge")
    assert response.status_code == 302 and cards.read("user") == "merged\n"


def test_a_merge_with_conflict_blocks_left_is_refused(client_in):
    text = "<<<<<<< your version\nmine\n=======\ntheirs\n>>>>>>> version on disk\n"
    page = _save(client_in, "user", text, "", action="merge").content.decode()
    assert "Resolve the conflict blocks" in page and cards.read("user") == ""


def test_revisions_list_diff_and_restore(client_in):
    first = cards.save("project", "alpha\nbeta\n", "person")
    second = cards.save("project", "alpha\ngamma\n", "job")
    page = client_in.get("/cards/project/revisions/").content.decode()
    assert f'data-revision="{first.pk}"' in page and f'data-revision="{second.pk}"' in page
    assert page.count('formaction="/cards/project/revisions/') == 1  # the current one has none
    diff = client_in.get(f"/cards/project/diff/?a={first.pk}&b={second.pk}").content.decode()
    assert 'class="diff-del"' in diff and "beta" in diff and "gamma" in diff
    response = client_in.post(f"/cards/project/revisions/{first.pk}/restore/")
    assert response.status_code == 302 and cards.read("project") == "alpha\nbeta\n"
    latest = CardRevision.objects.filter(card="project").first()
    assert latest.pk > second.pk and f"#{first.pk}" in latest.note_text


def test_a_single_revision_shows_rendered_and_raw(client_in):
    rev = cards.save("project", "# Title\n", "person")
    page = client_in.get(f"/cards/project/revisions/{rev.pk}/").content.decode()
    assert "<h1>Title</h1>" in page and "This is the current content." in page
    assert client_in.get(f"/cards/user/revisions/{rev.pk}/").status_code == 404


def test_diff_rejects_garbage_references(client_in):
    assert client_in.get("/cards/project/diff/?a=abc").status_code == 404


def test_restore_needs_a_post(client_in):
    rev = cards.save("project", "x\n", "person")
    assert client_in.get(f"/cards/project/revisions/{rev.pk}/restore/").status_code == 405


def test_the_scratchpad_can_be_edited_like_a_file(client_in):
    _save(client_in, "scratchpad", "## 下一步\n- 写测试\n", "")
    assert Scratchpad.objects.get(owner=Owner.default()).content == "## 下一步\n- 写测试\n"


def test_generated_sections_are_labelled_and_link_to_facts(client_in):
    fact = Fact.objects.create(owner=Owner.default(), content="likes tea")
    cards.write_generated("memory", "top", [("- likes tea", [fact.pk])])
    page = client_in.get("/cards/memory/").content.decode()
    assert "Generated automatically" in page
    assert f'href="{cards.fact_url(fact.pk)}"' in page


def test_the_injected_preview_shows_compiled_cards_and_tokens(client_in):
    cards.save("persona", "# 十一\n<!-- note -->\n## Tone\n- direct\n## Empty\n", "person")
    cards.save("user", "# Li\n- **Address as**: Li\n- job: [待学习]\n", "person")
    page = client_in.get("/cards/injected/").content.decode()
    assert "of 600 tokens" in page and "rules" in page
    assert "- direct" in page and "note" not in page.split("Preview as injected", 2)[-1]
    assert "[待学习]" not in page and "## Empty" not in page
    again = client_in.post("/cards/injected/", headers=HX).content.decode()
    assert "Compiled again." in again


def test_the_metabolism_page_shows_rules_and_a_preview(client_in):
    cards.save("insights", "".join(f"- lesson {i}\n" for i in range(12)), "person")
    page = client_in.get("/cards/metabolism/").content.decode()
    assert 'data-rule="insights"' in page and "12 / 10 items" in page
    assert "lesson 11" in page and 'name="fingerprint"' in page
    assert cards.measure("insights", cards.read("insights")).amount == 12  # preview only


def test_revision_sizes_use_the_editors_unit(client_in):
    cards.save("user", "# 李雷\n", "person")  # User.md is measured in bytes, like its editor
    html = client_in.get("/cards/user/revisions/").content.decode()
    size = cards.measure("user", "# 李雷\n")
    assert size.unit == "bytes" and f"{size.amount} bytes" in html
    assert f">{len('# 李雷')}<" not in html  # not characters
