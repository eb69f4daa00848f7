"""A turn whose provider was given an unusable base URL (config validation bypassed: built
directly) ends as an error turn, logged, with the session intact: it reopens, and the next turn
with a working provider runs in it."""

from __future__ import annotations

import pytest

from dsh.events import RequestErrorEvent, TurnEndEvent
from dsh.llm.errors import ErrorCode
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.surface import Session
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, openai_text


@pytest.mark.parametrize("url", ["bad\x1b[31m", "ftp://x", "http://", "not a url"])
def test_a_turn_against_an_unusable_base_url_ends_as_a_logged_error_and_the_session_goes_on(
    harness: Harness,
    server: FakeServer,  # noqa: F811
    url: str,
):
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", url, "k")

    result = run(agent.run_turn("one"))

    assert result.reason == "error" and ErrorCode.INVALID_URL in (result.error or "")
    errors = [e for e in harness.session.events if isinstance(e, RequestErrorEvent)]
    assert [(e.data.code, e.data.retryable) for e in errors] == [("INVALID_URL", False)]
    ends = [e for e in harness.session.events if isinstance(e, TurnEndEvent)]
    assert [e.data.reason.kind for e in ends] == ["error"]
    with Session.open(harness.store, harness.session.id) as stored:  # what the log reads as
        assert list(stored.events) == list(harness.session.events)
    server.queue(openai_text("fine"))
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    assert run(agent.run_turn("two")).text == "fine"
    assert [e.data.reason.kind for e in harness.session.of_type(TurnEndEvent)] == [
        "error",
        "completed",
    ]
