"""Two chats of one family (the same system prompt and first question): a request goes on in
the chat it shares the most with, with a restart between them or not, and each chat that took
a turn stays listed. A real State on a temporary state folder."""

from __future__ import annotations

from test_restart_opening_alike import run, turns


def back(x: list[dict], n: int) -> list[dict]:
    """Chat ``x`` gone back to its ``n`` first messages, then a new question."""
    return [*x[:n], {"role": "user", "id": "back", "content": "Back here: what now instead?"}]


async def test_a_chat_going_back_stays_in_its_own_window_beside_one_that_asked_its_opening(
        tmp_path):
    """X (summarized); Y asks X's first question alone; X goes back to its 25th message and
    asks anew. Before, X's request extended Y's two messages and went on there, its history
    summarized afresh: 1,000 tokens sent, 11 reused, 14 messages left out, where without Y
    it sent 1,139, 1,125 reused, none left out (fuzz seed 89 alike: 337 and 130 against 570
    and 536). Now it edits its own chain and is sent as without Y."""
    x = turns(1, 14)
    requests = [*(("x", m) for m in x), ("y", x[0][:2]), ("x", back(x[-1], 25))]
    beside, listed = await run(tmp_path / "beside", requests, restart_at=None)
    alone, _ = await run(tmp_path / "alone", [r for r in requests if r[0] == "x"],
                         restart_at=None)
    assert alone["x"][-1].compacted and alone["x"][-1].cache_reuse_tokens > 1000
    assert beside["x"][-1].request == alone["x"][-1].request
    assert beside["x"][-1].cache_reuse_tokens == alone["x"][-1].cache_reuse_tokens
    assert beside["x"][-1].conversation_id != beside["y"][-1].conversation_id
    assert listed == 2


async def test_a_chat_after_a_restart_takes_up_its_window_from_one_that_asked_its_opening(
        tmp_path):
    """X (summarized); a restart; Y asks X's first question alone, which takes X's kept window
    up as an edit (X's kept under a fork's id); X's next turn. Before, X's request extended
    Y's two messages and went on there: summarized afresh, 998 tokens sent, 11 reused, 16
    messages left out, where never restarted it sent 1,423, 1,226 reused, none left out (fuzz
    seed 41: 1,142 and 20 against 2,351 and 1,987), and Y was listed no more, X under its
    id. Now it takes up its own window."""
    x = turns(3, 14)
    requests = [*(("x", m) for m in x[:-1]), ("y", x[0][:2]), ("x", x[-1])]
    after, listed = await run(tmp_path / "restarted", requests, restart_at=len(x) - 1)
    never, listed_never = await run(tmp_path / "never", requests, restart_at=None)
    assert never["x"][-1].compacted and never["x"][-1].cache_reuse_tokens > 1000
    assert after["x"][-1].request == never["x"][-1].request
    assert after["x"][-1].cache_reuse_tokens == never["x"][-1].cache_reuse_tokens
    assert after["x"][-1].conversation_id != after["y"][-1].conversation_id
    assert listed == listed_never == 2



async def test_two_chats_that_opened_alike_stay_listed_as_each_goes_on(tmp_path):
    """X takes three turns; Y asks X's first question; X goes on; Y goes on. Before, Y's
    second turn set X aside as a request asked beside Y (`asides.went_on_without`, meant for
    a title asked of another model), and `ctxlayer chats` listed Y alone."""
    x = turns(5, 6)
    y = [*x[0][:2], {"role": "assistant", "id": "y-a", "content": "Y's own answer."},
         {"role": "user", "id": "y-u", "content": "Y's own next question?"}]
    requests = [*(("x", m) for m in x[:4]), ("y", y[:2]), ("x", x[4]), ("y", y)]
    got, listed = await run(tmp_path / "state", requests, restart_at=None)
    assert got["x"][-1].conversation_id != got["y"][-1].conversation_id
    assert listed == 2
