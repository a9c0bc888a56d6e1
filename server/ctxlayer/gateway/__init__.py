"""The HTTP face of ctxlayer: an OpenAI- and Anthropic-compatible gateway on loopback.

A chat tool changes one base URL and its requests come through here: each is prepared by the
state exactly as `ctx/prepare` prepares it (fitted to the model's window, conversation
recognized, cache prefix kept stable), forwarded to the upstream provider with the client's
own keys, and the answer comes back unchanged (streamed as it arrives) with `x-ctxlayer-*`
headers; the usage it reports goes to the conversation's session.

The only package that imports aiohttp. Thin: no context logic here (that is the state's and
the core's); no API key is logged or stored.
"""

from ctxlayer.gateway.server import GatewayServer, NotLoopback, check_loopback, start_gateway

__all__ = ["GatewayServer", "NotLoopback", "check_loopback", "start_gateway"]
