"""Assembly of a session into a budget: layers, compaction, summarizer as data, cache reuse."""

from __future__ import annotations

import json
import random

import pytest

from ctxlayer.core.assembly import Compaction, CompactionPolicy, History, assemble, measure
from ctxlayer.core.assembly.assemble import AssemblyInput
from ctxlayer.core.assembly.compaction import ACK_TEXT
from ctxlayer.core.assembly.summary import offline_summary, refusal
from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.core.zones import DEFAULT_MODES, Rule, new_item
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())
FILLER = ("We looked at the options and talked about them for a while without deciding "
          "anything in particular so this sentence is only here to take up room. ")

RULES = [Rule(id=f"r{k}", text=f"Never break invariant number {k} of the ledger.",
              weight=10 - k % 3, seq=k) for k in range(12)]
CONSTRAINTS = [
    "You must keep the public API of payments/api.py unchanged.",
    "Never add a dependency outside the standard library.",
    "Only touch files under src/billing/ in this task.",
]


def build(msgs: list[Message]) -> History:
    history = History()
    for k, msg in enumerate(msgs):
        history.append(msg, k, message_tokens(msg, COUNTER))
    return history


def chat(n: int, *, planted: dict[int, str] | None = None, first: str = "user") -> History:
    roles = ("user", "assistant") if first == "user" else ("assistant", "user")
    msgs = []
    for k in range(n):
        text = FILLER * 3
        if planted and k in planted:
            text = planted[k] + " " + text
        msgs.append(Message(role=roles[k % 2], content=text, id=f"m{k}"))
    return build(msgs)


def agent_chat(turns: int, *, output_lines: int = 40) -> History:
    """A coding agent: the task, then tool calls with outputs, and short replies."""
    msgs = [Message(role="user", content="Fix the failing test in tests/test_pay.py.", id="u0")]
    for k in range(turns):
        cmd = f"pytest tests/test_pay.py::test_case_{k} -x"
        msgs.append(Message(role="assistant", content=f"Running case {k}.", id=f"a{k}",
                            tool_calls=[ToolCall(id=f"c{k}", name="bash",
                                                 arguments=json.dumps({"command": cmd}))]))
        out = "\n".join(f"collected line {j} of run {k}" for j in range(output_lines))
        out += f"\nFAILED tests/test_pay.py::test_case_{k} - AssertionError: total {k}\n" \
               "exit code 1"
        msgs.append(Message(role="tool", content=out, id=f"t{k}", tool_call_id=f"c{k}"))
    msgs.append(Message(role="user", content="What is left to fix?", id="u-last"))
    return build(msgs)


def inp(budget: int, **kw) -> AssemblyInput:
    base = dict(budget=budget, mode="deep", mode_spec=DEFAULT_MODES["deep"],
                system=[Message(role="system", content="You are a helpful assistant.",
                                id="ctx:core", pinned=True)])
    base.update(kw)
    return AssemblyInput(**base)


def check_fits(out, budget):
    assert out.result is not None
    assert out.result.tokens.total <= budget
    recount = 3 + sum(message_tokens(m, COUNTER) for m in out.result.messages)
    assert recount == out.result.tokens.total


def history_part(out) -> list[Message]:
    return [m for m in out.result.messages if m.role != "system"]


def summary_of(out) -> str:
    return next(m for m in out.result.messages if m.kind == "summary").content


def test_layers_in_order_and_everything_kept_when_it_fits():
    history = chat(6)
    items = [new_item("i1", "note", "The flaky test is tests/test_sync.py::test_retry.")]
    out = assemble(history, Compaction(), inp(5000, rules=RULES[:3], items=items), COUNTER)
    check_fits(out, 5000)
    ids = [m.id for m in out.result.messages]
    assert ids == ["ctx:core", "ctx:rules", "ctx:working", "m0", "m1", "m2", "m3", "m4", "m5"]
    assert out.result.cache_boundary == 2  # system + rules are the stable prefix
    assert not out.result.compacted and out.compaction is None
    assert "__RULE__" in out.result.messages[1].content
    assert "tests/test_sync.py::test_retry" in out.result.messages[2].content


def test_system_alone_over_budget_is_an_error():
    with pytest.raises(ContextError) as err:
        assemble(chat(2), Compaction(), inp(5), COUNTER)
    assert err.value.kind == "pinned_over_budget"


def test_compaction_keeps_every_rule_and_constraint_and_uses_the_budget():
    planted = {2 * k: c for k, c in enumerate(CONSTRAINTS)}
    history = chat(80, planted=planted)
    budget = 3000
    out = assemble(history, Compaction(), inp(budget, rules=RULES), COUNTER)
    check_fits(out, budget)
    assert out.result.compacted
    text = "\n".join(m.content for m in out.result.messages)
    for rule in RULES:
        assert rule.text in text
    for constraint in CONSTRAINTS:
        assert constraint in text
    summary = next(m for m in out.result.messages if m.kind == "summary")
    assert summary.id.startswith("ctx:summary:")
    kept = out.compaction.replaced
    tail = [m.id for m in history_part(out) if m.kind != "summary" and not m.id.endswith(":ack")]
    assert tail == [f"m{k}" for k in range(kept, 80)]  # the newest, verbatim, contiguous
    assert kept < 74  # more than a fixed six recent messages: as many as fit
    assert out.result.tokens.total >= 0.85 * budget
    summarized = [e for e in out.audit if e.action == "summarized"]
    assert len(summarized) == kept and summarized[0].message_id == "m0"


def test_summary_is_a_user_turn_after_the_system_prompt_and_roles_alternate():
    for first in ("user", "assistant"):
        out = assemble(chat(81, first=first), Compaction(), inp(2500), COUNTER)
        hist = history_part(out)
        assert hist[0].kind == "summary" and hist[0].role == "user"
        roles = [m.role for m in hist]
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False)), roles
        assert hist[1].role == "assistant"


def test_without_a_summary_the_history_starts_with_a_user_turn():
    history = chat(7, first="assistant")
    out = assemble(history, Compaction(), inp(5000), COUNTER)
    hist = history_part(out)
    assert hist[0].role == "user" and hist[0].id == "m1"
    assert any(e.message_id == "m0" and "user turn" in e.reason for e in out.result.dropped)


def test_facts_of_replaced_messages_survive_in_the_ledger():
    planted = {10: "The crash is in src/core/loader.py:218 with error E4012.",
               11: "Run `pytest tests/test_loader.py -k cache` to reproduce it."}
    history = chat(60, planted=planted)
    out = assemble(history, Compaction(), inp(2500), COUNTER)
    summary = summary_of(out)
    for fact in ("src/core/loader.py", "218", "E4012", "pytest tests/test_loader.py -k cache"):
        assert fact in summary


def test_a_second_compaction_adds_the_facts_of_what_it_replaces():
    history = chat(60, planted={10: "First failure at src/core/loader.py:218 (E4012)."})
    first = assemble(history, Compaction(), inp(2500), COUNTER)
    for k in range(60, 120):
        text = FILLER * 3
        if k == 70:
            text = "Second failure: src/net/socket.py:99 raised E7777. " + text
        msg = Message(role="user" if k % 2 == 0 else "assistant", content=text, id=f"m{k}")
        history.append(msg, k, message_tokens(msg, COUNTER))
    second = assemble(history, first.compaction, inp(2500), COUNTER)
    assert second.compaction is not None and second.compaction.upto_seq > 70
    summary = summary_of(second)
    for fact in ("src/core/loader.py", "E4012", "src/net/socket.py", "E7777"):
        assert fact in summary


def test_summarizer_is_data_needs_summary_then_accepts_text():
    history = chat(60, planted={3: "We decided to cache the loader results in memory."})
    first = assemble(history, Compaction(), inp(2500, client_summarizer=True), COUNTER)
    assert first.result is None and first.compaction is None
    request = first.needs_summary
    covered = [m.id for m in request.messages]
    assert covered == [f"m{k}" for k in range(len(covered))] and 0 < len(covered) < 60
    assert "Hard constraints" in request.instructions and request.max_tokens > 0
    text = "Decided: cache the loader results in memory; the options were talked about."
    second = assemble(history, Compaction(), inp(2500, client_summarizer=True,
                                                  summary_text=text), COUNTER)
    assert text in summary_of(second)
    # the cut of the request, or fewer replaced once the summary turned out small
    assert 0 < second.compaction.replaced <= len(covered)
    offline = assemble(history, Compaction(), inp(2500, client_summarizer=True, offline=True),
                       COUNTER)
    assert offline.result is not None and offline.result.compacted


@pytest.mark.parametrize("text", ["", "   ", "Bananas grow quickly in tropical climates "
                                  "everywhere; monkeys enjoy eating them.",
                                  # it names the topic: the off-topic check lets it by
                                  "I'm sorry, but I can't summarize the loader results cache "
                                  "conversation."])
def test_an_empty_off_topic_or_refusing_client_summary_is_replaced_by_the_offline_one(text):
    history = chat(60, planted={3: "We decided to cache the loader results in memory."})
    out = assemble(history, Compaction(), inp(2500, client_summarizer=True, summary_text=text),
                   COUNTER)
    summary = summary_of(out)
    assert "Bananas" not in summary and "sorry" not in summary
    assert "cache the loader results" in summary  # the offline summary's decision
    assert any("client summary" in e.reason and "offline" in e.reason for e in out.audit)


@pytest.mark.parametrize(("text", "opening"), [
    ("I'm sorry, but I can't help with that.", "I'm sorry"),
    ("  **I cannot** summarize this.", "I cannot"),
    ("I’m unable to summarize the retry queue.", "I’m unable"),
    ("As an AI, I do not keep notes.", "As an AI"),
    ("Unfortunately, I can't do that.", "Unfortunately, I"),
    ("Decided: I can't see why the retry queue failed; open: its backoff.", None),
    ("Icons are cached. Open: none.", None),
    ("Sorrowful tests: none. Decided: keep the order.", None),
    # a quote, a bullet or a word that only starts alike is no refusal (all four were taken
    # for one, the summary replaced by the offline one)
    ('"I can\'t log in" was the user\'s report; Decided: fix the cookie.', None),
    ("- I cannot use Postgres (hard constraint)", None),
    ("Sorry-path handling: decided to log and continue.", None),
    ("Unfortunately, I/O errors in tests/queue_test.py kept failing; Decided: retry.", None),
    # refusals it let through
    ("Apologies, but I can't help with that.", "Apologies"),
    ("As a language model, I cannot summarize this.", "As a language model"),
    ("I must decline to summarize this conversation.", "I must decline"),
])
def test_a_refusal_is_known_by_its_opening(text, opening):
    assert refusal(text) == opening


def test_ledger_facts_a_client_summary_lacks_are_added_beside_it():
    history = chat(60, planted={10: "The crash is in src/core/loader.py:218 with E4012.",
                                12: "We talked about the loader options at length."})
    text = "Decided: talked about the loader options; nothing else was settled."
    out = assemble(history, Compaction(), inp(2500, summary_text=text), COUNTER)
    summary = summary_of(out)
    assert text in summary and "src/core/loader.py" in summary and "E4012" in summary


def test_compaction_is_sticky_and_incremental():
    history = chat(60)
    out = assemble(history, Compaction(), inp(2500), COUNTER)
    state = out.compaction
    again = assemble(history, state, inp(2500, previous=out.fingerprint), COUNTER)
    assert again.compaction is None and not again.result.compacted  # nothing to redo
    # every message is identical: all but the reply priming is reusable
    assert again.result.cache_reuse_tokens == again.result.tokens.total - 3
    for k in range(60, 62):  # a new turn: only the tail changes
        msg = Message(role="user" if k % 2 == 0 else "assistant", content="short reply",
                      id=f"m{k}")
        history.append(msg, k, message_tokens(msg, COUNTER))
    third = assemble(history, state, inp(2500, previous=again.fingerprint), COUNTER)
    assert third.compaction is None
    assert third.result.cache_reuse_tokens == again.result.tokens.total - 3
    assert third.result.tokens.total > again.result.tokens.total


def agent_turns(turns: int, seed: int) -> list[Message]:
    """An agent at work: a task, then turns of a read, its output, a note and a short ask;
    now and then a long reply (the oldest message the tail keeps is then shortened)."""
    rng = random.Random(seed)
    msgs = [Message(role="user", content="Migrate billing to Postgres; never drop invoices.",
                    id="task")]
    for t in range(turns):
        lines = "\n".join(f"billing/models_{t}.py:{j}: class Invoice{t}_{j}(Model): pass"
                          for j in range(rng.randint(5, 60)))
        msgs += [Message(role="assistant", content=f"Step {t}: reading.", id=f"a{t}",
                         tool_calls=[ToolCall(id=f"c{t}", name="read",
                                              arguments=json.dumps({"path": f"m_{t}.py"}))]),
                 Message(role="tool", content=lines, id=f"t{t}", tool_call_id=f"c{t}"),
                 Message(role="assistant", content=FILLER * rng.choice((0, 0, 1, 6)) +
                         f"Changed billing/models_{t}.py.", id=f"b{t}"),
                 Message(role="user", content=f"ok, module {t + 1}", id=f"u{t}")]
    return msgs


@pytest.mark.parametrize("budget", [900, 1500, 3000])
@pytest.mark.parametrize("seed", range(4))
def test_an_unchanged_session_assembles_the_same_every_time(budget, seed):
    # Before: the summary's stop was planned with the tail's older tool outputs at their
    # outline's size, the oldest kept shortened and the summary shortened to its room, but the
    # trigger read the state as stored: an assembly of the unchanged session was past it
    # again and summarized one or two messages more, each time (5 of 5 calls on a daemon).
    history, state, compactions = History(), Compaction(), 0
    for k, msg in enumerate(agent_turns(40, seed)):
        history.append(msg, k, message_tokens(msg, COUNTER))
        if msg.role != "user":
            continue
        out = assemble(history, state, inp(budget), COUNTER)
        state = out.compaction or state
        compactions += out.result.compacted
        again = assemble(history, state, inp(budget), COUNTER)
        assert again.compaction is None and not again.result.compacted, (k, again.audit[:2])
        assert again.result.messages == out.result.messages, k
        # and the session's budget, measured (after a restart), is within the limit
        said = measure(history, state, inp(budget), COUNTER, model="m", session_id="s",
                       error_band=None)
        assert out.result.tokens.total <= said.used <= budget, k
    assert compactions  # the budgets are small enough for the summary to run


def test_the_dynamic_section_goes_after_the_history_so_the_history_stays_cached():
    system = [Message(role="system", content="Core rules of the assistant.", id="ctx:core"),
              Message(role="system", content="Session-volatile context below.",
                      id="ctx:boundary"),
              Message(role="system", content="git status: 3 files changed", id="ctx:dynamic")]
    history = chat(8)
    first = assemble(history, Compaction(), inp(5000, system=system, system_cache_boundary=2),
                     COUNTER)
    ids = [m.id for m in first.result.messages]
    assert ids == ["ctx:core", "ctx:boundary", *(f"m{k}" for k in range(8)), "ctx:dynamic"]
    changed = [*system[:2], Message(role="system", content="git status: 4 files changed now",
                                    id="ctx:dynamic")]
    second = assemble(history, Compaction(), inp(5000, system=changed, system_cache_boundary=2,
                                                  previous=first.fingerprint), COUNTER)
    dynamic = message_tokens(changed[2], COUNTER)
    assert second.result.cache_reuse_tokens == second.result.tokens.total - 3 - dynamic


def test_assemble_runs_the_trim_clean_up_stages_on_the_history():
    msgs = [
        Message(role="user", content="start the work please", id="u0"),
        Message(role="tool", content="a result nobody asked for", id="orphan",
                tool_call_id="missing"),
        Message(role="assistant", content="<think>long private reasoning here</think>Done.",
                id="a0"),
        Message(role="user", content="thinking aloud for a moment", id="eph", ephemeral_ttl=1),
        Message(role="assistant", content="Next step.", id="a1"),
        Message(role="user", content="and now?", id="u1"),
        Message(role="assistant", content="<think>current reasoning</think>Answer.", id="a2"),
    ]
    out = assemble(build(msgs), Compaction(), inp(5000), COUNTER)
    ids = [m.id for m in history_part(out)]
    assert "orphan" not in ids and "eph" not in ids
    by_id = {m.id: m for m in history_part(out)}
    assert "<think>" not in by_id["a0"].content and "<think>" in by_id["a2"].content
    reasons = " ".join(e.reason for e in out.result.dropped + out.result.truncated)
    assert "orphan" in reasons and "ephemeral" in reasons and "reasoning" in reasons


def test_newest_messages_over_the_share_give_the_best_window_not_an_error():
    big = " ".join(f"w{k}" for k in range(3000))
    msgs = [Message(role="user", content="question one", id="u0"),
            Message(role="assistant", content=big, id="a0"),
            Message(role="user", content="the newest question " + big, id="u1")]
    out = assemble(build(msgs), Compaction(), inp(800), COUNTER)
    check_fits(out, 800)
    hist = history_part(out)
    assert hist[-1].id == "u1" and hist[-1].content.startswith("the newest question")
    assert hist[0].role == "user"


def test_tool_outputs_are_outlined_before_anything_is_dropped():
    history = agent_chat(6, output_lines=300)
    total = 3 + history.total + 10
    out = assemble(history, Compaction(), inp(int(total * 0.5)), COUNTER)
    check_fits(out, int(total * 0.5))
    ids = [m.id for m in history_part(out)]
    assert all(f"t{k}" in ids for k in range(6)), ids  # outlined, none summarized or dropped
    assert any(e.action == "compressed" and e.message_id == "t0" for e in out.result.truncated)


def test_a_shortened_tool_output_names_the_errors_and_files_of_its_cut_part():
    history = agent_chat(6, output_lines=300)
    middle = ('  File "src/billing/ledger.py", line 88, in post\n'
              "LedgerImbalanceError: debit and credit differ")
    msgs = list(history.messages)
    lines = msgs[2].content.split("\n")
    msgs[2] = Message(role="tool", content="\n".join(lines[:150] + [middle] + lines[150:]),
                      id="t0", tool_call_id="c0")
    history = build(msgs)
    total = 3 + history.total + 10
    out = assemble(history, Compaction(), inp(int(total * 0.5)), COUNTER)
    check_fits(out, int(total * 0.5))
    shown = next(m for m in history_part(out) if m.id == "t0")
    assert middle not in shown.content  # shortened: the middle is gone...
    # ...but what a later step looks up by name is still there
    assert "LedgerImbalanceError" in shown.content and "src/billing/ledger.py" in shown.content


def test_a_restored_message_of_the_verbatim_tail_is_kept_whole():
    from ctxlayer.core.assembly.restore import restore

    history = agent_chat(6, output_lines=300)
    budget = int((3 + history.total + 10) * 0.5)
    state, entry = restore(history, Compaction(), "t0")
    assert entry.action == "restored" and entry.message_id == "t0"
    out = assemble(history, state, inp(budget), COUNTER)
    check_fits(out, budget)
    t0 = next(m for m in history_part(out) if m.id == "t0")
    assert t0.content == history.messages[2].content  # whole, where it would be outlined
    assert not any(e.message_id == "t0" for e in out.result.truncated)
    assert [m.id for m in history_part(out)][-1] == "u-last"


@pytest.mark.parametrize("budget", [*range(20, 120, 8), *range(120, 1200, 40)])
def test_the_task_an_agent_run_started_with_survives_any_budget_shortened(budget):
    task = ("Fix the rounding bug in payments/invoice.py so totals match the ledger. "
            + " ".join(CONSTRAINTS) + " " + FILLER * 4)
    msgs = [Message(role="user", content=task, id="task")]
    for k in range(30):  # facts and constraints enough to crowd a small summary
        msgs.append(Message(role="assistant", content=f"Step {k}: src/mod_{k}.py.", id=f"a{k}",
                            tool_calls=[ToolCall(id=f"c{k}", name="bash", arguments=json.dumps(
                                {"command": f"pytest tests/test_{k}.py::test_case_{k}"}))]))
        msgs.append(Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content=(
            f"FAILED tests/test_{k}.py::test_case_{k} - Key{k}Error at src/mod_{k}.py:{k + 10} "
            + "line " * 40)))
    history = build(msgs)
    out = assemble(history, Compaction(), inp(budget), COUNTER)
    check_fits(out, budget)
    text = "\n".join(m.content for m in history_part(out))
    assert "Fix the rounding bug" in text  # the newest user message: shortened, never dropped
    assert budget < 200 or history_part(out)[-1].id == "t29"  # and the newest exchange


def test_the_action_log_keeps_one_line_per_replaced_tool_call():
    history = agent_chat(40)
    out = assemble(history, Compaction(), inp(2000), COUNTER)
    summary = summary_of(out)
    assert "Actions (tool calls, newest first)" in summary
    replaced = out.compaction.replaced
    calls = [k for k in range(40) if 1 + 2 * k + 1 < replaced]
    newest = max(calls)
    assert f"bash pytest tests/test_pay.py::test_case_{newest} -x → exit 1" in summary
    assert f"failed: tests/test_pay.py::test_case_{newest}" in summary


def test_next_compaction_point_is_never_below_used():
    history = chat(10)
    budget = measure(history, Compaction(), inp(100_000), COUNTER, model="m", session_id="s",
                     error_band=None)
    assert budget.used == 3 + message_tokens(Message(role="system", content="You are a "
                                                     "helpful assistant."), COUNTER) + \
        history.total
    assert budget.by_layer.history == history.total
    assert budget.used < budget.next_compaction_at <= budget.limit
    over = measure(chat(200), Compaction(), inp(2000), COUNTER, model="m", session_id="s",
                   error_band=None)
    assert over.used > over.limit and over.next_compaction_at == over.used
    out = assemble(chat(200), Compaction(), inp(2000), COUNTER)
    assert out.next_compaction_at >= out.result.tokens.total
    # after a compaction the budget says what the assembly sends, the summary's
    # acknowledgement too (it said 13 tokens less)
    # (only before a user turn: a tail that starts with the assistant's has none)
    history = chat(60)
    for keep, acked in ((4, True), (3, False)):
        out = assemble(history, Compaction(), inp(20_000, force_compaction=True,
                                                  keep_recent=keep), COUNTER)
        after = measure(history, out.compaction, inp(20_000), COUNTER, model="m",
                        session_id="s", error_band=None)
        assert any(m.content == ACK_TEXT for m in out.result.messages) == acked
        assert after.used == out.result.tokens.total, keep


def test_working_items_beyond_the_mode_share_are_reported_not_deleted():
    items = [new_item(f"i{k}", "doc", ("lorem ipsum " * 400) + f"item{k}", seq=k)
             for k in range(5)]
    out = assemble(chat(2), Compaction(), inp(50_000, mode="short",
                                               mode_spec=DEFAULT_MODES["short"], items=items),
                   COUNTER)
    dropped = [e for e in out.result.dropped if "working zone" in e.reason]
    assert dropped and all(e.message_id.startswith("i") for e in dropped)
    assert out.result.tokens.working <= 1000


def test_cheap_stages_run_before_the_summarizer():
    history = agent_chat(10, output_lines=200)
    policy = CompactionPolicy(tool_output_cap=100, keep_recent=4)
    budget = int((3 + history.total) * 0.95)
    out = assemble(history, Compaction(), inp(budget, policy=policy), COUNTER)
    assert out.result.compacted
    assert any(e.action == "compressed" and "tool output" in e.reason for e in out.audit)
    assert not any(e.action == "summarized" for e in out.audit)
    assert out.compaction.replaced == 0 and out.compaction.rewrites


def test_mode_suggestion_comes_with_the_assembly():
    history = build([Message(role="user", content="I get a stack trace when I save", id="u")])
    out = assemble(history, Compaction(), inp(5000), COUNTER)
    assert out.result.mode_suggestion.mode == "debug"


def test_a_summary_over_the_history_share_is_fitted_never_over_the_budget():
    planted = {k: f"Step {k} failed in src/mod_{k}/handler_{k}.py:{100 + k} with E{5000 + k}."
               for k in range(0, 80, 2)}
    planted[80] = CONSTRAINTS[0]  # a user message
    history = chat(90, planted=planted)
    # parts sized to want the whole share, and a long client summary
    policy = CompactionPolicy(ledger_share=1.0, summary_share=1.0, summary_max_tokens=5000)
    text = "Decided: " + FILLER * 30
    for budget in (300, 400):
        out = assemble(history, Compaction(), inp(budget, policy=policy, summary_text=text),
                       COUNTER)
        check_fits(out, budget)
        assert CONSTRAINTS[0] in summary_of(out)  # hard constraints give way last
        assert any(e.action == "truncated" and e.message_id.startswith("ctx:summary")
                   for e in out.result.truncated)


def test_many_hard_constraints_are_demoted_to_the_ledger_never_an_error():
    planted = {2 * k: f"You must keep invariant {k} of the module unchanged whatever happens."
               for k in range(40)}
    out = assemble(chat(90, planted=planted), Compaction(), inp(1500), COUNTER)
    check_fits(out, 1500)
    demoted = [e for e in out.result.truncated if e.action == "demoted"]
    assert demoted and all(e.message_id.startswith("ctx:summary") for e in demoted)
    summary = summary_of(out)
    assert "invariant 39 of the module" in summary  # the newest stay verbatim
    assert "instructions (demoted" in summary


def test_questions_about_failing_tests_are_not_constraints_and_the_session_assembles():
    msgs = []
    for k in range(400):
        msgs.append(Message(role="user", content=f"I don't understand why test_{k} fails.",
                            id=f"u{k}"))
        msgs.append(Message(role="assistant", content=f"Looking at test_{k} now. " + FILLER,
                            id=f"a{k}"))
    msgs.insert(10, Message(role="user", content="Target Python 3.9.", id="target"))
    out = assemble(build(msgs), Compaction(), inp(3000), COUNTER)
    check_fits(out, 3000)
    assert out.compaction.constraints == ["Target Python 3.9."]


def test_a_pinned_user_message_stays_whole_after_the_summary_whatever_its_wording():
    # it was summarized into a marked constraint, which a tight share demotes to the ledger
    # and cuts; a pinned message is never touched (REQUIREMENTS T3/T4): shown as it was sent,
    # in its order, right after the summary and its acknowledgement
    planted_msg = Message(role="user", content="The budget for this job is 300 euros.",
                          id="pin", pinned=True)
    history = chat(80)
    msgs = [planted_msg, *history.messages]
    out = assemble(build(msgs), Compaction(), inp(2500), COUNTER)
    check_fits(out, 2500)
    ids = [m.id for m in history_part(out)]
    assert out.result.compacted and ids[:3] == [f"ctx:summary:{out.compaction.upto_seq}",
                                                f"ctx:summary:{out.compaction.upto_seq}:ack",
                                                "pin"]
    assert planted_msg in out.result.messages
    assert out.compaction.replaced == out.compaction.upto_seq - 1  # all before the tail but it
    assert "300 euros" not in summary_of(out)  # shown once, not again in the summary


def test_a_forced_compaction_of_a_history_that_fits_keeps_the_recent_few():
    history = chat(20)
    out = assemble(history, Compaction(), inp(100_000, force_compaction=True), COUNTER)
    assert out.result.compacted and out.compaction.replaced == 20 - 6
    explicit = assemble(history, Compaction(), inp(100_000, force_compaction=True,
                                                   keep_recent=2), COUNTER)
    assert explicit.compaction.replaced == 18


def test_a_state_saved_before_ranking_still_assembles_with_its_facts():
    import msgspec

    old = msgspec.json.encode({
        "upto_seq": 40, "replaced": 40, "summary": "Decided:\n- keep going", "constraints": [],
        "facts": {"paths": ["src/legacy/module.py"], "error_codes": ["E1234"]},
        "rewrites": {}, "rendered": "", "rendered_tokens": 0, "ledger_chars": 900})
    state = msgspec.json.decode(old, type=Compaction)
    out = assemble(chat(60), state, inp(2500), COUNTER)
    summary = summary_of(out)
    assert "src/legacy/module.py" in summary and "E1234" in summary


def test_the_offline_summary_keeps_exact_details_without_cue_words():
    planted = {6: "The gateway rejected it with GW-4107 again.",
               8: "We now read 640 rows per batch from the ledger."}
    out = assemble(chat(60, planted=planted), Compaction(), inp(2500), COUNTER)
    summary = summary_of(out)
    assert "Details:" in summary
    assert "GW-4107" in summary and "640 rows per batch" in summary


def test_the_offline_summary_leaves_out_the_parts_it_found_nothing_for():
    said = [Message(role="user", content="Please look at the queue."),
            Message(role="assistant", content="We decided to keep the retry queue ordered.")]
    text = offline_summary(said, "", 600)
    assert text == ("Asked:\n- Please look at the queue.\n"
                    "Decided:\n- We decided to keep the retry queue ordered."), text
    assert "Open:" not in text and "(none)" not in text
    # nothing found anywhere: no part at all, and a previous summary's parts carry over
    assert offline_summary([Message(role="assistant", content="ok")], "", 600) == ""
    assert offline_summary([], text, 600) == text


def test_an_agent_narrating_its_next_move_is_neither_decided_nor_open():
    said = [Message(role="assistant", content=(
        "Let me run the tests using Django's test runner. Now let me check why it still fails? "
        "Based on my analysis, using `re.DOTALL` is the cleanest fix. Let me edit src/app.py "
        "line 40 next."))]
    text = offline_summary(said, "", 900)
    decided = text.split("Decided:\n")[1].split("\n")[0]
    assert decided == "- Based on my analysis, using `re.DOTALL` is the cleanest fix.", text
    assert "Open:" not in text and "test runner" not in text, text
    # a plan naming something exact is still a detail
    assert "Let me edit src/app.py line 40 next." in text.split("Details:\n")[1]


def test_the_offline_summary_does_not_quote_ctxlayers_own_marks():
    shown = [Message(role="assistant", content=(
        "Accepts `header_rows` parameter.\n[... 52 lines omitted ...]\nPosition line kept.\n"
        "[... 1,204 characters omitted ...]\n[cut from this message: ValueError, line 40]"))]
    text = offline_summary(shown, "", 900)
    assert "omitted" not in text and "cut from" not in text, text
    assert "Accepts `header_rows` parameter." in text


def test_the_offline_summary_reads_each_text_once_across_calls_given_what_it_read():
    said = [Message(role="user", content="We decided to keep the retry queue ordered."),
            Message(role="assistant", content="Open question: why does src/q.py line 9 fail?")]
    read: dict[str, list[tuple[int, str]]] = {}
    first = offline_summary(said, "", 600, read)
    assert first == offline_summary(said, "", 600)  # the same summary with or without it
    assert set(read) == {m.content for m in said}
    # a later call takes a text's sentences from it instead of reading the text again
    read[said[0].content] = [(0, "We decided on something else.")]
    assert "We decided on something else." in offline_summary(said[:1], "", 600, read)


@pytest.mark.parametrize("shape", ["chat", "assistant first", "agent"])
@pytest.mark.parametrize("budget", [300, 700, 1500, 4000, 20000])
def test_every_message_not_shown_as_it_came_is_audited(shape, budget):
    """Nothing is cut silently: a history message the result does not show as it came is named
    in its dropped or truncated entries, or, summarized, in the assembly's audit (the session's
    audit). Kept over three kinds of history and budgets from all of it to a sliver."""
    history = agent_chat(25) if shape == "agent" else chat(40, first=shape.split()[0])
    try:
        out = assemble(history, Compaction(), inp(budget), COUNTER)
    except ContextError as err:
        assert err.kind == "pinned_over_budget"
        return
    check_fits(out, budget)
    shown = {(m.id, m.content) for m in out.result.messages}
    told = {e.message_id for e in (*out.result.dropped, *out.result.truncated, *out.audit)}
    silent = [m.id for m in history.messages if (m.id, m.content) not in shown
              and m.id not in told]
    assert not silent, silent
    if budget <= 1500:  # the check had something to check
        assert any((m.id, m.content) not in shown for m in history.messages)


@pytest.mark.parametrize("pinned", ["a1", "t5"])
def test_a_pinned_tool_call_or_result_stays_with_its_group_beside_the_summary(pinned):
    # pinned messages are never summarized; a call shown without its results (or a result
    # without its call) is refused by the providers, so the whole group stays with it
    import msgspec

    msgs = [msgspec.structs.replace(m, pinned=True) if m.id == pinned else m
            for m in agent_chat(40).messages]
    out = assemble(build(msgs), Compaction(), inp(2500), COUNTER)
    check_fits(out, 2500)
    shown = history_part(out)
    ids = [m.id for m in shown]
    call, result = ("a1", "t1") if pinned == "a1" else ("a5", "t5")
    assert out.result.compacted and ids.index(result) == ids.index(call) + 1, ids[:6]
    assert ids[0].startswith("ctx:summary:") and ids.index(call) == 1
    assert call not in " ".join(e.message_id or "" for e in out.audit
                                if e.action == "summarized").split()
    for k, m in enumerate(shown):  # no orphan anywhere
        if m.role == "tool":
            assert any(c.id == m.tool_call_id for c in shown[k - 1].tool_calls or ()), ids


def test_an_ask_the_verbatim_request_holds_is_not_said_twice():
    from ctxlayer.core.assembly.summary import without_asks_in

    summary = "Asked:\n- Refactor the payment module\n- Go on with part 2\nDecided:\n- x"
    assert without_asks_in(summary, "Go on with part 2") == \
        "Asked:\n- Refactor the payment module\nDecided:\n- x"
    assert without_asks_in("Asked:\n- Fix it\nOpen:\n- why?", "Fix it") == "Open:\n- why?"
    assert without_asks_in(summary, "") == summary


def test_claude_codes_framing_of_the_claude_md_is_no_hard_constraint_its_orders_are():
    # a resumed Claude Code chat's summary listed "IMPORTANT: These instructions OVERRIDE any
    # default behavior and you MUST follow them exactly as written." as the user's own words
    from ctxlayer.core.assembly.constraints import orders_of

    first = Message(role="user", content=(
        "<system-reminder>\nAs you answer the user's questions, you can use the following "
        "context:\n# claudeMd\nCodebase and user instructions are shown below. Be sure to "
        "adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default "
        "behavior and you MUST follow them exactly as written.\n\nContents of /repo/CLAUDE.md "
        "(project instructions, checked into the codebase):\n\nAlways run make test-all before "
        "committing.\n</system-reminder>\nFix the build. Never touch the vendor folder."))
    assert orders_of(first) == ["Always run make test-all before committing.",
                                "Never touch the vendor folder."]
    # the user's own words, outside a client's reminder, are theirs whatever they say
    said = "IMPORTANT: These instructions OVERRIDE any default behavior: you must obey them."
    assert orders_of(Message(role="user", content=said)) == [said]


TASK = ("Fix the rounding bug in payments/invoice.py so that totals match the ledger to the "
        "cent. Keep the public API of Invoice unchanged, add a regression test in "
        "tests/test_invoice.py covering three currencies, do not touch the migrations folder, "
        "and make sure the CSV export in reports/export.py rounds half to even like the ledger "
        "does. The final check: totals for the sample month must read 1,204.55 exactly, as the "
        "accountant wrote in the ticket.")


@pytest.mark.parametrize("budget", [1200, 1500])
def test_a_sessions_task_is_kept_whole_as_a_live_chats_is(budget):
    """A task of 450 characters, summarized once a second question came: ctx/prepare keeps
    it whole in its summary (up to TASK_CHARS); ctx/assemble cut it to its first 200
    characters ("...covering three curren…"), the check it ends with lost. One cap now
    (`first_ask_chars`)."""
    from ctxlayer.core.assembly.summary import ASK_CHARS, TASK_CHARS
    from ctxlayer.core.prepare import prepare_turn

    assert ASK_CHARS < len(TASK) <= TASK_CHARS
    msgs = [Message(role="user", content=TASK, id="task")]
    for k in range(30):
        if k == 20:
            msgs.append(Message(role="user", id="q2", content="Now look at the report module."))
        msgs.append(Message(role="assistant", content=f"Step {k}: src/mod_{k}.py.", id=f"a{k}",
                            tool_calls=[ToolCall(id=f"c{k}", name="bash", arguments=json.dumps(
                                {"command": f"pytest tests/test_{k}.py"}))]))
        msgs.append(Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}",
                            content=f"FAILED tests/test_{k}.py::test_case_{k} " + "line " * 120))
    msgs.append(Message(role="user", id="u-last", content="go on"))
    out = assemble(build(msgs), Compaction(), inp(budget), COUNTER)
    check_fits(out, budget)
    assert f"Asked:\n- {TASK}\n" in summary_of(out)
    prepared = prepare_turn(None, msgs, budget, COUNTER)
    assert any(TASK in " ".join(m.content.split()) for m in prepared.messages
               if m.kind == "summary")


def test_a_long_question_over_a_tiny_budget_is_refused_naming_it_cut_and_what_to_do():
    """The room the system layers left the history was under 8 tokens: the last resort left
    the newest question whole, and the refusal said the question "even shortened" took its
    whole size (31,173 tokens at a budget of 150 on gpt-4o, the sessions probe). It names the
    question cut as far as the last resort cuts it, and what to do."""
    question = " ".join(f"word{k}" for k in range(5000))
    history = build([Message(role="user", content="old " * 50, id="u0"),
                     Message(role="assistant", content="ok " * 50, id="a0"),
                     Message(role="user", content=question, id="q")])
    system = message_tokens(inp(0).system[0], COUNTER)
    with pytest.raises(ContextError) as err:
        assemble(history, Compaction(), inp(system + 3 + 4), COUNTER)
    said = str(err.value)
    assert err.value.kind == "pinned_over_budget" and "raise the budget" in said
    named = int(said.split(" take ")[1].split()[0])
    assert named < 100, said  # the question cut, not its 5,000 words
    assert "remove rules" not in said  # there are none


def test_a_summary_that_replaced_an_image_says_so_in_its_text():
    """The result's `summary` named the screenshot a summary replaced, the summary's own text
    did not: the model read no trace of an image it had been shown (the sessions probe)."""
    msgs = [Message(role="user", content="What is wrong in the screenshot? " + FILLER, id="m0",
                    parts=["image 1024x768 (765 tokens)"], parts_tokens=765),
            *(Message(role=("assistant", "user")[k % 2], content=FILLER * 3, id=f"m{k}")
              for k in range(1, 12))]
    history = build(msgs)
    out = assemble(history, Compaction(), inp(600), COUNTER)
    assert out.result is not None and out.result.summary is not None
    assert out.result.summary.parts == ["image 1024x768 (765 tokens) in message m0"]
    assert "[image 1024x768 in message m0 not sent]" in summary_of(out)
