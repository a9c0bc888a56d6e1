"""The user's instruction files a client puts into a user message (Claude Code's CLAUDE.md in a
`<system-reminder>` of its first user message, Codex's "# AGENTS.md instructions" message) are
the user's standing rules: a live chat keeps them verbatim, ahead of the summaries, turn by
turn, and cuts them only past their share of the budget, saying what it cut. The client's own
reminders beside them (its git status, its attribution note) are not the user's constraints."""

from __future__ import annotations

from agentloops import bash_loop

from ctxlayer.core.assembly.constraints import orders_of
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()
SERVICES = ["billing", "auth", "search", "mailer", "ledger", "export", "import", "audit"]
CONVENTIONS = ["Use pnpm, not npm or yarn", "Prefer composition over inheritance in services/",
               "Money is stored as integer cents",
               "Timestamps are UTC in the database and local only in the UI",
               "Feature flags live in config/flags.yaml", "Never push to the main branch",
               "Do not edit files under generated/ by hand", "Keep functions under 60 lines"]
RULE_LINES = (["# Agent guide", "", "## Layout"]
              + [f"- The {n} service lives in services/{n}/ (MK{k:02d})."
                 for k, n in enumerate(SERVICES)]
              + ["", "## Conventions"]
              + [f"- {r} (MK{20 + k:02d})" for k, r in enumerate(CONVENTIONS)])
RULES = "\n".join(RULE_LINES)
MARKERS = [f"MK{k:02d}" for k in [*range(len(SERVICES)), *range(20, 20 + len(CONVENTIONS))]]
CLAUDE_MD = ("<system-reminder>\nCodebase and user instructions are shown below. Be sure to "
             "adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default "
             "behavior and you MUST follow them exactly as written.\n\nContents of /repo/CLAUDE.md"
             " (project instructions, checked into the codebase):\n\n" + RULES
             + "\n</system-reminder>")
GIT_STATUS = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
              "context:\n# gitStatus\nThis is the git status at the start of the conversation."
              "\n\nCurrent branch: main\n\nStatus:\n(clean)\n</system-reminder>")
ATTRIBUTION = ("<system-reminder>\nAttribution for git commits and pull requests you create "
               "from here on (this replaces Claude Code's own earlier attribution guidance; the "
               "user's own instructions about these lines, such as a CLAUDE.md or memory rule, "
               "take precedence over this reminder, but do not add attribution lines this "
               "reminder leaves out):\n- End git commit messages with:\nCo-Authored-By: Claude "
               "<noreply@anthropic.com>\n</system-reminder>")




def claude_code(questions: int, rounds: int, rules: str = CLAUDE_MD) -> list[Message]:
    """Claude Code's shape: the rules and its own reminders in the first user message; each
    question answered after six tool calls, the last one ``rounds`` calls in."""
    msgs = [Message(role="system", id="sys", content="You are Claude Code. " * 30)]
    for q in range(questions):
        ask = f"QUESTION {q}: check the build log again, many times."
        first = "\n\n".join([rules, GIT_STATUS, ATTRIBUTION, ask])
        msgs.append(Message(role="user", id=f"q{q}", content=first if q == 0 else ask))
        msgs += bash_loop(q, rounds if q == questions - 1 else 6)
        if q < questions - 1:
            msgs.append(Message(role="assistant", id=f"ans{q}", content=f"Answer {q}: passed."))
    return msgs


def codex(rounds: int) -> list[Message]:
    """Codex's shape: the rules a user turn of their own, then the environment, the task."""
    return [Message(role="system", id="dev", content="You are a coding agent. " * 40),
            Message(role="user", id="agents", content="# AGENTS.md instructions for /repo\n\n"
                    "<INSTRUCTIONS>\n" + RULES + "\n</INSTRUCTIONS>"),
            Message(role="user", id="env", content="<environment_context>\n  <cwd>/repo</cwd>\n"
                    "</environment_context>"),
            Message(role="user", id="task", content="Check the build log, many times."),
            *bash_loop(0, rounds)]


def replay(convs, budget: int):
    state, turns = None, []
    for msgs in convs:
        turn = prepare_turn(state, msgs, budget, WORDS)
        turns.append(turn)
        state = turn.state
    return turns


def test_claude_md_stays_verbatim_in_every_request_once_the_first_message_is_old():
    """Before, from the step that summarized the first user message on, 4 of the 24 rule lines
    were left (those that read as orders), and 'Use pnpm, not npm or yarn' was lost."""
    turns = replay([claude_code(q, k) for q in (1, 2) for k in range(1, 7)], 2400)
    assert any(m.kind == "summary" for m in turns[-1].messages)
    for turn in turns:
        text = "\n".join(m.content for m in turn.messages)
        assert all(line in text for line in RULE_LINES if line), turn.messages
    last = [m.id for m in turns[-1].messages]
    assert last.index("q0") < min(k for k, m in enumerate(turns[-1].messages)
                                  if m.kind == "summary")


def test_agents_md_is_not_what_a_summary_says_was_asked_and_stays_whole():
    """Before, Codex's AGENTS.md message was summarized with the first tool calls: the
    chunk's "Asked" was its head cut at 200 characters, its lines "Decided" and "Details"."""
    turns = replay([codex(k) for k in range(1, 14)], 1800)
    assert any(m.kind == "summary" for m in turns[-1].messages)
    for turn in turns:
        ids = [m.id for m in turn.messages]
        assert "agents" in ids
        assert turn.messages[ids.index("agents")].content == codex(1)[1].content
        for m in turn.messages:
            if m.kind == "summary":
                assert "AGENTS.md" not in m.content and "MK2" not in m.content, m.content


def test_the_client_reminders_are_not_the_users_hard_constraints():
    """Claude Code's attribution reminder was listed as the user's hard constraint, cut at
    its colon; the rules inside CLAUDE.md are the user's."""
    orders = orders_of(claude_code(1, 1)[1])
    assert not any("ttribution" in o or "Co-Authored" in o for o in orders), orders
    assert "Never push to the main branch (MK25)" in orders


def test_rules_past_their_share_are_cut_by_priority_and_the_cut_is_audited():
    """A CLAUDE.md longer than its share of the budget keeps its orders first, then the lines
    naming paths and commands; the audit says what was left out."""
    from ctxlayer.core.prepare.rules import SHARE  # here: the check runs on the code before

    filler = ["- A background note about the history of this project, for new readers."] * 120
    big = CLAUDE_MD.replace("## Conventions", "\n".join(["## History", *filler, "## Conventions"]))
    budget = 2400
    turns = replay([claude_code(q, k, big) for q in (1, 2) for k in range(1, 7)], budget)
    first = next(m for m in turns[-1].messages if m.id == "q0")
    assert all(f"MK{20 + k:02d}" in first.content for k in range(len(CONVENTIONS)))
    assert "services/billing/" in first.content and "QUESTION 0" in first.content
    assert WORDS.count(first.content) <= budget * SHARE + 10
    assert "gitStatus" not in first.content and "Attribution" not in first.content
    cut = [e for t in turns for e in t.truncated if e.message_id == "q0"]
    assert len(cut) == 1 and "instruction files" in cut[0].reason
    assert "A background note about" in cut[0].reason


def test_only_the_opening_user_turns_are_read_for_instruction_files():
    """The clients put them before the first reply; a later user turn that quotes one (a user
    pasting Claude Code's reminder into a question) is a question, summarized as any other,
    and a step of a long chat does not search every user turn's text."""
    from ctxlayer.core.prepare.rules import carrying  # here: the check runs on the code before

    later = Message(role="user", id="pasted", content="Why does this say:\n" + CLAUDE_MD)
    msgs = [*claude_code(1, 2), Message(role="assistant", id="ans", content="Passed."), later]
    assert carrying(msgs) == {1}


def test_the_users_task_beside_claude_md_is_not_cut_with_the_files():
    """The second review probe: a 200-word task in Claude Code's first message, beside a
    60-line CLAUDE.md past its share, went out as its first 80 words from turn 6 on, for the
    rest of the chat, with room for all of it (3,073 of 4,000), the audit naming only the
    files' lines."""
    rules = "\n".join(f"- Rule {k}: use the helper mod{k}.py for module {k} work, always."
                      for k in range(300))  # past the room the rest leaves it
    task = ("Please refactor the billing service as follows: "
            + " ".join(f"TASKW{k}" for k in range(200)) + " and finally ENDOFTASK.")
    first = ("<system-reminder>\nCodebase and user instructions are shown below.\n\nContents "
             "of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\n"
             + rules + "\n</system-reminder>\n" + task)
    msgs = [Message(role="system", id="sys", content="You are Claude Code. " * 30),
            Message(role="user", id="q0", content=first)]
    state, cut = None, False
    for k in range(25):
        msgs += [Message(role="assistant", id=f"a{k}", content="", tool_calls=[
                     ToolCall(id=f"c{k}", name="Bash", arguments=f'{{"command": "cat f{k}.log"}}')]),
                 Message(role="tool", id=f"o{k}", tool_call_id=f"c{k}", content="\n".join(
                     f"line {j}: step {j} ok run {k}" for j in range(60)))]
        turn = prepare_turn(state, msgs, 4000, WORDS)
        state = turn.state
        shown = next(m.content for m in turn.messages if m.id == "q0")
        assert task in shown, k
        cut = cut or any(e.message_id == "q0" for e in turn.truncated)
    assert cut  # the files were cut to their room, the task beside them whole


def long_claude_md(lines: int) -> str:
    rules = "\n".join(f"- Rule {k}: use the helper mod{k}.py for module {k} work, always."
                      for k in range(lines))
    return ("<system-reminder>\nContents of /repo/CLAUDE.md (project instructions, checked into "
            "the codebase):\n\n" + rules + "\n</system-reminder>\nPlease fix the failing test.")


def agent_turns(lines: int, budget: int, turns: int = 30):
    """Claude Code's first message with a CLAUDE.md of ``lines`` rules (12 words each), then
    ``turns`` Bash calls of 30 lines each, a request after each."""
    msgs = [Message(role="system", id="sys", content="You are Claude Code. " * 30),
            Message(role="user", id="q0", content=long_claude_md(lines))]
    state, out = None, []
    for k in range(turns):
        msgs = [*msgs, Message(role="assistant", id=f"a{k}", content="", tool_calls=[
                    ToolCall(id=f"c{k}", name="Bash", arguments=f'{{"command": "cat f{k}.log"}}')]),
                Message(role="tool", id=f"o{k}", tool_call_id=f"c{k}", content="\n".join(
                    f"line {j}: step {j} ok run {k}" for j in range(30)))]
        turn = prepare_turn(state, msgs, budget, WORDS)
        out.append(turn)
        state = turn.state
    return out


def rule_lines(turn) -> list[str]:
    shown = next(m.content for m in turn.messages if m.id == "q0")
    return [line for line in shown.splitlines() if line.startswith("- Rule ")]


def test_a_long_claude_md_takes_what_the_rest_of_the_request_leaves_it():
    """A 300-line CLAUDE.md (3,600 tokens) at a budget of 2,000 kept 14 lines, a tenth of the
    budget, and the first request went out at 543 tokens (27%) with most of it empty. Now it
    is cut once, to what the system prompt and the newest exchange leave below the summary
    step's target, less a summary's room: the turns after it have a step's room, and it is
    never cut again."""
    from ctxlayer.core.prepare.model import DEFAULT_POLICY
    from ctxlayer.core.prepare.summaries import estimate

    budget = 2000
    turns = agent_turns(300, budget)
    first = turns[0]
    rest = first.tokens - next(WORDS.count(m.content) for m in first.messages if m.id == "q0")
    # a summary's room below the target (lowered for a chat at this pace), a few lines' slack
    p = DEFAULT_POLICY
    aim = int(budget * (p.summary_target - p.pace_most)) - estimate(p, budget - rest)
    assert aim - 40 <= first.tokens <= budget * p.summary_target \
        and len(rule_lines(first)) >= 25, (first.tokens, aim, len(rule_lines(first)))
    cuts = [e for t in turns for e in t.truncated if e.message_id == "q0"]
    assert len(cuts) == 1 and "instruction files" in cuts[0].reason, cuts
    assert all(rule_lines(t) == rule_lines(first) for t in turns)  # the prefix holds
    assert any(m.kind == "summary" for m in turns[-1].messages)


def test_a_claude_md_the_rest_leaves_room_for_stays_whole_past_a_tenth_of_the_budget():
    """A 200-line CLAUDE.md (2,400 tokens) at a budget of 8,000 was cut to 800 tokens at the
    first step, though the request had room for it beside its summaries; not cut at that
    first step, it was the task the step then shortens by its head and tail (the question
    over a quarter of the budget), the lines between lost."""
    turns = agent_turns(200, 8000, 40)
    assert any(m.kind == "summary" for m in turns[-1].messages)
    for turn in turns:
        assert len(rule_lines(turn)) == 200
    assert not any(e.message_id == "q0" for t in turns for e in t.truncated)
