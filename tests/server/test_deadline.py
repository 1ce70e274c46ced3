"""The request's and the stages' time limits on one timer (:class:`guard.server.app.Deadline`): each limit fires
and names itself, a stage's limit counts from the stage's start, and a cancellation from elsewhere is not a
timeout. Real sleeps on a real event loop, a few tenths of a second each."""

from __future__ import annotations

import asyncio

import pytest

from guard.server import problems as P
from guard.server.app import Deadline

STAGES = {"lint": 10.0, "check": 10.0}


def run(coro):
    return asyncio.run(coro)


def test_the_request_limit_fires_and_names_the_request() -> None:
    async def main() -> None:
        deadline = Deadline(0.1, STAGES)
        with pytest.raises(P.ServerProblem) as caught:
            await deadline.within(asyncio.sleep(5))
        assert caught.value.status == 503 and caught.value.code == "timeout"
        assert caught.value.detail == "the request took longer than 0.1 s"
        assert asyncio.current_task().cancelling() == 0  # the task is not left cancelled

    run(main())


@pytest.mark.parametrize("stage", ["lint", "check"])
def test_each_stage_limit_fires_and_names_the_stage(stage: str) -> None:
    async def main() -> None:
        deadline = Deadline(10.0, {**STAGES, stage: 0.1})

        async def work() -> None:
            await deadline.bound(stage, asyncio.sleep(5))

        t0 = asyncio.get_running_loop().time()
        with pytest.raises(P.ServerProblem) as caught:
            await deadline.within(work())
        assert caught.value.detail == f"the {stage} stage took longer than 0.1 s"
        assert 0.09 <= asyncio.get_running_loop().time() - t0 < 2

    run(main())


def test_a_stage_limit_counts_from_the_stage_start_not_the_request_start() -> None:
    async def main() -> str:
        deadline = Deadline(10.0, {"lint": 10.0, "check": 0.2})

        async def work() -> str:
            await asyncio.sleep(0.15)  # outside any stage: the timer set for "a stage that has not begun" goes off
            await deadline.bound("check", asyncio.sleep(0.15))  # 0.3 s after the request began, 0.15 s in the stage
            return "done"

        return await deadline.within(work())

    assert run(main()) == "done"


def test_a_stage_over_its_limit_after_a_slow_start_still_fires() -> None:
    async def main() -> None:
        deadline = Deadline(10.0, {"lint": 0.2, "check": 10.0})

        async def work() -> None:
            await asyncio.sleep(0.3)
            await deadline.bound("lint", asyncio.sleep(5))

        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(P.ServerProblem) as caught:
            await deadline.within(work())
        assert caught.value.detail == "the lint stage took longer than 0.2 s"
        assert 0.45 <= loop.time() - t0 < 2  # 0.3 s before the stage and its own 0.2 s

    run(main())


def test_a_finished_stage_no_longer_fires() -> None:
    async def main() -> str:
        deadline = Deadline(10.0, {"lint": 0.1, "check": 10.0})

        async def work() -> str:
            await deadline.bound("lint", asyncio.sleep(0.01))
            await asyncio.sleep(0.3)  # past the lint limit, outside the stage
            return "done"

        return await deadline.within(work())

    assert run(main()) == "done"


def test_a_fast_request_sets_one_timer_and_cancels_it() -> None:
    async def main() -> None:
        deadline = Deadline(10.0, STAGES)
        first = deadline.handle
        assert await deadline.within(deadline.bound("check", asyncio.sleep(0))) is None
        assert deadline.handle is first and first.cancelled()

    run(main())


def test_a_cancellation_from_elsewhere_is_not_a_timeout() -> None:
    async def main() -> None:
        async def request() -> None:
            deadline = Deadline(10.0, STAGES)
            await deadline.within(deadline.bound("check", asyncio.sleep(5)))

        task = asyncio.create_task(request())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
