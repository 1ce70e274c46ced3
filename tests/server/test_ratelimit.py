"""The per-key rate: a bucket of ``amount`` that refills at ``amount`` per window, O(1) per request."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from guard.server.ratelimit import RateLimiter


def test_a_burst_then_one_per_interval():
    rl = RateLimiter({"k": "4/second"})
    assert [rl.hit("k", 100.0) for _ in range(4)] == [0.0] * 4
    assert rl.hit("k", 100.0) == 0.25
    assert rl.hit("k", 100.1) > 0
    assert rl.hit("k", 100.25) == 0.0
    assert rl.hit("k", 100.3) > 0


def test_keys_have_their_own_buckets():
    rl = RateLimiter({"a": "1/minute", "b": "1/minute"})
    assert rl.hit("a", 0.0) == 0.0 and rl.hit("a", 1.0) == 59.0
    assert rl.hit("b", 1.0) == 0.0


@given(
    amount=st.integers(1, 20),
    gaps=st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=200),
)
def test_never_more_than_the_bucket_plus_the_refill(amount, gaps):
    rl = RateLimiter({"k": f"{amount}/second"})
    now, allowed = 1000.0, 0
    for gap in gaps:
        now += gap
        wait = rl.hit("k", now)
        if wait == 0.0:
            allowed += 1
        else:
            assert rl.hit("k", now + wait + 1e-9) == 0.0  # Retry-After is honest
            allowed += 1
            now += wait + 1e-9
    assert allowed <= amount + (now - 1000.0) * amount + 1
