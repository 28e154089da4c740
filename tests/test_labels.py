"""Pages show readable labels for internal codes, in both languages."""

import pytest
from django.utils import translation

from curator.writepath import Candidate, InvalidCandidate, propose
from memsite.templatetags.labels import codelabel


def test_it_labels_search_stages_and_context_sections():
    assert codelabel("knn") == "vector search"
    assert codelabel("evidence") == "long-term evidence"


def test_it_translates_labels_to_chinese():
    with translation.override("zh-hans"):
        assert codelabel("knn") == "向量检索"
        assert codelabel("evidence") == "长期证据"


def test_it_names_the_model_an_llm_compiled_with():
    assert codelabel("llm:qwen2.5") == "compiled by qwen2.5"


def test_it_shows_an_unknown_code_as_it_is():
    assert codelabel("brand-new-stage") == "brand-new-stage"


@pytest.mark.django_db
def test_a_write_path_error_names_the_field_in_words():
    with pytest.raises(InvalidCandidate) as caught:
        propose(Candidate(content="x", confidence=3), actor="agent")
    assert caught.value.field == "confidence"
    assert "Confidence must be a number between 0 and 1." in str(caught.value)
    with translation.override("zh-hans"), pytest.raises(InvalidCandidate) as caught:
        propose(Candidate(content="x", confidence=3), actor="agent")
    assert "confidence" not in str(caught.value)
