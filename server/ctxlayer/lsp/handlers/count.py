"""ctx/count: tokens of texts and/or messages, with the model's tokenizer.

`tokens` lists the texts' counts, then the messages' (each with its per-message overhead);
`total` is their sum, plus the reply priming when messages were given (what the request costs).
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.core.tokens import OPENAI_FORMAT, message_tokens
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import maps_errors
from ctxlayer.lsp.server import CtxServer


@maps_errors
async def count(ls: CtxServer, params: dict | None) -> dict:
    """Handle ctx/count (small inputs on the loop, large ones on a worker thread)."""
    req = parse(params, protocol.CountParams)
    texts = req.texts or []
    messages = parse(req.messages or [], list[protocol.Message], "messages")
    size = sum(map(len, texts)) + sum(len(m.content) for m in messages)

    def work(counter) -> protocol.CountResult:
        tokens = [counter.count(t) for t in texts]
        tokens += [message_tokens(m, counter) for m in messages]
        priming = OPENAI_FORMAT.reply_priming if messages else 0
        return protocol.CountResult(tokens=tokens, total=sum(tokens) + priming)

    return to_wire(await ls.daemon.tokenizers.run(ls.model(req.model), work, size=size))


def register(server: CtxServer) -> None:
    server.feature("ctx/count")(count)
