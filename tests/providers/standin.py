"""A stand-in model provider on 127.0.0.1: OpenAI Chat Completions and Anthropic Messages,
as strict as the real ones, for tests that must not reach a network.

Run it alone: `python tests/providers/standin.py [--port 0]` prints one JSON line
`{"port": N, "openai": "http://127.0.0.1:N/v1", "anthropic": "http://127.0.0.1:N"}` and serves
until it is killed. In pytest: `async with Standin() as s:` on the test's loop, or
`with StandinThread() as s:` for synchronous clients (its own loop on a thread).

Routes: `POST /v1/chat/completions`, `POST /v1/messages`, `POST /v1/messages/count_tokens`,
`GET /v1/models` (the OpenAI list, or Anthropic's when the request has `anthropic-version`;
HEAD too; each recorded),
`GET /v1/models/{id}`, `GET /v1/chat/completions` (the stored completions, of which it keeps
none: an empty page), `POST /v1/embeddings` (any other path or method: its 404 or 405 in the
provider's JSON shape, recorded as every request is), and `POST /v1/responses` (the Responses API,
strict as standin_responses.py says; it keeps every response it gave, for
`previous_response_id`, and every conversation made by `POST /v1/conversations`, and answers
with a reasoning item of `thinking_words` words sealed when `include` asks for
`reasoning.encrypted_content`; a request whose input ends with `compaction_trigger`, Codex's
remote compaction, with a `compaction` item alone). `agent(rounds, calls)` makes it play an
agent, in every format (Messages and Chat Completions, streamed or not, and Responses): a
request with tools gets a tool call until `rounds` were made (Responses: until it carries
`rounds` outputs, or made `rounds` calls since `agent` where the history carries fewer), then
the text `stand-in answer after N tool results ...`; one without tools (a client's aside: a
title, a summary) gets `stand-in answer to N messages, aside K.`, K counting them. Round k
calls `calls[k % len(calls)]` (`{"name", "arguments"}`, for a real client that runs it) when
the request offers that tool, else its first tool with `{"round": k}`.
Every request is checked as the provider checks it (standin_checks.py) and measured against
the model's window (tiktoken, offline; `Standin(counts={model: 1.15})` counts a model's prompts
above that, as a provider whose tokenizer is not the gateway's); a refused one gets the
provider's own 400 (`llama_cpp=(model,)`: as llama.cpp's server words it;
`truncating=(model,)`: none, as Ollama does, which drops the oldest turns until the prompt
fits (the system messages and the newest kept; the newest alone over it, its end) and answers
200, its usage what it read: the request's entry says `truncated_from`;
`old_azure=(model,)`: a request with `stream_options` is refused, as Azure's older API versions
do; `lm_studio=(model,)`: refused as LM Studio words it, its `error` a string; `zero_input_at_close=(model,)`: its
Messages streams close with a message_delta saying `input_tokens: 0`; `compressing=(model,)`:
its Messages and Chat Completions answers come gzipped whatever was asked;
`processing=(model,)`: its streams open with OpenRouter's `: OPENROUTER PROCESSING`;
`azure=(model,)`: its Chat Completions streams open with Azure's `prompt_filter_results` chunk;
`cr_lines=(model,)`: its streams' lines end in a bare CR, as SSE allows;
`headers={...}`: headers its answers carry beside their own). A Messages
request with `thinking` on is answered after a thinking block of `thinking_words` words, whose
signature the stand-in checks when it comes back (standin_thinking.py). Answers
carry usage: `cached_tokens` / `cache_read_input_tokens` are the tokens of the messages at the
start of the request identical to the previous request of the same conversation (same model,
system and first message), so cache reuse is observable. `stream: true` answers in the
providers' SSE shapes (OpenAI honours `stream_options.include_usage`). A forced tool choice, or
a scripted reply, makes it answer with a tool call.

Control routes (for tests): `GET /_standin/requests` (every request received, in order: path,
query (as sent, still percent-encoded), headers, body, status, problems, stream, cancelled,
prompt_tokens), `POST /_standin/reset`,
`POST /_standin/fail` `{"status": 429|500, "count": 1}` or `{"mode": "stall"}` (the stream
sends its first event then never ends) or `{"mode": "slow_first_byte", "delay": s}` or
`{"mode": "hold"}` (the first event, then the rest after `POST /_standin/release`) or
`{"mode": "cut"}` (the first event and half the next, then the connection drops; a whole
answer: its first half under the whole's Content-Length, then the same) or `{"mode": "ended"}`
(the first event and half the next, then the body ends cleanly) or `{"mode": "ended_between"}`
(the first event, then the body ends cleanly); on Messages, Chat
Completions and Responses alike, a Responses stream's "first event" the first after its
opening `response.created` and `response.in_progress`,
`POST /_standin/reply` `{"text": ...}` or `{"tool_name": ..., "tool_arguments": {...}}` (the
next answers, in order), `POST /_standin/agent` `{"rounds": N, "calls": [...]}`. In process, `for_model(model,
text=, status=, hold=)` scripts every request for one model apart (held: `release_model`). The stand-in
is test code: it may use clocks and threads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
from aiohttp import web

if str(Path(__file__).parent) not in sys.path:  # run as a script or imported as providers.*
    sys.path.insert(0, str(Path(__file__).parent))

import standin_answers as answers
import standin_checks as checks
import standin_responses as responses
import standin_thinking as thinking
from standin_answers import Reply, Usage

from ctxlayer.tokenizers import context_window

MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "claude-sonnet-4", "claude-haiku-4")


@web.middleware
async def _timed(request: web.Request, handler):
    """`x-standin-ms`: how long this stand-in took over a non-streamed answer, body read
    included, so a benchmark can take the provider's own time out of what it measures."""
    t = time.perf_counter()
    response = await handler(request)
    if not response.prepared:
        response.headers["x-standin-ms"] = f"{(time.perf_counter() - t) * 1000:.3f}"
    return response


#: seconds a `processing` stream waits after its comment before its events
PROCESSING = 0.2


class Standin:
    """The stand-in provider, served on the running loop."""

    def __init__(self, *, windows: dict[str, int] | None = None, host: str = "127.0.0.1",
                 counts: dict[str, float] | None = None, llama_cpp: tuple[str, ...] = (),
                 truncating: tuple[str, ...] = (), old_azure: tuple[str, ...] = (),
                 lm_studio: tuple[str, ...] = (), failed_in_stream: tuple[str, ...] = (),
                 old_llama_cpp: tuple[str, ...] = (), thinking_words: int = 40,
                 zero_input_at_close: tuple[str, ...] = (),
                 compressing: tuple[str, ...] = (), processing: tuple[str, ...] = (),
                 azure: tuple[str, ...] = (), cr_lines: tuple[str, ...] = (),
                 headers: dict[str, str] | None = None, thinks_once: tuple[str, ...] = ()):
        self.host = host
        self.port = 0
        #: context windows by model name prefix, over the model table's (e.g. a small model)
        self.windows = dict(windows or {})
        #: the provider's count of a model's prompts as a multiple of the tiktoken count, by
        #: model name prefix: a tokenizer that counts more than the gateway's estimate
        self.counts = dict(counts or {})
        #: model name prefixes served as llama.cpp's server serves them: a prompt over the
        #: window is refused with its `exceed_context_size_error` (the count and n_ctx as fields)
        self.llama_cpp = tuple(llama_cpp)
        #: model name prefixes served as Ollama serves them: a prompt over the window (its
        #: num_ctx) loses its oldest turns until it fits, without a word
        self.truncating = tuple(truncating)
        #: model name prefixes served as Azure's older API versions serve them: a request
        #: with `stream_options` is refused, "Unrecognized request argument supplied"
        self.old_azure = tuple(old_azure)
        #: model name prefixes served as LM Studio serves them: a prompt over the window is
        #: refused with a 400 whose `error` is its words alone (n_keep, n_ctx); streamed, with
        #: a 200 and an `error` event whose words say no count (thane-ai-agent's pull request
        #: 1395 saw LM Studio answer so)
        self.lm_studio = tuple(lm_studio)
        #: model name prefixes whose streamed Responses over the window fail in the stream, as
        #: Codex's tests have the API do it: a 200, then `response.failed` with the error
        self.failed_in_stream = tuple(failed_in_stream)
        #: model name prefixes served as llama.cpp's 2025 builds serve them: a streamed prompt
        #: over the window gets a 200 and an `error:` line (not `data:`) without counts, then
        #: `data: [DONE]` (llama.cpp issue 16104)
        self.old_llama_cpp = tuple(old_llama_cpp)
        #: model name prefixes whose Messages streams close with a message_delta saying
        #: `input_tokens: 0`, the input counted in message_start only (envoyproxy/ai-gateway
        #: PR 1631 fixed its own server's doing so)
        self.zero_input_at_close = tuple(zero_input_at_close)
        #: model name prefixes whose Messages and Chat Completions answers come gzipped
        #: whatever the request's Accept-Encoding says (a proxy before the provider that
        #: compresses every answer)
        self.compressing = tuple(compressing)
        #: model name prefixes whose streams open with OpenRouter's `: OPENROUTER PROCESSING`
        #: comment (it sends them while a request waits for a provider)
        self.processing = tuple(processing)
        #: model name prefixes whose Chat Completions streams open with the chunk Azure OpenAI
        #: sends first: no choices, the prompt's `prompt_filter_results`
        self.azure = tuple(azure)
        #: model name prefixes whose streams end their lines in a bare CR (SSE allows CR, LF
        #: and CRLF)
        self.cr_lines = tuple(cr_lines)
        #: headers every answer carries beside its own (a provider behind another gateway)
        self.headers = dict(headers or {})
        #: how long the thinking is that opens an answer to a request with `thinking` on
        self.thinking_words = thinking_words
        #: model name prefixes that think once a turn, as Claude does without interleaved
        #: thinking: only an answer to a user message that is not all tool results opens with a
        #: thinking block (the loop's first step), unless the interleaved-thinking beta is sent
        self.thinks_once = tuple(thinks_once)
        self.thought: set[str] = set()  # ids of the tool calls it answered after thinking
        self.received: list[dict[str, Any]] = []
        self._failures: list[dict[str, Any]] = []
        self._replies: list[Reply] = []
        self._previous: dict[str, list[Any]] = {}  # conversation key -> its last messages
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._count = 0
        self._responses: dict[str, list] = {}  # response id -> its whole history
        self._conversations: dict[str, list] = {}  # conversation id -> its items
        self._stored_items: dict[str, dict] = {}  # item id -> an output item it stored
        self.agent_rounds = 0
        self.agent_calls: list[dict] = []
        self._agent_made = 0  # tool calls made in Messages / Chat answers since agent()
        self._asides = 0  # answers without tools while an agent (a title, a summary)
        self._responses_made = 0  # ... and in Responses answers
        #: how requests for one model are answered, over everything else (`for_model`)
        self.by_model: dict[str, dict[str, Any]] = {}

    # ---- lifecycle ------------------------------------------------------------------------

    @property
    def openai(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def announcement(self) -> dict[str, Any]:
        return {"port": self.port, "openai": self.openai, "anthropic": self.anthropic}

    async def start(self, port: int = 0) -> Standin:
        app = web.Application(client_max_size=256 * 1024 * 1024,
                              middlewares=[_timed, self._unserved()])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/chat/completions", self._stored_chats)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model}", self._model)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/api/v0/models", self._lm_studio_models)
        app.router.add_post("/v1/responses", self._responses_route)
        app.router.add_post("/v1/conversations", self._conversation_create)
        app.router.add_get("/_standin/requests", self._requests)
        app.router.add_post("/_standin/reset", self._reset)
        app.router.add_post("/_standin/fail", self._fail)
        app.router.add_post("/_standin/reply", self._reply)
        app.router.add_post("/_standin/release", self._release_hold)
        app.router.add_post("/_standin/agent", self._agent_route)
        # a client that goes away cancels the handler, so a stalled stream sees it
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Standin:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- what tests set -------------------------------------------------------------------

    def fail(self, status: int | None = None, *, mode: str = "status", count: int = 1,
             delay: float = 0.0) -> None:
        """Make the next `count` model requests fail, on Messages, Chat Completions and
        Responses alike (see the module docstring)."""
        self._failures += [{"mode": mode, "status": status, "delay": delay}] * count

    def reply(self, text: str = "", tool_name: str | None = None,
              tool_arguments: dict | None = None) -> None:
        """Script the next answer."""
        self._replies.append(Reply(text, tool_name, tool_arguments or {}))

    def agent(self, rounds: int, calls: list[dict] | None = None) -> None:
        """Answer requests with tools by tool calls until `rounds` results came back; the calls
        to make, in turn (`{"name": ..., "arguments": {...}}`), when the request offers them."""
        self.agent_rounds = rounds
        self.agent_calls = list(calls or [])
        self._agent_made = 0
        self._responses_made = 0

    def for_model(self, model: str, *, text: str | None = None, status: int | None = None,
                  hold: bool = False, content: Any = None) -> None:
        """Answer every request for ``model`` with ``text`` (or fail it with ``status``),
        once `release_model` was called when ``hold``: a small model a gateway asks beside
        the chat's, scripted apart from the chat. ``content``: what a whole answer's
        `content` holds instead (a list of parts, as Mistral's Magistral answers on Chat
        Completions; or a shape no provider uses, a number)."""
        self.by_model[model] = {"text": text, "status": status, "content": content,
                                "hold": asyncio.Event() if hold else None}

    def release_model(self, model: str) -> None:
        held = self.by_model[model]["hold"]
        if held is not None:
            held.set()

    def release(self) -> None:
        """Let a held stream go on."""
        self._release.set()

    def reset(self) -> None:
        self.received.clear()
        self._failures.clear()
        self._release.clear()  # a release no held stream took
        self._replies.clear()
        self._previous.clear()
        self._responses.clear()
        self._conversations.clear()
        self.agent_rounds = 0
        self.agent_calls = []
        self._agent_made = 0
        self._responses_made = 0
        self.by_model.clear()
        self.thought.clear()

    def _thinks(self, body: dict, betas: list[str]) -> bool:
        """Whether an answer to ``body`` (thinking on) opens with a thinking block: always,
        but for a model that thinks once a turn (`thinks_once`) in a tool loop under way."""
        if not (self.thinks_once and str(body.get("model", "")).startswith(self.thinks_once)):
            return True
        if any(b.startswith("interleaved-thinking") for b in betas):
            return True
        msgs = body.get("messages") or []
        return thinking.last_turn_start(msgs) == len(msgs) - 1

    def counted(self, model: str, tokens: int) -> int:
        """``tokens`` (tiktoken's count of a prompt) as this provider counts them."""
        matches = [p for p in self.counts if model.startswith(p)]
        return int(tokens * self.counts[max(matches, key=len)]) if matches else tokens

    def window(self, model: str, betas: list[str] | tuple = ()) -> int:
        """The model's window as the provider applies it: the one this stand-in was given,
        else the published one (1M with a `context-1m-*` beta where the model has it)."""
        matches = [p for p in self.windows if model.startswith(p)]
        if matches:
            return self.windows[max(matches, key=len)]
        return context_window(model, betas)

    # ---- model routes ---------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve("openai", request)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        return await self._serve("anthropic", request)

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        entry, body = await self._read("anthropic", request)
        if body is None:
            return self._error("anthropic", entry, 400, "body: could not parse JSON")
        probs = [p for p in checks.problems("anthropic", {**body, "max_tokens": 1},
                                            checks.betas_of(request.headers))]
        if probs:
            return self._error("anthropic", entry, 400, "; ".join(probs))
        entry["status"] = 200
        return web.json_response({"input_tokens": self.counted(
            str(body.get("model", "")), checks.prompt_tokens("anthropic", body))})

    async def _models(self, request: web.Request) -> web.Response:
        self._listed(request)
        if "anthropic-version" in request.headers:
            data = [{"type": "model", "id": m, "display_name": m,
                     "created_at": "2026-01-01T00:00:00Z"} for m in MODELS if "claude" in m]
            return web.json_response({"data": data, "has_more": False,
                                      "first_id": data[0]["id"], "last_id": data[-1]["id"]})
        return web.json_response({"object": "list", "data": [
            {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "standin"}
            for m in MODELS]})

    async def _lm_studio_models(self, request: web.Request) -> web.Response:
        """LM Studio's own list of its models (REST API v0): those served as LM Studio serves
        them, loaded with their window as the context (`loaded_context_length`)."""
        self.received.append({
            "path": request.path, "method": request.method, "format": "lm studio",
            "headers": {k.lower(): v for k, v in request.headers.items()}, "body": None,
            "status": 200, "problems": [], "stream": False, "cancelled": False,
            "completed": True, "prompt_tokens": None})
        return web.json_response({"object": "list", "data": [
            {"id": m, "object": "model", "type": "llm", "publisher": "standin",
             "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
             "state": "loaded", "max_context_length": 131072,
             "loaded_context_length": self.window(m)} for m in self.lm_studio]})

    async def _stored_chats(self, request: web.Request) -> web.Response:
        """OpenAI's list of stored Chat Completions (`chat.completions.list()`): none here."""
        self._listed(request, "openai")
        return web.json_response({"object": "list", "data": [], "first_id": None,
                                  "last_id": None, "has_more": False})

    def _listed(self, request: web.Request, fmt: str = "models") -> dict:
        """Keep a request for a list (the models, stored chats), for a test to see the method
        it came with (a HEAD the gateway sent on as a GET)."""
        self.received.append({
            "path": request.path, "query": request.rel_url.raw_query_string,
            "method": request.method, "format": fmt,
            "headers": {k.lower(): v for k, v in request.headers.items()}, "body": None,
            "status": 200, "problems": [], "stream": False, "cancelled": False,
            "completed": True, "prompt_tokens": None})
        return self.received[-1]

    async def _model(self, request: web.Request) -> web.Response:
        entry = self._listed(request)
        name = request.match_info["model"]
        if name not in MODELS:
            entry["status"] = 404
            return web.json_response(answers.error_body(
                "openai", 404, f"The model '{name}' does not exist or you do not have access "
                "to it.", code="model_not_found"), status=404)
        return web.json_response({"id": name, "object": "model", "created": 1_700_000_000,
                                  "owned_by": "standin"})

    async def _embeddings(self, request: web.Request) -> web.Response:
        entry, body = await self._read("openai", request)
        if body is None or not isinstance(body.get("input"), (str, list)):
            return self._error("openai", entry, 400, "input: Missing required parameter.")
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        entry["status"] = 200
        return web.json_response({"object": "list", "model": body.get("model"), "data": [
            {"object": "embedding", "index": k, "embedding": [float(len(str(t))), 0.5, -0.5]}
            for k, t in enumerate(texts)], "usage": {"prompt_tokens": len(texts),
                                                       "total_tokens": len(texts)}})

    async def _responses_route(self, request: web.Request) -> web.StreamResponse:
        entry, body = await self._read("responses", request)
        if body is None:
            return self._error("openai", entry, 400, "We could not parse the JSON body of "
                               "your request.")
        script = self.by_model.get(body.get("model"))  # type: ignore[arg-type]
        if script is not None:  # a small model asked beside the chat's, scripted apart
            if script["hold"] is not None:
                entry["held"] = True
                await script["hold"].wait()
            if script["status"]:
                return self._error("openai", entry, script["status"],
                                   answers.FAILURE_MESSAGES.get(script["status"],
                                                                "stand-in failure"))
        # as on Messages and Chat Completions (`_serve`): before, a failure queued was left
        # for the next request on those, and a Responses request was answered
        failure, failed = await self._take_failure("openai", entry)
        if failed is not None:
            return failed
        prev, conv = body.get("previous_response_id"), responses.conversation_of(body)
        history = self._responses.get(prev, None) if prev is not None else \
            self._conversations.get(conv, None) if conv is not None else []
        entry["stream"] = bool(body.get("stream"))
        body, probs = responses.resolved(body, self._stored_items)
        probs += responses.problems(body, history)
        if probs:
            entry["problems"] = probs
            return self._error("openai", entry, 400, "; ".join(probs), param="input")
        history = history or []
        model = body["model"]
        tokens = self.counted(model, responses.prompt_tokens(body, history))
        entry["prompt_tokens"] = tokens
        asked = body.get("max_output_tokens") or 0
        if tokens + asked > self.window(model):
            entry["problems"] = [f"over the window: {tokens} + {asked} > {self.window(model)}"]
            # as the Responses API words it: no count (the problem above has it)
            words = ("Your input exceeds the context window of this model. Please adjust your "
                     "input and try again.")
            if entry["stream"] and self.failed_in_stream and \
                    model.startswith(self.failed_in_stream):
                return await self._stream(request, entry, responses.failed_events(
                    f"standin{self._count}x", body, int(time.time()),
                    {"code": "context_length_exceeded", "message": words}),
                    self._ids("openai"), None)
            return self._error("openai", entry, 400, words, param="input",
                               code="context_length_exceeded")
        self._count += 1
        rid = f"standin{self._count}"
        items = [*history, *responses.items_of(body)]
        if items and isinstance(items[-1], dict) and items[-1].get("type") == \
                "compaction_trigger":  # Codex's remote compaction: the history, sealed
            reply, output = Reply(text=""), [responses.compaction_item(rid, items)]
        else:
            if script is not None and script["text"] is not None:
                reply = Reply(text=script["text"])
            else:
                reply = self._replies.pop(0) if self._replies else self._agent_reply(body,
                                                                                     items)
            output = responses.output_items(rid, reply, "reasoning.encrypted_content" in (
                body.get("include") or ()), self.thinking_words)
            self._responses_made += bool(reply.tool_name)
        self._responses[f"resp_{rid}"] = [*items, *output]
        if body.get("store") is not False:  # what an item_reference may name
            self._stored_items.update({o["id"]: o for o in output if "id" in o})
        if conv is not None:  # the conversation goes on with this turn's input and output
            self._conversations[conv] = [*items, *output]
        usage = Usage(tokens, self._completion(model, reply), self._responses_cache(body, items))
        created = int(time.time())
        if not entry["stream"]:
            whole = responses.response(rid, body, created, output, usage)
            if failure and failure["mode"] == "cut":
                return await self._cut(request, entry, json.dumps(whole).encode(),
                                       self._ids("openai"))
            entry["status"] = 200
            entry["completed"] = True
            return web.json_response(whole, headers=self._ids("openai"))
        return await self._stream(request, entry, responses.events(
            rid, body, created, output, usage), self._ids("openai"), failure,
            first=responses.OPENING)

    def _agent_reply(self, body: dict, items: list) -> Reply:
        offered = responses.functions(body, items)
        # the outputs it carries, or the calls made since agent() where fewer are carried
        # (the client compacted its history, or the gateway summarized them)
        done = max(self._responses_made, sum(1 for i in items if isinstance(i, dict)
                                             and i.get("type") == "function_call_output"))
        if offered and done < self.agent_rounds and body.get("tool_choice") != "none":
            spaces = dict((name, space) for space, name in reversed(offered))
            call = self._agent_call([name for _, name in offered], done)
            return msgspec.structs.replace(call, namespace=spaces.get(call.tool_name))
        return Reply(text=f"stand-in answer after {done} tool results to {len(items)} items.")

    def _agent_call(self, names: list[str], done: int) -> Reply:
        """Round `done + 1`'s call: the scripted one when the request offers its tool."""
        if self.agent_calls:
            call = self.agent_calls[done % len(self.agent_calls)]
            if call["name"] in names:
                return Reply(tool_name=call["name"], tool_arguments=dict(call["arguments"]))
        return Reply(tool_name=names[0], tool_arguments={"round": done + 1})

    def _agent_messages_reply(self, fmt: str, body: dict) -> Reply | None:
        """The agent's answer to a Messages or Chat Completions request (to one with no tools,
        a client's aside: a title, a summary, words of its own), None when the agent is off."""
        tools = [t for t in body.get("tools") or () if isinstance(t, dict)]
        names = [t.get("name") if fmt == "anthropic" else (t.get("function") or {}).get("name")
                 for t in tools]
        names = [n for n in names if isinstance(n, str)]
        if not self.agent_rounds or body.get("tool_choice") in ("none", {"type": "none"}):
            return None
        if not names:  # each aside its own words, as a model's summaries differ
            self._asides += 1
            n = len(body.get("messages") or [])
            return Reply(text=f"stand-in answer to {n} messages, aside {self._asides}.")
        # rounds are the calls it made: a fitted request may have dropped earlier results
        done = self._agent_made
        msgs = body.get("messages") or []
        if done < self.agent_rounds:
            self._agent_made += 1
            return self._agent_call(names, done)
        return Reply(text=f"stand-in answer after {done} tool results to {len(msgs)} messages.")

    def _responses_cache(self, body: dict, items: list) -> int:
        """Tokens of the items at the start identical to the previous request's."""
        key = json.dumps(["responses", body["model"], body.get("instructions"), items[:1]],
                         sort_keys=True)
        previous = self._previous.get(key, [])
        self._previous[key] = items
        same = 0
        while same < min(len(items), len(previous)) and items[same] == previous[same]:
            same += 1
        return responses.prompt_tokens({"model": body["model"], "input": items[:same]}, []) \
            - 3 if same else 0

    async def _read(self, fmt: str, request: web.Request) -> tuple[dict, dict | None]:
        raw = await request.read()
        entry: dict[str, Any] = {
            "path": request.path, "query": request.rel_url.raw_query_string,
            "method": request.method, "format": fmt,
            "headers": {k.lower(): v for k, v in request.headers.items()}, "body": None,
            # every line as it came (a header on two lines is two here, one above)
            "header_lines": [(k.lower(), v) for k, v in request.headers.items()],
            "status": None, "problems": [], "stream": False, "cancelled": False,
            "completed": False, "prompt_tokens": None}
        self.received.append(entry)
        try:
            body = json.loads(raw)
        except ValueError:
            return entry, None
        entry["body"] = body
        return entry, body if isinstance(body, dict) else None

    def _unserved(self) -> Any:
        """The middleware that answers a path or a method no route here serves as a provider
        does, in its JSON error shape, and records it as every request is. aiohttp's own was
        a text/plain 405 that no request list showed: relayed by a gateway, it read as the
        gateway's own answer."""

        @web.middleware
        async def unserved(request: web.Request, handler: Any) -> web.StreamResponse:
            refused = request.match_info.http_exception
            if refused is None:
                return await handler(request)
            fmt = "anthropic" if request.path.startswith("/v1/messages") or \
                "anthropic-version" in request.headers else "openai"
            entry, _ = await self._read(fmt, request)
            allowed = getattr(refused, "allowed_methods", None)
            return self._error(fmt, entry, refused.status,
                               f"Invalid URL ({request.method} {request.path})",
                               headers={"Allow": ", ".join(sorted(allowed))} if allowed else None)

        return unserved

    def _error(self, fmt: str, entry: dict, status: int, message: str, *,
               param: str | None = None, code: str | None = None,
               headers: dict | None = None) -> web.Response:
        entry["status"] = status
        return web.json_response(answers.error_body(fmt, status, message, param=param, code=code),
                                 status=status, headers=self._ids(fmt) | (headers or {}))

    def _ids(self, fmt: str) -> dict[str, str]:
        rid = f"req_standin_{self._count}"
        return {**self.headers, **({"request-id": rid} if fmt == "anthropic"
                                   else {"x-request-id": rid})}

    async def _serve(self, fmt: str, request: web.Request) -> web.StreamResponse:
        entry, body = await self._read(fmt, request)
        if body is None:
            return self._error(fmt, entry, 400, "We could not parse the JSON body of your request.")
        script = self.by_model.get(body.get("model"))  # type: ignore[arg-type]
        if script is not None:
            if script["hold"] is not None:
                entry["held"] = True
                await script["hold"].wait()
            if script["status"]:
                return self._error(fmt, entry, script["status"], answers.FAILURE_MESSAGES.get(
                    script["status"], "stand-in failure"))
        failure, failed = await self._take_failure(fmt, entry)
        if failed is not None:
            return failed
        entry["stream"] = bool(body.get("stream"))
        betas = checks.betas_of(request.headers) if fmt == "anthropic" else []
        probs = checks.problems(fmt, body, betas)
        if self.old_azure and "stream_options" in body and \
                body["model"].startswith(self.old_azure):
            probs = ["Unrecognized request argument supplied: stream_options"]
        if fmt == "anthropic" and not probs:
            probs = thinking.problems(body, self.thought)
        if probs:
            entry["problems"] = probs
            return self._error(fmt, entry, 400, "; ".join(probs), param="messages")
        model = body["model"]
        tokens = self.counted(model, checks.prompt_tokens(fmt, body))
        entry["prompt_tokens"] = tokens
        window = self.window(model, betas)
        asked = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        if self.truncating and model.startswith(self.truncating):
            if tokens > window:  # the model reads what fits, and says nothing; never refused
                entry["truncated_from"] = tokens
                entry["prompt_tokens"] = tokens = self._what_fits(fmt, body, window)
        elif tokens + (asked if isinstance(asked, int) else 0) > window:
            entry["problems"] = [f"over the window: {tokens} + {asked} > {window}"]
            if fmt == "anthropic":
                msg = (f"prompt is too long: {tokens} tokens > {window} maximum" if tokens > window
                       else f"input length and `max_tokens` exceed context limit: {tokens} + "
                            f"{asked} > {window}, decrease input length or `max_tokens` and "
                            "try again")
                return self._error(fmt, entry, 400, msg)
            if self.old_llama_cpp and model.startswith(self.old_llama_cpp) and entry["stream"]:
                return await self._stream(request, entry, [b"error: " + json.dumps({
                    "code": 400, "message": "the request exceeds the available context size. "
                    "try increasing the context size or enable context shift",
                    "type": "invalid_request_error"}).encode() + b"\n\n", b"data: [DONE]\n\n"],
                    {}, None)
            if self.lm_studio and model.startswith(self.lm_studio) and entry["stream"]:
                words = ("The number of tokens to keep from the initial prompt is greater than "
                         "the context length. Try to load the model with a larger context "
                         "length, or provide a shorter input")
                return await self._stream(request, entry, [b"event: error\ndata: " + json.dumps(
                    {"error": {"message": words}, "message": words}).encode() + b"\n\n"],
                    {}, None)
            if self.lm_studio and model.startswith(self.lm_studio):
                entry["status"] = 400  # its `error` is the words alone
                return web.json_response({"error": (
                    "The number of tokens to keep from the initial prompt is greater than the "
                    f"context length (n_keep: {tokens}>= n_ctx: {window}). Try to load the "
                    "model with a larger context length, or provide a shorter input.")},
                    status=400)
            if model.startswith(self.llama_cpp) and self.llama_cpp:
                entry["status"] = 400
                return web.json_response({"error": {
                    "code": 400, "message": "the request exceeds the available context size, "
                    "try increasing it", "type": "exceed_context_size_error",
                    "n_prompt_tokens": tokens, "n_ctx": window}}, status=400)
            return self._error(
                fmt, entry, 400,
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{tokens + asked} tokens ({tokens} in the messages, {asked} in the completion). "
                "Please reduce the length of the messages or completion.",
                param="messages", code="context_length_exceeded")
        self._count += 1
        rid = f"standin{self._count}"
        reply = (Reply(text=script["text"]) if script is not None and script["text"] is not None
                 else self._answer(fmt, body))
        if fmt == "anthropic" and thinking.thinking_on(body) and self._thinks(body, betas):
            reply = msgspec.structs.replace(reply, thinking=thinking.block(
                body, self.thinking_words, self._count))
            if reply.tool_name:
                self.thought.add(f"toolu_{rid}")
        usage = Usage(tokens, self._completion(model, reply), *self._cache(fmt, body))
        headers = self._ids(fmt)
        if not entry["stream"]:
            entry["status"] = 200
            payload = (answers.anthropic_message(rid, model, reply, usage) if fmt == "anthropic"
                       else answers.openai_completion(rid, model, int(time.time()), reply, usage))
            if script is not None and script["content"] is not None:
                holder = payload if fmt == "anthropic" else payload["choices"][0]["message"]
                holder["content"] = script["content"]
            if failure and failure["mode"] == "cut":
                return await self._cut(request, entry, json.dumps(payload).encode(), headers)
            entry["completed"] = True
            return self._compressed(entry, web.json_response(payload, headers=headers))
        if fmt == "anthropic":
            events = answers.anthropic_events(
                rid, model, reply, usage,
                bool(self.zero_input_at_close) and model.startswith(self.zero_input_at_close))
        else:
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            events = answers.openai_chunks(rid, model, int(time.time()), reply, usage, include)
            if self.azure and model.startswith(self.azure):
                events.insert(0, answers.azure_filter_chunk(include))
        if self.cr_lines and model.startswith(self.cr_lines):
            events = [event.replace(b"\n", b"\r") for event in events]
        return await self._stream(request, entry, events, headers, failure)

    async def _take_failure(self, fmt: str, entry: dict
                            ) -> tuple[dict | None, web.Response | None]:
        """The next failure `fail` queued, and the error to answer with at once when it is a
        status (a 429 says when to retry); a slow first byte is waited for here."""
        failure = self._failures.pop(0) if self._failures else None
        if failure and failure["mode"] == "status":
            status = failure["status"] or 500
            extra = {"retry-after": "1"} if status == 429 else {}
            return failure, self._error(fmt, entry, status, answers.FAILURE_MESSAGES.get(
                status, "stand-in failure"), headers=extra)
        if failure and failure["mode"] == "slow_first_byte":
            await asyncio.sleep(failure["delay"])
        return failure, None

    async def _cut(self, request: web.Request, entry: dict, whole: bytes,
                   headers: dict) -> web.StreamResponse:
        """The first half of a whole answer under the whole's Content-Length, then the
        connection drops: the client's read of it fails."""
        resp = web.StreamResponse(headers={**headers, "Content-Type": "application/json",
                                           "Content-Length": str(len(whole))})
        await resp.prepare(request)
        await resp.write(whole[: len(whole) // 2])
        entry["cut"] = True
        assert request.transport is not None
        request.transport.abort()
        return resp

    def _compressed(self, entry: dict, resp: web.StreamResponse) -> web.StreamResponse:
        """``resp``, gzipped whatever was asked when its model is one of `compressing`."""
        model = (entry.get("body") or {}).get("model")
        if self.compressing and isinstance(model, str) and model.startswith(self.compressing):
            resp.enable_compression(web.ContentCoding.gzip)
        return resp

    def _what_fits(self, fmt: str, body: dict, window: int) -> int:
        """What Ollama reads of a prompt over its context: the system messages and the newest
        ones that fit, the oldest turns dropped; the newest message alone over it, its end."""
        msgs = body.get("messages") or []
        system = [m for m in msgs if m.get("role") == "system"]
        rest = [m for m in msgs if m.get("role") != "system"]
        while len(rest) > 1:
            rest = rest[1:]
            tokens = self.counted(body["model"], checks.prompt_tokens(
                fmt, {**body, "messages": system + rest}))
            if tokens <= window:
                return tokens
        return window

    async def _stream(self, request: web.Request, entry: dict, events: list[bytes],
                      headers: dict, failure: dict | None, first: int = 0
                      ) -> web.StreamResponse:
        """``events`` as a stream; a queued stall, hold or cut acts after ``events[first]``,
        the first that says something of the answer (a gateway holds the status back until
        it has it: a Responses stream's opening ones say nothing yet)."""
        resp = self._compressed(entry, web.StreamResponse(headers={
            **headers, "content-type": "text/event-stream", "cache-control": "no-cache"}))
        entry["status"] = 200
        await resp.prepare(request)
        model = (entry.get("body") or {}).get("model")
        if self.processing and isinstance(model, str) and model.startswith(self.processing):
            await resp.write(b": OPENROUTER PROCESSING\n\n")
            await asyncio.sleep(PROCESSING)  # the provider takes its time: a chunk of its own
        try:
            for i, event in enumerate(events):
                await resp.write(event)
                if i == first and failure and failure["mode"] == "stall":
                    await asyncio.Event().wait()  # until the client goes away
                if i == first and failure and failure["mode"] == "hold":
                    try:
                        await self._release.wait()
                    finally:  # released, or cancelled as it was: the next hold holds
                        self._release.clear()
                if i == first and failure and failure["mode"] == "cut" and \
                        len(events) > i + 1:
                    # half of the next event, then the connection drops (no chunked end)
                    await resp.write(events[i + 1][: len(events[i + 1]) // 2])
                    entry["cut"] = True
                    assert request.transport is not None
                    request.transport.abort()
                    return resp
                if i == first and failure and failure["mode"] in ("ended", "ended_between"):
                    # the body ends cleanly (its chunked end) before the answer's last event,
                    # in the middle of the next event or between two
                    if failure["mode"] == "ended" and len(events) > i + 1:
                        await resp.write(events[i + 1][: len(events[i + 1]) // 2])
                    entry["ended"] = True
                    await resp.write_eof()
                    return resp
        except (asyncio.CancelledError, ConnectionResetError):
            entry["cancelled"] = True
            raise
        entry["completed"] = True
        await resp.write_eof()
        return resp

    def _completion(self, model: str, reply: Reply) -> int:
        """The answer's output tokens: its text or call, and its thinking."""
        return checks.counter_for(model).count(reply.text or json.dumps(
            reply.tool_arguments)) + (8 if reply.tool_name else 0) + (
            self.thinking_words if reply.thinking else 0)

    def _answer(self, fmt: str, body: dict) -> Reply:
        if self._replies:
            return self._replies.pop(0)
        choice = body.get("tool_choice")
        forced = None
        if isinstance(choice, dict):
            forced = (choice.get("name") if fmt == "anthropic"
                      else (choice.get("function") or {}).get("name"))
            if fmt == "anthropic" and choice.get("type") == "any" and body.get("tools"):
                forced = body["tools"][0].get("name")
        elif choice == "required" and body.get("tools"):
            forced = (body["tools"][0].get("function") or {}).get("name")
        if forced:
            return Reply(tool_name=forced, tool_arguments={"standin": True})
        agent = self._agent_messages_reply(fmt, body)
        if agent is not None:
            return agent
        n = len(body.get("messages") or [])
        return Reply(text=f"stand-in answer to {n} messages.")

    def _cache(self, fmt: str, body: dict) -> tuple[int, int]:
        """(cache read, cache write) tokens: the identical prefix with the conversation's
        previous request, and for Anthropic what its last cache_control newly covers."""
        model = body["model"]
        system = body.get("system") if fmt == "anthropic" else None
        # the cached prefix starts with the tools, then the system prompt (Anthropic's order;
        # OpenAI's prefix holds the tools too): a change there reads nothing from the cache
        tools = body.get("tools")
        lead = [{"tools": tools}] if tools else []
        raw = [{"content": system}] if system else []
        raw += body["messages"]
        msgs = [_cached_form(m) for m in raw]
        key = json.dumps([fmt, model, msgs[:2] if system else msgs[:1]], sort_keys=True)
        msgs = [*lead, *msgs]
        previous = self._previous.get(key, [])
        self._previous[key] = msgs
        same = 0
        while same < min(len(msgs), len(previous)) and msgs[same] == previous[same]:
            same += 1
        counter = checks.counter_for(model)
        # the tools as the prompt holds them: a deferred one is not in it (counted, it made
        # Claude Code's first answer say input_tokens -57)
        per = [counter.count(json.dumps(checks.shown_tools(tools)))] if tools else []
        per += [checks.message_tokens(fmt, model, m) for m in msgs[len(lead):]]
        read = sum(per[:same])
        if fmt != "anthropic":
            return read, 0
        marked = [len(lead) + i for i, m in enumerate(raw) if checks._cache_controls(m)]
        if isinstance(body.get("cache_control"), dict):  # automatic: on the last block
            marked.append(len(lead) + len(raw) - 1)
        write = max(0, sum(per[:marked[-1] + 1]) - read) if marked else 0
        return read, write

    # ---- control routes -------------------------------------------------------------------

    async def _requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.received)

    async def _conversation_create(self, request: web.Request) -> web.Response:
        """The Conversations API's create: a conversation, with the items it starts with."""
        entry, body = await self._read("conversations", request)
        items = body.get("items") if isinstance(body, dict) else None
        cid = f"conv_standin{len(self._conversations) + 1}"
        self._conversations[cid] = list(items) if isinstance(items, list) else []
        entry["status"] = 200
        return web.json_response({"id": cid, "object": "conversation",
                                  "created_at": int(time.time()), "metadata": {}})

    async def _reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({})

    async def _fail(self, request: web.Request) -> web.Response:
        spec = await request.json()
        self.fail(spec.get("status"), mode=spec.get("mode", "status"),
                  count=int(spec.get("count", 1)), delay=float(spec.get("delay", 0)))
        return web.json_response({})

    async def _reply(self, request: web.Request) -> web.Response:
        spec = await request.json()
        self.reply(spec.get("text", ""), spec.get("tool_name"), spec.get("tool_arguments"))
        return web.json_response({})

    async def _agent_route(self, request: web.Request) -> web.Response:
        spec = await request.json()
        self.agent(int(spec.get("rounds", 0)), spec.get("calls"))
        return web.json_response({})

    async def _release_hold(self, request: web.Request) -> web.Response:
        self.release()
        return web.json_response({})


def _cached_form(value: Any) -> Any:
    """What a provider's cache compares: the content without its cache_control markers, a
    string content the same as one text block (moving a breakpoint does not change a prefix)."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list):
        return [_cached_form(v) if isinstance(v, dict) else v for v in value]
    if isinstance(value, dict):
        return {k: (_cached_form(v) if k in ("content", "system") else v)
                for k, v in value.items() if k != "cache_control"}
    return value


class StandinThread:
    """A Standin on its own loop in a daemon thread, for synchronous tests and clients."""

    def __init__(self, **kw: Any) -> None:
        self._kw = kw
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.standin: Standin | None = None

    def __enter__(self) -> StandinThread:
        self._thread.start()
        self.standin = self.call(self._make())
        return self

    async def _make(self) -> Standin:
        return await Standin(**self._kw).start()

    def call(self, coro: Any, timeout: float = 60) -> Any:
        """Run a coroutine on the stand-in's loop (other servers may share it) and wait."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def __exit__(self, *exc: object) -> None:
        assert self.standin is not None
        self.call(self.standin.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.standin, name)

    def requests(self) -> list[dict]:
        """A copy of every request received so far."""
        async def copy() -> list[dict]:
            return json.loads(json.dumps(self.standin.received))  # type: ignore[union-attr]
        return self.call(copy())

    def fail(self, *args: Any, **kw: Any) -> None:
        async def go() -> None:
            self.standin.fail(*args, **kw)  # type: ignore[union-attr]
        self.call(go())

    def reply(self, *args: Any, **kw: Any) -> None:
        async def go() -> None:
            self.standin.reply(*args, **kw)  # type: ignore[union-attr]
        self.call(go())

    def agent(self, *args: Any, **kw: Any) -> None:
        async def go() -> None:
            self.standin.agent(*args, **kw)  # type: ignore[union-attr]
        self.call(go())

    def reset(self) -> None:
        async def go() -> None:
            self.standin.reset()  # type: ignore[union-attr]
        self.call(go())

    def release(self) -> None:
        async def go() -> None:
            self.standin.release()  # type: ignore[union-attr]
        self.call(go())

    def for_model(self, *args: Any, **kw: Any) -> None:
        async def go() -> None:
            self.standin.for_model(*args, **kw)  # type: ignore[union-attr]
        self.call(go())

    def release_model(self, model: str) -> None:
        async def go() -> None:
            self.standin.release_model(model)  # type: ignore[union-attr]
        self.call(go())


async def _main(port: int) -> None:
    standin = await Standin().start(port)
    print(json.dumps(standin.announcement), flush=True)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()
    await standin.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(parser.parse_args().port))
