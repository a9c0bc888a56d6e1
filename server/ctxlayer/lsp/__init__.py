"""The daemon's JSON-RPC face: the ONLY package that imports pygls and lsprotocol.

Code map:
- server.py     CtxServer (one per connection) and its plug-in points.
- overrides.py  CtxProtocol and every other reach into pygls' private parts (PRIVATE).
- daemon.py     Daemon: per-process services (tokenizers, live workspaces, named services).
- live.py       LiveWorkspace: first scan, watcher, segment fan-out to connections.
- handlers/     one module per method family, each with register(server), in order.
- transport.py  framing and envelope checks in front of pygls (survives bad input).
- stdio.py, tcp.py  the two ways to serve; tcp.py holds the token handshake.
- convert.py    plain-dict params -> protocol structs (-32602 naming the field) -> builtins.
- errors.py     domain error kinds -> JSON-RPC codes, in one place.
- logs.py       stderr / file / window/logMessage; never stdout.
"""
