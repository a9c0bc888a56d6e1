"""The stand-in refuses what Anthropic refuses of a tool loop with thinking on: the loop (the
assistant messages after the last user message that is not all tool results) is one turn,
whose first assistant message must open with thinking, whoever wrote the messages. It checked
only the latest assistant message, and only for calls it had itself answered with thinking,
so an assembly that cut the loop's first step went through."""

from __future__ import annotations

from providers import standin_thinking as thinking

ON = {"thinking": {"type": "enabled", "budget_tokens": 50}}
BLOCK = thinking.block(ON, 60, 1)


def use(k: int, *, thought: bool = False) -> dict:
    call = {"type": "tool_use", "id": f"tu{k}", "name": "read", "input": {"f": f"p{k}.py"}}
    return {"role": "assistant", "content": [BLOCK, call] if thought else [call]}


def result(k: int) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{k}",
                                         "content": f"file {k}"}]}


def body(messages: list[dict], on: bool = True) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages,
            **(ON if on else {})}


def test_a_loop_whose_first_step_lost_its_thinking_is_refused():
    cut = [{"role": "user", "content": "[Summary of 17 earlier messages]"}, use(5), result(5)]
    probs = thinking.problems(body(cut), set())
    assert len(probs) == 1 and probs[0].startswith("messages.1.content.0.type: Expected "
                                                   "`thinking` or `redacted_thinking`, but "
                                                   "found `tool_use`"), probs
    later = [{"role": "user", "content": "fix it"}, use(0), result(0), use(1, thought=True),
             result(1)]
    assert thinking.problems(body(later), set())[0].startswith("messages.1.content.0")


def test_a_loop_opened_with_thinking_is_read_also_without_it_on_later_steps():
    whole = [{"role": "user", "content": "fix it"}, use(0, thought=True), result(0), use(1),
             result(1), use(2), result(2)]
    assert thinking.problems(body(whole), set()) == []
    redacted = [{"role": "user", "content": "fix it"},
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"},
                                                  use(0)["content"][0]]}, result(0)]
    assert thinking.problems(body(redacted), set()) == []


def test_no_loop_or_thinking_off_asks_nothing():
    assert thinking.problems(body([{"role": "user", "content": "fix it"}, use(0), result(0)],
                                  on=False), set()) == []
    # a turn without tool results (the question alone, an assistant prefill) is no loop
    assert thinking.problems(body([{"role": "user", "content": "hi"}]), set()) == []
    assert thinking.problems(body([{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": "Sure"}]), set()) == []
    # an earlier turn's loop is not the turn under way
    earlier = [{"role": "user", "content": "a"}, use(0), result(0),
               {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
               {"role": "user", "content": "b"}]
    assert thinking.problems(body(earlier), set()) == []
