"""How a URL a user configured is said in a log line, an error or a settings message: scheme,
host, port and path, never the user and password it may carry, nor its query (a key may ride
there too). The gateway names its upstreams and proxies so; the settings messages name a
changed or refused value so. And which hosts are loopback: the only ones ctxlayer listens on
and sends its token to.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

#: what a loopback-only listener or client names its host as, beside the loopback addresses
LOCALHOST = "localhost"


def named(url: str) -> str:
    """``url`` as it may be said: without user, password and query."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ of an IPv6 address: cut by hand, never said whole
        return re.sub(r"^([^:/?#]*://)[^/?#]*@", r"\1", url).split("?")[0].split("#")[0]
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def carries_credentials(url: str) -> bool:
    """Whether ``url`` holds a user (and password) before its host."""
    try:
        return "@" in urlsplit(url).netloc
    except ValueError:  # unparsable: what stands between the scheme and the path
        return "@" in re.split(r"[/?#]", url.partition("://")[2])[0]


def said(value: object) -> object:
    """A setting's value as a message may show it: a URL carrying a user, a password or a
    query named without them, any other value as it is."""
    if isinstance(value, str) and "://" in value:
        try:
            parts = urlsplit(value)
        except ValueError:  # unparsable: said cut, it may carry a key all the same
            return named(value)
        if "@" in parts.netloc or parts.query:
            return named(value)
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or `localhost`: where the gateway and the TCP
    daemon listen, and the only place their token is sent."""
    if host == LOCALHOST:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def why_not_upstream(url: str) -> str | None:
    """What keeps ``url`` from being an upstream base the gateway can add a path to (None: it
    can): an http(s) scheme, a host, a port that is a number, neither a query nor a
    fragment, and no space or control character. Each was taken before and misused: a query went before the path added
    (`/v1?x=1/chat/completions`), a fragment swallowed it (`/v1`), no host failed every
    request with a bare 500."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        # a value pasted with its newline or a space: the URL library drops a CR/LF, so
        # `/v1\r\nX: 1` became the path `/v1X: 1/chat/completions`, and a space stayed in it
        return "a space or a control character in it (a value pasted with its line end?)"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed [ of an IPv6 address
        return f"not a URL ({exc})"
    try:
        port = parts.port  # reading it checks it: a word or past 65535 raises
    except ValueError:
        return "the port must be a number from 1 to 65535"
    if parts.scheme not in ("http", "https"):
        return "expected an http:// or https:// URL"
    if not parts.hostname:
        return "no host after the scheme (such as http://127.0.0.1:8080/v1)"
    if port == 0:
        return "the port must be a number from 1 to 65535"
    if parts.query or "?" in url:
        return "a query (?...) cannot come before the path the gateway adds: leave it out"
    if parts.fragment or "#" in url:
        return "a fragment (#...) would cut off the path the gateway adds: leave it out"
    return None
