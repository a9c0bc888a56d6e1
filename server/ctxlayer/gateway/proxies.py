"""The proxy an upstream request goes through: the user's `HTTPS_PROXY`, `HTTP_PROXY`,
`ALL_PROXY` and `NO_PROXY` (either case), read as curl and the chat clients read them, so a
gateway started behind a company proxy reaches the provider as its clients would. A loopback
upstream (a local model server, the tests' stand-in) never goes through one.

Owns: which proxy, if any, serves an upstream URL (a URL is named in the log and the errors
by `ctxlayer.urls.named`: without the user and password it may carry).
Reads the environment once, when made.
"""

from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit

from ctxlayer.urls import is_loopback, named

#: the proxy schemes aiohttp can speak (a SOCKS proxy needs a package it does not have)
SPOKEN = ("http", "https")


class Proxies:
    """The environment's proxy settings for the upstreams."""

    def __init__(self) -> None:
        found = urllib.request.getproxies_environment()  # scheme -> URL, "no" -> NO_PROXY
        self.by_scheme: dict[str, str] = found
        #: proxies named that aiohttp cannot speak (said once at the start, then not used)
        self.unusable = sorted({url for key, url in found.items() if key != "no"
                                and urlsplit(url).scheme not in SPOKEN})

    def for_url(self, url: str) -> str | None:
        """The proxy for ``url``, or None: straight to it."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        if _loopback(host) or urllib.request.proxy_bypass_environment(host, self.by_scheme):
            return None
        proxy = self.by_scheme.get(parts.scheme) or self.by_scheme.get("all")
        if proxy is None or urlsplit(proxy).scheme not in SPOKEN:
            return None
        return proxy

    def said(self, url: str) -> str:
        """How the log names the way to ``url``: its proxy without user and password."""
        proxy = self.for_url(url)
        return "no proxy" if proxy is None else f"the proxy {named(proxy)}"


def _loopback(host: str) -> bool:
    """A loopback host, or a name under `localhost` (which resolves there): no proxy."""
    return host.endswith(".localhost") or is_loopback(host)
