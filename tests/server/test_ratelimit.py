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


def test_limiters_on_one_folder_share_their_buckets(tmp_path):
    rates = {"a": "3/minute", "b": "1/minute"}
    one, two = RateLimiter(rates, tmp_path), RateLimiter(rates, tmp_path)  # two workers
    assert [one.hit("a", 10.0), two.hit("a", 10.0), one.hit("a", 10.0)] == [0.0, 0.0, 0.0]
    assert two.hit("a", 10.0) == 20.0 and one.hit("a", 10.0) == 20.0
    assert two.hit("b", 10.0) == 0.0 and one.hit("b", 10.0) == 60.0
    other = RateLimiter({"a": "3/minute"}, tmp_path)  # other keys or rates (a reload): a file of their own
    assert other.hit("a", 10.0) == 0.0 and len(list(tmp_path.glob("ratelimit-*.bin"))) == 2
    for rl in (one, two, other):
        rl.close()


def test_a_bucket_shared_between_processes_admits_the_rate_once(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # as uvicorn starts its workers
    with ctx.Pool(2) as pool:
        allowed = pool.starmap(_hits, [(str(tmp_path), 50)] * 4)
    assert sum(allowed) == 10  # "10/hour": a burst of 10 whichever process asks


def _hits(folder: str, n: int) -> int:
    rl = RateLimiter({"k": "10/hour"}, folder)
    try:
        return sum(1 for _ in range(n) if rl.hit("k") == 0.0)
    finally:
        rl.close()
