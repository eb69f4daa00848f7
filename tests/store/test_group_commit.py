"""GroupFsync: coalesced background fsyncs, writes that ride on the next one, and upkeep that
runs after an fsync without holding up its waiters."""

from __future__ import annotations

import threading

import pytest

from dsh.store.group_commit import GroupFsync


class Recorder:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def test_a_durable_write_requests_an_fsync_and_sync_waits_for_it():
    fsync = Recorder()
    group = GroupFsync(fsync, "t")
    group.wrote(durable=True)
    group.sync()
    assert fsync.calls == 1
    group.close()


def test_other_writes_ride_on_the_next_request_and_sync_requests_one_for_them():
    fsync = Recorder()
    group = GroupFsync(fsync, "t")
    group.wrote(durable=False)
    group.wrote(durable=False)
    group.wait()  # nothing was requested: nothing to wait for
    assert fsync.calls == 0
    group.sync()  # covers the two writes
    assert fsync.calls == 1
    group.sync()  # nothing written since: no second fsync
    assert fsync.calls == 1
    group.close()


def test_a_durable_write_covers_the_writes_before_it():
    fsync = Recorder()
    group = GroupFsync(fsync, "t")
    group.wrote(durable=False)
    group.wrote(durable=True)
    group.sync()
    group.sync()
    assert fsync.calls == 1
    group.close()


def test_upkeep_after_an_fsync_does_not_hold_up_its_waiters():
    release, finished = threading.Event(), threading.Event()

    def upkeep() -> None:
        release.wait(30)
        finished.set()

    group = GroupFsync(lambda: None, "t", after=upkeep)
    group.request()
    group.wait()  # returns while the upkeep is still blocked
    assert not finished.is_set()
    release.set()
    group.close()  # joins the thread: the upkeep has finished
    assert finished.is_set()


def test_a_failed_fsync_is_raised_to_every_later_waiter_and_skips_the_upkeep():
    upkeep = Recorder()

    def broken() -> None:
        raise OSError(5, "Input/output error")

    group = GroupFsync(broken, "t", after=upkeep)
    group.wrote(durable=True)
    with pytest.raises(OSError):
        group.sync()
    assert isinstance(group.error, OSError)
    with pytest.raises(OSError):
        group.wait()
    assert upkeep.calls == 0
    group.close()
