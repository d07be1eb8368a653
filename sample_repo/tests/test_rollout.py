"""Behaviour of the percentage rollout at its edges and under a raised percentage."""

import pytest

from rollout import admitted, bucket, user_ids


def test_zero_percent_admits_nobody():
    assert admitted({"percent": 0, "salt": "s", "population": 200}) == []


def test_full_percent_admits_everyone_in_order():
    assert admitted({"percent": 100, "salt": "s", "population": 200}) == user_ids(200)


def test_raising_the_percent_keeps_every_admitted_user():
    before = set(admitted({"percent": 20, "salt": "search-v2", "population": 1000}))
    after = set(admitted({"percent": 30, "salt": "search-v2", "population": 1000}))
    assert before <= after


def test_admitted_users_are_exactly_those_in_low_buckets():
    x = {"percent": 35, "salt": "pricing", "population": 300}
    chosen = admitted(x)
    assert chosen == sorted(chosen)
    assert all(bucket("pricing", uid) < 35 for uid in chosen)
    rest = set(user_ids(300)) - set(chosen)
    assert all(bucket("pricing", uid) >= 35 for uid in rest)


@pytest.mark.parametrize("percent", [-1, 101])
def test_percent_outside_the_range_is_refused(percent):
    with pytest.raises(ValueError):
        admitted({"percent": percent, "salt": "s", "population": 10})
