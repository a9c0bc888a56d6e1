"""Forwarding to the upstream provider and relaying its answer back unchanged.

Owns: the one aiohttp ClientSession (timeouts from `[gateway]`), which request headers go
upstream (the client's own: Authorization, x-api-key, anthropic-*, ...; never hop-by-hop ones,
those its Connection header names, cookies, or ours), which answer headers come back (the
same rule), and the relay: a streamed (SSE) answer is written to the client chunk by chunk
as it arrives, while its usage is read on the way; any other answer (JSON, errors) is relayed
whole with its status. A stream is passed on event by event
(an event is written once its blank line has come), so that a stream the upstream stalls past
`read_timeout` or cuts, or ends before its format's last event (`endings.py`: a clean end of
a close-delimited body is no proof of a whole answer), can end with the provider's own error
event, never with half an event nor silently; so does every stream being relayed when the
gateway stops (stopping.py).
Leaving the `async with` of a relay early (the client went away, so aiohttp cancelled the
handler) closes the upstream request. No CORS header comes back: a browser
page must not read an answer. A relay can say when the whole body has gone to the upstream
(`on_sent`): work for the conversation's next turn starts then, while the provider thinks,
not beside the request still being sent. One change to a stream: a Chat Completions stream
whose client did not ask for its usage is asked for it (`usage_asked`), and the usage is read
but not passed on (`without_usage`), so that the client gets the stream it asked for.

Must not log headers or bodies: they carry the client's API keys and its conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from ctxlayer.gateway.encodings import AnswerDecoder, NotAsSaid, answer_decoder
from ctxlayer.gateway.endings import Ending
from ctxlayer.gateway.errors import GatewayError, sse_error
from ctxlayer.gateway.proxies import Proxies
from ctxlayer.gateway.stopping import GatewayStopping, UnderWay, stopped
from ctxlayer.gateway.usage import StreamUsage, Usage, from_answer, refused_error
from ctxlayer.urls import named

log = logging.getLogger("ctxlayer.gateway")

#: takes a finished answer's usage (reporting it to the state)
UsageSink = Callable[[Usage], Awaitable[None]]
#: called once the request's body has gone to the upstream
Sent = Callable[[], None]

#: RFC 9110 section 7.6.1 connection-specific headers, plus those the relay recomputes
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
})
#: never passed on, either way: no provider API uses cookies, and a browser sends the gateway
#: every cookie of `localhost` whatever its port, so a cookie reaching it belongs to another
#: local app (its session, sent to the provider); an upstream's would be kept by the browser
#: for every local app in turn
COOKIES = frozenset({"cookie", "set-cookie", "set-cookie2"})


def connection_named(headers: Mapping[str, str]) -> frozenset[str]:
    """The headers a message's `Connection` names (comma-separated, any case): they are for
    that hop alone, and a proxy removes them (RFC 9110 section 7.6.1). Before, only the fixed
    HOP_BY_HOP list was: `Connection: x-hop` sent x-hop on to the upstream."""
    getall = getattr(headers, "getall", None)  # every Connection header of a request
    values = getall("Connection", []) if getall is not None else [
        v for k, v in headers.items() if k.lower() == "connection"]
    return frozenset(name.strip().lower() for value in values for name in value.split(",")
                     if name.strip())


def upstream_headers(client: Mapping[str, str]) -> CIMultiDict[str]:
    """The client's headers that go upstream: everything end to end but ours and its cookies;
    GatewayError (400) naming one whose bytes cannot go on as they came (`_sendable`).
    The body goes plain (the gateway decoded it: `encodings`), so without the client's
    Content-Encoding. The upstream is asked for an uncompressed answer so that its usage can
    be read as it passes; should it compress anyway, the relay decodes what
    `encodings.answer_decoder` reads, and passes other codings on as they came."""
    dropped = HOP_BY_HOP | COOKIES | connection_named(client) | {
        "accept-encoding", "content-encoding"}
    # a multidict: a header the client sent on two lines goes on two (two `anthropic-beta`
    # lines, read both for the window, went up as the last one: the 1M context beta lost)
    out = CIMultiDict((k, v) for k, v in client.items()
                      if k.lower() not in dropped and not k.lower().startswith("x-ctxlayer-"))
    unsendable = next((k for k, v in out.items() if not _sendable(v)), None)
    if unsendable is not None:
        raise GatewayError(400, f"the header {unsendable.lower()} is not UTF-8 text: the "
                                "gateway cannot send its bytes on as they came (send it as "
                                "UTF-8)", field=unsendable.lower())
    out["Accept-Encoding"] = "identity"
    return out


def _sendable(value: str) -> bool:
    """Whether a header's value goes on (upstream, or back to the client) as it came. aiohttp
    reads a byte that is not UTF-8 as a lone surrogate (`Caf\\xe9` from a client that writes
    headers in latin-1, as Node does), and its client and its server write a header's text as
    UTF-8 leaving surrogates out: `Caf` went on, the byte lost without a word. Neither takes
    bytes, so such a value cannot go as it came: a request's is refused, an answer's left out
    (the value is never said: it may be a key)."""
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


#: an incomplete event held back longer than this is passed on anyway (not SSE after all)
MAX_PENDING = 1024 * 1024
#: seconds the gateway waits for LM Studio to say the context it loaded a model with
ASK_TIMEOUT = 5.0


def answer_headers(upstream: Mapping[str, str], ours: Mapping[str, str],
                   decoded: bool = False) -> CIMultiDict[str]:
    """The upstream's answer headers that go to the client, with ours (never its cookies,
    nor those its Connection names); ``decoded``: the
    relay decodes the answer, which goes plain (without its Content-Encoding). Never the
    upstream's own `x-ctxlayer-*` (another gateway before the provider, any case): they
    went beside ours, two x-ctxlayer-tokens and a warning the gateway never said. Nor one
    whose bytes are not UTF-8 text (`_sendable`): aiohttp writes a header's text as UTF-8
    leaving out the byte it could not read (`caf\\xe9` came to the client as `caf`), so such
    a header is left out and said in the log, by its name."""
    dropped = HOP_BY_HOP | COOKIES | connection_named(upstream)
    # repeated lines stay repeated (two Link, two Vary, two Set-... of the provider's own)
    kept = [(k, v) for k, v in upstream.items() if k.lower() not in dropped
            and not k.lower().startswith(("access-control-", "x-ctxlayer-"))
            and not (decoded and k.lower() == "content-encoding")]
    for name in sorted({k.lower() for k, v in kept if not _sendable(v)}):
        log.warning("the upstream's answer header %s is not UTF-8 text: left out (its bytes "
                    "cannot go on as they came)", ascii(name))
    out = CIMultiDict((k, v) for k, v in kept if _sendable(v))
    out.update(ours)
    return out


class _BodySent:
    """Calls ``then`` once, when ``size`` bytes of the body have been handed to the connection
    (aiohttp's trace of each chunk sent), or at the latest when the relay ends."""

    def __init__(self, size: int, then: Sent) -> None:
        self.left, self.then = size, then

    def sent(self, n: int) -> None:
        self.left -= n
        if self.left <= 0:
            self.done()

    def done(self) -> None:
        then, self.then = self.then, None
        if then is not None:
            try:
                then()
            except Exception:  # work for a later turn: never the reason this one fails
                log.exception("starting the work after a request went upstream failed")


async def _chunk_sent(_session: aiohttp.ClientSession, ctx,
                      params: aiohttp.TraceRequestChunkSentParams) -> None:
    watch = ctx.trace_request_ctx
    if isinstance(watch, _BodySent):
        watch.sent(len(params.chunk))


class Upstream:
    """The HTTP client of the gateway: one connection pool for every upstream, each reached
    through the environment's proxy for it (`proxies.py`)."""

    def __init__(self, connect_timeout: float, read_timeout: float,
                 under_way: UnderWay | None = None) -> None:
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout,
                                             sock_read=read_timeout)
        self.proxies = Proxies()
        self._session: aiohttp.ClientSession | None = None
        #: where the streams being relayed are kept, for a stopping gateway to end them
        self.under_way = under_way or UnderWay()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:  # made on first use, on the loop that serves
            trace = aiohttp.TraceConfig()
            trace.on_request_chunk_sent.append(_chunk_sent)
            # no cookie jar: one would keep a cookie an upstream set in one client's answer
            # (a CDN's before the provider) and send it with every client's requests
            self._session = aiohttp.ClientSession(timeout=self.timeout, auto_decompress=False,
                                                  trace_configs=[trace],
                                                  cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, url: str, headers: Mapping[str, str], body: bytes,
                   timeout: float) -> tuple[int, bytes]:
        """(status, body) of a plain POST of our own (a summary ahead of need), within
        ``timeout`` seconds in all, its body decoded as a relayed answer's is (compressed
        although asked plain, it read as no text); its errors are said without the
        headers."""
        try:
            sent = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            async with self.session.post(url, data=body, headers={
                    **sent, "Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=timeout),
                    proxy=self.proxies.for_url(url), allow_redirects=False) as up:
                return up.status, await _whole(url, up, _decoder("summary", url, up))
        except TimeoutError as exc:
            raise TimeoutError(f"no answer from {named(url)} within {timeout:.0f} s") from exc
        except aiohttp.ClientError as exc:
            raise ConnectionError(f"cannot reach {named(url)}: {type(exc).__name__}") from exc

    async def loaded_context(self, url: str, model: str, headers: Mapping[str, str]
                             ) -> int | None:
        """The context LM Studio loaded ``model`` with, as its own API beside the upstream
        ``url`` lists it (`GET /api/v0/models`, its `loaded_context_length`); None when it
        says none, or cannot be asked within ASK_TIMEOUT seconds (not LM Studio after all)."""
        where = urlsplit(url)
        ask = f"{where.scheme}://{where.netloc}/api/v0/models"
        sent = {k: v for k, v in headers.items() if k.lower() == "authorization"}
        try:
            async with self.session.get(ask, headers=sent, proxy=self.proxies.for_url(ask),
                                        timeout=aiohttp.ClientTimeout(total=ASK_TIMEOUT),
                                        allow_redirects=False) as up:
                listed = await up.json(content_type=None) if up.status == 200 else None
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            log.info("asking %s for the context of %s: %s", named(ask), ascii(model),
                     type(exc).__name__)
            return None
        data = listed.get("data") if isinstance(listed, dict) else None
        found = [m.get("loaded_context_length") for m in data or ()
                 if isinstance(m, dict) and m.get("id") == model]
        n = found[0] if found else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    async def relay(self, request: web.Request, fmt: str, method: str, url: str,
                    body: bytes | None, ours: Mapping[str, str], stream: bool,
                    on_usage: UsageSink | None = None,
                    on_sent: Sent | None = None, hide_usage: bool = False, *,
                    headers: CIMultiDict[str], model_stream: bool = False
                    ) -> web.StreamResponse:
        """Send the request upstream (with ``headers``: `upstream_headers` of the client's,
        made once by the caller, which refuses the request when they cannot go) and answer
        the client with what comes back. The usage
        of a successful answer goes to `on_usage` as soon as the upstream has sent it all,
        before the client has read the end, so a client that hangs up on the last event still
        has its turn reported. `on_sent` is called once the body has gone (or the relay ended
        without it: refused, cut). `hide_usage`: the gateway asked for a stream's usage the
        client did not ask for (`stream_options.include_usage`); it is read, not passed on.
        ``model_stream``: a model route's stream, whose format says its last event
        (endings.py): a successful one the upstream ends before it ends with the provider's
        error event (a pass-through's stream is some other API's, relayed as it ends)."""
        watch = _BodySent(len(body or b""), on_sent) if on_sent is not None else None
        try:
            # a redirect goes back to the client as the upstream sent it, never followed:
            # aiohttp keeps x-api-key, api-key and a 307's body on a hop to another origin,
            # and the SDKs themselves follow none
            async with self.session.request(method, url, data=body,
                                            headers=headers,
                                            proxy=self.proxies.for_url(url),
                                            trace_request_ctx=watch,
                                            allow_redirects=False) as up:
                decoder = _decoder(fmt, url, up)
                headers = answer_headers(up.headers, ours, decoded=decoder is not None)
                is_sse = up.headers.get("content-type", "").startswith("text/event-stream")
                if stream and is_sse:
                    ending = Ending(fmt) if model_stream and up.status < 300 else None
                    return await _relay_stream(request, fmt, url, up, headers, on_usage,
                                               hide_usage, decoder, self.under_way, ending)
                raw = await _whole(url, up, decoder)
                if method == "HEAD" and decoder is None and "Content-Length" in up.headers:
                    # a HEAD's answer has no body but says the size the GET's would have:
                    # the upstream's, not the 0 of the empty body relayed
                    headers["Content-Length"] = up.headers["Content-Length"]
                usage = from_answer(fmt, raw) if up.status < 300 else None
                if usage is not None and on_usage is not None:
                    await asyncio.shield(on_usage(usage))
                return web.Response(status=up.status, body=raw, headers=headers)
        except TimeoutError as exc:
            raise GatewayError(504, f"the upstream {named(url)} did not answer in time"
                               ) from exc
        except aiohttp.ClientConnectionError as exc:
            if _gone(request):
                raise asyncio.CancelledError from exc  # the client is gone: nobody to tell
            raise GatewayError(502, f"cannot reach the upstream {named(url)}: "
                                    f"{type(exc).__name__}") from exc
        except aiohttp.ClientPayloadError as exc:  # less than its Content-Length, or chunks
            raise GatewayError(502, f"the upstream {named(url)} closed the answer before its "
                                    f"end ({type(exc).__name__})") from exc
        except aiohttp.InvalidURL as exc:
            # a URL aiohttp cannot send to (no host: the settings check it, but a redirect's
            # or a later caller's may not be): the client's error in its provider's shape,
            # never aiohttp's bare 500 and a traceback
            raise GatewayError(502, f"the upstream URL {named(url)} cannot be used: "
                                    f"{type(exc).__name__}") from exc
        finally:
            if watch is not None:
                watch.done()


def _decoder(fmt: str, url: str, up: aiohttp.ClientResponse) -> AnswerDecoder | None:
    """The decoder of an answer compressed although asked for plain (tests/gateway saw
    gzip and deflate: the client that did not ask for a stream's usage got it, and the usage
    was never read); a coding not read here is said in the log and passed on as it came."""
    coding = up.headers.get("content-encoding")
    decoder = answer_decoder(coding)
    if decoder is None and coding and coding.strip().lower() != "identity":
        log.warning("%s upstream %s answered in %r, asked for none: passed on as it came, its "
                    "usage not read", fmt, named(url), coding)
    return decoder


#: the most of an answer not streamed that is read, as it came and decoded: no chat's answer
#: comes near it (a misbehaving upstream's 1.5 GB of gzip was read whole into memory)
MOST_ANSWER = 256 * 1024 * 1024
#: bytes of a compressed answer decoded at a time, its size checked after each
DECODE_STEP = 64 * 1024


async def _whole(url: str, up: aiohttp.ClientResponse, decoder: AnswerDecoder | None) -> bytes:
    """A whole answer, decoded when it was compressed; a 502 when it is not what it says or
    is over MOST_ANSWER, as it came or decoded."""
    raw = bytearray()
    async for piece in up.content.iter_any():
        raw += piece
        if len(raw) > MOST_ANSWER:
            raise _too_big(url)
    if decoder is None:
        return bytes(raw)
    plain = bytearray()
    try:
        for at in range(0, len(raw), DECODE_STEP):
            plain += decoder.feed(bytes(raw[at:at + DECODE_STEP]))
            if len(plain) > MOST_ANSWER:
                raise _too_big(url)
        decoder.end()
    except NotAsSaid as exc:
        raise GatewayError(502, f"the upstream {named(url)} answered with a body {exc}") from exc
    return bytes(plain)


def _too_big(url: str) -> GatewayError:
    return GatewayError(502, f"the upstream {named(url)} answered more than "
                             f"{MOST_ANSWER // (1024 * 1024)} MiB to a request not streamed")


async def _plain_chunks(chunks: AsyncIterator[bytes], decoder: AnswerDecoder | None
                        ) -> AsyncIterator[bytes]:
    """A stream's chunks decoded when it was compressed; bytes that are not what the header
    says end it as a cut stream does (aiohttp.ClientPayloadError)."""
    async for chunk in chunks:
        if decoder is None:
            yield chunk
            continue
        try:
            plain = decoder.feed(chunk)
        except NotAsSaid as exc:
            raise aiohttp.ClientPayloadError(str(exc)) from exc
        if plain:
            yield plain
    if decoder is not None:
        try:
            decoder.end()
        except NotAsSaid as exc:
            raise aiohttp.ClientPayloadError(str(exc)) from exc


def _gone(request: web.Request) -> bool:
    return request.transport is None or request.transport.is_closing()


#: the blank line that ends an SSE event: a line end right after another, each one CRLF, LF
#: or CR (the SSE spec allows all three; a stream of CR-ended lines was one event to a
#: search for LF and CRLF alone, and its client got none of it, `without_usage`). A CR before
#: an LF is one CRLF, never two line ends: one line's CRLF would have ended an event.
_EVENT_END = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))")


def _event_end(buf: bytes) -> int:
    """Where the last whole SSE event in `buf` ends (0: none yet). A CR last in `buf` may be
    the first half of a CRLF whose LF is yet to come: the LF then begins the next part, which
    changes no byte the client gets."""
    end = 0
    for end_found in _EVENT_END.finditer(buf):
        end = end_found.end()
    return end


def usage_asked(fmt: str, request: dict, refused: bool) -> tuple[dict, bool]:
    """The request to send, and whether the gateway asked for the usage of its stream: a
    Chat Completions stream without `stream_options.include_usage` gets it (the chat's
    calibration, and a server that cuts prompts, learned.py, need the usage), and the relay
    hides it from the client, which did not ask (aider does not). One that set it false did
    not ask either: left as it came, its chat was never calibrated. ``refused``: its upstream
    refused `stream_options` before."""
    if fmt != "openai" or request.get("stream") is not True or refused:
        return request, False
    options = request.get("stream_options")
    said = options.get("include_usage") if isinstance(options, dict) else None
    if options is not None and not isinstance(options, dict) or \
            said is not None and said is not False:
        return request, False
    return {**request, "stream_options": {**(options or {}), "include_usage": True}}, True


def refuses_stream_options(response: web.StreamResponse) -> bool:
    """Whether an answer is a 400 (or 422) that names `stream_options` (Azure's older API
    versions: "Unrecognized request argument supplied: stream_options")."""
    return isinstance(response, web.Response) and response.status in (400, 422) and \
        isinstance(response.body, bytes) and b"stream_options" in response.body


#: a Chat Completions chunk without choices (the usage-only one may be it), and the
#: `usage: null` of the others, as a stream asked for its usage has them (a quote in a text is
#: escaped, so these never match inside one)
_NO_CHOICES = re.compile(rb'"choices"\s*:\s*\[\s*\]')
_NULL_USAGE = re.compile(rb',\s*"usage"\s*:\s*null|"usage"\s*:\s*null\s*,')
#: what the usage-only chunk carries beside its usage and its empty choices: the answer's
#: names and numbers (OpenRouter's `provider`, llama.cpp's `timings`, Groq's `x_groq`)
_BESIDE_USAGE = frozenset({"id", "object", "created", "model", "system_fingerprint",
                           "service_tier", "obfuscation", "provider", "timings", "x_groq"})


def _usage_only(event: bytes) -> bool:
    """Whether an event is the usage-only chunk: no choices, a usage, nothing else said.
    Azure's first chunk has no choices either, but its `prompt_filter_results` and a null
    usage; an event that does not read as one JSON chunk is never taken for it."""
    if not _NO_CHOICES.search(event):
        return False
    said = _said(event)
    return said is not None and said.get("choices") == [] and \
        isinstance(said.get("usage"), dict) and \
        all(k in _BESIDE_USAGE for k, v in said.items()
            if k not in ("choices", "usage") and v is not None)


def without_usage(events: bytes) -> bytes:
    """Whole SSE events of a Chat Completions stream as they come when its usage is not asked
    for: no usage-only chunk, no `usage: null` in the others; every other event as it came."""
    if b'"usage"' not in events:
        return events
    parts = _EVENT_END.split(events)
    ends = _EVENT_END.findall(events)
    out = []
    for event, end in zip(parts, [*ends, b""], strict=True):
        if b'"usage"' in event:
            if _usage_only(event):
                continue
            event = _NULL_USAGE.sub(b"", event)
        out += (event, end)
    return b"".join(out)


async def _relay_stream(request: web.Request, fmt: str, url: str, up: aiohttp.ClientResponse,
                        headers: CIMultiDict[str], on_usage: UsageSink | None,
                        hide_usage: bool, decoder: AnswerDecoder | None,
                        under_way: UnderWay, ending: Ending | None) -> web.StreamResponse:
    reader = StreamUsage(fmt)
    chunks = _plain_chunks(up.content.iter_any(), decoder)
    pending = await _first_event(url, chunks, reader)  # before the status goes out
    refused = first_refusal(fmt, pending[:_event_end(pending)])
    if refused is not None:  # answered as the refusal it is: server.py fits the request again
        log.info("%s stream opened with a refusal as over the window: answered as a 400", fmt)
        return web.Response(status=400, body=refused, headers={
            **{k: v for k, v in headers.items() if k.lower() != "content-type"},
            "Content-Type": "application/json"})
    response = web.StreamResponse(status=up.status, headers=headers)
    await response.prepare(request)
    numbered = _Numbered()

    async def write(whole: bytes) -> None:
        if fmt == "responses":
            numbered.read(whole)
        if ending is not None:
            ending.read(whole)
        await response.write(without_usage(whole) if hide_usage else whole)

    try:
        with under_way.streaming(up.content):
            while True:
                cut = writable(pending)
                if cut:
                    await write(pending[:cut])
                    pending = pending[cut:]
                chunk = await anext(chunks, None)
                if chunk is None:
                    break
                reader.feed(chunk)
                pending += chunk
    except (TimeoutError, aiohttp.ClientError, GatewayStopping) as exc:
        if _gone(request):
            if up.content.at_eof():  # all of it arrived: only the client's end was missed
                _report(reader, up, on_usage)
            raise asyncio.CancelledError from exc  # the client went away
        # The status went out already: the provider's error event says the answer is cut
        # (the incomplete event held back is dropped, it could not be read).
        log.warning("%s stream ended early: %s", fmt, type(exc).__name__)
        await _end_early(response, fmt, _cut_short(url, exc), numbered.next)
        return response
    if ending is not None and not ending.over:
        ending.read(pending + b"\n\n")  # a last event whose blank line never came
    if ending is not None and not ending.over:
        # a clean end of the body (a close-delimited one's is its only end) before the
        # format's last event: as cut as a reset, and said so (the incomplete event dropped)
        log.warning("%s stream ended before its last event%s", fmt,
                    ", in the middle of one" if pending.strip() else "")
        await _end_early(response, fmt, _cut_short(url, None), numbered.next)
        return response
    if pending:
        await write(pending)
    reported = _report(reader, up, on_usage)
    try:
        await response.write_eof()
    finally:
        if reported is not None:
            await asyncio.shield(reported)
    return response


def _cut_short(url: str, exc: Exception | None) -> GatewayError:
    """Why a stream whose status went out ends before its end (``exc`` None: its body ended
    before the format's last event)."""
    if exc is None:
        return GatewayError(502, f"the upstream {named(url)} ended the stream before its last "
                                 "event: the answer is cut short")
    if isinstance(exc, GatewayStopping):
        return stopped("the answer is cut short")
    if isinstance(exc, TimeoutError):
        return GatewayError(504, f"the upstream {named(url)} sent nothing for longer than the "
                                 "read timeout ([gateway] read_timeout): the answer is cut short")
    return GatewayError(502, f"the upstream {named(url)} closed the stream before its end "
                             f"({type(exc).__name__}): the answer is cut short")


async def _end_early(response: web.StreamResponse, fmt: str, err: GatewayError,
                     sequence_number: int) -> None:
    """End a stream with the provider's error event: an SDK raises it as an error instead of
    taking a cut answer for a whole one."""
    with contextlib.suppress(ConnectionError, aiohttp.ClientError):
        await response.write(sse_error(fmt, err, sequence_number))
        await response.write_eof()


#: a Responses event's number (a quote inside a text is escaped: this never matches there)
_SEQUENCE = re.compile(rb'"sequence_number"\s*:\s*(\d+)')


class _Numbered:
    """The number a Responses stream's next event takes: one past the last its relayed
    events carried (0 when none did), so that the error event ending a cut stream comes in
    order after them, as a client that checks the order expects."""

    def __init__(self) -> None:
        self.next = 0

    def read(self, events: bytes) -> None:
        numbers = _SEQUENCE.findall(events)
        if numbers:
            self.next = max(self.next, int(numbers[-1]) + 1)


def writable(pending: bytes) -> int:
    """How much of what a stream sent so far goes to the client now: up to its last whole
    event's end; all of it when it holds no end and is over MAX_PENDING (one event that big
    goes on as it comes). Over the limit with an end in it, all went, and a usage-only chunk
    half arrived came out whole, not hidden."""
    cut = _event_end(pending)
    return cut if cut or len(pending) <= MAX_PENDING else len(pending)


async def _first_event(url: str, chunks: AsyncIterator[bytes], reader: StreamUsage) -> bytes:
    """What the stream sent up to the end of its first whole event that says something: after
    a Responses stream's opening ones (`_OPENING`), comments and pings (`_says_nothing`); or
    its end, or MAX_PENDING. The upstream failing before it is a 502, the client not answered
    yet."""
    pending = b""
    try:
        while len(pending) <= MAX_PENDING:
            end = _event_end(pending)
            if end and not all(_OPENING.search(e) or _says_nothing(e)
                               for e in _events(pending[:end])):
                break
            chunk = await anext(chunks, None)
            if chunk is None:
                break
            reader.feed(chunk)
            pending += chunk
    except aiohttp.ClientPayloadError as exc:
        raise GatewayError(502, f"the upstream {named(url)} closed the stream before its first "
                                f"event ({type(exc).__name__})") from exc
    return pending


#: the events a Responses stream opens with, before the one that says whether the prompt was
#: read (a prompt over the window fails there: `response.failed`)
_OPENING = re.compile(rb'(?:^|(?<=\r))data:\s*\{"type"\s*:\s*"response\.'
                      rb'(?:created|in_progress|queued)"', re.MULTILINE)  # `^`: after LF only


def _says_nothing(event: bytes) -> bool:
    """Whether an SSE event says nothing of the answer: comments alone (OpenRouter sends
    `: OPENROUTER PROCESSING` while a request waits), or a ping (Anthropic's `ping` event).
    A refusal after one was relayed as a 200 stream: no window learned, no request fitted
    again."""
    lines = [line for line in event.splitlines() if line.strip() and not line.startswith(b":")]
    return not lines or _said(event) == {"type": "ping"}


def _events(whole: bytes) -> list[bytes]:
    return [e for e in _EVENT_END.split(whole) if e.strip()]


def first_refusal(fmt: str, events: bytes) -> bytes | None:
    """The error a stream's first events hold, as a JSON body, when it refuses the prompt as
    over the window; else None, and the stream goes on to the client as it came. Some
    servers refuse so inside a 200 stream (LM Studio, the Responses API, vLLM, llama.cpp's
    2025 builds, lemonade: the shapes `usage._error_of` reads); the event may have no `data:`
    field, `_said`."""
    if b"error" not in events:
        return None
    for event in _events(events):
        said = None if _OPENING.search(event) else _said(event)  # an opening one says nothing
        found = refused_error(fmt, said) if said is not None else None
        if found is not None:
            return json.dumps(found).encode()
    return None


def _said(event: bytes) -> dict | None:
    """The JSON object an SSE event carries in its `data:` lines, or in an `error:` line, or
    as the whole event when it has no field name; None when it carries none."""
    lines = [line for line in event.splitlines() if not line.startswith(b":")]
    data = b"\n".join(line.split(b":", 1)[1].lstrip() for line in lines
                      if line.startswith((b"data:", b"error:")))
    try:
        said = json.loads(data or b"\n".join(lines))
    except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
        return None
    return said if isinstance(said, dict) else None


def _report(reader: StreamUsage, up: aiohttp.ClientResponse,
            on_usage: UsageSink | None) -> asyncio.Future[None] | None:
    """Start reporting a finished stream's usage; it runs on even if the handler is
    cancelled (the sink keeps the task)."""
    usage = reader.usage()
    if usage is None or on_usage is None or up.status >= 300:
        return None
    return asyncio.ensure_future(on_usage(usage))
