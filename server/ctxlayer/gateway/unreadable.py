"""Requests the HTTP parser could not read, as the gateway's log says them: in one line naming
what was wrong, never with the bytes aiohttp quotes.

aiohttp answers a request its parser refuses by itself (a 400) and logs it at ERROR with a
traceback whose message quotes the offending line. That line is often an API key: a key file
saved with CRLF line ends (`-H "x-api-key: $(cat key.txt)"`), a pasted key with a stray control
byte, a header over 8190 bytes. Keys are never logged (README), so the records of the
gateway's HTTP server go through `server_log`, whose filter rewrites every record carrying such
an error, wherever the gateway runs (`ctxlayer gateway`, the daemon's) and at any verbosity.

Owns: `server_log`, the logger the gateway's aiohttp server writes to. Its other records (a
handler's traceback: a bug of ours) pass as they are.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

#: what the log says instead; `%s` is the kind of error (LineTooLong, InvalidHeader, ...)
SAID = "refused a request the HTTP parser could not read: %s"


def _parser_error(exc: BaseException | None) -> HttpProcessingError | None:
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
        found = _parser_error(record.exc_info[1] if record.exc_info else None)
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
