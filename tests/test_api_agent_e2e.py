"""One agent session end to end, through the API only: record a conversation, end the session,
let the (immediate-mode) jobs run, confirm a pending memory, find it with /search and /context."""

CONVERSATION = [
    ("user", "我最近开始学钢琴了，每周练三次"),
    ("assistant", "太好了！你是跟老师学还是自学？"),
    ("user", "跟老师学，每周六上午上课"),
    ("assistant", "记下了：周六上午上钢琴课。"),
]


def test_an_agent_session_from_turns_to_recall(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ids = []
        for index, (role, content) in enumerate(CONVERSATION):
            response = api.post(
                "/turns",
                {"session_id": "e2e", "turn_index": index, "role": role, "content": content},
            )
            assert response.status_code == 201
            ids.append(response.json()["id"])
        ended = api.post("/sessions/e2e/end")
        assert ended.status_code == 202 and ended.json()["job_id"]

    episodes = api.get("/episodes", {"session_id": "e2e"}).json()
    assert episodes["count"] >= 1  # the session-end job wrote what happened

    with django_capture_on_commit_callbacks(execute=True):
        # The agent asks in chat (seed 000 section 7) about something it is unsure of.
        proposed = api.post(
            "/memories",
            {
                "content": "每周六上午上钢琴课",
                "subject": "user",
                "predicate": "piano_lesson",
                "type": "fact",
                "confidence": 0.7,
                "source_turn_id": ids[2],
                "operation_id": "e2e-piano",
            },
        ).json()
        assert proposed["outcome"] == "pending"
        pending = api.get("/pending").json()["items"]
        item = next(i for i in pending if i["content"] == "每周六上午上钢琴课")
        confirmed = api.post(f"/pending/{item['id']}/confirm").json()
    fact_id = confirmed["fact"]["id"]
    assert confirmed["fact"]["verified"] is True

    found = api.post("/search", {"query": "钢琴课", "kinds": ["fact"], "explain": True}).json()
    top = next(r for r in found["results"] if r["id"] == fact_id)
    assert top["breakdown"] and top["found_by"]

    context = api.post(
        "/context",
        {"query": "还记得我什么时候上钢琴课吗", "session_id": "e2e", "explain": True},
    ).json()
    assert context["triggered"] is True and "钢琴课" in context["text"]
    evidence = next(s for s in context["sections"] if s["name"] == "evidence")
    assert any(
        i["kind"] == "fact" and i["id"] == fact_id and i["breakdown"] for i in evidence["items"]
    )
