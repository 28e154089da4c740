"""Changes reach the indexes through the queue once their transaction commits."""

import pytest
from django.db import transaction

from curator.models import Fact, Owner
from curator.signals import changed as schedule  # announced changes are indexed by a job
from retrieval.backends import keyword_hits


@pytest.mark.django_db(transaction=True)
def test_a_committed_change_is_indexed():
    owner = Owner.default()
    with transaction.atomic():
        fact = Fact.objects.create(owner=owner, content="用户住在杭州")
        schedule("fact", fact.id)
    assert [h.object_id for h in keyword_hits("杭州", owner.id)] == [fact.id]
    fact_id = fact.id
    fact.delete()
    schedule("fact", fact_id)
    assert keyword_hits("杭州", owner.id) == []


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_is_never_indexed():
    owner = Owner.default()
    with pytest.raises(RuntimeError), transaction.atomic():
        fact = Fact.objects.create(owner=owner, content="用户住在杭州")
        schedule("fact", fact.id)
        raise RuntimeError
    assert keyword_hits("杭州", owner.id) == []
