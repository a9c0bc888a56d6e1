"""One log record, one line: the format of the daemon's and the gateway's logs.

A record's message often carries what a client wrote (a model name, a field it got wrong, a
path): a line break in it forged a log line of its own, an escape sequence drove the terminal
that showed the log. The message is written with its control characters escaped
(`core.text.visible`); a traceback follows on its own lines as usual.
"""

from __future__ import annotations

import logging
import sys

from ctxlayer.core.text import visible

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class OneLine(logging.Formatter):
    def __init__(self, fmt: str = FORMAT) -> None:
        super().__init__(fmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = visible(record.message)
        return super().formatMessage(record)


def handler(log_file: str | None) -> logging.Handler:
    """Where a process logs (`--log-file`, else stderr: never stdout, the JSON-RPC channel in
    stdio mode), one line a record; OSError when the file cannot be opened."""
    out: logging.Handler = (logging.FileHandler(log_file, encoding="utf-8") if log_file
                            else logging.StreamHandler(sys.stderr))
    out.setFormatter(OneLine())
    return out
