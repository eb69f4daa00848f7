"""The suite's property tests never fail for time: no deadline and no slow-generation health
check in the profile every run loads (a loaded CI machine once took 285 ms on a 200 ms one)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_the_loaded_profile_sets_no_deadline_and_tolerates_slow_generation():
    current = settings()
    assert current.deadline is None
    assert HealthCheck.too_slow in current.suppress_health_check
