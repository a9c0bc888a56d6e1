"""ctxlayer_client: talk to a ctxlayer daemon from Python, async or blocking.

    from ctxlayer_client import AsyncClient
    client = await AsyncClient.spawn(root="/path/to/repo")        # or .connect(host, port, token)
    result = await client.count(texts=["hello"])                   # -> protocol.CountResult
    client.on("ctx/segmentChanged", lambda change: print(change.changed))
    await client.close()

    from ctxlayer_client import Client                             # the blocking twin
    with Client.spawn(root=".") as c:
        print(c.segment().tokens)

Every request has a timeout (`timeout=` per client, per call). Imports only ctxlayer.protocol,
the standard library and msgspec.
"""

from ctxlayer_client.aio import DEFAULT_COMMAND, AsyncClient, ConnectionClosed, RpcError
from ctxlayer_client.framing import FramingError, encode, read_message
from ctxlayer_client.sync import Client

__all__ = [
    "DEFAULT_COMMAND", "AsyncClient", "Client", "ConnectionClosed", "FramingError", "RpcError",
    "encode", "read_message",
]
