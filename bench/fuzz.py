"""Fuzzing the paths a live chat takes, to find requests that go out wrong. Not a test (it
runs for minutes and draws new cases each run); what it finds becomes a test.

    .venv/bin/python bench/fuzz.py live [--minutes 5] [--seed N]
    .venv/bin/python bench/fuzz.py gateway --format anthropic|openai|responses [--examples 200] [--seed N]
    .venv/bin/python bench/fuzz.py sessions --format anthropic|openai|responses [--examples 200] [--seed N]
    .venv/bin/python bench/fuzz.py sequences [--examples 3000]

- live: the dev transcripts (bench/realchats/data) through `ctx/prepare`'s engine request by
  request, at budgets from 1% to 150% of a chat, with the turns perturbed (an early message
  edited, a huge output or paste added, a message pinned, a long run of one odd piece added);
  each result is checked: within its budget, valid for a provider when its input was, the
  newest user message's first words there, every message not sent as it came named in an
  audit of this turn or an earlier one (and a shortened one's tokens there what it costs as
  sent), the same request sent again giving the same result, and the state kept across a
  restart giving it too.
- gateway: generated provider payloads (tests/providers/payloads.py) sent turn by turn through
  the real gateway to the stand-in provider, whose checks are the providers' rules; any answer
  but 200 or the gateway's own "over the budget" 400 is a problem, and so is a window the
  gateway learned (the stand-in states none and cuts no prompt). `responses`: the OpenAI
  payloads' text, images, calls and outputs as Responses API items.
- sessions: generated payloads appended to sessions and assembled in the same and the other
  format at random budgets, half of them after a daemon restart; each result is checked
  against the providers' rules, and one in the same format that cut and summarized nothing
  must give back every appended message as it came (`responses`: the items above, assembled
  as Responses items or Anthropic messages).
- sequences: random sequences of session requests (appends, rules, working items, modes,
  compactions, restores, usage reports, closes, restarts) with an assembly after each, as
  tests/state/test_session_sequences.py runs a fixed few: every assembly fits its budget,
  shows the newest user message and names what it does not show as it came (or the session's
  audit does), and only the user's own rules may make it refuse.
Each problem is printed with what reproduces it; the last line counts them.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import importlib.util
import json
import random
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "realchats"), str(HERE.parent / "tests"),
                str(HERE.parent / "tests" / "providers"), str(HERE.parent / "tests" / "gateway")]

import load  # noqa: E402
import replay  # noqa: E402

from ctxlayer.core.errors import ContextError  # noqa: E402
from ctxlayer.core.prepare import persist, prepare_turn, resuming, warm  # noqa: E402
from ctxlayer.core.prepare.fit import result_index  # noqa: E402
from ctxlayer.core.prepare.model import DEFAULT_POLICY  # noqa: E402
from ctxlayer.tokenizers import counter_for  # noqa: E402

SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.5)


def _realchats():
    spec = importlib.util.spec_from_file_location("realchats_bench", HERE / "realchats" /
                                                  "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _perturbed(hist: list, rng: random.Random, pool: list[str]) -> list:
    """The request with one change a client may make, one time in four."""
    r, hist = rng.random(), list(hist)
    users = [i for i, m in enumerate(hist) if m.role == "user"]
    if r < 0.05 and len(hist) > 4:
        k = rng.randrange(1, len(hist) // 2)
        hist[k] = msgspec.structs.replace(hist[k], content=hist[k].content + " (edited)")
    elif r < 0.10 and hist[-1].role in ("tool", "user"):
        big = "\n".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))
        hist[-1] = msgspec.structs.replace(hist[-1], content=hist[-1].content + "\n" + big)
    elif r < 0.15 and users:
        big = "\n".join(rng.choice(pool) for _ in range(rng.randint(1, 20)))
        k = users[-1]
        hist[k] = msgspec.structs.replace(hist[k], content=hist[k].content + "\n" + big)
    elif r < 0.20 and len(hist) > 3:
        k = rng.randrange(1, len(hist))
        hist[k] = msgspec.structs.replace(hist[k], pinned=True)
    elif r < 0.25:  # a long run of one odd piece (a rule of "=", backticks, a path's "../")
        from payloads import ODD
        run = rng.choice(ODD) * rng.randint(1, 3000)
        hist[-1] = msgspec.structs.replace(hist[-1], content=f"{hist[-1].content}\n{run} end")
    return hist


def _live_problems(rc, hist, turn, budget, counter, state, told: set[int]) -> list[str]:
    out = turn.messages
    problems = []
    silent = replay.unaudited(turn, told)
    whole = {k for k in turn.state.out_keys if isinstance(k, int)}
    if silent:
        problems.append(f"not sent as it came and in no audit so far: {silent[:5]}")
    # what the audit says a shortened message costs is what it costs as sent
    sent = {result_index(k): t for k, t in zip(turn.state.out_keys, turn.state.out_tokens,
                                               strict=True)
            if not isinstance(k, int) and result_index(k) is not None}
    last = {e.index: e for e in turn.truncated}
    wrong = [i for i, e in last.items() if i in sent and sent[i] != e.tokens_after]
    if wrong or any(e.index in whole for e in turn.dropped):
        problems.append(f"an audit entry's tokens or action is not what was sent: {wrong[:5]}")
    if 3 + sum(turn.state.out_tokens) > budget:
        problems.append(f"over budget: {3 + sum(turn.state.out_tokens)} > {budget}")
    if rc.provider_valid(hist) and not rc.provider_valid(out):
        problems.append("a request a provider refuses")
    if not rc.question_kept(hist, out):
        problems.append("the newest user message's first words missing")
    if prepare_turn(turn.state, hist, budget, counter).messages != out:
        problems.append("sent again, another result")
    if state is not None:
        snap = persist.decode(persist.encode(persist.snapshot(state, counter.name)))
        back = resuming.resume(snap, hist, counter, DEFAULT_POLICY) if snap else None
        if prepare_turn(back, hist, budget, counter).messages != out:
            problems.append("after a restart, another result")
    return problems


def live(minutes: float, seed: int) -> int:
    rc, counter, rng = _realchats(), counter_for("gpt-4o"), random.Random(seed)
    chats = {p.stem: load.load(p) for p in load.paths("dev")}
    pool = [m.content for msgs in chats.values() for m in msgs if len(m.content) > 2000]
    end_at, found, turns = time.monotonic() + 60 * minutes, 0, 0
    while time.monotonic() < end_at:
        name = rng.choice(sorted(chats))
        msgs = chats[name]
        budget = max(200, int(rc.conversation_tokens(msgs, counter) * rng.choice(SHARES)
                              * rng.uniform(0.3, 1.0)))
        state, told = None, set()
        for end in replay.requests_of(msgs):
            hist = _perturbed(msgs[:end], rng, pool)
            turns += 1
            try:
                turn = prepare_turn(state, hist, budget, counter)
            except ContextError as exc:
                if exc.kind == "pinned_over_budget":
                    state, told = None, set()
                    continue
                raise
            problems = _live_problems(rc, hist, turn, budget, counter, state, told)
            if problems:
                found += 1
                print(f"{name} budget {budget} request {end}: {'; '.join(problems)}")
                break
            state = warm(turn.state, budget) or turn.state
    print(f"live: {turns} requests, {found} problems (seed {seed})")
    return found


def _post(url: str, body: dict, headers: dict) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={**headers, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _as_items(messages: list[dict]) -> list[dict]:
    """Chat Completions messages as Responses API input items (text, images, calls, outputs;
    other parts are left out: the generator's audio and files have no place here). Two of
    three assistant turns start with a reasoning item, as Codex sends them back (store=false:
    encrypted content, sometimes a summary), which must stay before the item it led to."""
    from standin_responses import encrypted

    items: list[dict] = []
    for k, m in enumerate(messages):
        role, content = m["role"], m.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": text})
        elif role == "assistant":
            if k % 3 and (text or m.get("tool_calls")):
                summary = [{"type": "summary_text", "text": f"thought {k} " * (k % 7)}] \
                    if k % 2 else []
                items.append({"type": "reasoning", "id": f"rs_{k}", "summary": summary,
                              "encrypted_content": encrypted(f"reasoning {k} " * (5 + k % 40))})
            if text:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": text}]})
            items += [{"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in m.get("tool_calls") or []]
        else:
            got = [{"type": "input_text", "text": p["text"]} if p["type"] == "text" else
                   {"type": "input_image", "image_url": p["image_url"]["url"],
                    "detail": p["image_url"].get("detail", "auto")}
                   for p in parts if p["type"] in ("text", "image_url")]
            if got:
                items.append({"type": "message", "role": "user" if role == "user" else "system",
                              "content": got})
    return items


def _gateway_target(stack, fmt: str) -> tuple[str, dict]:
    if fmt == "anthropic":
        return (stack.anthropic_url.rstrip("/") + "/v1/messages",
                {"x-api-key": "sk-ant-fuzz", "anthropic-version": "2023-06-01"})
    path = "/chat/completions" if fmt == "openai" else "/responses"
    return stack.openai_url.rstrip("/") + path, {"authorization": "Bearer sk-fuzz"}


def _kept(value: object, name: str) -> Path:
    """``value`` written whole as JSON to a file of the temporary folder (a problem's input
    is too long to print and is needed whole to make it a test)."""
    path = Path(tempfile.gettempdir()) / f"fuzz-{name}.json"
    path.write_text(json.dumps(value))
    return path


def gateway(fmt: str, examples: int, seed: int) -> int:
    from gateway_stack import small_stack
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as seeded
    from payloads import anthropic_payloads, openai_payloads
    from rules import anthropic_problems, openai_problems
    from standin_responses import problems as responses_problems

    problems_of = anthropic_problems if fmt == "anthropic" else openai_problems
    found: list[str] = []
    requests = [0]
    with tempfile.TemporaryDirectory() as d, small_stack(Path(d)) as stack:
        url, headers = _gateway_target(stack, fmt)

        @seeded(seed)
        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(body=anthropic_payloads() if fmt == "anthropic" else openai_payloads())
        def run(body: dict) -> None:
            msgs = body["messages"]
            for end in [k + 1 for k, m in enumerate(msgs) if m["role"] == "user"]:
                sent = {**body, "messages": copy.deepcopy(msgs[:end]), "model": "standin-small"}
                sent.pop("stream", None)
                if problems_of(sent):  # a prefix the provider would refuse as it is
                    continue
                if fmt == "responses":
                    sent = {"model": "standin-small", "input": _as_items(sent["messages"]),
                            "max_output_tokens": 100, "store": False,
                            "include": ["reasoning.encrypted_content"]}
                    if responses_problems(sent, None):
                        continue
                requests[0] += 1
                code, text = _post(url, sent, headers)
                if code != 200 and "over the budget" not in text:
                    found.append(text)
                    print(f"{code}: {text[:300]}\n  sent: {json.dumps(sent)[:300]}...\n"
                          f"  whole body: {_kept(sent, f'gateway-{fmt}-{seed}-{len(found)}')}")
                    return
        run()
        # the stand-in states no window and cuts no prompt: the gateway must have learned none
        for model, (window, why) in stack.gateway.learned.windows.items():
            found.append(why)
            print(f"learned a window of {window} for {model} from a provider that has none: "
                  f"{why}")
    print(f"gateway {fmt}: {examples} chats, {requests[0]} requests, {len(found)} problems "
          f"(seed {seed})")
    return len(found)


def sessions(fmt: str, examples: int, seed: int) -> int:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as seeded
    from hypothesis import strategies as st
    from payloads import anthropic_payloads, openai_payloads
    from rules import anthropic_problems, openai_problems
    from standin_responses import problems as responses_problems

    from ctxlayer import protocol
    from ctxlayer.state import Caller, State
    from ctxlayer.state.requests import call

    found: list[str] = []
    ids = iter(range(10**9))
    with tempfile.TemporaryDirectory() as d:
        model = "claude-sonnet-4" if fmt == "anthropic" else "gpt-4o"
        daemon: list = []  # the State and its caller, replaced by a restart

        def start() -> None:
            state = State(Path(d))
            daemon[:] = [state, Caller(state, source="session",
                                       options=protocol.InitializationOptions(model=model))]

        start()
        loop = asyncio.new_event_loop()

        async def assembled(sid: str, appended: list, budget: int, out_fmt: str,
                            restart: bool):
            await call(daemon[1], "ctx/session/open",
                       protocol.SessionOpenParams(session_id=sid, budget=budget))
            await call(daemon[1], "ctx/session/append", protocol.SessionAppendParams(
                session_id=sid, messages=copy.deepcopy(appended), format=fmt))
            if restart:  # what was appended comes back from the state folder
                daemon[0].close()
                start()
                await call(daemon[1], "ctx/session/open", protocol.SessionOpenParams(
                    session_id=sid))
            return await call(daemon[1], "ctx/assemble",
                              protocol.AssembleParams(session_id=sid, format=out_fmt))

        @seeded(seed)
        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(body=anthropic_payloads() if fmt == "anthropic" else openai_payloads(),
               budget=st.one_of(st.integers(300, 6000), st.integers(20_000, 200_000)),
               out_fmt=st.sampled_from(["anthropic", "openai", "responses"]),
               restart=st.booleans())
        def run(body: dict, budget: int, out_fmt: str, restart: bool) -> None:
            # a small budget cuts most of a session: a large one sends all of it, so that
            # what each message becomes in each other format is seen too
            appended = _as_items(body["messages"]) if fmt == "responses" else body["messages"]
            try:
                out = loop.run_until_complete(
                    assembled(f"s{next(ids)}", appended, budget, out_fmt, restart))
            except ContextError as exc:
                if "over the budget" in str(exc) or exc.kind == "pinned_over_budget":
                    return
                raise
            turns = [m for m in out.messages if m.get("role") != "system"]
            if out_fmt == "anthropic":
                problems = anthropic_problems({"model": "m", "max_tokens": 8, "messages": turns})
            elif out_fmt == "responses":
                problems = responses_problems({"model": "m", "input": out.messages}, None)
            else:
                problems = openai_problems({"model": "m", "messages": out.messages})
            spare = budget >= 20_000 and 4 * out.tokens.total < budget
            if out_fmt == fmt and out.dropped and spare:
                # room to spare: nothing a client appended in this format goes (a developer
                # message before the first user turn did)
                problems = [*problems, "dropped with room to spare: "
                            f"{sorted({e.reason for e in out.dropped})}"]
            if out_fmt == fmt and not (out.dropped or out.truncated or out.compacted):
                # nothing cut, nothing said: every message comes back as it was appended
                back = [msgspec.json.encode(m) for m in out.messages]  # a system one too
                gone = [k for k, m in enumerate(appended) if msgspec.json.encode(m) not in back]
                if gone:
                    problems = [*problems, f"appended messages {gone[:5]} changed, unaudited"]
            if problems:
                found.append(problems[0])
                print(f"{fmt} -> {out_fmt} at {budget}: {problems[:3]}\n"
                      f"  appended: {json.dumps(appended)[:300]}...\n  whole: "
                      f"{_kept(appended, f'sessions-{fmt}-{seed}-{len(found)}')}")
        run()
        daemon[0].close()
    print(f"sessions {fmt}: {examples} sessions, {len(found)} problems (seed {seed})")
    return len(found)


def sequences(examples: int) -> int:
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    sys.path.insert(0, str(HERE.parent / "tests" / "state"))
    from test_session_sequences import Sessions

    try:
        run_state_machine_as_test(Sessions, settings=settings(
            max_examples=examples, stateful_step_count=40, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    except AssertionError as exc:  # hypothesis printed the steps that reproduce it
        print(f"sequences: a problem: {exc}"[:2000])
        return 1
    print(f"sequences: {examples} sequences of up to 40 requests, 0 problems")
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["live", "gateway", "sessions", "sequences"])
    ap.add_argument("--format", choices=["anthropic", "openai", "responses"],
                    default="anthropic")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None,
                    help="the cases drawn (default: new ones each run; the last line names it)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.randrange(10**6)
    if args.mode == "live":
        found = live(args.minutes, args.seed)
    elif args.mode == "gateway":
        found = gateway(args.format, args.examples, args.seed)
    elif args.mode == "sequences":
        found = sequences(args.examples)
    else:
        found = sessions(args.format, args.examples, args.seed)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
