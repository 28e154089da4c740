"""A stored URL becomes a link only for http, https and mailto, whatever its origin."""

import json

import pytest
from django.utils.html import escape

from curator import cards
from curator.models import Attachment, Owner
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.core.links import is_safe_link
from tests.archive_helpers import populate, rewrite, rows, wipe

HOSTILE = [
    "javascript:alert(document.cookie)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "//evil.example/",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_it_refuses_to_link_anything_but_http_https_and_mailto(url):
    assert not is_safe_link(url)


@pytest.mark.parametrize("url", ["https://example.org/a?b=1", "http://x.cn/", "mailto:li@x.cn"])
def test_it_links_web_and_mail_addresses(url):
    assert is_safe_link(url)


def _attachment(url: str) -> Attachment:
    return Attachment.objects.create(
        owner=Owner.default(), original_name="a.txt", mime_type="text/plain", url=url
    )


@pytest.mark.parametrize("url", HOSTILE)
def test_the_attachment_page_shows_a_hostile_url_as_text(client_in, url):
    att = _attachment(url)
    html = client_in.get(f"/attachments/{att.pk}/").content.decode()
    section = html.split('id="attachment-url">', 1)[1].split("</span></span>", 1)[0]
    assert "<a " not in section and f"Original link: {escape(url)}" in section
    assert f'href="{escape(url)}' not in html


def test_the_attachment_page_links_a_web_address(client_in):
    att = _attachment("https://example.org/orders?id=7")
    html = client_in.get(f"/attachments/{att.pk}/").content.decode()
    assert '<a href="https://example.org/orders?id=7" rel="noopener noreferrer">' in html


def test_a_card_link_with_another_scheme_stays_text():
    text = "[x](javascript:alert(1)) [y](ms-officecmd:x) [z](ftp://a.org/) [ok](https://a.org)"
    html = cards.render(text + " [site](/facts/3/) [mail](mailto:li@a.org)")
    assert "[y](ms-officecmd:x)" in html and "[z](ftp://a.org/)" in html
    assert 'href="javascript' not in html and 'href="ms-' not in html and 'href="ftp' not in html
    for kept in ('href="https://a.org"', 'href="/facts/3/"', 'href="mailto:li@a.org"'):
        assert kept in html


@pytest.mark.django_db
def test_it_refuses_an_archive_with_a_javascript_url(tmp_path, settings):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.MEDIA_ROOT = tmp_path / "attachments"
    populate()
    path = tmp_path / "a.zip"
    archive.export(path)
    records = rows(path, "attachments")
    records[0]["url"] = "javascript:alert(1)"
    data = "\n".join(json.dumps(r) for r in records).encode()
    bad = rewrite(path, tmp_path / "bad.zip", {"data/attachments.jsonl": data})
    wipe()
    with pytest.raises(imp.ArchiveError, match="the value of url is invalid"):
        imp.read(bad)
