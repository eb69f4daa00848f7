"""``dsh run --json-stream``'s text deltas are joined into at most one piece per interval, in
order and without losing any: a delta after a quiet spell goes at once, the ones that follow it
wait for the interval's timer (or a flush), and half a surrogate pair waits for its other half.
A hand-driven clock and timer, so no test depends on how fast this machine is."""

from __future__ import annotations

from collections.abc import Callable

from dsh.cli.coalesced_text import CoalescedText


class Timers:
    """A clock that moves only when told, and the timers scheduled on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.due: list[tuple[float, Callable[[], None], Timer]] = []

    def schedule(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer()
        self.due.append((self.now + delay, callback, timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move the clock and run the timers that fell due, in order."""
        self.now += seconds
        for when, callback, timer in sorted(self.due, key=lambda item: item[0]):
            if when <= self.now and not timer.cancelled:
                timer.cancelled = True
                callback()
        self.due = [item for item in self.due if not item[2].cancelled]


class Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def coalesced(timers: Timers) -> tuple[CoalescedText, list[str]]:
    written: list[str] = []
    text = CoalescedText(written.append, interval=0.05, clock=lambda: timers.now,
                         schedule=timers.schedule)  # fmt: skip
    return text, written


def test_deltas_within_the_interval_are_written_as_one_piece_when_it_is_over() -> None:
    timers = Timers()
    text, written = coalesced(timers)
    text.add("Hel")  # the first: at once
    for delta in ["l", "o", ",", " ", "world"]:
        timers.advance(0.001)
        text.add(delta)
    assert written == ["Hel"]  # the rest waits for the interval
    timers.advance(0.05)
    assert written == ["Hel", "lo, world"]


def test_many_deltas_make_at_most_one_piece_per_interval_and_lose_nothing() -> None:
    timers = Timers()
    text, written = coalesced(timers)
    deltas = [f"{i} " for i in range(1000)]  # one every millisecond: one second of streaming
    for delta in deltas:
        text.add(delta)
        timers.advance(0.001)
    text.flush()
    assert "".join(written) == "".join(deltas)
    assert len(written) <= 1 + 1 / 0.05 + 1  # the first, one per interval, the flush


def test_a_delta_after_a_quiet_spell_is_written_at_once() -> None:
    timers = Timers()
    text, written = coalesced(timers)
    text.add("one")
    timers.advance(1.0)
    text.add("two")
    assert written == ["one", "two"]
    assert timers.due == []


def test_a_flush_writes_what_waits_and_its_timer_writes_nothing_more() -> None:
    timers = Timers()
    text, written = coalesced(timers)
    text.add("a")
    text.add("b")
    text.flush()  # another line follows: the text goes first
    timers.advance(1.0)
    assert written == ["a", "b"]


def test_half_a_surrogate_pair_waits_for_its_other_half_until_a_flush() -> None:
    timers = Timers()
    text, written = coalesced(timers)
    text.add("x")
    text.add("smile \ud83d")  # a provider that streams the halves of an emoji apart
    timers.advance(0.05)
    assert written == ["x", "smile "]
    text.add("\ude00!")
    timers.advance(0.05)
    assert written == ["x", "smile ", "\ud83d\ude00!"]
    text.add("\ud83d")
    text.flush()  # the reply is over: what came is written as it is
    assert written[-1] == "\ud83d"
