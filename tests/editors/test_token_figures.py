"""`ctxlayer chats` prints token figures as the editors' status bars read them (VS Code's
`compact`, with these cases in budgetView.test.ts; Neovim's `status.human`, asked here for
each). Before, the command printed "28.0k" and "111.6k" where the editors showed "28k" and
"112k"."""

from __future__ import annotations

import pytest
from test_editor_settings import _lua

from ctxlayer.commands.chats import k

TOKEN_FIGURES = [(0, "0"), (950, "950"), (999, "999"), (1000, "1k"), (15_188, "15.2k"),
                 (28_000, "28k"), (28_250, "28.3k"), (42_100, "42.1k"), (99_950, "100k"),
                 (111_600, "112k"), (128_000, "128k"), (839_491, "839k"), (999_499, "999k"),
                 (999_500, "1M"), (999_600, "1M"), (1_000_000, "1M"), (1_048_576, "1.05M"),
                 (1_125_000, "1.13M"), (2_000_000, "2M"), (2_500_000, "2.5M")]


@pytest.mark.parametrize("n,text", TOKEN_FIGURES)
def test_ctxlayer_chats_reads_a_token_figure_as_the_status_bars_do(n, text):
    assert k(n) == text


def test_neovims_status_line_reads_them_so():
    figures = [n for n, _ in TOKEN_FIGURES]
    human = "(function() local h = require('ctxlayer.status').human local out = {} " \
        f"for _, n in ipairs({{{', '.join(map(str, figures))}}}) do table.insert(out, h(n)) end " \
        "return out end)()"
    assert _lua(human) == [text for _, text in TOKEN_FIGURES]
