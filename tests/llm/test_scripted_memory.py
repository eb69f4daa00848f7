"""A long ``--script`` run's memory tracks its log: the scripted provider keeps the requests it
was sent only when asked (tests), the last ``keep_requests`` of them otherwise, and a real run
keeps none; its simulated cache keys segments by digest, serving the hits the text-keyed cache
serves, without holding every message's text."""

from __future__ import annotations

from pathlib import Path

from dsh.agent.runtime import resolve_route
from dsh.config import Settings
from dsh.events import AssistantMessage, Message
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import DeepSeekCache, message_segment, request_segments
from dsh.llm.scripted import ScriptedProvider
from dsh.store import MemoryStore
from tests.helpers import new_session, user_message
from tests.llm.test_scripted import collect, request

TURNS = 12


def converse(provider: ScriptedProvider) -> tuple[list[int | None], list[Message]]:
    """``TURNS`` calls of a growing conversation, each reply logged: each call's cache read and
    each reply."""
    session = new_session(MemoryStore())
    messages: list[Message] = []
    hits, replies = [], []
    for turn in range(1, TURNS + 1):
        messages.append(user_message(f"question {turn} " + "words " * turn))
        sent = request(*messages)
        answer = StreamAssembler().feed_all(collect(provider.stream(sent, history=session.events)))
        assert answer.usage is not None
        hits.append(answer.usage.cache_read_tokens)
        logged = answer.message(f"a-{turn}", "scripted", "scripted")
        session.append(AssistantMessage(turn=turn, step=1, message=logged, usage=answer.usage))
        messages.append(logged)
        replies.append(logged)
    return hits, replies


def entries() -> list[dict[str, str]]:
    return [{"text": f"answer {n} " + "x" * 40} for n in range(TURNS)]


def test_every_request_is_kept_by_default_the_last_n_when_bounded_none_with_zero() -> None:
    every, last_two, none = (
        ScriptedProvider(entries(), keep_requests=keep) for keep in (None, 2, 0)
    )
    for provider in (every, last_two, none):
        converse(provider)
    assert len(every.requests) == TURNS
    last = [sent.messages[-1].text() for sent in last_two.requests]
    assert last == [sent.messages[-1].text() for sent in every.requests[-2:]]
    assert none.requests == []


def test_a_script_route_keeps_no_request(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"text": "a"}]')
    route = resolve_route(Settings(), script=script)
    assert isinstance(route.provider, ScriptedProvider)
    assert route.provider.keep_requests == 0


def test_the_digest_keyed_cache_serves_the_text_keyed_hits_and_keeps_no_text() -> None:
    provider = ScriptedProvider(entries(), cache="deepseek")
    hits, replies = converse(provider)
    # The same requests and replies through a cache keyed by the segments' texts, as before.
    reference, expected = DeepSeekCache(), []
    for sent, answer in zip(provider.requests, replies, strict=True):
        segments = request_segments(sent)
        expected.append(reference.serve(segments))
        reference.save_output([*segments, message_segment(answer)])
    assert hits == expected and any(expected)
    keys = _trie_keys(provider)
    texts = {text for sent in provider.requests for text, _ in request_segments(sent)}
    assert keys and all(len(key) == 32 for key in keys) and not keys & texts


def _trie_keys(provider: ScriptedProvider) -> set[str]:
    cache = provider._cache
    assert isinstance(cache, DeepSeekCache)
    keys: set[str] = set()
    nodes = [cache._root]
    while nodes:
        node = nodes.pop()
        keys.update(node.children)
        nodes.extend(node.children.values())
    return keys
