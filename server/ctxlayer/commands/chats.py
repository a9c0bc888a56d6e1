"""`ctxlayer chats`: the live conversations going through the running gateway (model, tokens
against the budget, what the last turn kept in the provider's cache, what was cut), and with
`--why ID` what its last turn dropped or shortened and why.

The gateway says where it listens in `gateway.json` of the state folder; `--url` names one.
Reads over loopback HTTP with the standard library, sending the state folder's token (the
gateway's `/ctxlayer/*` routes need it); no provider key is sent or needed.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None,
                   help="the gateway's base URL (default: the one in the state folder's "
                        "gateway.json, written by a running gateway)")
    p.add_argument("--why", default=None, metavar="CONVERSATION",
                   help="what the last turn of this conversation dropped or shortened, and why")
    p.add_argument("--message", default=None, metavar="ID", help="with --why: one message")
    p.add_argument("--state-dir", type=Path, default=None, help="the state folder to look in")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")


def gateway_url(args: argparse.Namespace) -> str:
    from ctxlayer.cli import UsageError
    from ctxlayer.paths import state_dir

    if args.url:
        return args.url.rstrip("/").removesuffix("/v1")
    found = (args.state_dir or state_dir()) / "gateway.json"
    try:
        return json.loads(found.read_text())["anthropic"].rstrip("/")
    except FileNotFoundError:
        raise UsageError(f"no gateway is running ({found} is absent): start `ctxlayer gateway`, "
                         "or `ctxlayer serve` with [gateway] enabled = true, or pass --url"
                         ) from None
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{found}: unreadable ({exc}); pass --url") from None


def token(args: argparse.Namespace) -> str:
    """The token the gateway's `/ctxlayer/*` routes ask for (the gateway made it at start)."""
    from ctxlayer.cli import UsageError
    from ctxlayer.paths import state_dir
    from ctxlayer.statefiles import TokenFileError, read_token, token_file

    try:
        return read_token(token_file(args.state_dir or state_dir()))
    except (TokenFileError, OSError) as exc:
        raise UsageError(f"{exc}; pass --state-dir to name the gateway's state folder"
                         ) from None


def fetch(url: str, bearer: str) -> dict:
    from ctxlayer.cli import UsageError

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {bearer}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        raise UsageError(f"{url}: {exc.code}: {body}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise UsageError(f"{url}: the gateway does not answer ({exc}); is it running?") from None


def k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def run(args: argparse.Namespace) -> int:
    base = gateway_url(args)
    bearer = token(args)
    if args.why:
        query = {"conversationId": args.why}
        if args.message:
            query["messageId"] = args.message
        data = fetch(f"{base}/ctxlayer/why?{urllib.parse.urlencode(query)}", bearer)
        if args.json:
            print(json.dumps(data, indent=2))
            return 0
        entries = data.get("entries", [])
        if not entries:
            print("nothing was dropped or shortened")
        for e in entries:
            who = e.get("messageId") or f"#{e.get('index')}"
            print(f"{e['action']:<12} {who:<24} {e['tokensBefore']:>7} -> {e['tokensAfter']:<7} "
                  f"{e['reason']}: {e['summary']}")
        return 0
    data = fetch(f"{base}/ctxlayer/conversations", bearer)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    rows = data.get("conversations", [])
    if not rows:
        print("no live conversations yet")
        return 0
    print(f"{'conversation':<20} {'model':<22} {'source':<8} {'tokens':>15} {'cached':>8} "
          f"{'cut':>4}  updated")
    for c in rows:
        used = f"{k(c['tokens'])} / {k(c['budget'])}"
        print(f"{c['conversationId']:<20} {c['model']:<22} {c['source']:<8} {used:>15} "
              f"{k(c['cacheReuseTokens']):>8} {c['dropped']:>4}  {c['updatedAt']}")
    return 0
