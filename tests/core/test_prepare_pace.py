"""Steps sized from the conversation's pace (`paced`): a chat whose turns each add much of its
budget has each step go further down than the usual targets, so the next step is further off;
a slow chat steps as before."""

from __future__ import annotations

import random

import msgspec
from test_prepare import SYSTEM, _agent_call, check_turn, words

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.prepare.engine import paced, recent_turns
from ctxlayer.core.prepare.model import DEFAULT_POLICY
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

BUDGET = 4000
UNPACED = msgspec.structs.replace(DEFAULT_POLICY, pace_most=0.0)


def _chat(turns: int, output_words: int, seed: int = 3) -> list[list[Message]]:
    """The requests of an agent loop whose every turn adds one call and an output of about
    ``output_words`` words."""
    r = random.Random(seed)
    msgs = [SYSTEM, Message(role="user", id="u0", content="Fix the retry queue. "
                            + words(r, 20, 30))]
    requests = []
    for t in range(turns):
        out = f"ran pytest -k t{t}: FAILED in src/q{t}.py\n" + words(r, output_words - 10,
                                                                   output_words + 10)
        msgs = [*msgs, *_agent_call(t, out, say=f"Checking case {t}.")]
        requests.append(msgs)
    return requests


def _replay(requests: list[list[Message]], policy) -> list[tuple[bool, int]]:
    """(whether it made a step, its tokens) of each request."""
    counter, state, out = WordTokenizer(), None, []
    for msgs in requests:
        turn = prepare_turn(state, msgs, BUDGET, counter, policy=policy)
        check_turn(turn, msgs, BUDGET)
        out.append((turn.stepped, turn.tokens))
        state = turn.state
    return out


def test_paced_lowers_both_targets_by_the_pace_beyond_its_threshold_at_most_pace_most() -> None:
    msgs = [SYSTEM, Message(role="user", content="go")]
    cum = [0, 10, 12]
    for _ in range(4):  # four turns of 400 tokens each: 10% of a 4,000 budget a turn
        msgs.append(Message(role="assistant", content="a"))
        cum.append(cum[-1] + 400)
    assert recent_turns(msgs, cum, 1) == [400, 400, 400, 400]
    fast = paced(DEFAULT_POLICY, msgs, cum, 1, BUDGET)
    cut = 0.10 - DEFAULT_POLICY.pace_from
    assert abs(fast.target - (DEFAULT_POLICY.target - cut)) < 1e-9
    assert abs(fast.summary_target - (DEFAULT_POLICY.summary_target - cut)) < 1e-9
    assert paced(DEFAULT_POLICY, msgs, cum, 1, 40_000) is DEFAULT_POLICY  # 1% a turn
    fastest = paced(DEFAULT_POLICY, msgs, cum, 1, 1000)  # 40% a turn
    assert abs(fastest.target - (DEFAULT_POLICY.target - DEFAULT_POLICY.pace_most)) < 1e-9


def test_a_fast_chat_steps_further_down_and_a_slow_one_as_before() -> None:
    fast = _chat(30, 500)  # each turn about 13% of the budget: 5 points over `pace_from`
    paced_steps = [tokens for stepped, tokens in _replay(fast, DEFAULT_POLICY) if stepped]
    unpaced_steps = [tokens for stepped, tokens in _replay(fast, UNPACED) if stepped]
    assert paced_steps and unpaced_steps
    # the first step, taken at the same request: down to about 0.75 of the budget, not 0.8
    assert paced_steps[0] <= 0.76 * BUDGET < 0.78 * BUDGET <= unpaced_steps[0]
    slow = _chat(120, 40)  # about 1.5% a turn
    assert any(stepped for stepped, _ in _replay(slow, DEFAULT_POLICY))
    assert _replay(slow, DEFAULT_POLICY) == _replay(slow, UNPACED)
