"""The ctxlayer wire contract: one msgspec struct per wire type, and the method names.

This module is the single source of truth for what crosses the wire (PROTOCOL.md). It imports
msgspec only, so clients and editors' code generators can load it cheaply; `ctxlayer schema`
prints its JSON Schema, from which docs/protocol.md and the TypeScript types are generated.

Python attribute names are snake_case; on the wire they are camelCase (``rename="camel"``).
Optional fields default to None and are omitted on the wire when unset.

Renaming or removing a field or method is a breaking change: bump PROTOCOL_VERSION.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

PROTOCOL_VERSION = "0.1"
#: the largest message body either face reads, in MiB: a JSON-RPC frame of the daemon, an HTTP
#: request of the gateway (`[gateway] max_body_mb` defaults to it). A 1M-token conversation is
#: about 4 MB of JSON.
MAX_MESSAGE_MB = 32

Role = Literal["system", "user", "assistant", "tool"]
MessageKind = Literal["chat", "doc", "toolOutput", "summary", "rule", "memory"]
AuditAction = Literal[
    "dropped", "truncated", "compressed", "summarized", "deduplicated", "demoted", "restored",
    "notFitted",
]
Mode = Literal["short", "deep", "debug"]
Strategy = Literal["pipeline", "priority"]
ToolFormat = Literal["markdown", "xml", "tool"]
ContextMode = Literal["full", "selective"]
PartName = Literal["tree", "git", "agentFiles", "files", "skills"]
#: how messages are shaped: ctxlayer's Message, or a provider's own request format
Format = Literal["ctxlayer", "openai", "anthropic", "responses"]
#: what a live conversation came through
Source = Literal["gateway", "prepare", "session"]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base of every wire struct: camelCase on the wire, unset optionals omitted."""


class Strict(Wire, forbid_unknown_fields=True):
    """A wire struct of ctxlayer's own format: an unknown (misspelled) field is an error."""


#: what an LSP client may add to any request (progress tokens): every ctx/* request takes
#: them and ignores them
LSP_REQUEST_FIELDS = ("workDoneToken", "partialResultToken")


class Params(Strict):
    """The params of every ctx/* request refuse a field they do not declare: -32602, the
    message and `data.field` naming it (a field dropped unread changed the answer without a
    word: ctx/count given ctx/prepare's `request` counted nothing). The two fields LSP clients
    add to any request, `workDoneToken` and `partialResultToken`, are taken and ignored.
    Results are read leniently: a client reads what a newer daemon adds."""


#: messages in the request's `format`: Message objects for "ctxlayer", the provider's own
#: message objects (passed through untouched) for "openai" and "anthropic", the `input`
#: items for "responses"
FormatMessages = Annotated[list[Any], msgspec.Meta(extra_json_schema={
    "items": {"anyOf": [{"$ref": "#/$defs/Message"}, {"type": "object"}]},
    "description": "Message objects (format ctxlayer), else the provider's own: messages "
                   "(openai, anthropic) or input items (responses)",
})]

#: a provider request's system prompt kept outside its messages: Anthropic `system` (a string
#: or text blocks, each passed on with all its fields, cache_control and the like) or Responses
#: `instructions` (a string); the format's codec checks which it takes, and each block. The
#: blocks stay as sent at run time (a struct would drop the fields it does not name); list[Any],
#: for msgspec's own schema of list[dict] would replace the text blocks' one.
SYSTEM_TEXT_BLOCK = {
    "title": "SystemTextBlock", "type": "object",
    "description": "An Anthropic system text block; its other fields (cache_control...) pass "
                   "through as sent",
    "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
    "required": ["type", "text"], "additionalProperties": True,
}
#: the schema's definitions that are no struct: they describe what is kept as sent
SCHEMA_DEFS = {"SystemTextBlock": SYSTEM_TEXT_BLOCK}
SystemTextBlocks = Annotated[list[Any], msgspec.Meta(
    extra_json_schema={"items": {"$ref": "#/$defs/SystemTextBlock"}})]
ProviderSystem = Annotated[str | SystemTextBlocks | None, msgspec.Meta(
    description="anthropic: the request's system (a string or text blocks); responses: "
                "its instructions (a string)")]

# --- shared types -------------------------------------------------------------------------


class ToolCall(Strict):
    """A call the model made. `custom`: a call of a custom tool (OpenAI's `custom` tool call,
    the Responses API's `custom_tool_call`), whose `arguments` is its free-text input, no JSON:
    written back as one where the format has them, and named in `truncated` where it has not
    (Anthropic)."""

    id: str
    name: str
    arguments: str = ""
    custom: bool = False


class Message(Strict):
    """One chat message. Policy lives in its fields (pinned, priority, ephemeral_ttl, kind)."""

    role: Role
    content: str
    id: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    pinned: bool = False
    hide: bool = False
    ephemeral_ttl: int | None = None
    files: list[str] | None = None
    kind: MessageKind | None = None
    priority: int | None = None
    #: tokens of the non-text parts (images, audio, documents, thinking), counted by the
    #: provider's rules; never shortened
    parts_tokens: int | None = None
    #: what those parts are, one short phrase each ("image 1024x768 (772 tokens)",
    #: "thinking (212 tokens)"), so that an audit line can say what cost the tokens
    parts: list[str] | None = None


class AuditEntry(Wire):
    """What the engine did to one item, and why: nothing is cut without one. `index` is the
    item's position among the messages the engine read, which in a provider format are not its
    `messages`: a system prompt kept outside them (Anthropic `system`, Responses
    `instructions`) is one, a message holding several tool results several. `messageId` names
    the message in every format (the request's own id, else one ctxlayer derives from its
    position)."""

    action: AuditAction
    reason: str
    summary: str
    tokens_before: int
    tokens_after: int
    message_id: str | None = None
    index: int | None = None


class ByLayer(Wire):
    # no defaults: every layer is on the wire, also at 0 (a default one was left out)
    system: int
    workspace: int
    rules: int
    working: int
    history: int


class Budget(Wire):
    """A session's: `byLayer` adds up to `used`; what its last assembly at its own budget
    sent until the session changes, else the session as it stands before its next assembly
    fits it: its history as stored, so `used` may be over `limit` where that assembly will
    summarize; where it will only outline and cut, the history counts at most its share, the
    most that assembly sends (its fitted tail may leave a few tokens of it unused); an
    assembly at a one-off budget pushes its own."""

    used: int
    limit: int
    percent: float
    by_layer: ByLayer
    model: str
    session_id: str | None = None
    next_compaction_at: int | None = None
    error_band: float | None = None
    #: set when the budget is a live chat's (ctx/prepare or the gateway)
    conversation_id: str | None = None
    source: Source | None = None
    #: tokens of the last request that the provider read from its cache (its usage report)
    cached_tokens: int | None = None
    #: the whole context window `limit` was derived from (the budget is what of it the
    #: prompt may use): a live chat's request's, else initialize's `contextWindow`, else the
    #: model's (its long one when the limit is over the usual); null only from an older daemon
    window: int | None = None
    #: the last request of this chat summarized older turns; `notice` says so in one line
    compacted: bool | None = None
    notice: str | None = None
    #: true when this is the workspace's live chat (the one that last sent a request): status
    #: bars follow these budgets and only these; a re-measure of that chat keeps it true
    live: bool | None = None
    #: what the state folder failed beside this chat's last request (PrepareResult.warning):
    #: editors say it once, whichever client sent the request (a gateway chat's too)
    warning: str | None = None


# --- ctx/segment ----------------------------------------------------------------------------


class SegmentPart(Wire):
    name: PartName
    text: str
    tokens: int
    hash: str


class LeftOut(Wire):
    """Something the workspace scan left out, and why (shown by `ctxlayer inspect`)."""

    part: PartName
    path: str
    reason: str


class WorkspaceSegment(Wire):
    text: str
    tokens: int
    hash: str
    version: int
    updated_at: str
    parts: list[SegmentPart]
    left_out: list[LeftOut] | None = None


class SegmentParams(Params):
    pass


# --- ctx/systemPrompt -------------------------------------------------------------------------


class ToolSpec(Strict):
    name: str
    instructions: str
    examples: str | None = None


class DynamicContext(Strict):
    context_cmd: str | None = None
    history: str | None = None


class SystemPromptParams(Params):
    model: str | None = None
    interactive: bool = True
    tool_format: ToolFormat = "markdown"
    tools: list[ToolSpec] | None = None
    identity: str | None = None
    #: left out: "selective" when `include` names parts (as the CLI's --include), else "full"
    context_mode: ContextMode | None = None
    include: list[str] | None = None
    dynamic: DynamicContext | None = None
    compact: bool = False  # the short variant of every guidance text
    user_identity: str | None = None  # who the user is (interactive prompts only)
    #: the dynamic section gets a digest of this workspace's earlier sessions
    session_history: bool = False


class PromptSection(Wire):
    name: str
    tokens: int
    hash: str
    cacheable: bool


class SystemPromptResult(Wire):
    messages: list[Message]
    cache_boundary: int | None
    sections: list[PromptSection]
    tokens: int
    prefix_hash: str | None = None  # hash of everything before the boundary
    warnings: list[str] | None = None  # volatile-looking text in cacheable sections


# --- ctx/count --------------------------------------------------------------------------------


class CountParams(Params):
    model: str | None = None
    texts: list[str] | None = None
    messages: FormatMessages | None = None
    format: Format = "ctxlayer"
    system: ProviderSystem = None


class CountResult(Wire):
    """`tokens`: each text's count, then one entry per message as the client sent it (in a
    provider format each message or input item, in order, however the engine reads it: an
    Anthropic message holding tool results is one entry, and so is each item of a Responses
    run of calls), its per-message overhead included. A system prompt the format keeps
    apart from its messages (Anthropic `system`, Responses `instructions`) is no entry: it is
    `systemTokens`. `replyPriming`: what priming the reply adds, once, when messages were
    counted. `total` = the sum of `tokens` + `systemTokens` + `replyPriming`."""

    tokens: list[int]
    total: int
    #: the system prompt kept apart from the messages; absent when none was given
    system_tokens: int | None = None
    reply_priming: int = 0


# --- ctx/trim ---------------------------------------------------------------------------------


class TrimParams(Params):
    messages: FormatMessages
    model: str | None = None
    budget: int | None = None
    reserve_output: int | None = None
    docs: list[str] | None = None
    strategy: Strategy | None = None  # None: `[trim] strategy` of the workspace config
    format: Format = "ctxlayer"
    system: ProviderSystem = None


class TrimResult(Wire):
    messages: FormatMessages
    tokens: int
    budget: int
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]
    percent: float  # tokens of budget, as a status line shows it (editors compute none)
    system: ProviderSystem = None  # anthropic: the fitted system; responses: the instructions


# --- sessions -----------------------------------------------------------------------------------


class SessionOpenParams(Params):
    session_id: str | None = None
    model: str | None = None
    mode: Mode | None = None
    budget: int | None = None


class SessionOpenResult(Wire):
    session_id: str
    model: str
    mode: Mode
    budget: int
    created_at: str


class SessionAppendParams(Params):
    """`system`: the system prompt a provider format keeps apart from its messages (anthropic
    `system`, responses `instructions`), taken as system messages appended before `messages`,
    as OpenAI system messages appended at that point are. An Anthropic block is kept as it
    came: assembled as anthropic it goes out whole, its cache_control with it (the `system`
    blocks after the session's layers, rules and working zone, in the order appended: past
    `cacheBoundary`); a fifth breakpoint of the request, or another format, is named in
    `truncated`."""

    session_id: str
    messages: FormatMessages
    format: Format = "ctxlayer"
    system: ProviderSystem = None


class WorkingItemSpec(Strict):
    kind: str
    content: str
    id: str | None = None
    optional: bool = True
    source: str | None = None


class SessionAddItemParams(Params):
    session_id: str
    item: WorkingItemSpec


#: what ctx/session/addRule or addItem replaced under the id it was given
Replaced = Annotated[AuditEntry | None, msgspec.Meta(
    description="the rule or item of this id it replaced, what it said in `summary`; the "
                "session's audit keeps the same entry. null when the id was free or what was "
                "there said the same")]


class SessionAddItemResult(Wire):
    item_id: str
    replaced: Replaced = None


class RuleSpec(Strict):
    text: str
    weight: float = 1.0
    id: str | None = None


class SessionAddRuleParams(Params):
    session_id: str
    rule: RuleSpec


class SessionAddRuleResult(Wire):
    rule_id: str
    demoted: list[str]
    warning: str | None = None
    replaced: Replaced = None


class SessionRemoveRuleParams(Params):
    session_id: str
    rule_id: str


class SessionSetModeParams(Params):
    session_id: str
    mode: Mode


class SessionConfigureParams(Params):
    """What of a session's settings changes; a field left out keeps the session's own.
    ctx/session/open answers an existing id unchanged: an editor whose model, budget or mode
    setting changed brings it to its workspace's session with this. `resetBudget: true` (an
    editor's budget setting cleared) gives the session the budget ctx/session/open gives one
    opened without a budget: the window minus the output reserve of its model (the one this
    request names, else the session's); with a `budget` too it is an error. A live chat's
    session (`chat-<id>`) takes a `mode` only: its model and budget are its client's, named by
    each of its requests, and a `model`, `budget` or `resetBudget` is an error naming it."""

    session_id: str
    model: str | None = None
    mode: Mode | None = None
    budget: int | None = None
    reset_budget: bool = False


class SessionRef(Params):
    """Params of methods that need only a session id (budget, close)."""

    session_id: str


#: ctx/assemble's system prompt: kept with the session once an assembly succeeds with it
AssembleSystemPrompt = Annotated[SystemPromptParams | None, msgspec.Meta(
    description="the layered system prompt to assemble with, ctx/systemPrompt's params. Kept "
                "with the session, across restarts, once an assembly succeeds with it: later "
                "assemblies without one, ctx/session/compact and the re-measures after a "
                "workspace change use it. Left out: the last one kept, else the workspace "
                "segment alone. A refused assembly keeps nothing")]


class AssembleParams(Params):
    session_id: str
    budget: int | None = None
    system_prompt: AssembleSystemPrompt = None
    format: Format = "ctxlayer"  # the format of the result's messages


class AssembleTokens(Wire):
    # no defaults: every layer is on the wire, also at 0 (a default one was left out)
    total: int
    system: int
    workspace: int
    rules: int
    working: int
    history: int


class ModeSuggestion(Wire):
    mode: Mode
    reason: str


#: where an assembly's stable prefix ends, in the list that holds its system layers
AssembledCacheBoundary = Annotated[int | None, msgspec.Meta(
    description="the stable prefix (system layers and rules) is the items before it: of "
                "`messages` (ctxlayer, openai, responses), of the `system` blocks (anthropic, "
                "whose dynamic section goes in the last user turn, after the history; a "
                "session's own blocks, appended with `system`, are history: past it)")]


class SummaryShown(Wire):
    """The summary an assembly's history opens with, said in every result that holds it (not
    only the one that wrote it: `compacted`): what it replaced. `parts` are the non-text parts
    of those messages (images, documents, thinking), one phrase each with its message's id:
    they are not sent, and the summary's text cannot carry them."""

    message_id: str
    replaced: int  # the messages it stands for, over every compaction so far
    first_id: str | None = None  # the oldest of them
    last_id: str | None = None  # the newest of them
    parts: list[str] = msgspec.field(default_factory=list)


class AssembleResult(Wire):
    messages: FormatMessages
    cache_boundary: AssembledCacheBoundary
    tokens: AssembleTokens
    budget: int
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]
    compacted: bool
    mode_suggestion: ModeSuggestion | None = None
    cache_reuse_tokens: int | None = None
    system: ProviderSystem = None  # anthropic: the system blocks (messages hold no system turn)
    #: one line for the user when this assembly summarized, cut or shortened something, or
    #: its history holds a summary
    notice: str | None = None
    #: the summary the history opens with, and what it replaced (null: none is sent)
    summary: SummaryShown | None = None


class SessionCompactParams(Params):
    session_id: str
    keep_recent: int | None = None


class SessionCompactResult(Wire):
    summary: Message
    replaced: int


class ReportUsageParams(Params):
    """`estimatedTokens`: our count of the prompt the provider read. Left out, this daemon's
    count of the session's last prompt stands in; an error names it when the daemon has
    counted none (after a restart, before an assembly)."""

    session_id: str
    prompt_tokens: int
    estimated_tokens: int | None = None


class ReportUsageResult(Wire):
    bias: float


class AuditParams(Params):
    session_id: str
    limit: int | None = None


class AuditResult(Wire):
    entries: list[AuditEntry]


class SessionInfo(Wire):
    session_id: str
    mode: Mode
    model: str
    messages: int
    updated_at: str


class SessionListResult(Wire):
    sessions: list[SessionInfo]


class Empty(Wire):
    pass


class NoParams(Params):
    """Params of methods that take none (session/list, conversations)."""


class InspectParams(Params):
    """ctx/inspect: the page of a session (a preview: it changes nothing) or of `messages` trimmed
    (one of the two: both is an error naming `messages`). A session's page is what ctx/assemble would send it at `budget` (default: its own), a
    summary it needs written offline, counted with the session's model (another `model` is an
    error naming it); a live chat's session (`chat-<id>`) shows its last request as fitted, and
    a `budget` or `model` other than its own is an error naming it; `messages` are trimmed
    into `budget` as ctx/trim does."""

    session_id: str | None = None
    messages: list[Message] | None = None
    budget: int | None = None
    model: str | None = None


class InspectResult(Wire):
    html: str


# --- chats that resend their whole history: ctx/prepare, conversations, why, restore ------------


class PrepareParams(Params):
    """ctx/prepare: the provider request a chat is about to send; the result is what to send."""

    request: dict
    format: Format = "ctxlayer"  # the default everywhere a format is taken (PROTOCOL.md)
    model: str | None = None  # else request.model
    budget: int | None = None
    reserve_output: int | None = None
    conversation_id: str | None = None
    # the client's own id of its chat when the request body does not carry it (the gateway
    # passes Claude Code's `x-claude-code-session-id` header); see "Which conversation"
    client_session_id: str | None = None
    # the model's window for this request when it is not the table's (the gateway sets it
    # from `anthropic-beta: context-1m-*` and `[gateway.models]`); the budget is this minus
    # the request's output room
    context_window: int | None = None


class PrepareResult(Wire, weakref=True):  # a live chat knows its last (state/chat.py)
    request: dict  # every field the client set, with messages (and system) fitted
    conversation_id: str
    session_id: str
    tokens: int
    budget: int
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]
    compacted: bool
    cache_reuse_tokens: int
    # no defaults: both are on the wire also when empty, [] and null (PROTOCOL.md)
    cache_breakpoints: list[int]
    notice: str | None
    #: what failed beside the request, which is ready all the same: the state folder could not
    #: be read or written (a full disk, a lock held past its timeout), so this turn's window,
    #: audit or session was not kept
    warning: str | None = None


class ConversationInfo(Wire):
    conversation_id: str
    session_id: str
    model: str
    source: Source
    tokens: int
    budget: int
    cache_reuse_tokens: int
    dropped: int
    updated_at: str
    percent: float  # tokens of budget, as the status bar shows it (editors compute none)
    #: what the provider said its last request read from its cache (its usage report); None
    #: before that report (a request under way or failed), when it sent none, and for a
    #: chat whose history the provider keeps (`previous_response_id`): its figures count a
    #: history the gateway never sees, `tokens` only the new input
    cached_tokens: int | None = None


class ConversationsResult(Wire):
    conversations: list[ConversationInfo]
    #: the conversations the state folder keeps beyond those listed (the most recent first,
    #: 64 at most): chains an edit left behind among them when that many are kept
    not_listed: int = 0
    #: the state folder could not be read (a lock held past its timeout, a damaged file): only
    #: the live conversations are listed, the kept ones are not. With none live, the answer
    #: is the store's error (-32005) instead: an empty list would say there are none
    warning: str | None = None


class WhyParams(Params):
    conversation_id: str | None = None
    session_id: str | None = None
    message_id: str | None = None


class WhyResult(Wire):
    entries: list[AuditEntry]


class RestoreParams(Params):
    message_id: str
    conversation_id: str | None = None
    session_id: str | None = None


# --- server to client ---------------------------------------------------------------------------


class SegmentChanged(Wire):
    hash: str
    version: int
    tokens: int
    changed: list[PartName]


class SummarizeParams(Wire):
    messages: list[Message]
    instructions: str
    max_tokens: int


class SummarizeResult(Wire):
    text: str


# --- initialize ----------------------------------------------------------------------------------


class InitializationOptions(Wire):
    model: str | None = None
    context_window: int | None = None
    reserve_output: int | None = None
    mode: Mode | None = None
    config: dict | None = None


class ModeInfo(Wire):
    """One task mode: the shares of the budget for rules and working memory, and their cap."""

    rules_share: float
    working_share: float
    cap: int


class GatewayUrls(Wire):
    """Base URLs of the HTTP gateway: `openai` ends in /v1; `anthropic` is what Anthropic SDKs
    take as their base URL."""

    openai: str
    anthropic: str


class ServerAnnouncement(Wire):
    """`capabilities.experimental.ctxlayer` of the initialize result: what editors read instead
    of guessing (methods, the defaults of this workspace, the gateway when it runs)."""

    protocol_version: str
    methods: list[str]
    notifications: list[str]
    model: str
    default_budget: int
    default_mode: Mode
    modes: dict[str, ModeInfo]
    gateway: GatewayUrls | None = None


# --- methods -------------------------------------------------------------------------------------

#: request method -> (params struct, result struct)
REQUESTS: dict[str, tuple[type[Wire], type[Wire]]] = {
    "ctx/segment": (SegmentParams, WorkspaceSegment),
    "ctx/systemPrompt": (SystemPromptParams, SystemPromptResult),
    "ctx/count": (CountParams, CountResult),
    "ctx/trim": (TrimParams, TrimResult),
    "ctx/session/open": (SessionOpenParams, SessionOpenResult),
    "ctx/session/append": (SessionAppendParams, Budget),
    "ctx/session/addItem": (SessionAddItemParams, SessionAddItemResult),
    "ctx/session/addRule": (SessionAddRuleParams, SessionAddRuleResult),
    "ctx/session/removeRule": (SessionRemoveRuleParams, Empty),
    "ctx/session/setMode": (SessionSetModeParams, Budget),
    "ctx/session/configure": (SessionConfigureParams, Budget),
    "ctx/assemble": (AssembleParams, AssembleResult),
    "ctx/session/compact": (SessionCompactParams, SessionCompactResult),
    "ctx/session/reportUsage": (ReportUsageParams, ReportUsageResult),
    "ctx/session/budget": (SessionRef, Budget),
    "ctx/session/audit": (AuditParams, AuditResult),
    "ctx/session/list": (NoParams, SessionListResult),
    "ctx/session/close": (SessionRef, Empty),
    "ctx/inspect": (InspectParams, InspectResult),
    "ctx/prepare": (PrepareParams, PrepareResult),
    "ctx/conversations": (NoParams, ConversationsResult),
    "ctx/why": (WhyParams, WhyResult),
    "ctx/restore": (RestoreParams, Empty),
}

#: server -> client notifications
NOTIFICATIONS: dict[str, type[Wire]] = {
    "ctx/segmentChanged": SegmentChanged,
    "ctx/budgetChanged": Budget,
}

#: server -> client requests: method -> (params, result)
SERVER_REQUESTS: dict[str, tuple[type[Wire], type[Wire]]] = {
    "ctx/summarize": (SummarizeParams, SummarizeResult),
}

#: JSON-RPC error codes of the domain (besides the standard -32700 .. -32602)
ERROR_PINNED_OVER_BUDGET = -32001
ERROR_UNKNOWN_SESSION = -32002
ERROR_OUTSIDE_WORKSPACE = -32003
ERROR_UNAUTHORIZED = -32004  # TCP: the first message was not an initialize with the token
ERROR_STORE = -32005  # the sessions database failed (locked, disk full, unreadable)


def json_schema() -> dict:
    """The JSON Schema of every wire type, keyed by method, as `ctxlayer schema` prints it."""
    types: list[type] = [InitializationOptions, ServerAnnouncement, Message, AuditEntry, Budget]
    for params, result in (*REQUESTS.values(), *SERVER_REQUESTS.values()):
        types += [params, result]
    types += list(NOTIFICATIONS.values())
    unique = list(dict.fromkeys(types))
    _, components = msgspec.json.schema_components(unique, ref_template="#/$defs/{name}")

    def ref(t: type) -> dict:
        return {"$ref": f"#/$defs/{t.__name__}"}

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ctxlayer protocol",
        "version": PROTOCOL_VERSION,
        "requests": {m: {"params": ref(p), "result": ref(r)} for m, (p, r) in REQUESTS.items()},
        "notifications": {m: ref(t) for m, t in NOTIFICATIONS.items()},
        "serverRequests": {
            m: {"params": ref(p), "result": ref(r)} for m, (p, r) in SERVER_REQUESTS.items()
        },
        "errors": {
            "pinnedOverBudget": ERROR_PINNED_OVER_BUDGET,
            "unknownSession": ERROR_UNKNOWN_SESSION,
            "outsideWorkspace": ERROR_OUTSIDE_WORKSPACE,
            "unauthorized": ERROR_UNAUTHORIZED,
            "store": ERROR_STORE,
        },
        "$defs": {**components, **SCHEMA_DEFS},
    }
