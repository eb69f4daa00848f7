"""A warning repeating fast reaches the pages paced: at most one update per warning every
``UPDATE_EVERY`` seconds, the first at once, and the last count always delivered. The feed's
clock and timer are injected, so time moves only when the test moves it."""

from __future__ import annotations

import heapq
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.web.live import Subscriber
from dsh.web.warning_feed import UPDATE_EVERY, WarningFeed

log = logging.getLogger("dsh.tools.mcp")


class FakeTime:
    """The feed's clock and timer: callbacks run when ``advance`` passes their time."""

    def __init__(self) -> None:
        self.now = 0.0
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def clock(self) -> float:
        return self.now

    def later(self, delay: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._due, (self.now + delay, next(self._order), callback))

    def pending(self) -> int:
        return len(self._due)

    def advance(self, seconds: float, after_each: Callable[[], None] = lambda: None) -> None:
        until = self.now + seconds
        while self._due and self._due[0][0] <= until:
            at, _, callback = heapq.heappop(self._due)
            self.now = at
            callback()
            after_each()
        self.now = until


class Pages:
    """A page listening on the server's stream: the warning frames it got, with when."""

    def __init__(self, feed: WarningFeed, time: FakeTime) -> None:
        self.subscriber: Subscriber = feed.server.subscribe()
        self.time = time
        self.got: list[tuple[float, dict[str, Any]]] = []

    def read(self) -> None:
        while not self.subscriber.queue.empty():
            message = self.subscriber.queue.get_nowait()
            assert message is not None
            self.got.append((self.time.now, json.loads(message)["warning"]))

    def counts(self, text: str) -> list[int]:
        self.read()
        return [w["count"] for _, w in self.got if w["text"] == text]


def paced_feed() -> tuple[WarningFeed, FakeTime, Pages]:
    time = FakeTime()
    feed = WarningFeed(clock=time.clock, later=time.later)
    return feed, time, Pages(feed, time)


def test_a_warning_repeating_in_a_tight_loop_sends_its_first_at_once_and_then_one_update():
    feed, time, pages = paced_feed()
    with feed.installed():
        for _ in range(1000):
            log.warning("MCP server t crashed and was restarted")
        assert pages.counts("MCP server t crashed and was restarted") == [1]
        log.warning("another warning")  # another warning is not held back by the first's pace
        assert pages.counts("another warning") == [1]
        assert time.pending() == 1

        time.advance(UPDATE_EVERY / 2)
        assert pages.counts("MCP server t crashed and was restarted") == [1]  # not yet
        time.advance(UPDATE_EVERY / 2)
        assert pages.counts("MCP server t crashed and was restarted") == [1, 1000]
        assert time.pending() == 0

        time.advance(10 * UPDATE_EVERY)  # quiet since: the next repeat is sent at once
        log.warning("MCP server t crashed and was restarted")
        assert pages.counts("MCP server t crashed and was restarted") == [1, 1000, 1001]
    (kept, _) = feed.kept(None)
    assert kept["count"] == 1001


def test_repeats_within_an_interval_wait_for_its_end_and_the_last_count_arrives():
    feed, time, pages = paced_feed()
    with feed.installed():
        log.warning("w")
        assert pages.counts("w") == [1]  # at 0, at once
        time.advance(0.1)
        log.warning("w")  # due at 0.25
        time.advance(0.1)
        log.warning("w")
        assert pages.counts("w") == [1]
        time.advance(0.05)  # 0.25: the update carries both repeats
        assert pages.counts("w") == [1, 3]
        time.advance(0.05)
        log.warning("w")  # 0.3: within the interval since the update at 0.25
        assert pages.counts("w") == [1, 3]
        time.advance(0.2)
        assert pages.counts("w") == [1, 3, 4]
        assert [at for at, _ in pages.got] == [0.0, 0.25, 0.5]


@settings(max_examples=200, deadline=None)
@given(gaps=st.lists(st.floats(min_value=0.0, max_value=3 * UPDATE_EVERY), min_size=1))
def test_however_repeats_are_spaced_updates_are_paced_and_the_last_count_is_sent(
    gaps: list[float],
) -> None:
    feed, time, pages = paced_feed()
    with feed.installed():
        for gap in gaps:
            time.advance(gap, after_each=pages.read)
            log.warning("w")
            pages.read()
        time.advance(2 * UPDATE_EVERY, after_each=pages.read)
    counts = pages.counts("w")
    assert counts[0] == 1 and counts[-1] == len(gaps)  # the first at once, the last always
    assert counts == sorted(set(counts))  # each update new
    sent = [at for at, _ in pages.got]
    assert all(b - a >= UPDATE_EVERY - 1e-9 for a, b in itertools.pairwise(sent))
    assert time.pending() == 0
