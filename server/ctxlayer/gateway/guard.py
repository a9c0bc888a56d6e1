"""Who may talk to the gateway: the middleware that runs before every route.

Owns three refusals, each answered by the gateway itself in the provider's error shape and
never forwarded:
- a `Host` that is not the loopback name or address the gateway listens on, with its port
  (403): a web page that rebinds its own DNS name to 127.0.0.1 still sends its own name, so
  this is what keeps such a page from spending the user's keys; so is a request target in
  absolute form (`POST http://evil.example/v1/messages`) whose authority is not one of
  those, since that authority replaces Host (RFC 9112 3.2.2);
- a browser `Origin` that is not loopback (403), any of them: a cross-site page may POST
  `text/plain` without a preflight, and it always says where it comes from; a browser's
  request that says it is cross-site (`Sec-Fetch-Site`) without an Origin (an `<img>`, a
  no-cors GET of `/v1/models`) too;
- a `/ctxlayer/*` request without `Authorization: Bearer <token>` (401): those routes show
  the user's conversations, so only a process that can read the token file may see them.
No CORS header is ever added (forward.py drops the upstream's too), so a browser never lets
a page read an answer.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from ctxlayer.gateway.errors import GatewayError, error_response
from ctxlayer.urls import is_loopback

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: the routes that show what ctxlayer did to the user's conversations
PRIVATE_PREFIX = "/ctxlayer/"

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def allowed_hosts(listen_host: str, port: int) -> frozenset[str]:
    """The `Host` values accepted for a gateway listening on `listen_host`:`port`."""
    listen = f"[{listen_host}]" if ":" in listen_host else listen_host
    names = {*_LOOPBACK_NAMES, listen.lower()}
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:  # the one port a client may leave out of Host
        hosts |= names
    return frozenset(hosts)


def is_loopback_origin(origin: str) -> bool:
    """Whether a browser `Origin` is a page served from this machine's loopback."""
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    # no host: "null" (a sandboxed frame, a file:// page) or nonsense
    return bool(host) and is_loopback(host)


def target_authority(target: str) -> str | None:
    """The authority a request target names (its absolute form's, userinfo and all), "" for
    one that names it in no form we read (authority-form, nonsense), None for the origin and
    asterisk forms (`/v1/messages`, `*`), which leave it to Host."""
    if target.startswith("/") or target == "*":
        return None
    try:
        parts = urlsplit(target)
    except ValueError:
        return ""
    return parts.netloc if parts.scheme.lower() in ("http", "https") else ""


def _unread_target(method: str, target: str) -> str:
    """Why a target naming its authority in no form we read is refused, and what to send
    instead: the authority it names cannot be checked against Host, so it never passes."""
    try:
        parts = urlsplit(target)
    except ValueError:
        parts = None
    instead = ("send an origin-form target (`POST /v1/messages`, `POST /v1/chat/completions`) "
               "or an http:// URL of this gateway")
    if method == "CONNECT":  # authority-form: a proxy's tunnel
        return (f"CONNECT {ascii(target)} asks for a tunnel: this gateway is not a proxy: "
                f"{instead}")
    if parts is not None and parts.scheme and parts.netloc:  # ws://, wss://, ftp://...
        return (f"the request target {ascii(target)} has the scheme {ascii(parts.scheme)}, "
                "which this gateway does not serve (HTTP only: no WebSocket): "
                f"{instead}")
    return f"the request target {ascii(target)} is in no form this gateway reads: {instead}"


def format_of(request: web.Request) -> str:
    """The provider whose error shape the client expects ("anthropic" | "openai")."""
    if request.path.startswith("/v1/messages") or "anthropic-version" in request.headers:
        return "anthropic"
    return "openai"


def refusal(request: web.Request, listen: frozenset[str], token: str) -> GatewayError | None:
    """Why `request` is refused, or None when it may go on."""
    host = request.headers.get("Host")
    if host is None or host.lower() not in listen:
        return GatewayError(403, f"Host {ascii(host)} is not this gateway's loopback address "
                                 "(a page rebinding its DNS name to 127.0.0.1 sends its own "
                                 "name): refused", code="forbidden_host")
    named = target_authority(request.raw_path)
    if named == "":
        return GatewayError(403, _unread_target(request.method, request.raw_path),
                            code="forbidden_host")
    if named is not None and named.lower() not in listen:
        return GatewayError(403, f"the request target names {ascii(named)}, not this "
                                 "gateway's loopback address (it stands for the Host): "
                                 "refused", code="forbidden_host")
    origins = request.headers.getall("Origin", [])
    for origin in origins:  # each: a second one after a loopback one was let through
        if not is_loopback_origin(origin):
            return GatewayError(403, f"Origin {ascii(origin)} is not loopback: a web page may "
                                     "not use this gateway", code="forbidden_origin")
    if not origins and request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
        # a browser's request without an Origin (an <img> or a no-cors GET): from a page
        # elsewhere, it says so; chat clients and SDKs send no Sec-Fetch-* at all
        return GatewayError(403, "a cross-site browser request (Sec-Fetch-Site: cross-site) "
                                 "without an Origin: a web page may not use this gateway",
                            code="forbidden_origin")
    if request.path.startswith(PRIVATE_PREFIX):
        given = request.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), token.encode()):
            return GatewayError(401, f"{PRIVATE_PREFIX}* needs `Authorization: Bearer <token>`, "
                                     "the token in the state folder's `token` file",
                                code="unauthorized")
    return None


def middleware(hosts: Callable[[], frozenset[str]], token: str) -> Callable:
    """The aiohttp middleware; `hosts()` gives the accepted Host values (known once the port
    is bound)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        err = refusal(request, hosts(), token)
        if err is None:
            response = await handler(request)
            if response.status in (408, 413):  # a body left unread: the connection goes
                response.force_close()
            return response
        headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
        return error_response(format_of(request), err, headers)

    return guard
