"""Codex CLI (the npm package, pinned in versions.env) through the gateway's Responses API:
`codex exec` with a `model_providers` entry of `wire_api = "responses"` (the README's config),
running the stand-in agent's `exec_command` calls in a temporary git repository."""

from __future__ import annotations

import base64
import json

import pytest
from providers.standin_responses import intact
from real_clients import (
    assert_all_valid,
    client,
    client_env,
    conversations,
    model_requests,
    open_stack,
    run,
    tool_outputs,
)

pytestmark = [pytest.mark.client, pytest.mark.e2e]

MODEL = "gpt-5-codex"


def config(stack) -> str:
    """Codex's config.toml for the gateway of ``stack`` (the README's)."""
    return f'''model = "{MODEL}"
model_provider = "ctxlayer"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.ctxlayer]
name = "ctxlayer"
base_url = "{stack.openai_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
'''


def test_codex_exec_runs_the_agents_shell_calls_and_ends_with_its_text(stack, repo, tmp_path):
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(config(stack))
    stack.standin.agent(2, [{"name": "exec_command", "arguments": {"cmd": "cat README.md"}}])
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                     OPENAI_API_KEY="sk-test-not-a-key")
    done = run([exe, "exec", "--skip-git-repo-check", "What does this project do?"], env, repo)
    assert "stand-in answer after 2 tool results" in done.stdout, done.stdout
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/responses"}
    assert {r["body"]["model"] for r in requests} == {MODEL} and all(r["stream"] for r in requests)
    outputs = tool_outputs(requests)
    assert sum("It adds numbers" in o for o in outputs) >= 2, outputs  # the shell really ran
    (chat,) = conversations(stack)
    assert chat["model"] == MODEL and chat["tokens"] > 0


WINDOW = 40_000


def test_codex_long_shell_loop_compacts_in_a_small_window_and_completes(repo, tmp_path):
    """A shell loop whose outputs outgrow a 40k window (`[gateway.models]`; the stand-in,
    given the same window, refuses anything larger): the gateway fits each Responses request
    Codex sends, the build log outlined or the oldest turns summarized, and Codex finishes."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    rounds = 12
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    with open_stack(tmp_path / "stack", {MODEL: WINDOW}) as stack:
        codex_home = tmp_path / "codex-home"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(config(stack))
        stack.standin.agent(rounds, [{"name": "exec_command",
                                      "arguments": {"cmd": "cat build.log"}}])
        env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                         OPENAI_API_KEY="sk-test-not-a-key")
        done = run([exe, "exec", "--skip-git-repo-check", "Check the build log, many times."],
                   env, repo)
        assert f"stand-in answer after {rounds} tool results" in done.stdout, done.stdout
        requests = model_requests(stack)
        assert_all_valid(requests)
        assert len(requests) == rounds + 1
        assert max(r["prompt_tokens"] for r in requests) <= WINDOW
        (chat,) = conversations(stack)
        assert chat["tokens"] <= chat["budget"]
        logs = [o for o in tool_outputs(requests) if "line 0: step 0" in o]
        outlined = [o for o in logs if "line 100: step 100" not in o]
        summarized = any("[Summary of" in json.dumps(r["body"]["input"]) for r in requests)
        assert chat["dropped"] > 0 or outlined or summarized, chat


def test_codex_resumes_a_session_through_a_restarted_gateway_from_its_kept_window(repo, tmp_path):
    """`codex exec resume --last` after the gateway restarted on the same state folder: the
    resumed history (Codex's own rollout, sent whole) goes on in the conversation it was, from
    the window kept before the restart: its prefix is reused, not compacted afresh."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                     OPENAI_API_KEY="sk-test-not-a-key")
    seen = []
    for argv in (["Check the build log, many times."],
                 ["resume", "--last", "Check it once more."]):
        with open_stack(tmp_path / "stack", {MODEL: WINDOW}) as stack:  # one state folder
            (codex_home / "config.toml").write_text(config(stack))
            stack.standin.agent(8, [{"name": "exec_command",
                                     "arguments": {"cmd": "cat build.log"}}])
            done = run([exe, "exec", "--skip-git-repo-check", *argv], env, repo)
            assert "stand-in answer after 8 tool results" in done.stdout, done.stdout
            assert_all_valid(model_requests(stack))
            (chat,) = conversations(stack)
            seen.append(chat)
    first, resumed = seen
    assert resumed["conversationId"] == first["conversationId"]
    assert resumed["cacheReuseTokens"] > 0, resumed



def _token(claims: dict) -> str:
    """A JWT of ``claims`` as Codex reads one (it reads the claims; the provider checks the
    signature, which the stand-in does not)."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def _signed_in(tmp_path, stack, extra: str = ""):
    """A CODEX_HOME signed in with ChatGPT (a plus plan, tokens that never expire), OpenAI's
    own provider pointed at the gateway of ``stack`` (`openai_base_url`); ``extra``: more of
    config.toml."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(f'''model = "{MODEL}"
openai_base_url = "{stack.openai_url}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
{extra}''')
    claims = {"https://api.openai.com/auth": {"chatgpt_plan_type": "plus",
                                              "chatgpt_account_id": "acc-test",
                                              "chatgpt_user_id": "user-test"},
              "email": "t@example.invalid", "exp": 4102444800, "iat": 1764900000}
    (home / "auth.json").write_text(json.dumps({
        "auth_mode": "chatgpt", "OPENAI_API_KEY": None,
        "tokens": {"id_token": _token(claims), "access_token": _token(claims),
                   "refresh_token": "rt-test", "account_id": "acc-test"},
        "last_refresh": "2026-12-01T00:00:00Z"}))
    return home


def test_codex_signed_in_with_chatgpt_sends_zstd_and_tries_a_websocket_first(stack, repo,
                                                                             tmp_path):
    """Codex signed in with ChatGPT, OpenAI's own provider pointed at the gateway
    (`openai_base_url`): it asks for the Responses API as a WebSocket first, then sends each
    request compressed with zstd. The gateway refuses the WebSocket with the 426 on which
    Codex goes over to HTTPS at once, and reads the zstd bodies (before: a 400 or a 500 on
    every request, and Codex gave up after 33 s of retries)."""
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = _signed_in(tmp_path, stack)
    stack.standin.agent(2, [{"name": "exec_command", "arguments": {"cmd": "cat README.md"}}])
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home))
    done = run([exe, "exec", "--skip-git-repo-check", "What does this project do?"], env, repo)
    assert "stand-in answer after 2 tool results" in done.stdout, done.stdout
    assert "Reconnecting" not in done.stderr, done.stderr[-3000:]  # one try, then HTTPS
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert len(requests) == 3 and all(r["stream"] for r in requests)
    assert all("content-encoding" not in r["headers"] for r in requests)  # plain upstream
    assert {r["headers"].get("chatgpt-account-id") for r in requests} == {"acc-test"}
    assert sum("It adds numbers" in o for o in tool_outputs(requests)) >= 2
    (chat,) = conversations(stack)
    assert chat["model"] == MODEL and chat["tokens"] > 0


def test_codex_earlier_turns_reasoning_is_not_costed_where_the_model_drops_it(repo, tmp_path):
    """Codex sends every turn's reasoning back, sealed; gpt-5-codex renders only the current
    turn's. Three turns (`codex exec`, then `resume --last` twice), about 2,300 tokens of
    reasoning an answer, in a budget of 24k (a 48k window, half kept for the answer): the
    gateway counts the last request as the provider does, and sends every turn whole (costed
    every turn's reasoning, it counted twice the provider's and compacted the chat)."""
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                     OPENAI_API_KEY="sk-test-not-a-key")
    with open_stack(tmp_path / "stack", {MODEL: 48_000}, thinking_words=1500) as stack:
        (codex_home / "config.toml").write_text(config(stack))
        for k, argv in enumerate((["Check the build, three times."],
                                  ["resume", "--last", "Check it again."],
                                  ["resume", "--last", "And once more."])):
            stack.standin.agent(3 * (k + 1), [{"name": "exec_command",
                                              "arguments": {"cmd": "git status"}}])
            done = run([exe, "exec", "--skip-git-repo-check", *argv], env, repo)
            assert f"stand-in answer after {3 * (k + 1)} tool results" in done.stdout, \
                done.stdout
        requests = model_requests(stack)
        assert_all_valid(requests)
        (chat,) = conversations(stack)
    assert len(requests) == 12
    sealed = [i for i in requests[-1]["body"]["input"] if i.get("type") == "reasoning"]
    assert len(sealed) == 11  # every answer's reasoning went back
    assert chat["budget"] == 24_000 and chat["dropped"] == 0
    assert not any("[Summary of" in json.dumps(r["body"]["input"]) for r in requests)
    assert requests[-1]["prompt_tokens"] <= chat["tokens"] < 1.15 * requests[-1]["prompt_tokens"]


def test_codex_remote_compaction_goes_through_and_its_item_comes_back_whole(repo, tmp_path):
    """Codex on OpenAI's own provider compacts remotely (`model_auto_compact_token_limit`,
    low here): a request whose input ends with `compaction_trigger`, answered with a
    `compaction` item, which follows the instructions and the user's messages in the requests
    after it. Through the gateway every such request is valid, the item goes back intact (the
    stand-in's seal checks), and the agent's loop ends (the stand-in's agent had counted only
    the outputs a request carries: once Codex compacted them away it called again until the
    300 s limit, as seen with Codex's local compaction on a custom provider)."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    with open_stack(tmp_path / "stack", {MODEL: 48_000}) as stack:
        codex_home = _signed_in(tmp_path, stack, "model_auto_compact_token_limit = 6000\n")
        stack.standin.agent(6, [{"name": "exec_command", "arguments": {"cmd": "cat build.log"}}])
        env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home))
        done = run([exe, "exec", "--skip-git-repo-check", "Check the build."], env, repo)
        requests = model_requests(stack)
    assert "stand-in answer after 6 tool results" in done.stdout, done.stdout
    assert_all_valid(requests)
    triggers = [n for n, r in enumerate(requests)
                if r["body"]["input"][-1] == {"type": "compaction_trigger"}]
    assert len(triggers) >= 2, [r["body"]["input"][-1] for r in requests]
    for n in triggers:  # the item the stand-in answered, in the next request as it came
        (item,) = [i for i in requests[n + 1]["body"]["input"] if i.get("type") == "compaction"]
        assert item["id"].startswith("cmp_") and intact(item["encrypted_content"])


def test_codex_local_compaction_goes_on_in_one_chat(repo, tmp_path):
    """Codex on a custom provider compacts locally (`model_auto_compact_token_limit`): it asks
    the model for a summary, then sends its history replaced by its first messages and that
    summary. Through the gateway every request is valid and the run ends; `ctxlayer chats`
    lists one chat, the one going on, with the last request's figures (each replaced history
    was kept as an edited chat's fork, and listed: one chat more per compaction)."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    with open_stack(tmp_path / "stack", {MODEL: 48_000}) as stack:
        codex_home = tmp_path / "codex-home"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text("model_auto_compact_token_limit = 6000\n"
                                                + config(stack))
        stack.standin.agent(6, [{"name": "exec_command", "arguments": {"cmd": "cat build.log"}}])
        env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                         OPENAI_API_KEY="sk-test-not-a-key")
        done = run([exe, "exec", "--skip-git-repo-check", "Check the build."], env, repo)
        requests = model_requests(stack)
        chats = conversations(stack)
    assert "stand-in answer after 6 tool results" in done.stdout, done.stdout
    assert_all_valid(requests)
    summary = "Another language model started to solve this problem"
    compacted = [r for r in requests if summary in json.dumps(r["body"]["input"])]
    assert len(compacted) >= 4, len(compacted)  # the history was replaced, again and again
    (chat,) = chats
    last = requests[-1]["prompt_tokens"]  # as the provider counted it
    assert abs(chat["tokens"] - last) < 0.15 * last, (chat, last)


#: Codex 0.171's model when config.toml names none: it sends its tools as an input item
DEFAULT_MODEL = "gpt-6.2-sol"


def test_codex_on_its_default_model_keeps_its_tools_and_instructions_through_a_summary(
        repo, tmp_path):
    """Codex on its default model (no `model =` in config.toml) sends its tools not in `tools`
    but as the first input item, `additional_tools` (role developer), then its developer
    messages ("You are Codex..."). Four turns (`exec`, then `resume --last`), each with a long
    note, in a window the later ones pass: the gateway summarizes older turns, and every
    request goes upstream with that item and the developer messages as Codex sent them; the
    stand-in (which counts the item and offers its tools, as the API does) calls the clock's
    `sleep` each turn, and Codex runs it. Before, the first summary step took the item for the
    model's words and summarized it with the developer messages after it: the request went
    upstream with no tools and no "You are Codex"."""
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                     OPENAI_API_KEY="sk-test-not-a-key")
    note = " ".join(f"word{i}" for i in range(1500))
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: 32_000}) as stack:
        (codex_home / "config.toml").write_text(config(stack).replace(f'model = "{MODEL}"\n',
                                                                      ""))
        for k in range(4):
            stack.standin.agent(k + 1, [{"name": "sleep", "arguments": {"duration_ms": 1}}])
            resume = ["resume", "--last"] if k else []
            done = run([exe, "exec", "--skip-git-repo-check", *resume, f"TURN{k} note: {note}"],
                       env, repo)
            assert "stand-in answer after" in done.stdout, done.stdout
        requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["body"]["model"] for r in requests} == {DEFAULT_MODEL}
    summarized = [r for r in requests if "[Summary of" in json.dumps(r["body"]["input"])]
    assert summarized, "a summary step was expected"
    for r in requests:
        items = r["body"]["input"]
        assert items[0]["type"] == "additional_tools", [i.get("type") for i in items[:3]]
        assert "You are Codex" in json.dumps(items[1]), items[1]
    calls = [i for r in requests for i in r["body"]["input"] if i.get("type") == "function_call"]
    assert {(c.get("namespace"), c["name"]) for c in calls} == {("clock", "sleep")}
    outputs = tool_outputs(summarized)
    assert outputs, "the turns after the summary still ran the tool"
