"""Full garbage collections wait for quiet moments of a serving face's loop (a full collection in
a burst of pipelined requests held the loop 13-37 ms: bench/load_bench.py's count p99)."""

from __future__ import annotations

import asyncio
import gc

import pytest

from ctxlayer.state import State, collecting


def full_collections() -> int:
    return gc.get_stats()[2]["collections"]


async def until(check, seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / 0.01)):
        if check():
            return True
        await asyncio.sleep(0.01)
    return check()


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(collecting, "CHECK_EVERY", 0.01)
    monkeypatch.setattr(collecting, "QUIET_TASKS", 5)
    before = gc.get_threshold()
    yield
    assert gc.get_threshold() == before  # every test lets go


def make_due(young: int) -> None:
    """``young`` collections of the middle generation: as many as Python counts (its third
    threshold, read before `hold`) before it would start a full one."""
    for _ in range(young):
        gc.collect(1)


def test_a_due_full_collection_waits_while_the_loop_is_busy_and_runs_once_it_is_quiet(quick):
    young = gc.get_threshold()[2]

    async def main() -> tuple[int, int, int]:
        collecting.hold()
        try:
            assert gc.get_threshold()[2] > 1_000_000  # Python starts none itself
            busy = [asyncio.ensure_future(asyncio.sleep(60)) for _ in range(20)]
            start = full_collections()
            make_due(young)
            await asyncio.sleep(0.2)  # twenty looks at the loop, all busy
            while_busy = full_collections() - start
            for task in busy:
                task.cancel()
            await asyncio.gather(*busy, return_exceptions=True)
            ran = await until(lambda: full_collections() > start)
            after = full_collections()
            await asyncio.sleep(0.2)  # nothing due any more: no other full collection
            return while_busy, int(ran), full_collections() - after
        finally:
            collecting.let_go()

    while_busy, ran, again = asyncio.run(main())
    assert (while_busy, ran, again) == (0, 1, 0)


def test_under_a_load_that_never_pauses_it_runs_after_the_longest_wait(quick, monkeypatch):
    monkeypatch.setattr(collecting, "LONGEST_WAIT", 0.05)

    young = gc.get_threshold()[2]

    async def main() -> bool:
        collecting.hold()
        try:
            busy = [asyncio.ensure_future(asyncio.sleep(60)) for _ in range(20)]
            start = full_collections()
            make_due(young)
            ran = await until(lambda: full_collections() > start)
            for task in busy:
                task.cancel()
            await asyncio.gather(*busy, return_exceptions=True)
            return ran
        finally:
            collecting.let_go()

    assert asyncio.run(main())


def test_a_state_holds_while_its_face_serves_and_lets_go_when_closed(quick, tmp_path):
    state = State(tmp_path / "state")

    async def main() -> int:
        state.serving()
        state.serving()  # once, however often a face says so
        return gc.get_threshold()[2]

    held = asyncio.run(main())
    assert held > 1_000_000
    state.close()
    state.close()
