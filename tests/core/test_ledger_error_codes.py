"""An error code of joined words (`ZEBRA-ERR-4411`) a tool output reports is a fact the rest of
the conversation needs: a summary's ledger lists it under "errors". It was in no kind: the
summary of 12 deploy logs kept their `E12xx` codes and none of the `ZEBRA-ERR-44xx` beside
them."""

from __future__ import annotations

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())


def test_a_summarized_deploy_logs_joined_error_codes_are_in_its_ledger():
    msgs = [Message(role="system", id="sys", content="You are a helper."),
            Message(role="user", id="u0", content="The deploy keeps failing. Please fix it.")]
    for k in range(12):
        log = "\n".join(f"step {j} ok in {j * 3} ms" for j in range(60))
        msgs += [Message(role="assistant", id=f"a{k}", content="Let me look.", tool_calls=[
                     ToolCall(id=f"c{k}", name="sh", arguments='{"cmd": "cat deploy.log"}')]),
                 Message(role="tool", id=f"o{k}", tool_call_id=f"c{k}", content=(
                     f"{log}\nfatal: deploy aborted with ZEBRA-ERR-44{k:02d} (code E12{k:02d})"))]
    msgs.append(Message(role="user", id="q", content="So what was the error code again?"))
    turn = prepare_turn(None, msgs, 1200, COUNTER)
    (summary,) = [m.content for m in turn.messages if m.kind == "summary"]
    errors = next(line for line in summary.splitlines() if line.startswith("- errors: "))
    assert "ZEBRA-ERR-44" in errors and "E12" in errors, errors
