"""`ctxlayer chats`: the live conversations going through the running gateway (model, tokens
against the budget, the cache: the gateway's estimate of what the last turn kept in the
provider's cache next to what the provider said it read, the bill that makes, what was cut),
and with `--why ID` what its last turn dropped or shortened and why.

The gateway says where it listens in `gateway.json` of the state folder; `--url` names one.
Reads over loopback HTTP with the standard library, sending the state folder's token (the
gateway's `/ctxlayer/*` routes need it); no provider key is sent or needed. What a client or a
tool wrote (model names, ids, the summaries of messages) is printed with its control
characters escaped (`core.text.visible`).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ctxlayer.core.text import visible

#: What the provider charges for an input token read from its cache, and for one written to it,
#: against a plain one (Anthropic's prices; OpenAI charges no write, so there the rest is 1x).
CACHE_READ_PRICE = 0.1
CACHE_WRITE_PRICE = 1.25

BILL_HELP = (
    "columns: `est. cache` is the gateway's estimate of the last request's prefix kept in the "
    "provider's cache; `read` is what the provider said it read from its cache (its usage "
    "report; - when it sent none, while the request is under way, after it failed, and for "
    "a chat whose history the provider keeps (a Responses chain with previous_response_id), "
    "whose figures count a history the gateway never sees); `bill` is what the last request's input cost against "
    "sending everything uncached: (read x 0.1 + the rest x 1.25) / tokens for Claude models, "
    "whose uncached rest the gateway's breakpoints write to the cache, (read x 0.1 + the rest) "
    "/ tokens for the others; `dropped` is how many messages of the history the last "
    "request left out (summarized or dropped: `--why` lists them, and what it shortened). "
    "The 64 most recent conversations are listed; a last line says how many more the state "
    "folder keeps.")


def bill(conversation: dict) -> float | None:
    """The last request's input cost as a fraction of sending it all uncached (BILL_HELP);
    None when the provider reported no cache use."""
    tokens, read = conversation.get("tokens") or 0, conversation.get("cachedTokens")
    if read is None or tokens <= 0:
        return None
    read = min(read, tokens)
    write = CACHE_WRITE_PRICE if str(conversation.get("model", "")).startswith("claude") else 1.0
    return (read * CACHE_READ_PRICE + (tokens - read) * write) / tokens


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = BILL_HELP
    p.add_argument("--url", default=None,
                   help="the gateway's base URL (default: the one in the state folder's "
                        "gateway.json, written by a running gateway)")
    p.add_argument("--why", default=None, metavar="CONVERSATION",
                   help="what the last turn of this conversation dropped or shortened, and why")
    p.add_argument("--message", default=None, metavar="ID", help="with --why: one message")
    p.add_argument("--state-dir", type=Path, default=None, help="the state folder to look in")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")


def gateway_url(args: argparse.Namespace) -> str:
    """The gateway's base URL: --url, else the one `gateway.json` names; on loopback only, as
    the gateway listens, since the state folder's token is sent to it."""
    from ctxlayer.cli import UsageError
    from ctxlayer.paths import state_dir
    from ctxlayer.urls import is_loopback

    if args.url is not None:
        url, named = args.url.rstrip("/").removesuffix("/v1"), "--url"
    else:
        found = state_dir(args.state_dir) / "gateway.json"
        url, named = _announced(found), f"{found}: its \"anthropic\""
    try:  # a malformed one raised out of urllib as a traceback ('http://[::1', ':abc')
        parts = urllib.parse.urlsplit(url)
        if parts.port == 0:  # reading the port raises for one that is no number
            raise ValueError("port 0 is no gateway's")
    except ValueError as exc:
        raise UsageError(f"{named}: {visible(url)} is not a URL ({exc})") from None
    if any(ord(c) < 32 or ord(c) == 127 for c in url) or parts.scheme not in ("http", "https"):
        raise UsageError(f"{named}: {visible(url)} is not an http:// URL of the gateway")
    if not is_loopback(parts.hostname or ""):
        raise UsageError(f"{visible(url)}: the gateway listens on loopback only (127.0.0.1, ::1, "
                         "localhost); the state folder's token is sent nowhere else")
    return url


def _announced(found: Path) -> str:
    from ctxlayer.cli import UsageError

    try:
        announced = json.loads(found.read_text())
    except FileNotFoundError:
        raise UsageError(f"no gateway is running ({found} is absent): start `ctxlayer gateway`, "
                         "or `ctxlayer serve` with [gateway] enabled = true, or pass --url"
                         ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{found}: unreadable ({exc}); pass --url") from None
    url = announced.get("anthropic") if isinstance(announced, dict) else None
    if not isinstance(url, str):  # a gateway writes {"anthropic": URL, ...}: not one's
        raise UsageError(f"{found}: no gateway URL under \"anthropic\" (a running gateway "
                         "writes it again at start); pass --url")
    return _still_serving(announced, url).rstrip("/")


def _still_serving(announced: dict, url: str) -> str:
    """The gateway named (``url``) while its process runs, else the newest of those it
    replaced that still runs (one killed -9 could not hand the file back: `chats` said no
    gateway answered while an earlier one served); the one named when none is known to."""
    from ctxlayer.statefiles import another_runs

    if another_runs(announced.get("pid")):
        return url
    earlier = announced.get("replaced")
    for other in earlier if isinstance(earlier, list) else ():
        if isinstance(other, dict) and isinstance(other.get("anthropic"), str) \
                and another_runs(other.get("pid")):
            return other["anthropic"]
    return url


def token(args: argparse.Namespace) -> str:
    """The token the gateway's `/ctxlayer/*` routes ask for (the gateway made it at start)."""
    from ctxlayer.cli import UsageError
    from ctxlayer.paths import state_dir
    from ctxlayer.statefiles import TokenFileError, read_token, token_file

    try:
        return read_token(token_file(state_dir(args.state_dir)))
    except (TokenFileError, OSError) as exc:
        raise UsageError(f"{exc}; pass --state-dir to name the gateway's state folder"
                         ) from None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error (the HTTPError below says where it pointed), never followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def fetch(url: str, bearer: str) -> dict:
    """The gateway's answer at ``url``, asked with the state folder's token: only over
    loopback, and never through the environment's proxy (urllib sends a request for
    127.0.0.1 to `HTTP_PROXY` too, and the token, which also opens `serve --tcp`, with it)."""
    from ctxlayer.cli import UsageError

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {bearer}"})
    # nor after a redirect: urllib's handler sends the token on to wherever it points (a
    # port a dead gateway named, now another app's, answering 302 to a host off this machine)
    straight = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    try:
        with straight.open(request, timeout=10) as answer:
            data = json.loads(answer.read())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        if exc.code == 400:  # the request named something the gateway has not: it says what
            raise UsageError(str(body)) from None
        raise UsageError(f"{url}: {exc.code}: {body}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise UsageError(f"{url}: the gateway does not answer ({exc}); is it running?") from None
    except ValueError as exc:  # an answer that is not JSON: not the gateway's
        raise UsageError(f"{url}: not a gateway's answer ({exc})") from None


def k(n: int) -> str:
    """A token figure as the editors' status bars read it (VS Code's `compact`, Neovim's
    `status.human`): 950, 15,188 -> "15.2k", 28,000 -> "28k", from 100k on whole thousands
    (111,600 -> "112k"), from 999,500 on millions: "1M" (a 1M window less a small answer
    reserve), 1,048,576 -> "1.05M". Before, it printed "28.0k" and "111.6k" where the editors
    showed "28k" and "112k"."""
    if n < 1000:
        return str(n)
    thousands = _fixed(n / 1000, 0 if n >= 100_000 else 1)
    if Decimal(thousands) < 1000:
        return _trimmed(thousands) + "k"
    return _trimmed(_fixed(n / 1_000_000, 2)) + "M"


def _fixed(x: float, places: int) -> str:
    """`x` to `places` decimals as JavaScript's toFixed and LuaJIT's %f round it: the float's
    exact value, half up (Python's own format rounds a tie such as 28.25 to even: "28.2")."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def _trimmed(fixed: str) -> str:
    return fixed.rstrip("0").rstrip(".") if "." in fixed else fixed


def refuse_idle_flags(args: argparse.Namespace) -> None:
    """A flag that would do nothing is refused, as `inspect` refuses its (`--message x`
    alone, `--why ''` listed every chat without a word)."""
    from ctxlayer.cli import UsageError

    if args.why == "":
        raise UsageError("--why: give a conversation's id (`ctxlayer chats` lists them)")
    if args.message is not None and args.why is None:
        raise UsageError("--message: only with --why CONVERSATION")
    if args.message == "":
        raise UsageError("--message: give a message's id (`ctxlayer chats --why ID` lists "
                         "what was cut)")


def run(args: argparse.Namespace) -> int:
    refuse_idle_flags(args)
    base = gateway_url(args)
    bearer = token(args)
    if args.why is not None:
        query = {"conversationId": args.why}
        if args.message is not None:
            query["messageId"] = args.message
        data = fetch(f"{base}/ctxlayer/why?{urllib.parse.urlencode(query)}", bearer)
        if args.json:
            print(json.dumps(data, indent=2))
            return 0
        entries = data.get("entries", [])
        if not entries:
            print(f"nothing was dropped or shortened of message {visible(args.message)}"
                  if args.message else "nothing was dropped or shortened")
        for e in entries:
            who = e.get("messageId") or f"#{e.get('index')}"
            print(visible(f"{e['action']:<12} {who:<24} {e['tokensBefore']:>7} -> "
                          f"{e['tokensAfter']:<7} {e['reason']}: {e['summary']}"))
        return 0
    data = fetch(f"{base}/ctxlayer/conversations", bearer)
    if args.json:
        print(json.dumps(data, indent=2))
        return _warned(data)
    rows = data.get("conversations", [])
    if not rows:
        print("no live conversations yet")
        return _warned(data)
    print(f"{'conversation':<20} {'model':<22} {'source':<8} {'tokens':>15} {'est. cache':>10} "
          f"{'read':>7} {'bill':>5} {'dropped':>7}  updated")
    for c in rows:
        used = f"{k(c['tokens'])} / {k(c['budget'])}"
        read = c.get("cachedTokens")
        cost = bill(c)
        print(visible(f"{c['conversationId']:<20} {c['model']:<22} {c['source']:<8} {used:>15} "
                      f"{k(c['cacheReuseTokens']):>10} {'-' if read is None else k(read):>7} "
                      f"{'-' if cost is None else f'{cost:.0%}':>5} {c['dropped']:>7}  "
                      f"{c['updatedAt']}"))
    more = data.get("notListed", 0)
    if more:
        print(f"and {more} more conversation{'s' if more != 1 else ''} the state folder keeps, "
              f"not listed: the {len(rows)} most recent are")
    return _warned(data)


def _warned(data: dict) -> int:
    """1 after saying on stderr what the gateway could not list (the state folder failed:
    only the live conversations are listed), as `ls` lists what it can read; else 0."""
    warning = data.get("warning")
    if not warning:
        return 0
    print(visible(f"ctxlayer chats: only the live conversations are listed: {warning}"),
          file=sys.stderr)
    return 1
