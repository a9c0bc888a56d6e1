"""What a provider's usage report does to a chat, end to end: each report is measured against
the count of its own request (two of one chat may be in flight), a number a stream says again
as 0 at its close keeps the count it said first, and an absurd count is taken only as far as
the calibration takes it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2 as httpx
from gateway_stack import Stack, fresh_stack, prose

MODEL = "claude-sonnet-4-5"


def ask(stack: Stack, messages: list[dict], chat: str | None = None) -> httpx.Response:
    """A streamed Messages request, in the chat named ``chat`` when given."""
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    if chat:
        headers["x-ctxlayer-conversation"] = chat
    answer = httpx.post(f"{stack.anthropic_url}/v1/messages", headers=headers, timeout=30,
                        json={"model": MODEL, "max_tokens": 100, "messages": messages,
                              "stream": True})
    assert answer.status_code == 200, answer.text
    return answer


def published(stack: Stack) -> list[Any]:
    """The budgets the gateway publishes to the editors from now on."""
    budgets: list[Any] = []
    stack.state.events.budget_listeners.append(
        lambda workspace, budget, caller=None: budgets.append(budget))
    return budgets


def test_an_older_request_answered_last_is_measured_against_its_own_prompt(tmp_path):
    """A chat sends a long request, then a short one before the first is answered (a client
    that does not wait; a retry); the long one's answer comes last. The provider counts
    each prompt as it is: the chat's calibration must stay where it was. Before, the long
    one's count was compared with the short one's (the chat's last turn): a ratio of 2.0 that
    cut the chat's next budget by a third, and the status bar showed the long prompt's
    count as the chat's."""
    chat = "two-in-flight"
    opening = [{"role": "user", "content": prose("opening", 2500)}]
    with fresh_stack(tmp_path) as stack:
        budgets = published(stack)
        ask(stack, opening, chat)
        stack.reported()
        first = budgets[-1].limit
        big = [*opening, {"role": "assistant", "content": "ok"},
               {"role": "user", "content": prose("the long one", 5000)}]
        small = [*opening, {"role": "assistant", "content": "ok"},
                 {"role": "user", "content": "a quick question"}]
        stack.standin.fail(mode="hold")  # the long one's first event, then the rest later
        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(ask, stack, big, chat)
            stack.wait_for(lambda seen: len(seen) == 2, "the long request at the provider")
            ask(stack, small, chat)
            stack.reported()
            after_small = len(budgets)
            stack.standin.release()
            held.result()
        stack.reported()
        _, long, short = stack.model_requests()  # as the provider counted them
        counted = {True: long["prompt_tokens"], False: short["prompt_tokens"]}
        ask(stack, [*small, {"role": "assistant", "content": "sure"},
                    {"role": "user", "content": "and then?"}], chat)
    # the long request's answer left the chat's figures as the short one's turn set them
    assert budgets[after_small - 1].used == counted[False]
    assert all(b.used < counted[True] for b in budgets[after_small:])
    # ... and its calibration where it was: the provider counts as we do, within a tenth
    assert budgets[-1].limit >= 0.9 * first, (first, budgets[-1].limit)


def test_a_closing_input_of_zero_keeps_the_count_said_at_the_start(tmp_path):
    """An Anthropic-compatible server that says `input_tokens: 0` in its closing
    message_delta (envoyproxy/ai-gateway fixed its own in PR 1631): the prompt's count is the
    one message_start said. Before, the 0 replaced it: the editors were told the chat used 0
    tokens, and nothing calibrated it. The editors are told our count either way: the
    calibration is where the provider's count goes (the stand-in counts 1.5 times ours)."""
    with fresh_stack(tmp_path, zero_input_at_close=(MODEL,), counts={MODEL: 1.5}) as stack:
        workspaces: list[str] = []
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: workspaces.append(workspace))
        budgets = published(stack)
        answer = ask(stack, [{"role": "user", "content": prose("zero at the close", 800)}])
        stack.reported()
        (sent,) = stack.model_requests()
        reports = stack.reports(workspaces[-1], budgets[-1].session_id)
        bias = stack.bias(workspaces[-1], budgets[-1].session_id)
    ours = int(answer.headers["x-ctxlayer-tokens"])
    assert budgets[-1].used == ours and sent["prompt_tokens"] > ours
    assert reports == 1 and bias > 1.2  # message_start's count calibrated the chat


def test_an_absurd_count_is_taken_as_far_as_the_calibration_takes_it(tmp_path):
    """A provider that says a prompt of some thousand tokens was 10**10: no count of that
    prompt. The calibration takes the most it believes (twice our count), the editors are
    told our count, and the log says what the provider said. Before, they were told 10**10
    tokens used, millions of percent of the budget."""
    # the stand-in counts 3 million times tiktoken, its window large enough to take that
    with fresh_stack(tmp_path, windows={MODEL: 10**13}, counts={MODEL: 3e6}) as stack:
        workspaces: list[str] = []
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: workspaces.append(workspace))
        budgets = published(stack)
        answer = ask(stack, [{"role": "user", "content": prose("absurd", 800)}])
        stack.reported()
        (sent,) = stack.model_requests()
        bias = stack.bias(workspaces[-1], budgets[-1].session_id)
    ours = int(answer.headers["x-ctxlayer-tokens"])
    assert sent["prompt_tokens"] > 10**9
    assert budgets[-1].used == ours
    assert bias == 2.0
    assert budgets[-1].percent < 100


def test_a_live_chat_carries_its_error_band_from_its_first_turn(tmp_path):
    """A Claude chat's counts are ours, off the provider's by up to the model table's band
    (±10%) until its usage reports calibrate them, and never narrower than it: the status
    bars show `±N%` from what the budget carries. Before, a live chat's budget carried no
    band at all (only a session's did): the README's `(4.1k cached, ±10%)` never showed."""
    messages: list[dict] = []
    with fresh_stack(tmp_path, counts={MODEL: 1.3}) as stack:
        workspaces: list[str] = []
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: workspaces.append(workspace))
        budgets = published(stack)
        for turn in range(4):
            messages += [{"role": "user", "content": prose(f"question {turn}", 300 * (turn + 1))}]
            ask(stack, messages, "banded")
            stack.reported()
            messages += [{"role": "assistant", "content": "ok"}]
        kept = stack.state.sessions.band(workspaces[-1], budgets[-1].session_id, MODEL)
    live = [b for b in budgets if b.live]
    assert len(live) >= 4 and all(b.error_band is not None and b.error_band >= 0.1
                                  for b in live), [b.error_band for b in live]
    # once reports came, the band is the chat's calibration's (as ctx/session/budget says)
    assert live[-1].error_band == kept


def test_a_chat_taken_up_after_a_restart_shows_its_kept_band(tmp_path):
    """A chat whose provider counted it 0.8x, 1.5x, 0.85x and 1.6x ours has a wide band; the
    daemon restarts on the same state folder and the chat's first turn after it is fitted
    with the kept calibration. Its band was the table's ±10% until the next usage report
    (the review probe: 0.1 shown, 0.421 kept); now the kept calibration's."""
    messages: list[dict] = []

    def turns(ratios: list[float]) -> tuple[list[Any], float | None]:
        with fresh_stack(tmp_path, counts={MODEL: 1.0}) as stack:
            workspaces: list[str] = []
            stack.state.events.budget_listeners.append(
                lambda workspace, budget, caller=None: workspaces.append(workspace))
            budgets = published(stack)
            for turn, ratio in enumerate(ratios):
                stack.standin.standin.counts[MODEL] = ratio
                messages.append({"role": "user", "content": prose(f"q{turn}", 300)})
                ask(stack, messages, "banded")
                stack.reported()
                messages.append({"role": "assistant", "content": "ok"})
            live = [b for b in budgets if b.live]
            return live, stack.state.sessions.band(workspaces[-1], live[-1].session_id, MODEL)

    _, kept = turns([0.8, 1.5, 0.85, 1.6])
    after, _ = turns([1.0])
    assert kept is not None and kept > 0.2
    assert after[0].error_band == kept
