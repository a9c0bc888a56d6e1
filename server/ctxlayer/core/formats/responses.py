"""The OpenAI Responses format: `instructions` plus `input` (a string, or a list of items),
read for the engine and written back as the very items the client sent.

For the engine, `instructions` is a leading system message (kept as it is), a string `input`
one user message, and the items are grouped as a Chat Completions client would see them:
a user, system or developer `message` is one message; a run of the model's own items (its
`message`s, `reasoning` items, `function_call`s and any other call or item this version does
not know) is one assistant message whose tool calls are the run's calls, by `call_id`; each
`function_call_output` (any item with a `call_id` whose type ends in `_output`) is a tool
message. So a call and its output live and die together, and a reasoning item goes with the
call or answer it led to (the provider refuses one without the other). An output whose call is
not in the input answers one an `item_reference` before it stands for (a stored item the
provider puts in its place): the reference's message calls it, so the two go together too.
A `program` (programmatic tool calling) is a call whose `code` and `fingerprint` (which
the provider checks on replay) go as they came, never outlined: its code is the call's
arguments (what summaries and the ledger read of it), its fingerprint costed as a part; its
`program_output`'s text is its `result`. A `compaction` item (the provider's, encrypted) stays
whole where it is, and so does an item of
any other type with a system or developer role (Codex's `additional_tools`, the tools of its
default model) or a `configuration_update`: a system message, kept as it came. Writing back emits the
kept groups' items untouched (a `reasoning` item's `encrypted_content` byte for byte); a
shortened message gets its new text in its text parts, each `message` item of a run its own
share of it (a commentary and its final answer stay two). Repairs keep the result valid (an
output without its call, or a call without its output, goes; reasoning left alone goes with
it), each one audited.

Owns this format's reading and writing; it never decides what to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ctxlayer.core.formats import media
from ctxlayer.core.formats.common import (
    Decoded,
    Encoded,
    SentTokens,
    audit,
    bad,
    client_id,
    derive_id,
    expect_dict,
    expect_str,
    new_arguments,
    parts_gone,
    share_text,
)
from ctxlayer.core.formats.openai_reasoning import last_user
from ctxlayer.core.formats.responses_reasoning import every_turn_read
from ctxlayer.core.guessed import BY_FILE_ID, BY_URL
from ctxlayer.core.tokens import OPENAI_FORMAT, Tokenizer, conversation_tokens, tools_tokens
from ctxlayer.protocol import Message, ToolCall

_json = msgspec.json.Encoder()

#: roles of a `message` item; the model's own (assistant) messages join the model's run
ROLES = ("user", "system", "developer", "assistant")
#: the roles of an item (of any type) that instructs the model: a system item
INSTRUCTING = ("system", "developer")
#: items with no role that set how the model answers from there on (reasoning effort, the
#: text's format): no summary can stand in for one, so each is a system item too
SETTINGS = frozenset({"configuration_update"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
#: why a request with `previous_response_id`, or `conversation` (whose items the provider
#: puts before the input), is sent as it came
NOT_FITTABLE = ("{}: the earlier turns are kept by the provider, not in the request; sent as "
                "it came, its new input counted")
#: why a request with no `input` (it is optional) and no `instructions` is sent as it came
NO_INPUT = ("no input to fit: the prompt is the provider's (a stored `prompt`, an earlier "
            "response); sent as it came, its tools counted")


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in _TEXT_PARTS


def unfittable(request: dict) -> str | None:
    """Why this request cannot be fitted (its history lives on the provider), else None."""
    prev, conv = request.get("previous_response_id"), request.get("conversation")
    if isinstance(prev, str) and prev:
        return NOT_FITTABLE.format("previous_response_id")
    if (isinstance(conv, str) and conv) or (isinstance(conv, dict) and conv.get("id")):
        return NOT_FITTABLE.format("conversation")
    return None


#: the calls and outputs this version knows; an unknown item with a `call_id` is one too
CALLS = frozenset({"function_call", "custom_tool_call", "computer_call", "local_shell_call",
                   "shell_call", "apply_patch_call", "program"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "computer_call_output",
                     "local_shell_call_output", "shell_call_output", "apply_patch_call_output",
                     "program_output"})
#: calls that go back as they came, never outlined, their code the call's arguments and their
#: other fields costed as parts: a `program` (programmatic tool calling) carries its `code` and
#: a `fingerprint` of it that the provider checks on replay: either one cut, and the request
#: is refused
SEALED_CALLS = frozenset({"program"})
#: outputs whose text is not under `output`: a program's is its `result`
_OUTPUT_TEXT = {"program_output": "result"}


def output_key(item: dict) -> str:
    """The field of an output item that holds its text (`output`, a program's `result`)."""
    return _OUTPUT_TEXT.get(item.get("type"), "output")  # type: ignore[arg-type]


def _has_call_id(item: dict) -> bool:
    """Whether an item names a call: a `call_id` that is not null. The SDK's types make it
    optional on some items (a tool search the provider ran has none), and a client that dumps
    the output items it got sends those as null: an item the gateway does not know, as when
    the key is absent."""
    return item.get("call_id") is not None


def is_output(item: dict) -> bool:
    """A tool's answer to a call: `function_call_output` and the like (by `call_id`)."""
    kind = item.get("type")
    return kind in OUTPUTS or (isinstance(kind, str) and kind.endswith("_output")
                               and _has_call_id(item))


def answered_call(item: dict) -> Any:
    """The `call_id` an output answers. A `local_shell_call_output` names it by its `id` (the
    API's shape); the Agents SDK sends it as `call_id`, as every other output does."""
    if _has_call_id(item) or item.get("type") != "local_shell_call_output":
        return item.get("call_id")
    return item.get("id")


def is_call(item: dict) -> bool:
    """A call the model made that an output answers (`function_call`, `custom_tool_call`...)."""
    kind = item.get("type")
    return kind in CALLS or (_has_call_id(item) and not is_output(item) and kind != "message"
                             and "role" not in item)


def _unseen(part: dict) -> str:
    """How an `input_file` without its data was sent (its cost guessed): by file_id, by URL."""
    if isinstance(part.get("file_id"), str):
        return BY_FILE_ID
    return BY_URL if isinstance(part.get("file_url"), str) else ""


def _unseen_image(part: dict, url: object) -> str:
    """How an `input_image` without its data was sent: by file_id, by URL (not a data URL)."""
    if isinstance(part.get("file_id"), str):
        return BY_FILE_ID
    return BY_URL if isinstance(url, str) and not url.startswith("data:") else ""


def _part_tokens(part: dict, where: str, counter: Tokenizer, model: object = None
                 ) -> tuple[int, str]:
    """Tokens of one non-text content part by the rules of the model that reads it (images:
    OpenAI's tiles, Claude's pixels when a Claude model is asked in this shape), or a stated
    estimate, and the part as an audit line names it."""
    kind = part.get("type")
    if kind == "input_image":
        url = part.get("image_url")
        data = media.split_data_url(url) if isinstance(url, str) else None
        size = media.size_of_base64(data[1]) if data else None
        detail = part.get("detail")
        detail = detail if isinstance(detail, str) else "auto"
        tokens = media.image_tokens(model, size, detail)
        # by file_id or URL: a guess, said so (`guessed`), as for an unseen file
        unseen = _unseen_image(part, url) if data is None and media.image_guessed(
            model, detail) else ""
        return tokens, media.label("image", tokens, size, unseen=unseen)
    if kind == "input_file":
        data = part.get("file_data")
        if isinstance(data, str):
            split = media.split_data_url(data)
            data = split[1] if split else data
        tokens = media.pdf_tokens(data if isinstance(data, str) else None)
        name = part.get("filename")
        return tokens, media.label("file", tokens, name=name if isinstance(name, str) else "",
                                   unseen=_unseen(part) if data is None else "")
    if kind == "input_audio":
        audio = expect_dict(part.get("input_audio"), f"{where}.input_audio")
        tokens = media.audio_tokens(expect_str(audio.get("data"), f"{where}.input_audio.data",
                                               "base64 audio"), str(audio.get("format", "")))
        return tokens, media.label("audio", tokens)
    if kind == "refusal":
        tokens = counter.count(expect_str(part.get("refusal"), f"{where}.refusal"))
        return tokens, media.label("refusal", tokens)
    tokens = counter.count(_json.encode(part).decode())  # a part this version does not know
    return tokens, media.label(str(kind), tokens)


def _content(value: Any, where: str, counter: Tokenizer, model: object = None
             ) -> tuple[str, int, list[str]]:
    """(the text the engine may shorten, tokens of the other parts, what they are) of a
    content or output."""
    if isinstance(value, str):
        return value, 0, []
    if not isinstance(value, list):
        raise bad(where, f"expected a string or a list of content parts, got "
                         f"{type(value).__name__}")
    texts, parts, labels = [], 0, []
    for k, part in enumerate(value):
        f = f"{where}[{k}]"
        part = expect_dict(part, f)
        expect_str(part.get("type"), f"{f}.type", "the part's type")
        if _is_text(part):
            texts.append(expect_str(part.get("text"), f"{f}.text"))
        else:
            tokens, name = _part_tokens(part, f, counter, model)
            parts += tokens
            labels.append(name)
    return "\n".join(texts), parts, labels


def _output(item: dict, where: str, counter: Tokenizer, model: object = None
            ) -> tuple[str, int, list[str]]:
    """(the text the engine may shorten, tokens of the rest, what it is) of a call's output.
    Besides text and content parts: a shell call's output is a list of runs (`stdout`,
    `stderr`, `outcome`; one run's `stdout` is its text, several runs are kept as they came),
    a computer call's is one screenshot, costed as an image. A program's output is its
    `result`."""
    value = item.get(output_key(item), "")
    if item.get("type") == "shell_call_output" and isinstance(value, list):
        runs = [expect_dict(run, f"{where}[{k}]") for k, run in enumerate(value)]
        if len(runs) == 1 and isinstance(runs[0].get("stdout"), str):
            rest = {k: v for k, v in runs[0].items() if k != "stdout"}
            tokens = counter.count(_json.encode(rest).decode()) if rest else 0
            return runs[0]["stdout"], tokens, [media.label("outcome", tokens)] if rest else []
        tokens = counter.count(_json.encode(value).decode())
        return "", tokens, [media.label(f"{len(runs)} shell runs", tokens)]
    if isinstance(value, dict):
        shot = value.get("type") == "computer_screenshot"
        tokens, name = _part_tokens({**value, "type": "input_image"} if shot else value, where,
                                    counter, model)
        return "", tokens, [name]
    return _content(value, where, counter, model)


def _one_run(value: Any) -> bool:
    """Whether a shell call's output is one run whose `stdout` is its text (`_output`)."""
    return isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) \
        and isinstance(value[0].get("stdout"), str)


def _reasoning_tokens(item: dict, where: str, counter: Tokenizer, read: bool) -> int:
    """A reasoning item's cost: where the provider reads it again (`read`:
    responses_reasoning.py), the larger of its summary's text and what its encrypted content
    seals (estimated from its size: base64 of about four bytes a token; the provider does not
    publish the rule), as Anthropic's thinking is costed: the provider renders the sealed
    reasoning, not the summary written from it, so adding both counted a summary it never
    reads (gpt-5.6, 190-word summaries: 6,818 counted where the provider counted 4,100).
    Elsewhere, its summary's text."""
    n = 0
    for k, part in enumerate(_parts_list(item, "summary", where)):
        part = expect_dict(part, f"{where}.summary[{k}]")
        if isinstance(part.get("text"), str):
            n += counter.count(part["text"])
    for part in _parts_list(item, "content", where):
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            n += counter.count(part["text"])
    sealed = item.get("encrypted_content")
    if sealed is not None:
        expect_str(sealed, f"{where}.encrypted_content")
        if read:
            n = max(n, _encrypted_tokens(item, where, counter))
    return n


def _parts_list(item: dict, key: str, where: str) -> list:
    """A reasoning item's `summary` or `content`: a list, or absent / null (none). Anything
    else (`"summary": 5`) was a TypeError, a 500 from the gateway: a 400 naming it."""
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(f"{where}.{key}", f"expected a list of parts, got {type(value).__name__}")
    return value


def _encrypted_tokens(item: dict, where: str, counter: Tokenizer) -> int:
    """An item's encrypted content, costed from its size."""
    return media.encrypted_tokens(expect_str(item.get("encrypted_content"),
                                             f"{where}.encrypted_content"), counter)



def _json_object(text: str) -> bool:
    """Whether ``text`` reads as a JSON object (what a call's arguments are outlined from)."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(msgspec.json.decode(text), dict)
    except msgspec.DecodeError:
        return False

def _call(item: dict, where: str) -> ToolCall:
    cid = expect_str(item.get("call_id"), f"{where}.call_id", "the call's id")
    name = item.get("name") if isinstance(item.get("name"), str) else str(item.get("type"))
    args = item.get("arguments", item.get("input"))
    if not isinstance(args, str):  # computer and shell calls carry objects: their JSON
        args = _json.encode({k: v for k, v in item.items()
                             if k not in ("id", "call_id", "type", "status")}).decode()
    return ToolCall(id=cid, name=name, arguments=args,
                    custom=item.get("type") == "custom_tool_call")


class _Group:
    """The items of one engine message while it is being read."""

    def __init__(self, role: str, first: int, pinned: bool = False) -> None:
        self.role, self.items, self.pinned = role, [first], pinned
        self.texts: list[str] = []
        self.parts = 0
        self.labels: list[str] = []  # what the parts are, as an audit line names them
        self.calls: list[ToolCall] = []
        self.call_id: str | None = None

    def cost(self, tokens: int, labels: list[str]) -> None:
        self.parts += tokens
        self.labels += labels


def _read_item(item: dict, i: int, group: _Group, counter: Tokenizer, turn_start: int,
               model: object = None) -> None:
    """Add item `i` to `group` (its text, the tokens of the rest, its call); the reasoning
    before `turn_start` is not read again; `model` reads the images."""
    where = f"input[{i}]"
    kind = item.get("type")
    if "role" in item and kind in (None, "message"):
        text, parts, labels = _content(item.get("content"), f"{where}.content", counter, model)
        if text:
            group.texts.append(text)
        group.cost(parts, labels)
    elif kind == "reasoning":
        tokens = _reasoning_tokens(item, where, counter, i > turn_start)
        group.cost(tokens, [media.label("reasoning", tokens)] if tokens else [])
    elif kind == "compaction":  # encrypted as reasoning is: costed by its size alike
        tokens = _encrypted_tokens(item, where, counter) + 1
        group.cost(tokens, [media.label("compaction", tokens)])
    elif is_output(item):
        group.call_id = expect_str(answered_call(item), f"{where}.call_id", "the call's id")
        text, parts, labels = _output(item, f"{where}.{output_key(item)}", counter, model)
        group.texts.append(text)
        group.cost(parts, labels)
        loads = item.get("tools")
        if isinstance(loads, list) and loads:  # a tool search's output: what it loads
            tokens = counter.count(_json.encode(loads).decode())
            group.cost(tokens, [media.label(f"{len(loads)} tools loaded", tokens)])
    elif is_call(item) and kind in SEALED_CALLS:
        # its code is the call's arguments, so that its summary line and the ledger read it
        # (empty, they said `program()` and never saw the file it names); the rest (the
        # fingerprint) is costed as a part. A call's arguments are outlined when they are a
        # JSON object, and the writer never rewrites a sealed call: code that reads as one
        # (a dict literal) is costed as a part too, else the trim counted it outlined while
        # it went whole (3,179 tokens sent where the trim said 1,328 of a 1,500 budget)
        code = item.get("code")
        code = code if isinstance(code, str) and not _json_object(code) else ""
        group.calls.append(ToolCall(id=expect_str(item.get("call_id"), f"{where}.call_id",
                                                  "the call's id"), name=str(kind),
                                    arguments=code))
        tokens = counter.count(_json.encode({k: v for k, v in item.items() if k not in (
            "id", "call_id", "type", "status", *(("code",) if code else ()))}).decode())
        group.cost(tokens, [media.label(str(kind), tokens)])
    elif is_call(item):
        group.calls.append(_call(item, where))
    elif kind == "image_generation_call" and isinstance(item.get("result"), str):
        # the image it made (base64): costed as an image, its other fields by their JSON
        tokens, _ = _part_tokens({"type": "input_image", "image_url":
                                  f"data:image/png;base64,{item['result']}"}, where, counter,
                                 model)
        tokens += counter.count(_json.encode(
            {k: v for k, v in item.items() if k != "result"}).decode())
        group.cost(tokens, [media.label("generated image", tokens)])
    else:  # an item this version does not know: costed by its JSON, kept as it is
        tokens = counter.count(_json.encode(item).decode())
        group.cost(tokens, [media.label(str(kind or "item"), tokens)])


def _groups(items: list, counter: Tokenizer, turn_start: int, model: object = None
            ) -> list[_Group]:
    out: list[_Group] = []
    run: _Group | None = None  # the model's current run of items
    for i, item in enumerate(items):
        where = f"input[{i}]"
        item = expect_dict(item, where)
        kind = item.get("type")
        if kind is not None:
            expect_str(kind, f"{where}.type", "the item's type")
        role = item.get("role")
        if "role" in item and kind in (None, "message") and role not in ROLES:
            raise bad(f"{where}.role", f"expected one of {', '.join(ROLES)}, got {role!r}")
        if "role" in item and kind in (None, "message") and role != "assistant":
            run = None
            group = _Group("system" if role in ("system", "developer") else "user", i)
        elif is_output(item):
            run = None
            group = _Group("tool", i)
        elif role in INSTRUCTING or kind in SETTINGS:
            # the client's own instructions in another shape (Codex's `additional_tools`: its
            # default model's every tool, role developer; a settings update): a system item
            # kept as it came, whatever its type. In a model's run it was summarized as the
            # model's words, and the developer messages after it lost their place in the lead
            run = None
            group = _Group("system", i, pinned=True)
        elif kind == "compaction":
            # the provider's summary of the earlier history (server-side, or Codex's remote
            # compaction), encrypted: no summary of ours can stand in for it, so it stays as
            # it came. What comes before it is costed and fitted as any item: the API reads
            # the user messages a compaction window keeps before it (Codex sends its
            # instructions there too), and says nothing of the rest
            run = None
            group = _Group("assistant", i, pinned=True)
        elif run is not None:
            run.items.append(i)
            _read_item(item, i, run, counter, turn_start, model)
            continue
        else:
            run = group = _Group("assistant", i)
        _read_item(item, i, group, counter, turn_start, model)
        out.append(group)
    _pair_references(items, out)
    return out


def _pair_references(items: list, groups: list[_Group]) -> None:
    """An output whose call is not in the input answers one an `item_reference` before it
    names (a stored item the provider puts in its place): the reference's run gets that call,
    so the engine keeps or drops the two together (an output alone is refused, and so is a
    call without its output). One pass, the nearest reference before each such output."""
    called = {c.id for g in groups for c in g.calls}
    ref: tuple[_Group, Any] | None = None  # the last run with a reference, and that item
    for g in groups:
        if g.role == "assistant":
            found = [items[k] for k in g.items if items[k].get("type") == "item_reference"]
            if found:
                ref = (g, found[-1])
        elif g.role == "tool" and g.call_id not in called and ref is not None:
            run, item = ref
            run.calls.append(ToolCall(id=g.call_id, name="item_reference",  # type: ignore[arg-type]
                                      arguments=_json.encode({"id": item.get("id")}).decode()))
            called.add(g.call_id)  # type: ignore[arg-type]


def decode(payload: dict, counter: Tokenizer, previous: Decoded | None = None,
           whole: bool = False) -> Decoded:  # whole: every item is read here
    if not isinstance(payload, dict):
        raise bad("input", "expected a Responses request object")
    instructions = payload.get("instructions")
    raw = payload.get("input")
    msgs: list[Message] = []
    sources: list[Any] = []
    index: dict[str, int] = {}
    derived: set[str] = set()

    def add(m: Message, source: Any, own: str | None, where: str) -> None:
        mid = own or m.id
        if mid in index:
            raise bad(f"{where}.id", f"the same id as another item ({mid!r})")
        if own is None:
            derived.add(mid)  # type: ignore[arg-type]
        index[mid] = len(msgs)  # type: ignore[index]
        msgs.append(msgspec.structs.replace(m, id=mid))
        sources.append(source)

    if instructions is not None:
        text = expect_str(instructions, "instructions")
        add(Message(role="system", content=text, id=derive_id("rs", "i", text)),
            "instructions", None, "instructions")
    if isinstance(raw, str):
        add(Message(role="user", content=raw, id=derive_id("rs", "s", raw)), "string", None,
            "input")
    elif raw is not None:
        if not isinstance(raw, list):
            raise bad("input", f"expected a string or a list of items, got {type(raw).__name__}")
        # the reasoning items after the last user message are the turn's, read again
        turn_start = -1 if every_turn_read(payload) else last_user(raw)
        for g in _groups(raw, counter, turn_start, payload.get("model")):
            first = raw[g.items[0]]
            text = "\n".join(g.texts)
            own = client_id(first)
            m = Message(role=g.role, content=text, tool_calls=g.calls or None,  # type: ignore
                        tool_call_id=g.call_id, parts_tokens=g.parts or None, pinned=g.pinned,
                        parts=g.labels or None,
                        id=own or derive_id("rs", str(g.items[0]), g.role, text, g.call_id or "",
                                            *(c.id for c in g.calls)))
            add(m, g.items, own, f"input[{g.items[0]}]")
    return Decoded(fmt="responses", messages=msgs, payload=payload, sources=sources,  # type: ignore
                   index=index, derived_ids=derived, counter=counter)


def sent_tokens(decoded: Decoded, tokens: Sequence[int], counter: Tokenizer) -> SentTokens:
    """What each input item sent costs (a string `input` is one), `instructions` apart (none
    given: None). A run of the model's items is one engine message: each item after the
    first costs what it adds alone (its text, its other parts, its call) as far as the run's
    cost goes, the first the rest (the message's framing with it), so that the items add up to
    what the run costs, none under 0."""
    payload = decoded.payload
    raw = payload.get("input")
    # read by the model it was decoded for (a `model` param names it outside the body): the
    # earlier turns' reasoning was counted in full against the engine's rule, its item 394
    # tokens and the message before it -382
    read_as = payload if decoded.model in (None, payload.get("model")) else {
        **payload, "model": decoded.model}
    out = [0] * (1 if isinstance(raw, str) else len(raw or ()))
    system = None if payload.get("instructions") is None else 0
    turn_start: int | None = None  # read only for a run of several items
    for source, n in zip(decoded.sources, tokens, strict=True):
        if source == "instructions":
            system = (system or 0) + n
            continue
        if source == "string":
            out[0] += n
            continue
        for k in source[1:]:
            if turn_start is None:
                turn_start = -1 if every_turn_read(read_as) else last_user(raw)
            # never past what the run has left: texts joined into one cost less than apart
            # (twelve items of "\n\nx\n\n" left the first -4)
            alone = min(n, _item_tokens(raw[k], k, counter, turn_start, decoded.model))
            out[k], n = alone, n - alone
        out[source[0]] = n
    return SentTokens(out, system)


def _item_tokens(item: dict, i: int, counter: Tokenizer, turn_start: int, model: object
                 ) -> int:
    """What item `i` of a run adds to the run's message, read as decode reads it."""
    alone = _Group("assistant", i)
    _read_item(item, i, alone, counter, turn_start, model)
    calls = sum(OPENAI_FORMAT.per_tool_call + counter.count(c.name) + counter.count(c.arguments)
                for c in alone.calls)
    return counter.count("\n".join(alone.texts)) + alone.parts + calls


def _new_items(m: Message, custom: set[str]) -> list[dict]:
    """A message the engine added (a summary, a notice, an assembled session's turn) as input
    items: its text as a message, its tool calls as calls, a tool result as a call's output;
    a custom tool's call and its output as theirs (`custom`: the ids of such calls)."""
    if m.role == "tool":
        kind = "custom_tool_call_output" if m.tool_call_id in custom else \
            "function_call_output"
        return [{"type": kind, "call_id": m.tool_call_id or "", "output": m.content}]
    out: list[dict] = []
    if m.content or not m.tool_calls:  # a string content: any role may have one
        out.append({"type": "message", "role": m.role, "content": m.content})
    out += [{"type": "custom_tool_call", "call_id": c.id, "name": c.name, "input": c.arguments}
            if c.custom else
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
            for c in m.tool_calls or ()]
    return out


def _items_of(decoded: Decoded, m: Message, pos: int, result: Encoded) -> list[dict]:
    """The native items of kept message `m`, its new text (if any) in its text parts."""
    items = _with_arguments([decoded.payload["input"][k] for k in decoded.sources[pos]],
                            new_arguments(decoded.messages[pos], m))
    if m.content is decoded.messages[pos].content or m.content == decoded.messages[pos].content:
        return items
    if m.role == "tool":  # a call's output: one item
        item, key = items[0], output_key(items[0])
        value = item.get(key)
        if item.get("type") == "shell_call_output" and _one_run(value):
            return [{**item, "output": [{**value[0], "stdout": m.content}]}]
        if isinstance(value, list):
            parts, gone = share_text(value, m.content, _is_text, {"type": "input_text"})
            result.audit += parts_gone(value, gone, m, f"output of {item.get('call_id')}")
            return [{**item, key: parts}]
        return [{**item, key: m.content}]
    return _with_text(items, m, decoded.counter, result)


def _is_message(item: dict) -> bool:
    return "role" in item and item.get("type") in (None, "message")


def _text_of(item: dict) -> str:
    """A message item's text as the reader joined it."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content or () if _is_text(p))


def _shares(texts: list[str], new: str) -> list[str | None]:
    """`new`, the shortened text of a run's messages (their `texts` joined by newlines), told
    back out to them: the messages at either end whose text it still holds whole keep it; the
    rest goes to the last of the others (a final answer after its commentary), and those
    before that one lose their text (None): it is in the rest, shortened."""
    lo, hi, rest = 0, len(texts), new
    while hi - lo > 1 and rest.startswith(texts[lo] + "\n"):
        rest, lo = rest[len(texts[lo]) + 1:], lo + 1
    while hi - lo > 1 and rest.endswith("\n" + texts[hi - 1]):
        rest, hi = rest[:len(rest) - len(texts[hi - 1]) - 1], hi - 1
    return [*texts[:lo], *[None] * (hi - lo - 1), rest, *texts[hi:]]


def _with_text(items: list[dict], m: Message, counter: Any, result: Encoded) -> list[dict]:
    """The items of a user, system or assistant message with `m`'s new text: each `message`
    item keeps its own text (`_shares`), its part types and its fields (a `phase`, its `id`),
    so a commentary stays a commentary and a final answer a final answer. A message left with
    nothing goes with the reasoning that led to it, each one audited."""
    part = {"type": "output_text", "annotations": []} if m.role == "assistant" else \
        {"type": "input_text"}
    texts = {k: _text_of(it) for k, it in enumerate(items) if _is_message(it) and _text_of(it)}
    if not texts:  # no text to shorten was there: the new one goes in the last message
        last = [k for k, it in enumerate(items) if _is_message(it)][-1:]
        texts = {k: "" for k in last}
    shares = dict(zip(texts, _shares(list(texts.values()), m.content), strict=True))
    out: list[dict] = []
    for k, item in enumerate(items):
        share = shares.get(k, texts.get(k))
        if share == texts.get(k):
            out.append(item)
            continue
        content = item.get("content")
        if share is not None and isinstance(content, list):
            parts, gone = share_text(content, share, _is_text, part)
            result.audit += parts_gone(content, gone, m, f"message {item.get('id', '')}".strip())
            out.append({**item, "content": parts})
            continue
        if share is not None:
            out.append({**item, "content": share})
            continue
        rest = [p for p in content if not _is_text(p)] if isinstance(content, list) else []
        if rest:
            out.append({**item, "content": rest})
            continue
        _drop(out, item, texts[k], m, counter, result)
    return out


def _drop(out: list[dict], item: dict, text: str, m: Message, counter: Any,
          result: Encoded) -> None:
    """Message `item` of `m` goes, its `text` now in a shortened message after it, and the
    reasoning items just before it (`out`'s last) with it: the provider refuses reasoning
    without the item it led to. Each one audited."""
    gone = []
    while out and out[-1].get("type") == "reasoning":
        gone.append(out.pop())
    for it in reversed(gone):
        result.audit.append(audit(
            "dropped", "reasoning without the message it led to, whose text went into a "
            "shortened one after it: the provider refuses it",
            f"reasoning {it.get('id', '')}".strip(), message_id=m.id))
    count = counter.count if counter is not None else (lambda s: 0)
    result.audit.append(audit(
        "dropped", "its text went into the shortened text of a message after it, and it had "
        "nothing else", f"message {item.get('id', '')}".strip(), count(text), 0,
        message_id=m.id))


def _with_arguments(items: list[dict], arguments: list[str | None] | None) -> list[dict]:
    """A run's items with the outlined arguments in their calls: a `function_call`'s
    `arguments` (a custom call's `input`) is that text; a call that carries objects (a
    computer or shell call, whose arguments the reader made from its fields) gets the
    outlined fields back. Every other item (reasoning, its encrypted content) as it came."""
    if arguments is None:
        return items
    todo = iter(arguments)
    out = []
    for item in items:
        if is_call(item) and (a := next(todo, None)) is not None and \
                item.get("type") not in SEALED_CALLS:
            if isinstance(item.get("arguments"), str):
                item = {**item, "arguments": a}
            elif isinstance(item.get("input"), str):
                item = {**item, "input": a}
            else:
                fields = msgspec.json.decode(a)
                item = {**item, **fields} if isinstance(fields, dict) else item
        out.append(item)
    return out


def encode(decoded: Decoded, kept: Sequence[Message], *, cache_breakpoints: Sequence[int] = ()
           ) -> Encoded:
    """The payload with `input` replaced by the kept items (`instructions` is kept as it is);
    OpenAI has no cache markers, so `cache_breakpoints` is ignored."""
    result = Encoded(payload=decoded.payload)
    why = unfittable(decoded.payload)
    if why:  # what is sent, as it came: its tokens before and after alike (it said 0 and 0)
        sent = _request_tokens(decoded)
        result.audit.append(audit("notFitted", why, "the whole request", sent, sent))
    if _untouched(decoded, kept):
        return result
    raw = decoded.payload.get("input")
    items: list[dict] = []
    ids: list[str | None] = []
    at: list[int] = []  # the kept message each item is of
    custom = {c.id for m in kept for c in m.tool_calls or () if c.custom}
    for n, m in enumerate(kept):
        pos = decoded.index.get(m.id) if m.id is not None else None
        if pos is not None and decoded.sources[pos] == "instructions":
            continue
        if pos is None:
            new = _new_items(m, custom)
        elif decoded.sources[pos] == "string":
            new = [{"type": "message", "role": "user", "content": m.content}]
        else:
            new = _items_of(decoded, m, pos, result)
        items += new
        ids += [m.id] * len(new)
        at += [n] * len(new)
    if isinstance(raw, str) and len(items) == 1 and ids[0] in decoded.index and \
            decoded.sources[decoded.index[ids[0]]] == "string":
        out: Any = items[0]["content"]  # the string the client sent, shortened or not
    else:
        refs = {k: [c for c in kept[at[k]].tool_calls or () if c.name == "item_reference"]
                for k, it in enumerate(items) if it.get("type") == "item_reference"}
        out = _repair(items, ids, result, decoded.counter, refs)
    result.payload = {**decoded.payload, "input": out}
    return result


def _request_tokens(decoded: Decoded) -> int:
    """What the request costs as it came (its input, instructions and tools), as
    `formats.request_tokens` counts it; 0 without a counter."""
    counter = decoded.counter
    if counter is None:
        return 0
    return conversation_tokens(decoded.messages, counter) + tools_tokens(
        decoded.payload, counter, "responses", decoded.model)


def _untouched(decoded: Decoded, kept: Sequence[Message]) -> bool:
    """Whether the engine kept every message as it was: the request goes as it came."""
    if len(kept) != len(decoded.messages):
        return False
    return all(k.id == m.id and (k.content is m.content or k.content == m.content)
               and new_arguments(m, k) is None
               for k, m in zip(kept, decoded.messages, strict=True))


def _repair(items: list[dict], ids: list, result: Encoded, counter: Any,
            referenced: dict[int, list[ToolCall]]) -> list[dict]:
    """Every output follows its call and every call has its output, by `call_id` (a call an
    `item_reference` stands for, `referenced` by the item's place, counts as one); a
    reasoning item left without the call or answer it led to goes too."""
    count = counter.count if counter is not None else (lambda s: 0)
    # the calls an item_reference stands for: those its message (the engine's) made
    refs = {k: {c.id for c in decoded_calls} for k, decoded_calls in referenced.items()}
    called = {it["call_id"] for it in items if is_call(it)} | {
        c for k, it in enumerate(items) if k in refs for c in refs[k]}
    answered = {answered_call(it) for it in items if is_output(it)}
    seen: set = set()
    keep = [True] * len(items)
    for k, it in enumerate(items):
        if k in refs:
            seen |= refs[k]
            if refs[k] and not refs[k] & answered:
                keep[k] = False
                result.audit.append(audit(
                    "dropped", "a reference to a call that lost its output: removed so that "
                    "the request stays valid", f"item_reference {it.get('id', '')}".strip(),
                    message_id=ids[k]))
        if is_call(it):
            seen.add(it["call_id"])
            if it["call_id"] not in answered:
                keep[k] = False
                result.audit.append(audit(
                    "dropped", f"call {it['call_id']} lost its output: removed so that the "
                    "request stays valid", f"{it.get('type')} {it.get('name', '')}".strip(),
                    message_id=ids[k]))
        elif is_output(it) and ((cid := answered_call(it)) not in seen or cid not in called):
            keep[k] = False
            text = it.get(output_key(it))
            text = text if isinstance(text, str) else ""
            result.audit.append(audit(
                "dropped", "call output without its call: the provider refuses it",
                f"output of {cid}", count(text), 0, message_id=ids[k]))
    # a reasoning item needs the item it led to, next in the same run
    for k, it in enumerate(items):
        if it.get("type") != "reasoning" or not keep[k]:
            continue
        nxt = next((j for j in range(k + 1, len(items)) if items[j].get("type") != "reasoning"),
                   None)
        if nxt is None or not keep[nxt] or ids[nxt] != ids[k]:
            keep[k] = False
            result.audit.append(audit(
                "dropped", "reasoning item without the item it led to: the provider refuses it",
                f"reasoning {it.get('id', '')}".strip(), message_id=ids[k]))
    return [it for it, ok in zip(items, keep, strict=True) if ok]


def identity_text(request: dict) -> list[str]:
    """The texts that name a conversation: the instructions and the first user message."""
    out = [str(request.get("instructions") or "")]
    raw = request.get("input")
    if isinstance(raw, str):
        return [*out, raw]
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict) and item.get("role") == "user":
            text, content = [], item.get("content")
            if isinstance(content, str):
                text.append(content)
            elif isinstance(content, list):
                text += [p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str)]
            return [*out, "\n".join(text)]
    return out
