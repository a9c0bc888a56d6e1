"""What a request's work on a thread tells the editors (`place.on_loop`) is done on the loop
once that work is done and before its answer, in the order told; a request given up while its
thread goes on loses nothing the thread tells afterwards."""

from __future__ import annotations

import asyncio
import threading

from ctxlayer.state.requests import place


async def test_calls_left_by_the_work_run_on_the_loop_in_order_before_the_answer(caller):
    loop_thread = threading.get_ident()
    seen: list[tuple[str, int]] = []

    def work() -> str:
        for k in range(3):
            place.on_loop(lambda k=k: seen.append((f"told {k}", threading.get_ident())))
        seen.append(("work done", threading.get_ident()))
        return "answer"

    for runs in ("worker", "lane"):
        seen.clear()
        assert await place.run(caller, runs, work) == "answer"
        assert [what for what, _ in seen] == ["work done", "told 0", "told 1", "told 2"]
        assert seen[0][1] != loop_thread
        assert {who for what, who in seen[1:]} == {loop_thread}, "on the loop"


async def test_what_a_given_up_request_tells_later_still_reaches_the_loop(caller):
    loop_thread = threading.get_ident()
    started, go, told = threading.Event(), threading.Event(), asyncio.Event()
    seen: list[int] = []
    loop = asyncio.get_running_loop()

    def work() -> None:
        started.set()
        go.wait(10)
        place.on_loop(lambda: (seen.append(threading.get_ident()), told.set()))

    task = asyncio.ensure_future(place.run(caller, "worker", work))
    while not started.is_set():  # under way on its thread, not merely queued
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    go.set()  # the thread goes on after its request was given up
    await asyncio.wait_for(told.wait(), 10)
    assert seen == [loop_thread]
    assert loop.is_running()


async def test_a_failing_call_left_for_the_loop_does_not_take_the_answer_or_the_others(caller):
    seen: list[str] = []

    def work() -> str:
        place.on_loop(lambda: 1 / 0)
        place.on_loop(lambda: seen.append("second"))
        return "answer"

    assert await place.run(caller, "worker", work) == "answer"
    assert seen == ["second"]
