"""The typed settings tree (STYLE.md section 7) and the one function that loads it.

Owns: the msgspec Struct tree with its defaults and descriptions, reading the user's and the
workspace's `ctxlayer.toml`, merging editor overrides, reporting bad input one clear message
per problem (naming the key) while falling back to the default for just that key, and
rendering docs/settings.md from the tree. Never raises on bad input; never logs or prints
(the caller decides where messages go: showMessage + logMessage in the daemon).

Keys are snake_case in TOML; camelCase (as editors send them) is accepted everywhere too.
"""

from __future__ import annotations

import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ctxlayer import userfiles
from ctxlayer.core.assembly.compaction import CompactionPolicy
from ctxlayer.core.assembly.instructions import NAMES as INSTRUCTION_NAMES
from ctxlayer.core.assembly.policy import CLIENT_SUMMARY_TIMEOUT
from ctxlayer.core.calibration import Calibration
from ctxlayer.core.errors import MAX_TOKENS
from ctxlayer.core.prepare.model import DEFAULT_POLICY as _LIVE
from ctxlayer.core.trim import TrimOptions
from ctxlayer.core.zones.modes import DEFAULT_MODE, DEFAULT_MODES
from ctxlayer.core.zones.rules import RulePolicy
from ctxlayer.core.zones.working import DecayPolicy
from ctxlayer.protocol import MAX_MESSAGE_MB, Strategy
from ctxlayer.statefiles import KEEP_DAYS
from ctxlayer.urls import is_loopback, said, why_not_upstream

CONFIG_FILE = "ctxlayer.toml"

#: settings a workspace's own ctxlayer.toml may not set, only the user's file and the editor's
#: settings, and why: where the gateway sends the user's API keys (a project cloned from
#: anyone, with `ctxlayer gateway` started in it, sent every request and its key to the
#: project's server), what it spends them on unasked, and which files of the user's own folders
#: go into every prompt (names are looked up in the home folder too: `.aws/credentials`)
_KEYS_ELSEWHERE = "a project could send your API keys elsewhere"
_KEYS_SPENT = "a project could spend your API key on requests you did not ask for"
_HOME_FILES = ("a project could put files of your home folder, such as .aws/credentials, in "
               "every prompt; its own instructions are found by the default names")
USER_ONLY = {"workspace.agent_files": _HOME_FILES,
             "gateway.openai_base_url": _KEYS_ELSEWHERE,
             "gateway.anthropic_base_url": _KEYS_ELSEWHERE,
             "gateway.summarizer": _KEYS_SPENT, "gateway.summarizer_model": _KEYS_SPENT}
#: why an upstream URL is never replaced by its default (config._upstream)
_UNUSABLE_UPSTREAM_NOTE = ("One that is not a usable http(s) URL is not replaced by the "
                           "default: the gateway refuses its requests (502) until it is fixed "
                           "and the gateway started again.")
_USER_ONLY_NOTE = ("Read from your own ctxlayer.toml and the editor's settings only, never "
                   "from a workspace's ({why}).")

#: the longest a timeout may be, a day: `inf` passed `gt=0` and made every forwarded request
#: a 500 (aiohttp cannot round an infinite connect timeout)
MOST_SECONDS = 86_400.0
#: the largest count any setting takes (tokens, characters, lines, files, rules, reports):
#: the largest integer exact as a float and in every client's JSON, far above any real one;
#: a larger one broke the arithmetic (10**400 tokens of `tree_token_budget` failed every
#: request: "int too large to convert to float")
MOST_COUNT = MAX_TOKENS
#: the most days `[session] keep_days` may keep, a century: what is older is found by the date
#: that many days back, and a date before the year 1 cannot be held (1,000,000 days failed
#: every ctx/session/open, "date value out of range", and past 999,999,999 no span of days can
#: even be made); 0 keeps everything for longer
MOST_KEEP_DAYS = 36_500
#: the largest request body `[gateway] max_body_mb` may allow, 1 GiB (32 times the default): a
#: body is held whole, then decompressed and parsed, each time in memory; and far below the
#: C sizes the decoders take (2**43 MiB overflowed zlib's, every compressed request a 500)
MOST_BODY_MB = 1024
#: the slowest request body the gateway waits for, after `header_timeout` of grace: a client
#: on loopback sends megabytes a second, a slowloris a byte now and then
MIN_BODY_KIB_PER_S = 64

#: the agent files, in the order they are read inside each folder: the core's one list of
#: instruction file names (gptme 0.35.1's, and those other agents read), which prepare finds
#: in a client's messages too
AGENT_FILES = list(INSTRUCTION_NAMES)

#: gptme 0.35.1's default selected files (README first at selection time).
SELECTED_FILES = [
    "README*",
    ".cursor/rules/*.mdc",
    "pyproject.toml",
    "package.json",
    "Cargo.toml",
    "Makefile",
    "docker-compose.y*ml",
]


class WorkspaceConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How the workspace segment (tree, git, agent files, selected files) is built."""

    tree_token_budget: Annotated[
        int,
        Meta(ge=50, le=MOST_COUNT, description="Most tokens the project tree may use; deepest "
             "and largest folders are folded first until it fits."),
    ] = 3000
    fold_threshold: Annotated[
        int,
        Meta(ge=1, le=MOST_COUNT, description="A folder with more entries than this is shown "
             "folded, as `name/ (N files)`."),
    ] = 100
    files: Annotated[
        list[str],
        Meta(description="Globs (relative to the workspace) of files included whole in the "
             "segment, README first. An explicit empty list means none."),
    ] = msgspec.field(default_factory=lambda: list(SELECTED_FILES))
    files_char_budget: Annotated[
        int, Meta(ge=0, le=MOST_COUNT, description="Most characters the selected files may use "
                  "together.")
    ] = 120_000
    agent_files: Annotated[
        list[str],
        Meta(description="Agent instruction file names looked up in the user's config folder, "
             "then from the home folder down to the workspace, in this order per folder. " +
             _USER_ONLY_NOTE.format(why=_HOME_FILES)),
    ] = msgspec.field(default_factory=lambda: list(AGENT_FILES))
    agent_file_max_chars: Annotated[
        int, Meta(ge=0, le=MOST_COUNT, description="An agent file longer than this is left out.")
    ] = 60_000
    ignore: Annotated[
        list[str],
        Meta(description="Extra ignore patterns (gitignore syntax) applied to the tree and the "
             "selected files, on top of .gitignore."),
    ] = msgspec.field(default_factory=list)
    git_max_files: Annotated[
        int, Meta(ge=0, le=MOST_COUNT, description="Most paths listed per git status group "
                  "(staged, changed, untracked); the rest is counted.")
    ] = 50
    debounce_ms: Annotated[
        int, Meta(ge=0, le=60_000, description="Quiet time after the last file event before "
                  "the segment is refreshed; a burst of events makes one refresh.")
    ] = 150
    debounce_max_ms: Annotated[
        int, Meta(ge=0, le=600_000, description="Longest a continuous stream of events may "
                  "delay a refresh.")
    ] = 3000


# One source for every default: the core's own options and policies (the settings only
# expose them).
_TRIM = TrimOptions()


def _one_of(names: typing.Iterable[str]) -> str:
    """The pattern of a setting that takes one of `names`."""
    return "^(" + "|".join(map(re.escape, names)) + ")$"


class TrimConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How conversations are trimmed when a request names no strategy of its own."""

    strategy: Annotated[str, Meta(pattern=_one_of(typing.get_args(Strategy)), description="Default "
                                  "strategy: pipeline shortens the longest messages, then "
                                  "keeps whole groups from the newest back; priority cuts "
                                  "retrieved documents first, then older history, then "
                                  "recent messages.")] = _TRIM.strategy
    tool_output_cap: Annotated[Annotated[int, Meta(ge=16, le=MOST_COUNT)] | None, Meta(
        description="Tokens past which a tool output is shortened to its outline; unset: "
        "the budget / 16, at least 256.")] = _TRIM.tool_output_cap
    head_lines: Annotated[int, Meta(ge=0, le=MOST_COUNT, description="Lines kept at the "
                                    "start of a truncated block.")] = _TRIM.head_lines
    tail_lines: Annotated[int, Meta(ge=0, le=MOST_COUNT, description="Lines kept at the end "
                                    "of a truncated block.")] = _TRIM.tail_lines

    def options(self, strategy: str | None = None, fmt: str = "ctxlayer", decoded=None):
        """The core's `TrimOptions` for these settings and a conversation in `fmt` (in a
        provider's format one that fits goes as it came; `decoded`, the request as read, gives
        the format's rules of what the fit keeps); `strategy` (a request's own) wins over the
        default. The daemon's ctx/trim and `ctxlayer trim` both take them here."""
        from ctxlayer.core.formats import trim_options

        return trim_options(fmt, decoded, strategy=strategy or self.strategy,  # type: ignore[arg-type]
                            tool_output_cap=self.tool_output_cap,
                            head_lines=self.head_lines, tail_lines=self.tail_lines)


_MODES = DEFAULT_MODES
_CALIBRATION = Calibration()
_COMPACTION = CompactionPolicy()
_DECAY = DecayPolicy()
_RULES = RulePolicy()


class ModeConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One task mode: the tokens the rules and the working items share, and the working
    items' largest part of them. Rules are always shown whole (only the budget limits them):
    what they take comes out of the working items' room."""

    rules_share: Annotated[float, Meta(ge=0, le=1, description="The rules' (zone A) part of "
                                       "`cap` that the mode plans for and editors show; it "
                                       "limits nothing: rules are always shown whole, only the "
                                       "budget limits them, and what they take comes out of "
                                       "the working items' room.")] = (
        _MODES[DEFAULT_MODE].rules_share)
    working_share: Annotated[float, Meta(ge=0, le=1, description="Largest share of `cap` the "
                                         "working items (zone B) may use; they get less when "
                                         "the rules leave less of `cap`.")] = (
        _MODES[DEFAULT_MODE].working_share)
    cap: Annotated[int, Meta(ge=0, le=MOST_COUNT, description="Tokens the rules and the "
                             "working items share: the working items get what the rules "
                             "leave of it (at most "
                             "`working_share`). Rules over it are still shown whole, so the "
                             "two zones pass it then, with no working items.")] = (
        _MODES[DEFAULT_MODE].cap)


def _mode(name: str) -> ModeConfig:
    m = _MODES[name]
    return ModeConfig(rules_share=m.rules_share, working_share=m.working_share, cap=m.cap)


class ModesConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The three task modes: short questions, deep work, debugging (a field per name of the
    core's mode table, checked below)."""

    short: ModeConfig = msgspec.field(default_factory=lambda: _mode("short"))
    deep: ModeConfig = msgspec.field(default_factory=lambda: _mode("deep"))
    debug: ModeConfig = msgspec.field(default_factory=lambda: _mode("debug"))


assert tuple(msgspec.structs.fields(ModesConfig)[i].name for i in range(len(_MODES))) == tuple(
    _MODES), "ModesConfig has one field per mode of core/zones/modes.py, in its order"


class SessionConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How sessions remember: rule and working zones, modes, compaction, calibration."""

    default_mode: Annotated[str, Meta(pattern=_one_of(_MODES), description="Mode of "
                                      "a new session when the client names none.")] = (
        DEFAULT_MODE)
    modes: ModesConfig = msgspec.field(default_factory=ModesConfig)
    max_rules: Annotated[int, Meta(ge=0, le=MOST_COUNT, description="Most rules kept in the "
                                   "rule zone; the lowest weights beyond are demoted to the "
                                   "working zone.")] = (
        _RULES.max_rules)
    rule_prefix: Annotated[str, Meta(description="Marker put before the top-weight rules.")] = (
        _RULES.prefix)
    decay: Annotated[float, Meta(gt=0, le=1, description="Heat a working item keeps per turn "
                                 "in which no reply refers to it. A turn is a user request "
                                 "and the answer to it, however many tool-calling steps the "
                                 "answer took.")] = _DECAY.factor
    compress_below: Annotated[float, Meta(ge=0, le=1, description="Below this heat a working "
                                          "item is shown compressed to about a quarter.")] = (
        _DECAY.compress_below)
    remove_below: Annotated[float, Meta(ge=0, le=1, description="Below this heat an optional "
                                        "working item is removed.")] = (
        _DECAY.remove_below)
    compaction_trigger: Annotated[float, Meta(gt=0, le=1, description="History share past "
                                              "which rolling compaction runs. 1.0, not the "
                                              "design's 70%: a compaction fills the share to "
                                              "`compaction_target` and moves in steps, so it "
                                              "waits until the history no longer fits rather "
                                              "than summarize messages that do and move the "
                                              "cached prefix sooner. A live chat reads its "
                                              "next summary's facts ahead from "
                                              "`precompact_at` (70%) on.")] = (
        _COMPACTION.trigger)
    compaction_target: Annotated[float, Meta(gt=0, le=1, description="History share that the "
                                             "summary and the newest messages kept verbatim "
                                             "fill after a compaction (the cheap stages aim "
                                             "for it first).")] = _COMPACTION.target
    keep_recent: Annotated[int, Meta(ge=0, le=MOST_COUNT, description="Newest messages the "
                                     "cheap compaction stages never shorten.")] = (
        _COMPACTION.keep_recent)
    tool_output_cap: Annotated[int, Meta(ge=16, le=MOST_COUNT, description="Tokens past which "
                                         "an older tool output is compressed during "
                                         "compaction.")] = _COMPACTION.tool_output_cap
    summary_max_tokens: Annotated[int, Meta(ge=16, le=MOST_COUNT, description="Most tokens "
                                            "asked of the summarizer.")] = (
        _COMPACTION.summary_max_tokens)
    summarizer_timeout: Annotated[float, Meta(gt=0, le=MOST_SECONDS, description="Seconds to "
                                              "wait for the client's ctx/summarize before the "
                                              "offline summary is used.")] = (
        CLIENT_SUMMARY_TIMEOUT)
    calibration_window: Annotated[int, Meta(ge=1, le=MOST_COUNT, description="Usage reports "
                                            "averaged per model for the token bias.")] = (
        _CALIBRATION.window)
    durability: Annotated[str, Meta(pattern="^(normal|full)$", description="SQLite "
                                    "synchronous mode: normal survives a killed daemon, full "
                                    "also a power cut (slower appends).")] = "normal"
    keep_days: Annotated[int, Meta(ge=0, le=MOST_KEEP_DAYS, description="Days the state "
                                   "folder keeps a workspace's audit entries, the windows of "
                                   "its live conversations and which conversation each "
                                   "provider answer id was of; older ones are removed once a "
                                   "day (0 keeps them all, at most a century otherwise). "
                                   "Sessions, their messages and rules are never removed.")
                         ] = KEEP_DAYS


class GatewayConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The HTTP gateway (OpenAI- and Anthropic-compatible) that `ctxlayer serve` may also run."""

    enabled: Annotated[bool, Meta(description="Run the gateway inside `ctxlayer serve` "
                                  "(`ctxlayer gateway` runs it alone either way).")] = False
    host: Annotated[str, Meta(description="Loopback address to listen on; any other address "
                              "is reported and ignored (`ctxlayer gateway --host` refuses "
                              "it).")] = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535, description="Port to listen on; 0 picks a free "
                              "one (announced at initialize).")] = 0
    openai_base_url: Annotated[str, Meta(description="Where OpenAI requests are forwarded: "
                                         "the upstream's /v1 base (ChatGPT's for Codex signed "
                                         "in with it: https://chatgpt.com/backend-api/codex). "
                                         + _UNUSABLE_UPSTREAM_NOTE + " " +
                                         _USER_ONLY_NOTE.format(why=_KEYS_ELSEWHERE))] = (
        "https://api.openai.com/v1")
    anthropic_base_url: Annotated[str, Meta(description="Where Anthropic requests are "
                                            "forwarded. " + _UNUSABLE_UPSTREAM_NOTE + " " +
                                            _USER_ONLY_NOTE.format(why=_KEYS_ELSEWHERE))] = (
        "https://api.anthropic.com")
    connect_timeout: Annotated[float, Meta(gt=0, le=MOST_SECONDS, description="Seconds to wait for the "
                                           "upstream to accept the connection.")] = 10.0
    read_timeout: Annotated[float, Meta(gt=0, le=MOST_SECONDS, description="Seconds to wait for the upstream's "
                                        "next bytes (the first byte included) before the "
                                        "answer is given up.")] = 600.0
    header_timeout: Annotated[float, Meta(gt=0, le=MOST_SECONDS, description="Seconds a client has to send a "
                                          "request's headers (from its connection, or from "
                                          "the previous answer on a kept-alive one); a slower "
                                          "client is disconnected. Its body must then come at "
                                          f"no less than {MIN_BODY_KIB_PER_S} KiB/s after this "
                                          "same grace.")] = 10.0
    max_body_mb: Annotated[int, Meta(ge=1, le=MOST_BODY_MB, description="Largest request "
                                     "body, in MiB (the default is the daemon's JSON-RPC frame "
                                     "limit; at most 1 GiB, each body being held in memory "
                                     "whole); a larger one gets 413.")] = MAX_MESSAGE_MB
    models: Annotated[dict[str, Annotated[int, Meta(gt=0, le=MAX_TOKENS)]], Meta(
        description="A model's context window in tokens, overriding the built-in table and "
        "the 1M beta: `\"claude-opus-4-8\" = 200000` (the longest matching prefix of the "
        "model name wins; a key with a provider's prefix, `\"anthropic/claude-sonnet-4.5\"`, "
        "matches the name as the client sends it, one without matches behind any prefix)."
        )] = msgspec.field(default_factory=dict)
    precompact_at: Annotated[float, Meta(gt=0, le=1, description="The share of its budget a "
                                         "live chat (the gateway's, any `ctx/prepare`) passes "
                                         "before its next summary chunk is prepared in the "
                                         "background (its facts read, with `summarizer = "
                                         "\"upstream\"` the chunk written), so no request "
                                         "waits for it.")] = _LIVE.precompact_at
    summarizer: Annotated[str, Meta(pattern="^(offline|upstream)$", description="Who writes "
                                    "a live chat's next summary chunk, in the background once "
                                    "the chat passes `precompact_at` of its budget: `offline` "
                                    "(ctxlayer "
                                    "itself), or `upstream` (the chat's own provider, with the "
                                    "key of its last request and `summarizer_model`; the "
                                    "offline summary stands in when it is late, fails or "
                                    "misreads). " + _USER_ONLY_NOTE.format(why=_KEYS_SPENT)
                                    )] = "offline"
    summarizer_model: Annotated[str, Meta(description="The model `summarizer = \"upstream\"` "
                                          "asks (a small one of the same provider), or one "
                                          "per provider separated by commas, "
                                          "`\"claude-haiku-4-5, gpt-4o-mini\"`: a chat takes "
                                          "the first of its own family (Claude or not); "
                                          "none, or empty: the chat's own model. " +
                                          _USER_ONLY_NOTE.format(why=_KEYS_SPENT))] = ""


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The whole settings tree: one section per subsystem."""

    workspace: WorkspaceConfig = msgspec.field(default_factory=WorkspaceConfig)
    trim: TrimConfig = msgspec.field(default_factory=TrimConfig)
    session: SessionConfig = msgspec.field(default_factory=SessionConfig)
    gateway: GatewayConfig = msgspec.field(default_factory=GatewayConfig)


# --- loading -------------------------------------------------------------------------------------


def default_user_config_dir() -> Path:
    """The user's config folder, as `ctxlayer.paths` places it (`$XDG_CONFIG_HOME/ctxlayer`,
    else `~/.config/ctxlayer`, on Linux)."""
    from ctxlayer.paths import config_dir

    return config_dir()


#: what a read of the configuration found in one file: its bytes, None when it is not there,
#: or why it could not be read
Found = bytes | str | None
#: path -> what a read of the configuration found there, for each file it looked at: two
#: reads that found the same give the same configuration (the client's overrides aside)
ConfigRead = dict[str, Found]


def load_config(
    workspace: Path, user_config_dir: Path | None = None, overrides: dict | None = None,
    *, seen: ConfigRead | None = None,
) -> tuple[Config, list[str]]:
    """Merge the user's file, then the workspace's `ctxlayer.toml`, then `overrides`.

    `user_config_dir=None` skips the user's file (pass `default_user_config_dir()` in
    production). Later sources win key by key; lists are replaced, not merged. Returns the
    config and one message per problem; a bad value falls back to its default, a bad file or
    table is ignored as a whole. Never raises. `seen`, when given, is filled with what each
    file held as it was read (`ConfigRead`): a watcher that starts later compares it with the
    files then, so that an edit made in between is not lost.
    """
    messages: list[str] = []
    # (source, its settings, what it may not set): the user's own file and the editor's
    # settings may set anything, the workspace's file not USER_ONLY
    layers: list[tuple[str, dict, Mapping[str, str]]] = []
    files: list[tuple[Path, Mapping[str, str]]] = []
    if user_config_dir is not None:
        files.append((Path(user_config_dir) / CONFIG_FILE, {}))
    files.append((Path(workspace) / CONFIG_FILE, USER_ONLY))
    for path, refused in files:
        data = _read_toml(path, messages, seen)
        if data is not None:
            layers.append((str(path), data, refused))
    if overrides is not None:
        if isinstance(overrides, dict):
            layers.append(("initializationOptions.config", overrides, {}))
        else:
            messages.append(
                f"initializationOptions.config: expected an object, got "
                f"{type(overrides).__name__}; ignored"
            )
    values: dict[str, Any] = {}
    for source, data, refused in layers:
        _merge_into(values, data, source, Config, "", messages, refused)
    config = _build(Config, values)
    return _consistent(config, messages), messages


def reload_config(
    workspace: Path, user_config_dir: Path | None, overrides: dict | None, previous: Config,
    *, seen: ConfigRead | None = None,
) -> tuple[Config, str]:
    """Load the config again after a `ctxlayer.toml` changed (same sources as `load_config`,
    `seen` filled as there).

    Returns the new config and one message for the user: which settings changed (dotted key,
    old -> new), then what was rejected (each problem; the rejected key keeps its default, as
    at start). Never raises."""
    config, problems = load_config(workspace, user_config_dir, overrides, seen=seen)
    diffs = [f"{key} {_show(old)} -> {_show(new)}"
             for key, old, new in _differences(previous, config, "")]
    if diffs:
        message = "ctxlayer.toml reloaded: " + "; ".join(diffs)
        if any(key.startswith("gateway.") for key, _, _ in _differences(previous, config, "")):
            # the gateway reads its settings when it starts: said, or a fixed upstream URL
            # looked taken while the gateway went on refusing the old one
            message += " (the gateway takes its settings when it starts: restart it, or " \
                       "reload the editor, for them to apply)"
    else:
        message = "ctxlayer.toml reloaded: no setting changed"
    if problems:
        message += ". Rejected: " + " | ".join(problems)
    return config, message


def _differences(old: Any, new: Any, prefix: str) -> list[tuple[str, Any, Any]]:
    out = []
    for f in msgspec.structs.fields(type(old)):
        a, b = getattr(old, f.name), getattr(new, f.name)
        if isinstance(a, msgspec.Struct):
            out += _differences(a, b, f"{prefix}{f.name}.")
        elif a != b:
            out.append((f"{prefix}{f.name}", a, b))
    return out


def _show(value: Any) -> str:
    return "unset" if value is None else msgspec.json.encode(said(value)).decode()


def _read_toml(path: Path, messages: list[str], seen: ConfigRead | None = None) -> dict | None:
    found: Found = None  # not there
    try:
        found = userfiles.read(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        found = f"cannot be read ({e.strerror})"
        messages.append(f"{path}: {found}; ignored")
    if seen is not None:
        seen[str(path)] = found
    if not isinstance(found, bytes):
        return None
    try:
        # a byte-order mark first (Notepad, PowerShell's `Out-File -Encoding utf8`) is no
        # TOML statement: the whole file was "invalid TOML" and every setting in it lost
        return tomllib.loads(found.decode("utf-8-sig"))
    except UnicodeDecodeError:
        messages.append(f"{path}: not UTF-8 text; ignored")
    except tomllib.TOMLDecodeError as e:
        messages.append(f"{path}: invalid TOML ({e}); ignored")
    return None


def _consistent(config: Config, messages: list[str]) -> Config:
    """The config with settings that are each valid but not together made to agree, each
    said: a compaction target at or past its trigger compacted a session on every turn (the
    summary left the history past the trigger), moving its cached prefix every time."""
    session = config.session
    if session.compaction_target < session.compaction_trigger:
        return config
    target = round(session.compaction_trigger * _COMPACTION.target / _COMPACTION.trigger, 3)
    messages.append(
        f"`session.compaction_target` ({session.compaction_target:g}) is not below "
        f"`session.compaction_trigger` ({session.compaction_trigger:g}): every turn would "
        f"compact again; using a target of {target:g} (the default's share of the trigger)")
    return msgspec.structs.replace(config, session=msgspec.structs.replace(
        session, compaction_target=target))


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _merge_into(
    values: dict, data: dict, source: str, cls: type, prefix: str, messages: list[str],
    refused: Mapping[str, str] | None = None, defaults: Any = None,
) -> None:
    """Validate `data` against struct `cls` key by key and merge the good keys into `values`;
    a key in `refused` (dotted, snake_case) is said and skipped. `defaults`: the struct whose
    values a bad key falls back to (a mode's own, not every mode's `ModeConfig` defaults)."""
    fields = {f.name: f for f in msgspec.structs.fields(cls)}
    defaults = cls() if defaults is None else defaults
    for key, value in data.items():
        name = _snake(str(key))
        dotted = f"{prefix}{key}"
        field = fields.get(name)
        if field is None:
            known = ", ".join(sorted(fields)) or "none yet"
            messages.append(f"{source}: unknown setting `{dotted}` (known: {known}); ignored")
            continue
        why = (refused or {}).get(_snake(prefix) + name)
        if why is not None:
            messages.append(f"{source}: `{dotted}` is read only from your own ctxlayer.toml "
                            f"and the editor's settings, not a workspace's ({why}); ignored")
            continue
        ftype = _plain(field.type)
        if isinstance(ftype, type) and issubclass(ftype, msgspec.Struct):
            if not isinstance(value, dict):
                messages.append(
                    f"{source}: `{dotted}` must be a table, got {_kind(value)}; ignored"
                )
                continue
            _merge_into(values.setdefault(name, {}), value, source, ftype, dotted + ".",
                        messages, refused, getattr(defaults, name))
            continue
        if typing.get_origin(ftype) is dict and isinstance(value, dict):
            # a table of entries: a bad entry is reported and skipped, the others kept
            entry_type = typing.get_args(ftype)[1]
            table = values.setdefault(name, {})
            for k, v in value.items():
                try:
                    table[str(k)] = msgspec.convert(v, entry_type)
                except msgspec.ValidationError as e:
                    messages.append(f"{source}: `{dotted}.{k}`: {str(e)[:1].lower()}"
                                    f"{str(e)[1:]} (value {said(v)!r}); ignored")
            continue
        try:
            converted = msgspec.convert(value, field.type)
            if _snake(prefix) + name == "gateway.host" and not is_loopback(converted):
                raise msgspec.ValidationError(NOT_LOOPBACK)  # said and ignored, as any bad value
            if _snake(prefix) + name in _UPSTREAMS:
                _upstream(values, name, value, source, dotted, messages)
                continue
            values[name] = converted
            if _snake(prefix) + name in _PATTERNS:
                values[name] = _readable(values[name], _snake(prefix) + name, source, dotted,
                                         messages)
        except msgspec.ValidationError as e:
            if _snake(prefix) + name in _UPSTREAMS:  # not even a string: kept, and refused
                _upstream(values, name, str(value), source, dotted, messages)
                continue
            most = None if _snake(prefix) + name in _NOT_AMOUNTS else _most(field.type)
            if most is not None and isinstance(value, int) and not isinstance(value, bool) \
                    and value > most:
                # a whole number past the bound, the bound: the default is no value near the
                # one asked (a keep_days of 50000, which kept everything before the bound,
                # fell to 30 and the next turn deleted the chats kept 40 days). Shares and
                # timeouts past theirs are mistakes (1.5 of a budget, an infinite wait)
                values[name] = msgspec.convert(most, field.type)
                messages.append(f"{source}: `{dotted}`: at most {most} (value {said(value)!r}); "
                                f"using {most}")
                continue
            why = re.sub(r" - at `\$(.*)`$", r" (at item \1)", str(e)).replace(" (at item )", "")
            why = why[:1].lower() + why[1:]
            # an earlier source's value of the key stays (later sources win only with a good
            # value): said as the default, a workspace's bad strategy reported 'pipeline'
            # while the user's own 'priority' went on being used
            used = (f"keeping {values[name]!r} from an earlier source" if name in values
                    else f"using the default {getattr(defaults, name)!r}")
            messages.append(f"{source}: `{dotted}`: {why} (value {said(value)!r}); {used}")


#: why `[gateway] host` is loopback only, wherever it is set: a settings file's other address
#: is reported and ignored (a cloned project's `host = "0.0.0.0"` kept the user's gateway from
#: starting at all), `ctxlayer gateway --host` refuses it
NOT_LOOPBACK = ("the gateway listens on loopback only (127.0.0.1, ::1, localhost): it forwards "
                "the clients' API keys")


#: the URLs the gateway adds a path to: the pattern `^https?://` let a query, a fragment and
#: no host through, each misused on every request (urls.why_not_upstream)
_UPSTREAMS = frozenset({"gateway.openai_base_url", "gateway.anthropic_base_url"})


def _upstream(values: dict, name: str, value: str, source: str, dotted: str,
              messages: list[str]) -> None:
    """An upstream URL is taken as written even when it cannot be used: the default in its
    place would send a chat meant for a server the user chose (a local model, a company
    proxy) to the provider's own, with its key. The gateway refuses that upstream's
    requests, naming the setting, until it is fixed (gateway.server.upstream_refused)."""
    values[name] = value
    why = why_not_upstream(value)
    if why is not None:
        messages.append(f"{source}: `{dotted}`: {why} (value {said(value)!r}); the gateway "
                        "refuses its requests until it is fixed and started again (they are not "
                        "sent to the default in its place)")


#: whole numbers that name something rather than count it: past the bound, a mistake (a
#: port of 80800 pinned every workspace's gateway to 65535 instead of any free port)
_NOT_AMOUNTS = frozenset({"gateway.port"})


def _most(ftype: Any) -> int | None:
    """The upper bound (`le`) a whole-number setting's type declares (or an optional one's),
    if any."""
    if typing.get_origin(ftype) is Annotated and typing.get_origin(
            typing.get_args(ftype)[0]) in (typing.Union, types.UnionType):  # described
        ftype = typing.get_args(ftype)[0]
    if typing.get_origin(ftype) in (typing.Union, types.UnionType):
        ftype = next((a for a in typing.get_args(ftype) if a is not type(None)), None)
    if typing.get_origin(ftype) is not Annotated or typing.get_args(ftype)[0] is not int:
        return None
    return next((int(m.le) for m in typing.get_args(ftype)[1:]
                 if isinstance(m, msgspec.Meta) and m.le is not None), None)


#: the list settings whose entries are gitignore patterns (True: `files` globs, whose entries
#: without a wildcard name a file)
_PATTERNS = {"workspace.ignore": False, "workspace.files": True}


def _readable(patterns: list[str], key: str, source: str, dotted: str,
              messages: list[str]) -> list[str]:
    """`patterns` without the ones that cannot be read as a pattern, each said: a class whose
    range runs backwards (`src/[z-a].py`) failed the workspace's scan and every assembly; the
    scan now skips it (it matches nothing: `_rule` says where git differs), and the user learns
    why here."""
    # the workspace package imports this module: a late import, which the scan's own
    # reading of the patterns shares
    from ctxlayer.workspace.ignore import why_no_pattern

    kept = []
    for pattern in patterns:
        why = why_no_pattern(pattern, glob=_PATTERNS[key])
        if why is None:
            kept.append(pattern)
        else:
            messages.append(f"{source}: `{dotted}`: {pattern!r} is not a pattern ({why}); "
                            "it matches nothing and is skipped")
    return kept


def _build(cls: type, values: dict, base: Any = None) -> Any:
    """`base` (default: `cls()`) with the validated `values` applied; a nested table starts
    from the parent's default for it, not from the nested struct's own defaults."""
    base = cls() if base is None else base
    kwargs = {}
    for f in msgspec.structs.fields(cls):
        if f.name not in values:
            continue
        ftype = _plain(f.type)
        if isinstance(ftype, type) and issubclass(ftype, msgspec.Struct):
            kwargs[f.name] = _build(ftype, values[f.name], getattr(base, f.name))
        else:
            kwargs[f.name] = values[f.name]
    return msgspec.structs.replace(base, **kwargs)


def _plain(tp: Any) -> Any:
    if typing.get_origin(tp) is Annotated:
        return typing.get_args(tp)[0]
    return tp


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(
        type(value), type(value).__name__)


def _default_of(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not msgspec.NODEFAULT:
        return field.default
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return None


# --- docs ------------------------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    tp = _plain(tp)
    if _optional(tp) is not None:
        return f"{_type_name(_optional(tp))} or unset"
    if typing.get_origin(tp) is list:
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if typing.get_origin(tp) is dict:
        key, value = typing.get_args(tp)
        return f"table of {_type_name(key)} to {_type_name(value)}"
    return {int: "integer", str: "string", bool: "boolean", float: "number"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


def _optional(tp: Any) -> Any:
    """X for `X | None`, else None."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else ()
    rest = [a for a in args if a is not type(None)]
    return rest[0] if len(args) == 2 and len(rest) == 1 else None


def _meta(tp: Any) -> Meta | None:
    """The field's constraints and description; an optional field's inner constraints are
    merged with the description on the outside."""
    found: Meta | None = None
    if typing.get_origin(tp) is Annotated:
        for m in typing.get_args(tp)[1:]:
            if isinstance(m, Meta):
                found = m
        inner = _optional(_plain(tp))
        inner_meta = _meta(inner) if inner is not None else None
        if inner_meta is not None:
            found = Meta(gt=inner_meta.gt, ge=inner_meta.ge, lt=inner_meta.lt,
                         le=inner_meta.le, pattern=inner_meta.pattern,
                         description=found.description if found else None)
    return found


def _bounds(meta: Meta | None) -> str:
    if meta is None:
        return ""
    parts = []
    for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        if getattr(meta, attr) is not None:
            parts.append(f"{sign} {getattr(meta, attr)}")
    if meta.pattern is not None:
        m = re.fullmatch(r"\^\(([\w|]+)\)\$", meta.pattern)
        parts.append("one of " + ", ".join(m.group(1).split("|")) if m else
                     f"matching `{meta.pattern}`")
    return f" ({', '.join(parts)})" if parts else ""


def _rows(instance: msgspec.Struct, prefix: str) -> list[str]:
    """Table rows for a struct's fields with `instance`'s values as defaults; nested structs
    become dotted keys."""
    rows = []
    for f in msgspec.structs.fields(type(instance)):
        value = getattr(instance, f.name)
        if isinstance(value, msgspec.Struct):
            rows += _rows(value, f"{prefix}{f.name}.")
            continue
        meta = _meta(f.type)
        desc = (meta.description if meta and meta.description else "").replace("|", "\\|")
        default = msgspec.json.encode(value).decode()
        rows.append(f"| `{prefix}{f.name}` | {_type_name(f.type)}{_bounds(meta)} | "
                    f"`{default}` | {desc} |")
    return rows


def settings_doc() -> str:
    """docs/settings.md, rendered from the tree (a test checks the file is up to date)."""
    out = [
        "# ctxlayer settings",
        "",
        "<!-- Generated by ctxlayer.config.settings_doc(); do not edit by hand. -->",
        "",
        (f"Settings are read from `{CONFIG_FILE}` in the user's config folder "
        "(`~/.config/ctxlayer/`, or `$XDG_CONFIG_HOME/ctxlayer/`, on Linux and the BSDs; "
        "`~/Library/Application Support/ctxlayer/` on macOS; `%LOCALAPPDATA%\\ctxlayer\\` "
        f"on Windows), then from `{CONFIG_FILE}` in the "
        "workspace, then from the editor's `initializationOptions.config`; later sources win "
        "key by key, lists are replaced. Keys may be written in snake_case or camelCase. A bad "
        "value is reported (naming its key and what is used instead) and ignored: the value an "
        "earlier source gave the key, else its default, is used; a whole number past its "
        "upper bound is reported and the bound used, but for one that names something rather "
        f"than counts it ({', '.join(f'`{k}`' for k in sorted(_NOT_AMOUNTS))}): past its bound "
        "it is a mistake, and its default is used."),
        "",
    ]
    for section in msgspec.structs.fields(Config):
        cls = _plain(section.type)
        out += [f"## [{section.name}]", "", (cls.__doc__ or "").strip(), ""]
        rows = _rows(_default_of(section), "")
        if not rows:
            out += ["No settings yet.", ""]
            continue
        out += ["| key | type | default | meaning |", "| --- | --- | --- | --- |", *rows, ""]
    return "\n".join(out)


if __name__ == "__main__":  # `python -m ctxlayer.config` rewrites docs/settings.md
    import sys

    from ctxlayer.generated import CHECKOUT, regenerate

    sys.exit(regenerate(
        None, module="ctxlayer.config", what="settings reference",
        description="Write docs/settings.md, the reference of every setting of config.toml, "
                    "from the settings' definitions in ctxlayer/config.py.",
        path=CHECKOUT / "docs" / "settings.md", render=lambda _text: settings_doc()))
