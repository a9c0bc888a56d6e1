"""The session service over a real SQLite store: what a client is told matches what is stored."""

from __future__ import annotations

import msgspec
import pytest

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.protocol import Message
from ctxlayer.state.session_service import SessionService, SystemLayers
from ctxlayer.store import SessionStore

WS = "/ws"


def service(tmp_path) -> SessionService:
    counter = CountCache(WordTokenizer())
    return SessionService(SessionStore(tmp_path), lambda model: counter,
                          default_model=lambda: "gpt-4o", default_budget=lambda model: 100_000)


def big_system(words: int) -> SystemLayers:
    text = " ".join(f"w{k}" for k in range(words))
    return SystemLayers(messages=[Message(role="system", content=text, id="ctx:workspace")],
                        workspace_tokens=words)


def test_an_append_over_the_budget_is_acknowledged_and_reported_not_an_error(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=50))
    svc.set_system(WS, "s", big_system(200))  # the workspace segment alone is over the budget
    budget = svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    assert budget.used > budget.limit == 50 and budget.percent > 100
    again = service(tmp_path)  # a restarted daemon finds what the client was told is stored
    assert again.list(WS)[0].messages == 1


def test_rules_over_the_budget_are_an_error_at_assembly_and_reported_in_the_budget(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=60))
    svc.add_rule(WS, "s", protocol.RuleSpec(text="Never " + "do that thing " * 30, weight=1))
    budget = svc.budget(WS, "s")
    assert budget.by_layer.rules > 60 and budget.used > budget.limit
    with pytest.raises(ContextError) as err:
        svc.assemble(WS, "s")
    assert err.value.kind == "pinned_over_budget" and "rules" in str(err.value)


def test_repeated_assemblies_do_not_repeat_the_same_audit_entries(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=400, mode="short"))
    for k in range(6):  # working items beyond the short mode's share are reported as dropped
        svc.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="fact " * 60 + str(k)))
    svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    svc.assemble(WS, "s")
    first = svc.audit(WS, "s", None)
    assert first, "the first assembly reports what it left out"
    for _ in range(3):
        svc.assemble(WS, "s")
    assert svc.audit(WS, "s", None) == first


def test_close_really_closes_until_opened_again_unchanged(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=5000, mode="debug"))
    svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    svc.close(WS, "s")
    for call in (lambda: svc.budget(WS, "s"), lambda: svc.assemble(WS, "s"),
                 lambda: svc.append(WS, "s", [Message(role="user", content="again")]),
                 lambda: svc.close(WS, "s")):
        with pytest.raises(ContextError) as err:
            call()
        assert err.value.kind == "unknown_session"
    assert [i.session_id for i in svc.list(WS)] == []  # closed sessions are not listed
    again = service(tmp_path)  # a restarted daemon knows it is closed too
    with pytest.raises(ContextError):
        again.budget(WS, "s")
    reopened = again.open(WS, protocol.SessionOpenParams(session_id="s"))
    assert reopened.mode == "debug" and reopened.budget == 5000
    assert [i.messages for i in again.list(WS)] == [1]
    out = again.assemble(WS, "s")
    assert [m.id for m in out.result.messages] == ["u1"]


def test_one_wrong_usage_report_never_breaks_later_assemblies(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=1000))
    svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    first = svc.assemble(WS, "s")
    assert svc.report_usage(WS, "s", 50_000, None) == 1.0  # against a tiny assembly: ignored
    assert svc.assemble(WS, "s").result.tokens.total == first.result.tokens.total
    for _ in range(5):
        svc.report_usage(WS, "s", 1010, 1000)
    assert svc.report_usage(WS, "s", 50_000, 1000) == pytest.approx(1.01)
    assert svc.budget(WS, "s").limit == int(1000 / 1.01)
    assert svc.assemble(WS, "s").result is not None


def test_the_error_band_is_the_model_tables_before_any_report(tmp_path):
    counter = CountCache(WordTokenizer())
    svc = SessionService(SessionStore(tmp_path), lambda model: counter,
                         default_model=lambda: "claude-sonnet-4", default_budget=lambda m: 1000,
                         prior_band=lambda model: 0.12 if model.startswith("claude") else 0.0)
    svc.open(WS, protocol.SessionOpenParams(session_id="s"))
    assert svc.budget(WS, "s").error_band == 0.12


def test_a_session_of_questions_about_failing_tests_stays_assemblable(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=3000))
    for k in range(400):
        svc.append(WS, "s", [
            Message(role="user", content=f"I don't understand why test_{k} fails", id=f"u{k}"),
            Message(role="assistant", content=f"Let me look at test_{k} again. " * 3,
                    id=f"a{k}")])
        if k % 50 == 49:
            out = svc.assemble(WS, "s")
            assert out.result.tokens.total <= 3000
            assert out.next_compaction_at >= out.result.tokens.total
    assert svc.assemble(WS, "s").result.messages[-1].id == "a399"


def _agent_turns(n: int) -> list[Message]:
    from ctxlayer.protocol import ToolCall

    out = [Message(role="user", content="Fix the failing test in tests/test_pay.py.", id="ask")]
    for k in range(n):
        out.append(Message(role="assistant", content=f"Running case {k}.", id=f"a{k}",
                           tool_calls=[ToolCall(id=f"c{k}", name="bash",
                                                arguments=f'{{"command": "pytest -k t{k}"}}')]))
        out.append(Message(role="tool", content=f"case {k} output " + "line " * 120,
                           id=f"r{k}", tool_call_id=f"c{k}"))
    return out


def test_a_restored_message_comes_back_whole_with_its_call_and_stays_after_a_restart(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=1500))
    svc.append(WS, "s", _agent_turns(30))
    first = svc.assemble(WS, "s").result
    assert first.compacted and "r2" not in {m.id for m in first.messages}  # summarized
    svc.restore(WS, "s", "r2")
    for again in (svc, service(tmp_path)):  # the same daemon, then a restarted one
        out = again.assemble(WS, "s").result
        ids = [m.id for m in out.messages]
        r2 = next(m for m in out.messages if m.id == "r2")
        assert r2.content.startswith("case 2 output") and r2.content.count("line") == 120
        assert ids[ids.index("r2") - 1] == "a2"  # with the call it answers, right before it
        assert ids[0].startswith("ctx:summary:")  # right after the summary, before the tail
        assert ids.index("r2") < ids.index("r29")
        assert out.tokens.total <= 1500
    assert "restored" in [e.action for e in svc.audit(WS, "s", None) if e.message_id == "r2"]
    with pytest.raises(ContextError) as err:
        svc.restore(WS, "s", "no-such-message")
    assert err.value.kind == "invalid" and err.value.field == "messageId"


def test_restoring_more_than_the_history_share_shortens_never_breaks_the_session(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=1500))
    svc.append(WS, "s", _agent_turns(30))
    svc.assemble(WS, "s")
    for k in range(12):
        svc.restore(WS, "s", f"r{k}")
    out = svc.assemble(WS, "s")
    assert out.result.tokens.total <= 1500
    assert any(e.action == "truncated" and e.reason.startswith("restored, shortened")
               for e in out.result.truncated)
    assert out.result.messages[-1].id == "r29"  # the newest exchange still ends the request


def test_compacting_everything_of_a_one_message_session_summarizes_it(tmp_path):
    """keepRecent 0 on a session whose last message is its only one: an IndexError before."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=300))
    svc.append(WS, "s", [Message(role="user", content="look into the flaky login test", id="u")])
    out = svc.assemble(WS, "s", force=True, keep_recent=0, offline=True).result
    assert out.compacted and "flaky login test" in out.messages[-1].content


def test_a_restored_message_beside_a_long_newest_question_gives_way_never_the_session(
        tmp_path):
    """Both in the verbatim tail (a compaction asked to keep the newest four, so nothing to
    summarize): neither the restored message nor the question alone could make the room, and
    the assembly was pinned_over_budget. Now the restored one is shortened first, then the
    question, both audited."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=300))
    svc.append(WS, "s", [Message(role="user", content="old " * 287, id="u1")])
    svc.restore(WS, "s", "u1")
    svc.append(WS, "s", [Message(role="user", content="new " * 287, id="u2")])
    out = svc.assemble(WS, "s", offline=True, force=True, keep_recent=4).result
    assert out.tokens.total <= 300 and [m.id for m in out.messages][-2:] == ["u1", "u2"]
    why = {e.message_id: e.reason for e in out.truncated}
    assert why["u1"].startswith("shortened to fit beside the newest question")
    assert why["u2"].startswith("shortened to fit: the newest question")
    assert out.messages[-1].content.split().count("new") > 200  # the question keeps most


def test_a_short_newest_question_stays_in_a_summary_shrunk_to_its_header(tmp_path):
    """A summary squeezed to its room gave way to the bare header when the request it
    replaced was under 12 characters ("go on"): the newest user message was lost."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=300))
    svc.add_item(WS, "s", protocol.WorkingItemSpec(kind="log", content=" ".join(
        f"i{k}" for k in range(47))))
    svc.append(WS, "s", [Message(role="user", content="go on", id="u")])
    svc.report_usage(WS, "s", 507, 256)  # the provider counts twice what we do
    svc.assemble(WS, "s", budget=300, force=True, keep_recent=0, offline=True)
    out = svc.assemble(WS, "s", budget=200, offline=True).result
    assert out.messages[-1].content.endswith("go on")


def test_working_notes_give_way_to_the_newest_question_at_a_small_budget(tmp_path):
    """The working zone may take most of a small budget; beside it the summary, a restored
    message and the question did not fit even shortened, and every assembly failed (no rule
    to remove). Now the notes are left out of that assembly (audited, kept in the session)
    and come back when the budget allows."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=2000, mode="debug"))
    svc.append(WS, "s", [Message(role="user", content="first " * 400, id="u1"),
                         Message(role="assistant", content="done " * 400, id="a1"),
                         Message(role="user", content="second " * 150, id="u2")])
    svc.assemble(WS, "s", budget=300, offline=True, force=True, keep_recent=1)
    svc.restore(WS, "s", "u1")
    svc.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="note " * 80))
    out = svc.assemble(WS, "s", budget=120, offline=True).result
    assert out.tokens.total <= 120 and out.messages[-1].id == "u2" and out.tokens.working == 0
    assert any(e.reason.startswith("working zone cut to 0 tokens: the newest user message")
               for e in out.dropped)
    assert svc.assemble(WS, "s", budget=200, offline=True).result.tokens.working > 80


def test_the_summary_holding_the_newest_question_is_never_dropped_silently(tmp_path):
    """Rules and working notes left the history 3 tokens: the summary, which held the newest
    user message, was dropped and the request went out without the question. Now the working
    notes give way; with rules alone in the way, the assembly says so."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=3000))
    for words in (91, 94):
        svc.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="i " * words))
    for words in (1, 22, 25, 32):
        svc.add_rule(WS, "s", protocol.RuleSpec(text="Always " + "r " * words))
    svc.append(WS, "s", [Message(role="user", content="q7", id="u"),
                         Message(role="assistant", content="a", id="a")])
    out = svc.assemble(WS, "s", budget=315, offline=True).result
    assert "q7" in " ".join(m.content for m in out.messages).split()
    svc.open(WS, protocol.SessionOpenParams(session_id="t", budget=3000))  # rules alone
    for words in (1, 22, 25, 32):
        svc.add_rule(WS, "t", protocol.RuleSpec(text="Always " + "r " * words))
    svc.append(WS, "t", [Message(role="user", content="q7", id="u"),
                         Message(role="assistant", content="a", id="a")])
    svc.assemble(WS, "t", force=True, keep_recent=0, offline=True)  # the question summarized
    assert svc.assemble(WS, "t", budget=109, offline=True).result.messages[-1].content == "q7"
    with pytest.raises(ContextError) as err:
        svc.assemble(WS, "t", budget=107, offline=True)
    assert err.value.kind == "pinned_over_budget" and "newest user message" in str(err.value)


@pytest.mark.parametrize("then", [None, "go on"])
def test_no_user_message_is_compressed_to_nothing_by_the_cheap_stages(tmp_path, then):
    """A long task without a sentence end (a pasted list, a log), followed by the agent's
    turns (sizes where the extractive stage runs; the calls' arguments tip it): it kept none
    of the task's one 'sentence' and the task came back empty, said nowhere in the result.
    Now a compression that keeps nothing is not made: the task is summarized instead (the
    summary shows it verbatim, head and tail), or, with a question after it, left whole."""
    from ctxlayer.protocol import ToolCall

    def turn(k: int, words: int, output: int, calls: int) -> list[Message]:
        ids = [f"c{k}_{j}" for j in range(calls)]
        return [Message(role="assistant", content=" ".join(f"a{n % 97}" for n in range(words)),
                        id=f"a{k}", tool_calls=[ToolCall(id=c, name="run",
                                                         arguments=f'{{"n": {j}}}')
                                                for j, c in enumerate(ids)] or None),
                *(Message(role="tool", content=" ".join(f"o{n % 97}" for n in range(output)) or "o",
                          tool_call_id=c, id=f"t{c}") for c in ids)]

    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=3000))
    svc.append(WS, "s", [Message(role="user", content=" ".join(
        f"step{k % 97}" for k in range(682)), id="u")])
    for k, (words, output, calls) in enumerate(((1003, 0, 3), (9, 217, 3), (230, 0, 0),
                                                (345, 0, 0))):
        svc.append(WS, "s", turn(k, words, output, calls))
    if then:
        svc.append(WS, "s", [Message(role="user", content=then, id="q")])
    out = svc.assemble(WS, "s", offline=True).result
    assert out.tokens.total <= 3000 and "step0" in out.messages[0].content.split()
    assert all(m.content.strip() for m in out.messages if m.role != "assistant")


def test_two_daemons_on_one_session_both_append_and_see_each_other(tmp_path):
    """Two editors on one workspace share its session (Neovim's is named by the folder), each
    with a daemon of its own over the same state folder. An append meeting the other's rows
    reads the session again and goes after them (it was an error, `UNIQUE constraint failed`,
    its turn lost); an assembly finds the other's rows too."""
    a, b = service(tmp_path), service(tmp_path)
    for svc in (a, b):
        svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    a.append(WS, "s", [Message(role="user", content="from a", id="a1")])
    b.append(WS, "s", [Message(role="user", content="from b", id="b1")])  # read a's first
    a.append(WS, "s", [Message(role="assistant", content="a again", id="a2")])  # b's taken
    for svc in (a, b):
        ids = [m.id for m in svc.assemble(WS, "s").result.messages if m.id in ("a1", "b1", "a2")]
        assert ids == ["a1", "b1", "a2"]
    assert [m.id for _, m, _ in service(tmp_path).store.messages(
        a.store.get(WS, "s").sid)] == ["a1", "b1", "a2"]


def test_two_daemons_adding_rules_to_one_session_keep_both(tmp_path):
    """Each daemon named its next rule `rule-N` from what it had read: the two were the same
    id, and the second write replaced the first daemon's rule."""
    a, b = service(tmp_path), service(tmp_path)
    for svc in (a, b):
        svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    first = a.add_rule(WS, "s", protocol.RuleSpec(text="Always run the tests.", weight=5))
    second = b.add_rule(WS, "s", protocol.RuleSpec(text="Never touch the lock file.", weight=5))
    assert first.rule_id != second.rule_id
    texts = {r.text for r in service(tmp_path).store.rules(a.store.get(WS, "s").sid)}
    assert texts == {"Always run the tests.", "Never touch the lock file."}


def test_two_daemons_adding_working_items_to_one_session_keep_both(tmp_path):
    a, b = service(tmp_path), service(tmp_path)
    for svc in (a, b):
        svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    first = a.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="the port is 8080"))
    second = b.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="use uv, not pip"))
    assert first != second
    stored = service(tmp_path).store.items(a.store.get(WS, "s").sid)
    assert {it.content for it in stored} == {"the port is 8080", "use uv, not pip"}


def _two(tmp_path) -> tuple[SessionService, SessionService]:
    a, b = service(tmp_path), service(tmp_path)
    for svc in (a, b):
        svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
        svc.append(WS, "s", [Message(role="user", content="what next?", id=f"q-{id(svc)}")])
    return a, b


def _assembled(svc: SessionService) -> str:
    return "\n".join(m.content for m in svc.assemble(WS, "s").result.messages)


def test_a_rule_another_daemon_adds_or_removes_is_in_the_next_assembly(tmp_path):
    """A rule added in one editor (its daemon) was left out of the other's assemblies, and
    its removal there said "no rule", until that daemon happened to read the session again."""
    a, b = _two(tmp_path)
    _assembled(b)
    rule = a.add_rule(WS, "s", protocol.RuleSpec(text="Never touch the lock file.", weight=5))
    assert "Never touch the lock file." in _assembled(b)
    assert b.budget(WS, "s").by_layer.rules > 0
    b.remove_rule(WS, "s", rule.rule_id)
    assert "Never touch the lock file." not in _assembled(a)


def test_a_mode_and_a_working_item_another_daemon_sets_are_in_the_next_assembly(tmp_path):
    a, b = _two(tmp_path)
    notes = " ".join(f"note{k}" for k in range(3000))  # within deep's working cap, not short's
    a.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content=notes))
    assert notes in _assembled(b)
    a.set_mode(WS, "s", "short")
    assert b.open(WS, protocol.SessionOpenParams(session_id="s")).mode == "short"
    assert notes not in _assembled(b)


def test_a_daemon_reads_a_session_again_only_when_another_changed_it(tmp_path, monkeypatch):
    a, b = _two(tmp_path)
    loads: list[SessionService] = []
    real = SessionService._load
    monkeypatch.setattr(SessionService, "_load",
                        lambda self, row: loads.append(self) or real(self, row))
    for k in range(3):  # its own writes are not another's change
        b.append(WS, "s", [Message(role="user", content=f"more {k}", id=f"m{k}")])
        b.add_rule(WS, "s", protocol.RuleSpec(text=f"rule {k}", weight=1))
        _assembled(b)
    assert loads == []
    a.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="from a"))
    assert loads == [a]  # b had written since a read it
    _assembled(b)
    _assembled(b)
    assert loads == [a, b]


def test_a_change_between_a_daemons_look_and_its_write_is_read_at_its_next_request(tmp_path):
    a, b = _two(tmp_path)
    _assembled(b)
    put_rule = b.store.put_rule

    def racing(*args, **kw):  # a's rule lands between b's look at the session and its write
        a.add_rule(WS, "s", protocol.RuleSpec(text="Always run the tests.", weight=5,
                                              id="from-a"))
        return put_rule(*args, **kw)

    b.store.put_rule = racing  # type: ignore[method-assign]
    b.add_rule(WS, "s", protocol.RuleSpec(text="Never touch the lock file.", weight=5))
    text = _assembled(b)
    assert "Always run the tests." in text and "Never touch the lock file." in text


def test_a_rule_another_daemon_names_alike_at_the_same_instant_keeps_both(tmp_path):
    """Both daemons name their next rule `rule-N` from what they read; the second write
    replaced the first's rule (INSERT OR REPLACE) when it landed between the other's look and
    its write. Now the second finds the id taken, reads the session again and takes the next."""
    a, b = _two(tmp_path)
    _assembled(b)
    put_rule = b.store.put_rule

    def racing(*args, **kw):  # a's rule, named as b's will be, lands first
        a.add_rule(WS, "s", protocol.RuleSpec(text="Always run the tests.", weight=5))
        b.store.put_rule = put_rule  # once
        return put_rule(*args, **kw)

    b.store.put_rule = racing  # type: ignore[method-assign]
    mine = b.add_rule(WS, "s", protocol.RuleSpec(text="Never touch the lock file.", weight=5))
    texts = {r.text: r.id for r in service(tmp_path).store.rules(a.store.get(WS, "s").sid)}
    assert set(texts) == {"Always run the tests.", "Never touch the lock file."}
    assert texts["Never touch the lock file."] == mine.rule_id
    assert "Always run the tests." in _assembled(b)


def test_a_working_item_another_daemon_names_alike_at_the_same_instant_keeps_both(tmp_path):
    a, b = _two(tmp_path)
    _assembled(b)
    put_items = b.store.put_items

    def racing(*args, **kw):
        a.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="the port is 8080"))
        b.store.put_items = put_items  # once
        return put_items(*args, **kw)

    b.store.put_items = racing  # type: ignore[method-assign]
    b.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="use uv, not pip"))
    stored = service(tmp_path).store.items(a.store.get(WS, "s").sid)
    assert {it.content for it in stored} == {"the port is 8080", "use uv, not pip"}


def test_the_system_prompt_params_a_session_was_assembled_with_outlive_a_restart(tmp_path):
    """ctx/assemble's `systemPrompt` is used again when a later request gives none; it was
    kept in memory only, and a restarted daemon (or the other editor's) went on with a bare
    system prompt, saying nothing."""
    spec = protocol.SystemPromptParams(identity="You are BIGBOT.")
    a, b = _two(tmp_path)
    assert a.assemble(WS, "s", spec=spec).result is not None
    assert a.system_spec(WS, "s") == spec
    b.budget(WS, "s")  # its next request reads the session anew
    assert b.system_spec(WS, "s") == spec
    restarted = service(tmp_path)
    restarted.open(WS, protocol.SessionOpenParams(session_id="s"))
    assert restarted.system_spec(WS, "s") == spec


def test_an_id_names_one_message_of_a_session_across_appends(tmp_path):
    """Refused within one append, another message under the same id in a later one was
    taken: ctx/restore and ctx/why found the first message only. An id of the session's own
    naming (`ctx:msg:N`) given by a client would have named a later message alike."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    svc.append(WS, "s", [Message(role="user", content="first", id="k")])
    for taken in ("k", "ctx:msg:1"):
        with pytest.raises(ContextError) as raised:
            svc.append(WS, "s", [Message(role="assistant", content="ok"),
                                 Message(role="user", content="again", id=taken)])
        assert raised.value.field == "messages[1].id"
    # a retry of an append that landed is held once
    svc.append(WS, "s", [Message(role="user", content="first", id="k")])
    svc.append(WS, "s", [Message(role="user", content="second", id="k2")])
    assert [m.content for m in svc.assemble(WS, "s").result.messages] == ["first", "second"]


def test_an_empty_session_id_is_refused_not_replaced_by_a_new_one(tmp_path):
    """The open answered a random id and the client's next call, on "", found no session."""
    with pytest.raises(ContextError) as raised:
        service(tmp_path).open(WS, protocol.SessionOpenParams(session_id=""))
    assert raised.value.field == "sessionId"


def test_negative_counts_a_client_gives_are_refused_naming_them(tmp_path):
    """`limit: -1` listed every entry (SQLite's "no limit"), a negative `estimatedTokens` was
    taken into the calibration; `keepRecent` and `promptTokens` were refused already."""
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    with pytest.raises(ContextError) as raised:
        svc.audit(WS, "s", -1)
    assert raised.value.field == "limit"
    with pytest.raises(ContextError) as raised:
        svc.report_usage(WS, "s", 100, -5)
    assert raised.value.field == "estimatedTokens"
    assert svc.audit(WS, "s", 0) == [] and svc.report_usage(WS, "s", 100, 90) > 0


def test_rules_over_the_modes_cap_are_shown_whole_as_the_mode_settings_say(tmp_path):
    """`[session.modes.*]`'s help (docs/settings.md) said `cap` is the most both zones use and
    `rules_share` the largest share the rules use; rules are always whole (p17: short mode, 12
    rules took 4,941 tokens of a 2,000 cap)."""
    from ctxlayer.config import ModeConfig

    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000, mode="short"))
    svc.append(WS, "s", [Message(role="user", content="hi", id="u1")])
    rules = [f"Never break invariant {k}: " + " ".join(f"clause{k}_{n}" for n in range(200))
             for k in range(12)]
    for text in rules:
        svc.add_rule(WS, "s", protocol.RuleSpec(text=text, weight=1))
    svc.add_item(WS, "s", protocol.WorkingItemSpec(id="n", kind="note", content="a small note"))
    out = svc.assemble(WS, "s").result
    shown = "\n".join(m.content for m in out.messages)
    assert out.tokens.rules > 2000 and all(text in shown for text in rules)
    assert out.tokens.working == 0 and [d.message_id for d in out.dropped] == ["n"]
    helps = {f.name: f.type.__metadata__[0].description
             for f in msgspec.structs.fields(ModeConfig)}
    assert "limits nothing" in helps["rules_share"] and "shown whole" in helps["rules_share"]
    assert "Rules over it are still shown whole" in helps["cap"]
