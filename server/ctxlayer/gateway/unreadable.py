"""Requests the HTTP parser could not read: what the gateway answers and what its log says,
naming what was wrong and never quoting the bytes aiohttp quotes.

aiohttp answers a request its parser refuses by itself, before any route or middleware: a
text/plain 400 that quotes the offending line back, and an ERROR record with a traceback
that quotes it again. That line is often an API key: a key file saved with CRLF line ends
(`-H "x-api-key: $(cat key.txt)"`), a pasted key with a stray control byte, a header over 8190
bytes. Keys are never logged (README), and clients print an error's body into their logs and
UIs, so:

- the records of the gateway's HTTP server go through `server_log`, whose filter rewrites
  every record carrying such an error in one line, wherever the gateway runs (`ctxlayer
  gateway`, the daemon's) and at any verbosity;
- the gateway's runner (runner.py) answers it as a JSON 400 that both providers' SDKs read
  (`errors.either_body`: which provider the client speaks to is in the head that could not
  be read), naming the kind of problem in `what_was_wrong`'s words.

Owns: `server_log`, `parser_error` and `what_was_wrong`. The server's other records (a
handler's traceback: a bug of ours) are aiohttp's, as they were.
"""

from __future__ import annotations

import logging
import re

from aiohttp.http_exceptions import (
    BadStatusLine,
    HttpProcessingError,
    InvalidHeader,
    LineTooLong,
)

#: what the log says instead; `%s` is the kind of error (LineTooLong, InvalidHeader, ...)
SAID = "refused a request the HTTP parser could not read: %s"

#: the C parser's message: llhttp's reason (one of its fixed strings), then the quoted bytes
_QUOTE_FOLLOWS = ":\n\n"

#: aiohttp's message for a TLS hello on its plain port (the only one it gives without quoting)
_TLS = "Received HTTPS traffic on an HTTP port"

#: what llhttp's reasons are made of ("Invalid header value char"): anything else is no reason
_REASON = re.compile(r"[A-Za-z][A-Za-z _-]{0,80}")

#: llhttp's reasons about the body's framing, not the head (a chunk size, its extensions; a
#: Content-Length's are about a header line)
_BODY = re.compile(r"chunk", re.I)

#: what a reason most often means, for the user who has to find the stray byte
_HINTS = {"missing expected lf after header value":
          " (a CR at a header value's end: a key read from a file saved with CRLF line ends?)"}


def parser_error(exc: BaseException | None) -> HttpProcessingError | None:
    """The parser's error in `exc` or in what it was raised from: a traceback prints the
    message of every exception in its chain."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, HttpProcessingError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class _Unquoted(logging.Filter):
    """Says a parser error in one line at INFO, as the gateway's other refused requests are
    (the client got its 400): the exception, whose message holds the raw bytes, is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = parser_error(record.exc_info[1] if record.exc_info else None)
        if found is None:
            return True
        record.msg, record.args = SAID, (type(found).__name__,)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno = min(record.levelno, logging.INFO)
        record.levelname = logging.getLevelName(record.levelno)
        # the logger let the record through at aiohttp's ERROR: ask again at the new level
        return logging.getLogger(record.name).isEnabledFor(record.levelno)


#: given to aiohttp as the server's logger (`web.AppRunner(logger=...)`)
server_log = logging.getLogger("ctxlayer.gateway.http")
server_log.addFilter(_Unquoted())


def what_was_wrong(exc: HttpProcessingError) -> str:
    """The kind of problem, in words that hold none of the request's bytes: the class of the
    error, and llhttp's reason where the message starts with one (the Python parser's
    messages quote from their first word, and are left out)."""
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 else "the limit of"
        return f"a line of the request head is longer than {limit} bytes"
    what = ("the request line could not be read" if isinstance(exc, BadStatusLine) else
            "a header line could not be read" if isinstance(exc, InvalidHeader) else
            "a line of the request head could not be read")
    if exc.message == _TLS:
        return f"{what}: it is TLS, and the gateway speaks plain HTTP (an http:// base URL)"
    reason, quoted, _ = exc.message.partition(_QUOTE_FOLLOWS)
    if not quoted or not _REASON.fullmatch(reason):  # no fixed reason of llhttp's
        return what
    if _BODY.search(reason):  # "invalid character in chunk size": the body's framing
        what = "the request body's framing could not be read"
    return f"{what}: {reason[:1].lower()}{reason[1:]}{_HINTS.get(reason.lower(), '')}"
