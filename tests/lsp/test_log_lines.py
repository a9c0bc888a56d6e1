"""The daemon's log (`ctxlayer serve`'s stderr or file): one record, one line, whatever a client
put in its message; a traceback still follows on its own lines."""

from __future__ import annotations

import io
import logging

from ctxlayer.loglines import OneLine


def test_a_record_is_one_line_and_its_traceback_follows():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(OneLine())
    log = logging.getLogger("ctxlayer.test_log_lines")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("refused: %s", "messages[0].role: got 'x\nERROR forged \x1b[2J'")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed for %s", "model\r\nINFO forged")
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("refused: messages[0].role: got 'x\\nERROR forged \\x1b[2J'")
    assert lines[1].endswith("failed for model\\r\\nINFO forged")
    assert lines[2] == "Traceback (most recent call last):" and lines[-1] == "ValueError: boom"
    assert not any(line.startswith(("ERROR forged", "INFO forged")) for line in lines)
