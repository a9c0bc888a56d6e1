"""How a URL a user configured is said in a log line, an error or a settings message: scheme,
host, port and path, never the user and password it may carry, nor its query (a key may ride
there too). The gateway names its upstreams and proxies so; the settings messages name a
changed or refused value so. And which hosts are loopback: the only ones ctxlayer listens on
and sends its token to.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

#: what a loopback-only listener or client names its host as, beside the loopback addresses
LOCALHOST = "localhost"


def named(url: str) -> str:
    """``url`` as it may be said: without user, password and query."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def carries_credentials(url: str) -> bool:
    """Whether ``url`` holds a user (and password) before its host."""
    return "@" in urlsplit(url).netloc


def said(value: object) -> object:
    """A setting's value as a message may show it: a URL carrying a user, a password or a
    query named without them, any other value as it is."""
    if isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
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
