"""A fact's "Where this came from": fact -> source turn -> session -> episode, and back."""

from curator.models import ConversationTurn, Episode, Fact, Owner, PendingItem, Session
from curator.transcripts import episode_url


def page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def section(html: str) -> str:
    return html.split('id="provenance"')[1].split("</section>")[0]


def link(html: str, cls: str) -> str:
    return html.split(f'class="{cls}" href="')[1].split('"')[0]


def conversation(episode=True):
    s = Session.objects.create(owner=Owner.default(), external_id="s-猫", title="聊猫")
    said = ConversationTurn.objects.create(
        session=s, turn_index=2, role="user", content="我家橘猫叫<小橘>，三岁了"
    )
    ep = None
    if episode:
        ep = Episode.objects.create(owner=Owner.default(), session=s, summary="聊了家里的猫")
        ConversationTurn.objects.filter(pk=said.pk).update(episode=ep)
    fact = Fact.objects.create(
        owner=Owner.default(), content="有一只橘猫", source="rules", source_turn=said
    )
    return fact, said, s, ep


def test_it_walks_from_the_fact_to_turn_session_and_episode(client_in):
    fact, said, s, ep = conversation()
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert link(html, "prov-turn") == f"/sessions/{s.pk}/#turn-{said.pk}"
    assert "我家橘猫叫&lt;小橘&gt;，三岁了" in html  # the excerpt, escaped
    assert link(html, "prov-session") == f"/sessions/{s.pk}/"
    assert link(html, "prov-episode") == episode_url(ep.pk)
    assert "聊了家里的猫" in html


def test_each_link_lands_on_a_page_showing_the_fact(client_in):
    fact, said, s, ep = conversation()
    transcript = page(client_in, f"/sessions/{s.pk}/")
    turn_block = transcript.split(f'id="turn-{said.pk}"')[1]
    assert f'href="/facts/{fact.pk}/"' in turn_block
    assert episode_url(ep.pk) in transcript  # the session names its episode


def test_a_session_not_ended_has_no_episode_yet(client_in):
    fact, *_ = conversation(episode=False)
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert "prov-turn" in html and "prov-session" in html
    assert "prov-episode" not in html and "None yet" in html


def test_a_fact_from_an_episode_alone_links_the_episode_and_its_session(client_in):
    _, _, s, ep = conversation()
    fact = Fact.objects.create(
        owner=Owner.default(), content="常聊猫", source="consolidation", source_episode=ep
    )
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert "prov-turn" not in html
    assert link(html, "prov-session") == f"/sessions/{s.pk}/"
    assert link(html, "prov-episode") == episode_url(ep.pk)


def test_a_fact_entered_by_hand_says_so(client_in):
    fact = Fact.objects.create(owner=Owner.default(), content="喜欢绿茶", source="manual")
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert "Entered by you" in html and "prov-turn" not in html


def test_a_fact_without_a_source_says_so(client_in):
    fact = Fact.objects.create(owner=Owner.default(), content="来自 API", source="api")
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert "No source recorded" in html and "prov-session" not in html


def test_a_reviewed_fact_links_its_review_item(client_in):
    fact, *_ = conversation()
    item = PendingItem.objects.create(
        owner=Owner.default(),
        candidate={"content": "有一只橘猫"},
        confidence=0.7,
        reason="low_confidence",
        status="confirmed",
        resulting_fact=fact,
    )
    html = section(page(client_in, f"/facts/{fact.pk}/"))
    assert link(html, "prov-review") == f"/review/{item.pk}/"


def test_unknown_facts_still_404(client_in):
    assert client_in.get("/facts/99999/").status_code == 404
