"""The gateway's HTTP server: OpenAI- and Anthropic-compatible routes on loopback.

Owns: the aiohttp application and its routes (the model routes made from the provider table,
providers.py; every other `/v1` path forwarded unchanged to its family's upstream; any other
path a JSON 404 in the provider's shape), reading each request (a body it cannot read is
a 400 in the provider's shape naming the field, never forwarded), preparing it through the
state (chats.py), forwarding it (forward.py) with the `x-ctxlayer-*` answer headers, and
`start_gateway` for the daemon. Runs on the caller's event loop; the CPU work of a prepare
runs where the state puts it.

Who may ask (Host, Origin, the token of `/ctxlayer/*`) is guard.py's middleware; how slowly
and how much, limits.py's. Must not log headers or bodies (API keys, conversations), and must
not listen beyond loopback.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import sqlite3
from collections.abc import Callable
from typing import Any

import msgspec
from aiohttp import web

from ctxlayer import protocol
from ctxlayer.config import GatewayConfig
from ctxlayer.core.errors import TOO_DEEP, ContextError, lone_surrogate, not_utf8
from ctxlayer.core.formats import codec, other_format
from ctxlayer.gateway import chats, encodings, guard, limits, runner, unreadable, upsum
from ctxlayer.gateway.errors import GatewayError, error_response
from ctxlayer.gateway.forward import (
    Upstream,
    refuses_stream_options,
    upstream_headers,
    usage_asked,
)
from ctxlayer.gateway.learned import LearnedWindows
from ctxlayer.gateway.providers import (
    ANTHROPIC,
    BY_FORMAT,
    OPENAI,
    PROVIDERS,
    Family,
    Provider,
    family_of,
)
from ctxlayer.gateway.stopping import STOP_GRACE, UnderWay
from ctxlayer.gateway.usage import UNSTATED_OVER, Refusal, Usage, refusal
from ctxlayer.state import Caller, State
from ctxlayer.state.lanes import Lanes
from ctxlayer.state.requests import call
from ctxlayer.statefiles import (
    TokenFileError,
    another_runs,
    make_private_dir,
    read_or_create_token,
    token_file,
    unusable_folder,
    write_private,
)
from ctxlayer.store.errors import StoreError, describe_store_error
from ctxlayer.tokenizers import context_window, model_info, user_window
from ctxlayer.urls import carries_credentials, is_loopback, named, said, why_not_upstream

log = logging.getLogger("ctxlayer.gateway")


def _store_failed(exc: Exception) -> web.Response:
    """A listing the state folder could not give (a newer schema, a folder where the
    database should be): what to fix in one line, as `ctxlayer chats` shows it, never a bare
    500 page. Chats are still served: the gateway keeps them in memory."""
    log.error("sessions database: %s", exc)
    return web.json_response({"error": {"message": f"sessions database: "
                                                   f"{describe_store_error(exc)}",
                                        "kind": "store"}}, status=503)

class NotLoopback(ValueError):
    """The gateway was asked to listen on an address other machines could reach."""


def check_loopback(host: str) -> str:
    """`host` when it is a loopback address (or `localhost`), else NotLoopback."""
    if is_loopback(host):
        return host
    raise NotLoopback(f"the gateway listens on loopback only (127.0.0.1, ::1, localhost), "
                      f"not {host!r}: it forwards the clients' API keys")


#: bodies at least this big are decoded and encoded on a worker thread, so the event loop
#: goes on answering other chats meanwhile (msgspec, which also lets go of the GIL less often
#: than the json module's many small objects)
OFF_LOOP_BYTES = 256 * 1024


def read_request(fmt: str, raw: bytes) -> dict:
    """The JSON body of a model request, or GatewayError naming what cannot be read."""
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        bad_byte = not_utf8(raw)
        if bad_byte is not None:
            raise GatewayError(400, f"the body is {bad_byte}", field="body") from exc
        why = lone_surrogate(raw)
        raise GatewayError(400, f"the body is not JSON: {why}" if why else
                           f"the body is not JSON ({exc})", field="body") from exc
    except RecursionError:  # the decoder's depth limit: before, a 500 that said "a bug"
        raise GatewayError(400, "the body is JSON nested deeper than the gateway reads (a "
                           "request's messages are a few levels deep)", field="body") from None
    if not isinstance(body, dict):
        raise GatewayError(400, "the body must be a JSON object", field="body")
    if not isinstance(body.get("model"), str) or not body["model"].strip():
        raise GatewayError(400, "`model` must be a non-empty string", field="model")
    key = codec(fmt).conversation
    wrong = other_format(fmt, body)
    if wrong is not None:  # Responses' `input` is optional: a chat's body went on unfitted
        paths = " or ".join(p.route for p in PROVIDERS if p.fmt in wrong[2])
        raise GatewayError(400, f"`{key}` is missing and the body has `{wrong[1]}`: such a "
                                f"request goes to {paths}", field=key)
    value = body.get(key)
    optional = value is None and codec(fmt).empty is not None  # Responses' `input`
    if not optional and not isinstance(value, list) and \
            not (key == "input" and isinstance(value, str)):
        what = "a string or a list of items" if key == "input" else "a list"
        raise GatewayError(400, f"`{key}` must be {what}", field=key)
    for i, m in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(m, dict):
            raise GatewayError(400, f"`{key}[{i}]` must be an object", field=f"{key}[{i}]")
    # null as not given: the official OpenAI SDKs send `"stream": null` for stream=None
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise GatewayError(400, "`stream` must be true or false", field="stream")
    system = codec(fmt).system
    blocks = fmt != "responses"  # Anthropic's `system` takes text blocks; `instructions` not
    if system is not None and body.get(system) is not None and \
            not isinstance(body[system], (str, list) if blocks else str):
        what = "a string or a list of text blocks" if blocks else "a string"
        raise GatewayError(400, f"`{system}` must be {what}", field=system)
    return body


class Hints(msgspec.Struct, frozen=True):
    """What a request's headers say about its conversation and its window."""

    conversation: str | None  # x-ctxlayer-conversation: the user names it
    session: str | None  # the client's own session id (Claude Code's x-claude-code-session-id)
    betas: tuple[str, ...]  # anthropic-beta names (context-1m-* opens the 1M window)


def read_hints(headers: Any) -> Hints:
    """The hints of a request's headers, or GatewayError naming one that is not UTF-8: a
    hint's, or one that goes upstream (refused before the prepare, not at the relay)."""
    upstream_headers(headers)
    betas = tuple(b.strip() for v in _text_headers(headers, "anthropic-beta")
                  for b in v.split(",") if b.strip())
    conversation = _text_headers(headers, "x-ctxlayer-conversation")
    session = _text_headers(headers, "x-claude-code-session-id")
    return Hints(conversation=conversation[0] if conversation else None,
                 session=session[0] if session else None, betas=betas)


def _text_headers(headers: Any, name: str) -> list[str]:
    """The non-empty values of the header ``name``. aiohttp hands bytes that are not UTF-8 on
    as lone surrogates, which no database, log or JSON can store: such a value is the
    client's error (a 400 naming the header), not a 500 further in."""
    values = [v for v in headers.getall(name, []) if v]
    for value in values:
        try:
            value.encode()
        except UnicodeEncodeError:
            raise GatewayError(400, f"the header {name} is not UTF-8 text",
                               field=name) from None
    return values


#: the body keys that ask for the output room (each format's codec names its own): too large
#: a one leaves a window no room
OUTPUT_ROOM = frozenset(k for fmt in ("openai", "anthropic", "responses")
                        for k in codec(fmt).reserve)


class GatewayServer:
    """The gateway of one workspace (the caller's), listening on loopback."""

    def __init__(self, state: State, caller: Caller, config: GatewayConfig) -> None:
        self.state, self.caller, self.config = state, caller, config
        self.host = check_loopback(config.host)
        self.port = 0
        #: the requests being served, which a stop lets finish or ends (stopping.py)
        self.under_way = UnderWay()
        self.upstream = Upstream(config.connect_timeout, config.read_timeout, self.under_way)
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        #: the windows providers stated when they refused a prompt as over it, or showed by
        #: cutting prompts, by model, where smaller than the table's or the config's (kept
        #: while the gateway runs)
        self.learned = LearnedWindows()
        #: the models `[gateway] summarizer_model` names (upsum.summarizer_names)
        self.summarizers = upsum.summarizer_names(config.summarizer_model)
        #: what the summarizer setting led to, said once (`_say_once`)
        self.summarizer_said: set[str] = set()
        if config.summarizer_model and not self.summarizers:
            self._say_once(f"summarizer_model {ascii(config.summarizer_model)} names no "
                           "model: each chat's own model writes its summaries")
        #: upstreams that refused `stream_options` (the gateway asks a stream's usage)
        self.no_stream_options: set[str] = set()
        #: the announcements of the gateways this one's replaced that still ran, the newest
        #: first (`close` puts back the first still running)
        self._replaced: list[dict] = []
        #: the model requests that may be of one conversation, in the order their bodies came
        #: (`arrival_key`), each held only until its body is read and its prepare begun
        self.arrivals = Lanes()

    @property
    def urls(self) -> protocol.GatewayUrls:
        host = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{host}:{self.port}"
        return protocol.GatewayUrls(openai=f"{base}/v1", anthropic=base)

    async def start(self) -> GatewayServer:
        folder = self.state.state_dir
        try:
            make_private_dir(folder)
        except OSError as err:  # a file in its place, no permission, a read-only disk
            raise unusable_folder(folder, err) from err
        # the `/ctxlayer/*` routes open with the TCP mode's token (TokenFileError: unsafe)
        try:
            token = read_or_create_token(token_file(folder))
        except TokenFileError:  # it says what is wrong with the file, and how to fix it
            raise
        except OSError as err:  # a read-only folder: the token cannot be written
            raise unusable_folder(folder, err, "its token file cannot be written: ") from err
        body_limits = limits.BodyLimits(self.config)
        self.under_way.stopping = False  # started again after a stop (a reload, a restart)
        app = web.Application(client_max_size=body_limits.max_bytes, middlewares=[
            self.under_way.middleware(),
            guard.middleware(lambda: guard.allowed_hosts(self.host, self.port), token)])
        app[limits.KEY] = body_limits
        for provider in PROVIDERS:
            app.router.add_post(provider.route, self._model_route(provider))
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/health", self._health)
        # what ctxlayer did to the live chats (`ctxlayer chats` reads these)
        app.router.add_get("/ctxlayer/conversations", self._conversations)
        app.router.add_get("/ctxlayer/why", self._why)
        # last: what no route above serves (the first match wins)
        app.router.add_route("*", "/v1/{tail:.*}", self._passthrough)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # A client that disconnects cancels its handler, which closes the upstream request.
        # what aiohttp's own stop still waits for once `close` ended the requests (its
        # default, 60 s twice over, kept a streaming client waiting two minutes)
        # neither its log nor its answer quotes a request its parser refused (unreadable.py:
        # API keys), and what aiohttp answers itself is JSON in the provider's shape (runner.py)
        self._runner = runner.Runner(app, handler_cancellation=True, access_log=None,
                                     logger=unreadable.server_log, shutdown_timeout=STOP_GRACE,
                                     **limits.server_options(self.config))
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.config.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("gateway listening on %s (openai %s, anthropic %s)", self.host,
                 self.urls.openai, self.urls.anthropic)
        proxies = self.upstream.proxies
        for family in (OPENAI, ANTHROPIC):
            base, refused = family.base(self.config), upstream_refused(family, self.config)
            if why_not_upstream(base) is None:  # a URL that is none has no proxy to name
                log.info("upstream %s: through %s", named(base), proxies.said(base))
            if refused is not None:
                log.warning("%s", refused)
        for unusable in proxies.unusable:
            log.warning("a proxy the environment names is not used (only http and https "
                        "proxies are): %s", named(unusable))
        self._write_announcement()
        return self

    @property
    def announcement_file(self):
        return self.state.state_dir / "gateway.json"

    def _write_announcement(self) -> None:
        """Where the gateway listens, for `ctxlayer chats` (no key; 0600 all the same, it
        names the workspace)."""
        import os

        urls = self.urls
        self._replaced = _still_running(_announced(self.announcement_file))
        try:
            write_private(self.announcement_file, json.dumps(
                {"host": self.host, "port": self.port, "openai": urls.openai,
                 "anthropic": urls.anthropic, "workspace": self.caller.workspace,
                 "pid": os.getpid(), "replaced": self._replaced}))
        except OSError as exc:
            log.warning("could not write %s: %s", self.announcement_file, exc)

    async def close(self) -> None:
        """Stop serving. The announcement goes with it, or back to the newest of those it
        replaced whose gateway still runs (other daemons on the state folder: without it,
        `ctxlayer chats` said no gateway ran while one served)."""
        try:
            if (_announced(self.announcement_file) or {}).get("port") == self.port:
                back = [a for a in self._replaced
                        if a.get("port") != self.port and another_runs(a.get("pid"))]
                if back:
                    write_private(self.announcement_file, json.dumps(
                        {**back[0], "replaced": back[1:]}))
                else:
                    self.announcement_file.unlink()
        except OSError:
            pass
        if self._runner is not None:
            await self._stop_serving(self._runner)
            await self._runner.cleanup()
            self._runner = None
        await self.reported()
        await self.upstream.close()

    async def _stop_serving(self, runner: web.AppRunner) -> None:
        """Take no new connection, end the streams being relayed with their provider's
        error event at once, and give the other requests under way STOP_GRACE seconds to
        be answered before they are answered 503 (stopping.py)."""
        for site in list(runner.sites):
            await site.stop()
        self.under_way.stop_streams()
        await self.under_way.end(STOP_GRACE)

    async def reported(self) -> None:
        """Wait for the usage reports under way (an answer's report is started before its
        end goes to the client, and runs on after it)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- routes ---------------------------------------------------------------------------

    def _model_route(self, provider: Provider) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._model_request(request, provider.fmt,
                                             with_query(provider.url(self.config), request))
        return handle

    async def _passthrough(self, request: web.Request) -> web.StreamResponse:
        """Any other `/v1` path (embeddings, completions, one model, files, batches...):
        forwarded unchanged to its family's upstream with the client's keys, nothing
        prepared or counted. A WebSocket is not: the Responses API's WebSocket mode (Codex
        tries it first on OpenAI's own provider) is refused with the 426 on which a client
        goes over to HTTPS at once (Codex retries any other refusal five times first)."""
        family = family_of(request.headers)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return error_response(family.name, GatewayError(
                426, f"{request.path} is served over HTTPS only here, not as a WebSocket",
                code="websocket_not_served"))
        decoded = request.match_info["tail"].split("/")
        if any(part in (".", "..") for part in decoded):  # %2e%2e too: it is read decoded
            return error_response(family.name, GatewayError(
                400, f"{request.path}: a path with . or .. segments is not forwarded (it "
                "would leave the upstream's /v1)", field="path"))
        tail = "/".join(part for part in decoded if part)
        served = self._served_at(tail, request.method)
        if served is not None:  # `/v1//messages`, `/v1/chat%2Fcompletions`: a model request
            return await served(request)
        try:
            raw = await _read(request) if request.body_exists else None
        except GatewayError as err:
            return error_response(family.name, err)
        # as the client wrote it (its percent-encoding kept), the empty segments left out
        written = request.rel_url.raw_path.split("/")[2:]
        url = with_query(f"{family.v1(self.config)}/{'/'.join(p for p in written if p)}",
                         request)
        return await self._forward(request, family.name, request.method, url, raw, {},
                                   stream=True)

    def _served_at(self, tail: str, method: str) -> Any:
        """The handler of a route the gateway serves that ``tail`` (under `/v1`, decoded, its
        empty segments left out) names, else None: such a request, sent with a doubled or a
        trailing slash or an encoded one, went upstream unprepared, uncounted."""
        for provider in PROVIDERS:
            if method == "POST" and f"/v1/{tail}" == provider.route:
                return self._model_route(provider)
        if method == "POST" and tail == "messages/count_tokens":
            return self._count_tokens
        if method in ("GET", "HEAD") and tail == "models":
            return self._models
        return None

    async def _not_found(self, request: web.Request) -> web.Response:
        """A path the gateway does not serve, said in the shape of the client's provider."""
        return error_response(family_of(request.headers).name, GatewayError(
            404, f"no route {request.method} {request.path} here (the model APIs are under "
            "/v1)", code="not_found"))

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        """Counted by the provider, on the request as the client sent it: what the client
        asks is the size of its own conversation."""
        try:
            raw = await _read(request)
            read_request("anthropic", raw)
        except GatewayError as err:
            return error_response("anthropic", err)
        url = with_query(f"{BY_FORMAT['anthropic'].url(self.config)}/count_tokens", request)
        return await self._forward(request, "anthropic", "POST", url, raw, {}, stream=False)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """The upstream's list of models. A HEAD goes upstream as a HEAD (aiohttp serves HEAD
        on a GET route): sent as a GET, the provider was asked for the whole list, which the
        gateway read and then dropped."""
        family = family_of(request.headers)
        url = with_query(f"{family.v1(self.config)}/models", request)
        return await self._forward(request, family.name, request.method, url, None, {},
                                   stream=False)

    async def _health(self, request: web.Request) -> web.Response:
        urls = self.urls
        return web.json_response({"status": "ok", "workspace": self.caller.workspace,
                                  "openai": urls.openai, "anthropic": urls.anthropic})

    async def _conversations(self, request: web.Request) -> web.Response:
        try:
            result = await call(self.caller, "ctx/conversations", protocol.NoParams())
        except (StoreError, sqlite3.Error) as exc:
            return _store_failed(exc)
        return web.json_response(msgspec.to_builtins(result))

    async def _why(self, request: web.Request) -> web.Response:
        query = request.query
        params = protocol.WhyParams(conversation_id=query.get("conversationId"),
                                    session_id=query.get("sessionId"),
                                    message_id=query.get("messageId"))
        try:
            result = await call(self.caller, "ctx/why", params)
        except ContextError as exc:
            return web.json_response({"error": {"message": str(exc), "field": exc.field,
                                                "kind": exc.kind}}, status=400)
        except (StoreError, sqlite3.Error) as exc:
            return _store_failed(exc)
        return web.json_response(msgspec.to_builtins(result))

    # ---- one model request ----------------------------------------------------------------

    async def _model_request(self, request: web.Request, fmt: str,
                             url: str) -> web.StreamResponse:
        ours: dict[str, str] = {}
        model = ""
        try:
            sent = await limits.read_body(request)
            hints = read_hints(request.headers)
            # in the order the bodies came: a big one read off the loop must not be overtaken
            # by a small one of its chat that came after it (which was applied first, and the
            # chat left with the older request as its last turn)
            async with self.arrivals.turn(arrival_key(fmt, hints, request.headers)):
                raw = await _plain(request, sent)
                body = (await asyncio.to_thread(read_request, fmt, raw)
                        if len(raw) >= OFF_LOOP_BYTES else read_request(fmt, raw))
                model = body["model"]
                window, said = self._window(model, hints.betas)
                info = model_info(model)
                if said is not None:
                    ours["x-ctxlayer-warning"] = said

                def prepare() -> Any:  # shielded: a client that goes away must not cut it
                    return asyncio.shield(chats.prepare(
                        self.caller, fmt, body, hints.conversation,
                        client_session_id=hints.session,
                        context_window=window if window != info.context_window else None))

                # started here: it takes its conversation's lane before the next one is let in
                first = prepare()
            result = await first
        except GatewayError as err:
            log.info("%s request refused: %s", fmt, err)
            return error_response(fmt, err, ours)
        except ContextError as exc:
            log.info("%s request refused (%s): %s", fmt, exc.kind, exc)
            return error_response(fmt, self._refused(exc, model), ours)
        except (StoreError, sqlite3.Error) as exc:
            log.error("sessions database: %s", exc)
            return error_response(fmt, GatewayError(
                500, f"sessions database: {describe_store_error(exc)}"), ours)
        except RecursionError:  # a value read whole, then walked deeper in the stack
            log.warning("a %s request %s", fmt, TOO_DEEP)
            return error_response(fmt, GatewayError(400, f"the request {TOO_DEEP}",
                                                    field="body"), ours)
        except Exception:  # our bug: said in the provider's shape, not as a bare 500 page
            log.exception("preparing a %s request failed", fmt)
            return error_response(fmt, GatewayError(
                500, "preparing the request failed (a bug; the gateway's log has the details)"),
                ours)
        response = await self._send(request, fmt, url, len(raw), dict(ours), result)
        refused = (refusal(fmt, response.status, response.body)
                   if isinstance(response, web.Response) and isinstance(response.body, bytes)
                   else None)
        stated = await self._stated_window(refused, url, model, request)
        smaller = stated is not None and stated < window
        counted = _refused_count(refused, result, explained=smaller)
        if smaller:
            # the provider's window is smaller than the table's or the config's (a local
            # server's context size, a model the table does not know): its requests are
            # fitted to it from now on, this one again at once
            self.learned.stated(model, stated)
            window = stated
            ours["x-ctxlayer-warning"] = self._window(model, hints.betas)[1] or ""
        if (counted is not None and counted > result.tokens) or smaller:
            # the provider counts this prompt above our count of it (its tokenizer is not
            # ours, the model table's correction a guess): its count calibrates the chat, and
            # the request is fitted again, once. Else the client's every retry is refused
            # alike: nothing calibrates a chat whose requests are all refused
            log.info("%s prompt refused as over the window: %s tokens for the provider (its "
                     "count, else taken above the budget), %d by ours, window %d; fitted "
                     "again", fmt, counted, result.tokens, window)
            if counted is not None and counted > result.tokens:
                await self._report(result, Usage(prompt_tokens=counted), refused=True)
            try:
                again = await prepare()
            except Exception:  # the refusal stands, as the provider said it
                log.exception("fitting a refused %s request again failed", fmt)
                return response
            if again.tokens < result.tokens:
                response = await self._send(request, fmt, url, len(raw), dict(ours), again)
        return response

    def _refused(self, exc: ContextError, model: str) -> GatewayError:
        """The state's refusal of a request; one a window too small for it explains (its own
        content, or the output it asks for), with why the window is that small, where the
        user reads it."""
        err = GatewayError.from_context(exc)
        small = exc.kind == "pinned_over_budget" or exc.field in OUTPUT_ROOM
        learned = self.learned.get(model) if small else None
        if learned is None:
            return err
        return GatewayError(err.status, f"{err}; {learned[1]}: raise the server's context for "
                            "this model (Ollama: OLLAMA_CONTEXT_LENGTH, or num_ctx in its "
                            "Modelfile), or name its window in [gateway] models",
                            field=err.field, code=err.code)

    async def _stated_window(self, refused: Refusal | None, url: str, model: str,
                             request: web.Request) -> int | None:
        """The window a refusal states; for LM Studio's that says none (a stream's error
        event), the context it loaded the model with, as its own API says it."""
        if refused is not None and refused.window is None and refused.lm_studio:
            return await self.upstream.loaded_context(url, model, request.headers)
        return refused.window if refused is not None else None

    def _window(self, model: str, betas: tuple[str, ...]) -> tuple[int, str | None]:
        """The window a model's requests are fitted to, and what a warning says of it: the
        table's or `[gateway] models`', or the smaller one its provider stated when it
        refused a prompt as over the window, or showed by cutting prompts (learned.py)."""
        window = context_window(model, betas, self.config.models)
        learned = self.learned.get(model)
        if learned is not None and learned[0] < window:
            return learned[0], (f"{learned[1]}: requests are fitted to it (set it in "
                                "[gateway] models to keep it after a restart)")
        info = model_info(model)
        if info.family != "unknown":
            return window, None
        # the window said is the one used: a user who named it in [gateway] models must not
        # read that the default applied, even where the two are the same number
        used = (f"a window of {window} tokens from [gateway] models"
                if user_window(model, self.config.models) is not None
                else f"the default window of {window} tokens")
        return window, f"unknown model {ascii(model)}: counted with {info.encoding} and {used}"

    async def _send(self, request: web.Request, fmt: str, url: str, size: int,
                    ours: dict[str, str], result: protocol.PrepareResult
                    ) -> web.StreamResponse:
        """Forward the fitted request of ``result``, its figures in our headers (``ours``
        holds those said before it was fitted); ``size``: the body's as it came."""
        # what the request leaves out and shortens, whichever turn cut it (the result's own
        # lists are what its turn cut anew: a compacted chat's later turns said 0)
        left_out, shortened = chats.sent_figures(self.caller, result)
        ours.update({
            "x-ctxlayer-tokens": str(result.tokens),
            "x-ctxlayer-dropped": str(left_out),
            "x-ctxlayer-shortened": str(shortened),
            "x-ctxlayer-compacted": "true" if result.compacted else "false",
        })
        if result.conversation_id:
            ours["x-ctxlayer-conversation"] = result.conversation_id
        if result.warning:  # the state folder failed beside the request: it goes all the same
            said = result.warning.encode("ascii", "backslashreplace").decode()
            ours["x-ctxlayer-warning"] = "; ".join(
                w for w in (ours.get("x-ctxlayer-warning"), said) if w)
        body, hide = usage_asked(fmt, result.request, url in self.no_stream_options)
        out = (await asyncio.to_thread(msgspec.json.encode, body)
               if size >= OFF_LOOP_BYTES else msgspec.json.encode(body))
        stream = bool(result.request.get("stream"))
        # the facts of the conversation's next step are read while the provider thinks
        cid = result.conversation_id
        response = await self._forward(
            request, fmt, "POST", url, out, ours, stream=stream, result=result,
            on_sent=(lambda: chats.read_ahead(self.caller, cid)) if cid else None,
            hide_usage=hide)
        if hide and refuses_stream_options(response):
            # a server that takes no stream_options (Azure's older API versions): the request
            # goes as the client sent it, now and from then on
            self.no_stream_options.add(url)
            log.info("%s upstream %s refused stream_options: its streams' usage is not asked "
                     "for again", fmt, named(url))
            response = await self._forward(
                request, fmt, "POST", url, msgspec.json.encode(result.request), ours,
                stream=stream, result=result)
        model = result.request.get("model")
        if self.config.summarizer == "upstream" and response.status < 300:
            self._summarize_ahead(request, fmt, url, model, result)
        log.info("%s %s -> %d: %d tokens, %d dropped%s", fmt, model, response.status,
                 result.tokens, left_out, ", compacted" if result.compacted else "")
        return response

    async def _forward(self, request: web.Request, fmt: str, method: str, url: str,
                       body: bytes | None, ours: dict[str, str], *, stream: bool,
                       result: protocol.PrepareResult | None = None,
                       on_sent: Callable[[], None] | None = None,
                       hide_usage: bool = False) -> web.StreamResponse:
        family = BY_FORMAT[fmt].family  # a pass-through's `fmt` is its family's name
        refused = upstream_refused(family, self.config)
        if refused is not None:
            return error_response(fmt, refused, ours)
        try:
            headers = upstream_headers(request.headers)  # the client's error, not the upstream's
        except GatewayError as err:
            log.info("%s request refused: %s", fmt, err)
            return error_response(fmt, err, ours)
        sink = None
        if result is not None:
            def sink(usage: Usage) -> asyncio.Future[None]:
                self._learn(result, usage)
                chats.answered(self.caller, result, usage)
                return self._keep(self._report(result, usage))
        try:
            return await self.upstream.relay(request, fmt, method, url, body, ours, stream,
                                             sink, on_sent, hide_usage, headers=headers,
                                             model_stream=result is not None)
        except GatewayError as err:
            log.warning("%s upstream: %s", fmt, err)
            return error_response(fmt, err, ours)

    def _learn(self, result: protocol.PrepareResult, usage: Usage) -> None:
        """A provider whose reports show it cut the prompts (learned.py says when): its
        window is the most it read, said in the log once and in the headers from then on."""
        model = result.request.get("model")
        if not isinstance(model, str):
            return
        window = self._window(model, ())[0]
        if self.learned.read(model, usage.prompt_tokens, result.tokens, window) is not None:
            log.warning("%s", self._window(model, ())[1])

    def _summarize_ahead(self, request: web.Request, fmt: str, url: str, model: str,
                         result: protocol.PrepareResult) -> None:
        """After the answer, never before it: the conversation's next summary, once its next
        step is near (core.prepare.near_budget), asked of its own upstream with this
        request's key (upsum.py), in the background, what it is shown fitted to the
        summarizing model's window. Never raises: the client has its answer."""
        if not result.conversation_id:
            return
        name, why = upsum.summarizer_for(self.summarizers, model)
        if why is not None:
            self._say_once(why)
        betas = read_hints(request.headers).betas  # read before: it cannot fail here

        def stated(window: int) -> bool:
            if window >= self._window(name, betas)[0]:
                return False
            self.learned.stated(name, window)
            log.warning("%s", self._window(name, betas)[1])
            return True

        try:
            # the summarizer's window as the chat's is known (the table, [gateway] models,
            # learned), with the chat's betas (its request carries the chat's headers); less
            # the room a reasoning model is given to think
            window = self._window(name, betas)[0]
            room = upsum.room_to_think(name, window)
            if room is None:  # a call that is refused as over its window is not paid for
                self._say_once(f"summarizer {ascii(name)}: its window of {window} tokens "
                               "cannot hold a summary request; none is asked of it, the "
                               "offline summary stands in")
                return
            ask = upsum.asker(self.upstream, BY_FORMAT[fmt], url,
                              upstream_headers(request.headers), name, room, stated)
            chats.summarize_ahead(self.caller, result.conversation_id, ask,
                                  f"by the upstream's {ascii(name)}", window - room)
        except Exception:  # the client's answer is there already: it must not become a 500
            log.exception("%s %s: summarizing ahead failed; the offline summary stands in",
                          fmt, result.conversation_id)

    def _say_once(self, warning: str) -> None:
        """Log what the summarizer setting leads to, once while the gateway runs (it would
        be said again on every turn of every chat)."""
        if warning not in self.summarizer_said:
            self.summarizer_said.add(warning)
            log.warning("%s", warning)

    def _keep(self, work: Any) -> asyncio.Future[None]:
        """A task that outlives a cancelled handler; close() waits for it."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _report(self, result: protocol.PrepareResult, usage: Usage,
                      refused: bool = False) -> None:
        try:
            await chats.report(self.caller, result, usage, refused)
        except Exception:  # a failed report must not fail an answer already given
            log.exception("reporting usage failed")


def _refused_count(refused: Refusal | None, result: protocol.PrepareResult,
                   explained: bool = False) -> int | None:
    """The provider's count of the fitted prompt it refused as over the window; when the
    refusal says none (the Responses API; a server that states only its window or the total
    asked), the larger of our count and the budget, UNSTATED_OVER above it. None: not such a
    refusal, not a conversation's, or one without a count that a smaller window it stated
    explains (``explained``: nothing says the provider counts above us)."""
    if refused is None or not result.conversation_id:
        return None
    if refused.count is not None:
        return refused.count
    if explained:
        return None
    return math.ceil(max(result.tokens, result.budget) * UNSTATED_OVER)


def upstream_refused(family: Family, config: GatewayConfig) -> GatewayError | None:
    """The answer to every request for an upstream whose configured URL cannot be used, else
    None. One that is no usable URL is kept as written (config._upstream): sent to the
    default instead, a chat meant for a local server went to the provider's own. One that
    holds a user and password is never sent (aiohttp refuses them beside the client's
    Authorization header, and the URL would put them in logs and errors), the key belongs in
    the client's header."""
    base = family.base(config)
    why = why_not_upstream(base)
    if why is not None:
        return GatewayError(502, f"[gateway] {family.setting} {said(base)!r}: {why}; the "
                            "gateway sends nothing there, nor to the default in its place: "
                            "fix it in your ctxlayer.toml or the editor's settings, then "
                            "start the gateway again (`ctxlayer gateway`, or reload the "
                            "editor: the gateway reads its settings when it starts)",
                            code="unusable_upstream_url")
    if not carries_credentials(base):
        return None
    return GatewayError(502, f"[gateway] {family.setting} has a user and password in its URL "
                        f"({named(family.base(config))}), which the gateway does not send: "
                        "remove them there and give the key in the client's own header "
                        "(Authorization, or x-api-key) instead",
                        code="credentials_in_upstream_url")


def with_query(url: str, request: web.Request) -> str:
    """The upstream ``url`` with the client's query string as the client sent it (still
    percent-encoded): Azure OpenAI needs its `api-version`, the Anthropic SDK's beta client
    sends `beta=true`. Every route forwards it; before, the model routes dropped it."""
    query = request.rel_url.raw_query_string
    return f"{url}?{query}" if query else url


def _announced(path: Any) -> dict | None:
    """The announcement in ``path``, None when there is none or it cannot be read."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


#: the replaced gateways an announcement remembers
REPLACED_MOST = 8


def _still_running(announced: dict | None) -> list[dict]:
    """The gateway ``announced`` names and those it had replaced, the newest first, each
    without its own list: those whose process still runs, at most REPLACED_MOST. Only the
    last replaced one was kept: with three started and the middle one stopped, stopping the
    newest removed the file while the first still served."""
    if announced is None:
        return []
    earlier = announced.get("replaced")
    chain = [announced, *(earlier if isinstance(earlier, list) else [])]
    running = [{k: v for k, v in a.items() if k != "replaced"} for a in chain
               if isinstance(a, dict) and another_runs(a.get("pid"))]
    return running[:REPLACED_MOST]


def arrival_key(fmt: str, hints: Hints, headers: Any) -> tuple:
    """What the requests that may be of one conversation share before their bodies are read:
    the conversation the client names, else the format with the client's session id and its
    key (a digest, kept only while the body is read): the chats of other clients, other keys
    and other formats never wait for each other's bodies."""
    if hints.conversation:
        return ("conversation", hints.conversation)
    key = headers.get("Authorization") or headers.get("x-api-key") or headers.get("api-key")
    digest = hashlib.blake2b((key or "").encode("utf-8", "replace"), digest_size=8).digest()
    return (fmt, hints.session, digest)


async def _read(request: web.Request) -> bytes:
    """The body, plain: 413 too large, 408 too slow, 415 / 400 a Content-Encoding not read."""
    return await _plain(request, await limits.read_body(request))


async def _plain(request: web.Request, raw: bytes) -> bytes:
    """``raw`` as its Content-Encoding says to read it."""
    coding = request.headers.get("Content-Encoding")
    if not coding:
        return raw
    most = request.app[limits.KEY].max_bytes
    if len(raw) < OFF_LOOP_BYTES // 16:  # a compressed body expands about tenfold
        return encodings.plain(raw, coding, most)
    return await asyncio.to_thread(encodings.plain, raw, coding, most)


async def start_gateway(state: State, caller: Caller, config: GatewayConfig) -> GatewayServer:
    """Listen (config.host, config.port; port 0 = any free one) and set `state.gateway_urls`.
    Raises NotLoopback for a non-loopback host, OSError when the port is taken."""
    server = await GatewayServer(state, caller, config).start()
    state.gateway_urls = server.urls
    # the encoding of the model its chats used last first (a restarted gateway of a Claude-only
    # user builds Claude's first); the others once no request is under way
    kept = state.models_in_use()
    state.tokenizers.preload(dict.fromkeys([*kept, *(p.family.model for p in PROVIDERS)]))
    # after the caller announced the gateway (the opening's thread would compete with it)
    asyncio.get_running_loop().call_soon(state.open_sessions_soon)
    return server
