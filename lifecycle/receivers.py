"""The jobs layer's answers to what the memory domain announces (curator.signals)."""

from curator import signals
from lifecycle import tasks, turnbatch


def index_changed_item(sender, kind: str, object_id: int, **kwargs) -> None:
    if not turnbatch.take_index(kind, object_id):  # a chat import's turns go in batches
        tasks.index_item(kind, object_id)


def extract_recorded_turn(sender, turn_id: int, **kwargs) -> None:
    if not turnbatch.take_extract(turn_id):
        tasks.extract_turn(turn_id)


def refresh_cards_soon(sender, fact_ids: list[int], **kwargs) -> None:
    tasks.request_card_refresh()


def check_changed_fact(sender, kind: str, object_id: int, **kwargs) -> None:
    """A new or changed fact may contradict another: a coalesced scan follows shortly."""
    if kind == "fact":
        tasks.contradictions_after_write()


def connect() -> None:
    signals.item_changed.connect(index_changed_item, dispatch_uid="lifecycle.index")
    signals.item_changed.connect(check_changed_fact, dispatch_uid="lifecycle.contradictions")
    signals.turn_recorded.connect(extract_recorded_turn, dispatch_uid="lifecycle.extract")
    signals.facts_changed.connect(refresh_cards_soon, dispatch_uid="lifecycle.cards")
