"""The fixtures of the real-client tests; the helpers live in real_clients.py (a name of its own:
`conftest` is a different module in every test folder)."""

from real_clients import repo, stack  # noqa: F401
