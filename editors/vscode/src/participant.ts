/**
 * The `@ctxlayer` chat participant: a chat whose history and rules live in a ctxlayer
 * session. Each turn appends the question, assembles the session into the chosen model's
 * window, streams the answer, runs the tools the model calls and appends their results.
 * `/mode`, `/rule`, `/why` and `/restore` act on the session. ChatContext.history holds no
 * tool calls, so every result carries its turn's tool rounds in its metadata: a chat whose
 * session the daemon no longer has is rebuilt from history plus metadata.
 * Owns the turn loop and the replies; the status bar learns about the chat from the
 * controller (the `onTurn` hook).
 */
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { open, realpath } from "node:fs/promises";
import { sep } from "node:path";
import {
  CtxlayerError,
  type AssembleResult,
  type AuditEntry,
  type CtxlayerClient,
  type Message,
  type ModeInfo,
  type SessionSetModeParams,
} from "@ctxlayer/client";
import { modeRoom } from "./announcement";
import { VENDOR, daemonModel } from "./chatModels";
import { resultText, toolsToOpenAI } from "./chatConvert";
import { secretReason } from "./secrets";
import * as api from "./vscodeapi";
import { TOOL_NAME as WORKSPACE_TOOL } from "./workspaceTool";

export const PARTICIPANT_ID = "ctxlayer.chat";
const MAX_TOOL_ROUNDS = 5;
/** The share of the model's window the editor's tool definitions may take in a turn: the rest
 * is the chat's, so that a small window is not filled by tools it may never call. */
const TOOLS_SHARE = 0.5;

/** What a turn leaves in ChatResult.metadata (JSON only). */
export interface TurnMetadata {
  sessionId: string;
  /** The messages this turn appended after the question: answers, tool calls, tool results. */
  appended: Message[];
  compacted?: boolean;
}

export interface ParticipantHooks {
  client(): CtxlayerClient;
  /** The task modes the daemon announced (names and shares). */
  modes(): Record<string, ModeInfo | undefined>;
  /** A turn of this chat reached the daemon: the status bar follows this session. */
  onTurn(sessionId: string, result?: AssembleResult): void;
  /** The tokens the tool definitions sent beside this chat's next assembly take (0: none),
   * of the model's window: the daemon's figure counts the messages only, the status bar
   * adds these. */
  onTools(sessionId: string, tokens: number, window: number): void;
  log: api.LogOutputChannel;
}

/** The session of this chat: named by the first turn's metadata, else a new one. */
export function sessionOf(context: api.ChatContext): string | undefined {
  for (const turn of context.history) {
    const meta = (turn as { result?: api.ChatResult }).result?.metadata as TurnMetadata | undefined;
    if (meta?.sessionId) return meta.sessionId;
  }
  return undefined;
}

/** The chat's messages as the session holds them, from VS Code's history and our metadata. */
export function historyMessages(context: api.ChatContext): Message[] {
  const out: Message[] = [];
  for (const turn of context.history) {
    const t = turn as { prompt?: string; command?: string; result?: api.ChatResult; response?: unknown[] };
    if (typeof t.prompt === "string") {
      if (!t.command) out.push({ role: "user", content: t.prompt });
    } else if (t.result) {
      const meta = t.result.metadata as TurnMetadata | undefined;
      if (meta?.appended?.length) {
        out.push(...meta.appended);
      } else if (!t.command) {
        const text = (t.response ?? [])
          .map((p) => (p as { value?: { value?: string } }).value?.value ?? "")
          .join("");
        if (text) out.push({ role: "assistant", content: text });
      }
    }
  }
  return out;
}

/** The session's messages (format ctxlayer) as the VS Code messages a model takes. */
export function toChatMessages(messages: readonly Message[]): api.LanguageModelChatMessage[] {
  const out: api.LanguageModelChatMessage[] = [];
  const { User, Assistant } = api.LanguageModelChatMessageRole;
  for (const m of messages) {
    if (m.role === "assistant") {
      const parts: (api.LanguageModelTextPart | api.LanguageModelToolCallPart)[] = [];
      if (m.content) parts.push(new api.LanguageModelTextPart(m.content));
      for (const call of m.toolCalls ?? []) {
        parts.push(new api.LanguageModelToolCallPart(call.id, call.name, parseArgs(call.arguments)));
      }
      out.push(new api.LanguageModelChatMessage(Assistant, parts));
    } else if (m.role === "tool") {
      const result = new api.LanguageModelToolResultPart(m.toolCallId ?? "", [
        new api.LanguageModelTextPart(m.content),
      ]);
      out.push(new api.LanguageModelChatMessage(User, [result]));
    } else {
      const role = m.role === "system" ? (api.systemRole() ?? User) : User;
      out.push(new api.LanguageModelChatMessage(role, [new api.LanguageModelTextPart(m.content)]));
    }
  }
  return out;
}

/** The files a request references (#file, a selection's file), as paths. */
export function referencedFiles(request: Pick<api.ChatRequest, "references">): string[] {
  const paths = request.references.map((r) => {
    const v = r.value as { scheme?: string; fsPath?: string; uri?: { scheme?: string; fsPath?: string } };
    const uri = v && typeof v === "object" && "uri" in v ? v.uri : v;
    return uri && typeof uri === "object" && uri.scheme === "file" ? uri.fsPath : undefined;
  });
  return [...new Set(paths.filter((p): p is string => Boolean(p)))];
}

/** The daemon's answer for a session that no chat prepared (ctx/why and ctx/restore). */
function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((i) => !test(i))];
}

function within(path: string, folder: string | undefined): boolean {
  if (!folder) return false;
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** As much of an attached file as the daemon would read of one (attachments.py). */
const MAX_ATTACHED_BYTES = 1_000_000;

/**
 * An attached file's text, as the daemon gives one: a binary one described, a huge one cut;
 * one that may hold secrets, or a link out of the window's folders, never read (the daemon's
 * rule, which it cannot apply to a file it never sees). `folder`: the one holding `path`.
 */
async function attachedText(
  path: string,
  folder: string,
  folders: readonly string[],
): Promise<string | { problem: string }> {
  const unread = (err: unknown) => ({
    problem: `could not be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
  });
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    return unread(err);
  }
  // a folder's own path may be a link too: compare resolved with resolved
  const resolved = async (f: string) => await realpath(f).catch(() => f);
  if (!(await Promise.all(folders.map(resolved))).some((f) => within(real, f))) {
    return { problem: `resolves outside the workspace's folders (to ${real})` };
  }
  const secret = secretReason(path, folder, real, await resolved(folder));
  if (secret) return { problem: secret };
  let data: Buffer;
  let size: number;
  try {
    // opened without waiting for a writer, and read only if a regular file: a named pipe's
    // read waited for ever and the turn with it (the daemon's userfiles.read does the same)
    const file = await open(real, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const info = await file.stat();
      if (!info.isFile()) return { problem: "not a regular file: never read" };
      size = info.size;
      data = Buffer.alloc(Math.min(size, MAX_ATTACHED_BYTES));
      const { bytesRead } = await file.read(data, 0, data.length, 0);
      data = data.subarray(0, bytesRead);
    } finally {
      await file.close();
    }
  } catch (err) {
    return unread(err);
  }
  if (data.subarray(0, 8192).includes(0)) {
    return `(binary file, ${size.toLocaleString("en-US")} bytes, not shown)`;
  }
  const text = data.toString("utf8");
  return size > MAX_ATTACHED_BYTES
    ? `${text}\n[... cut at ${MAX_ATTACHED_BYTES.toLocaleString("en-US")} bytes ...]`
    : text;
}

function parseArgs(args: string | undefined): object {
  try {
    return args ? JSON.parse(args) : {};
  } catch {
    return { arguments: args };
  }
}

/** One line per audit entry, for /why. */
export function whyMarkdown(entries: readonly AuditEntry[], messageId?: string): string {
  if (entries.length === 0) {
    return messageId
      ? `Nothing was cut from \`${messageId}\` in the last assembly.`
      : "The last assembly kept everything whole.";
  }
  const rows = entries.map(
    (e) =>
      `| ${e.messageId ? `\`${e.messageId}\`` : (e.index ?? "")} | ${e.action} | ${e.reason} | ` +
      `${e.tokensBefore} → ${e.tokensAfter} | ${e.summary.replace(/\|/g, "\\|")} |`,
  );
  return [
    "| message | action | why | tokens | what it was |",
    "| --- | --- | --- | ---: | --- |",
    ...rows,
    "",
    "`/restore <message>` brings one back whole in the next turn.",
  ].join("\n");
}

/** The notice shown in the chat when the assembly summarized or cut something: the daemon's. */
export function notice(result: AssembleResult): string | undefined {
  return result.notice ? `> ${result.notice} (\`/why\` says what and why).\n\n` : undefined;
}

/** A chat's session and the most one of its turns may send, as the daemon counts it. */
interface ChatSession {
  sessionId: string;
  /** The session's budget: the model's input limit as the editor reports it, or less where
   * ctxlayer's table knows the model's window as smaller (the daemon refused the editor's). */
  fits: number;
}

/** What a session was last fitted for: the model it counts with and the budget it got. */
interface Fitted {
  model: string;
  budget: number;
}

/** The model's window as ctxlayer counts it, read from its refusal of a budget over it. */
function daemonWindow(err: CtxlayerError): number | undefined {
  const found = /over the ([\d,]+)-token context window/.exec(err.message)?.[1];
  return found ? Number(found.replace(/,/g, "")) : undefined;
}

export class CtxlayerParticipant {
  /** Each chat session's model and budget, learnt when it opens or its model changes: a turn
   * is counted with that model and fitted to that budget. */
  private readonly fitted = new Map<string, Fitted>();

  constructor(private readonly hooks: ParticipantHooks) {}

  readonly handler = (
    request: api.ChatRequest,
    context: api.ChatContext,
    stream: api.ChatResponseStream,
    token: api.CancellationToken,
  ): Promise<api.ChatResult> =>
    this.handle(request, context, stream, token).catch((err) => {
      // one message in the chat that says what failed; the log has the rest
      const text = err instanceof Error ? err.message : String(err);
      this.hooks.log.error(`@ctxlayer: ${text}`);
      return { errorDetails: { message: `ctxlayer: ${text}` } };
    });

  async handle(
    request: api.ChatRequest,
    context: api.ChatContext,
    stream: api.ChatResponseStream,
    token: api.CancellationToken,
  ): Promise<api.ChatResult> {
    const client = this.hooks.client();
    const model = await this.upstream(request.model);
    const { sessionId, fits } = await this.openSession(client, context, model, stream);
    const meta: TurnMetadata = { sessionId, appended: [] };
    const arg = request.prompt.trim();
    switch (request.command) {
      case "mode":
        await this.setMode(client, sessionId, arg, stream);
        return { metadata: meta };
      case "rule":
        await this.addRule(client, sessionId, arg, stream);
        return { metadata: meta };
      case "why":
        stream.markdown(whyMarkdown(await this.why(client, sessionId, arg), arg || undefined));
        return { metadata: meta };
      case "restore":
        if (!arg) {
          stream.markdown("Name the message to bring back: `/restore <message id>` (see `/why`).");
          return { metadata: meta };
        }
        try {
          await client.restore({ sessionId, messageId: arg });
        } catch (err) {
          // an id the session does not hold: the daemon says why
          if (!(err instanceof CtxlayerError && err.kind === "invalid")) throw err;
          const why = err instanceof Error ? err.message.replace(/^ctx\/restore: /, "") : "";
          stream.markdown(`\`${arg}\` stays as the last turn left it: ${why}`);
          return { metadata: meta };
        }
        stream.markdown(`\`${arg}\` comes back whole in the next turn.`);
        return { metadata: meta };
    }
    const question = await this.question(request, stream);
    await this.append(client, sessionId, [question]);
    const tools = await this.fittingTools(client, model, fits, sessionId, stream);
    for (let round = 0; round <= MAX_TOOL_ROUNDS && !token.isCancellationRequested; round++) {
      // the tool definitions go beside the messages: the messages get what they leave
      const withTools = round < MAX_TOOL_ROUNDS && tools.list.length > 0;
      const toolTokens = withTools ? tools.tokens : 0;
      this.hooks.onTools(sessionId, toolTokens, fits);
      const assembled = await client.assemble({ sessionId, budget: fits - toolTokens });
      this.hooks.onTurn(sessionId, assembled);
      const said = notice(assembled);
      if (said) {
        meta.compacted = meta.compacted || assembled.compacted;
        stream.markdown(said);
      }
      const response = await model.sendRequest(
        toChatMessages(assembled.messages as Message[]),
        withTools ? { tools: tools.list } : {},
        token,
      );
      let text = "";
      const calls: { callId: string; name: string; input: object }[] = [];
      for await (const part of response.stream) {
        if (part instanceof api.LanguageModelTextPart) {
          text += part.value;
          stream.markdown(part.value);
        } else if (part instanceof api.LanguageModelToolCallPart) {
          calls.push(part);
        }
      }
      const answer: Message = { role: "assistant", content: text };
      if (calls.length) {
        answer.toolCalls = calls.map((c) => ({
          id: c.callId,
          name: c.name,
          arguments: JSON.stringify(c.input),
        }));
      }
      const results: Message[] = [];
      for (const call of calls) {
        stream.progress(`Running ${call.name}`);
        results.push({
          role: "tool",
          toolCallId: call.callId,
          content: await this.runTool(call, request, token),
        });
      }
      await this.append(client, sessionId, [answer, ...results]);
      meta.appended.push(answer, ...results);
      if (calls.length === 0) break;
    }
    this.hooks.onTurn(sessionId);
    return { metadata: meta };
  }

  /**
   * The editor's tools that go beside this chat, and what their definitions cost (counted by
   * the daemon as the JSON a model is sent, as ctx/prepare counts a request's tools). They may
   * take up to TOOLS_SHARE of the window, the rest being the chat's: past it, the tools that
   * fit go (ctxlayer's own first) and the chat names how many stay out.
   */
  private async fittingTools(
    client: CtxlayerClient,
    model: api.LanguageModelChat,
    window: number,
    sessionId: string,
    stream: api.ChatResponseStream,
  ): Promise<{ list: api.LanguageModelChatTool[]; tokens: number }> {
    const all = api.availableTools();
    if (!all.length) return { list: all, tokens: 0 };
    const ordered = [
      ...all.filter((t) => t.name === WORKSPACE_TOOL),
      ...all.filter((t) => t.name !== WORKSPACE_TOOL),
    ];
    const count = async (tools: api.LanguageModelChatTool[]) =>
      await client.count({
        model: daemonModel(model),
        texts: [tools, ...tools.map((t) => [t])].map((ts) => JSON.stringify(toolsToOpenAI(ts))),
      });
    const { tokens } = await count(ordered);
    const [whole, ...each] = tokens;
    const room = Math.floor(window * TOOLS_SHARE);
    if (whole <= room) return { list: all, tokens: whole };
    const list: api.LanguageModelChatTool[] = [];
    let taken = 0;
    for (const [i, tool] of ordered.entries()) {
      // an array of one costs a few tokens more than its share of the whole: on the safe side
      if (taken + each[i] > room) continue;
      list.push(tool);
      taken += each[i];
    }
    const n = (x: number) => x.toLocaleString("en-US");
    const sent = list.length ? (await count(list)).tokens[0] : 0;
    const names = list.map((t) => `\`${t.name}\``).join(", ");
    const text =
      `the definitions of the editor's ${all.length} tools need ${n(whole)} tokens, over ` +
      `${TOOLS_SHARE * 100}% of ${model.name}'s window of ${n(window)}: ` +
      (list.length
        ? `this turn offers the ${list.length} that fit (${n(sent)} tokens: ${names}), ` +
          `not the other ${all.length - list.length}`
        : "this turn goes without tools");
    this.hooks.log.warn(`@ctxlayer ${sessionId}: ${text}`);
    stream.markdown(`> ctxlayer: ${text}.\n\n`);
    return { list, tokens: sent };
  }

  /**
   * The question with the files it references. The daemon reads those of its workspace (the
   * first folder) at every assembly; those of the workspace's other folders, which it may not
   * read, go in the question as they are now, in the daemon's own form of an attached file,
   * unless the daemon's rule keeps them out (secrets, links out of the folders); any other is
   * left out, and the chat says which and why.
   */
  private async question(
    request: api.ChatRequest,
    stream: api.ChatResponseStream,
  ): Promise<Message> {
    const question: Message = { role: "user", content: request.prompt };
    const [daemons, ...others] = api.workspaceFolders();
    const [inside, rest] = partition(referencedFiles(request), (p) => within(p, daemons));
    const [elsewhere, outside] = partition(rest, (p) => others.some((f) => within(p, f)));
    if (inside.length) question.files = inside;
    const left = outside.map((p) => `\`${p}\` (outside the workspace's folders)`);
    const blocks: string[] = [];
    for (const path of elsewhere) {
      const folder = others.find((f) => within(path, f))!;
      const read = await attachedText(path, folder, api.workspaceFolders());
      if (typeof read !== "string") {
        left.push(`\`${path}\` (${read.problem})`);
        continue;
      }
      // the daemon's own form of an attached file (enrich in core/trim/stages.py)
      const fence = "```";
      blocks.push(`${fence}${path}\n${read.replace(/\n+$/, "")}\n${fence}`);
    }
    if (blocks.length) question.content += "\n\n" + blocks.join("\n\n");
    if (left.length) {
      this.hooks.log.info(`not attached: ${left.join(", ")}`);
      stream.markdown(`> ctxlayer: not attached: ${left.join(", ")}.\n\n`);
    }
    return question;
  }

  /** What the last turn cut (the daemon's ctx/why of the session, its log after a restart). */
  private async why(client: CtxlayerClient, sessionId: string, messageId: string) {
    return (await client.why({ sessionId, messageId: messageId || undefined })).entries;
  }

  /** The model to answer with: the picked one, or the one under a ctxlayer model. */
  private async upstream(picked: api.LanguageModelChat): Promise<api.LanguageModelChat> {
    if (picked.vendor !== VENDOR) return picked;
    const [vendor, ...id] = picked.id.split("/");
    const [under] = await api.selectChatModels({ vendor, id: id.join("/") });
    if (!under) throw new Error(`the model under ${picked.name} is gone; pick another model`);
    return under;
  }

  /**
   * The chat's session, opened (or rebuilt from the chat's history) at the model's input limit
   * as the editor reports it. The daemon refuses a budget over the model's window as its table
   * knows it (Copilot's gpt-4 reports 28,501 tokens, ctxlayer's table 8,192): the session then
   * takes the daemon's default budget for the model, every turn fits to it, and the chat says
   * so once, where the session opens, rather than failing every turn. A turn asked of another
   * model than the session's (the model picker changed mid-chat) moves the session to it
   * first, the same way: the turn is counted with the model that answers it and fitted to
   * that model's window, not the first model's.
   */
  private async openSession(
    client: CtxlayerClient,
    context: api.ChatContext,
    model: api.LanguageModelChat,
    stream: api.ChatResponseStream,
  ): Promise<ChatSession> {
    const known = sessionOf(context);
    const sessionId = known ?? `vscode-chat:${randomUUID()}`;
    if (known) {
      const { sessions } = await client.request("ctx/session/list", {});
      if (sessions.some((s) => s.sessionId === known)) {
        // open answers an existing session unchanged: its model and budget, once per window's life
        let had = this.fitted.get(known);
        if (!had) {
          const opened = await client.request("ctx/session/open", { sessionId: known });
          had = { model: opened.model, budget: opened.budget };
        }
        if (had.model !== daemonModel(model)) {
          had = await this.fitTo(client, known, model, stream, "configure").catch((err) => {
            // a daemon older than ctx/session/configure: the session keeps its first model
            if (!(err instanceof CtxlayerError && err.kind === "unknown_method")) throw err;
            this.hooks.log.warn(`@ctxlayer ${known}: this daemon cannot change a session's ` +
              `model (no ctx/session/configure): counted as ${had!.model}; update ctxlayer`);
            return had!;
          });
        }
        this.fitted.set(known, had);
        return { sessionId: known, fits: Math.min(had.budget, model.maxInputTokens) };
      }
      this.hooks.log.warn(`chat session ${known} is gone: rebuilding it from the chat history`);
    }
    const opened = await this.fitTo(client, sessionId, model, stream, "open");
    this.fitted.set(sessionId, opened);
    const earlier = historyMessages(context);
    if (earlier.length) await this.append(client, sessionId, earlier);
    return { sessionId, fits: opened.budget };
  }

  /**
   * Opens a session (or moves one to another model: `configure`) at the editor's input limit,
   * else at the daemon's default budget for the model (said once).
   */
  private async fitTo(
    client: CtxlayerClient,
    sessionId: string,
    model: api.LanguageModelChat,
    stream: api.ChatResponseStream,
    how: "open" | "configure",
  ): Promise<Fitted> {
    const name = daemonModel(model);
    // the budget the daemon gives with `budget`, else (undefined) its default for the model
    const send = async (budget: number | undefined): Promise<number> =>
      how === "open"
        ? (await client.request("ctx/session/open", { sessionId, model: name, budget })).budget
        : (
            await client.request("ctx/session/configure", {
              sessionId,
              model: name,
              ...(budget === undefined ? { resetBudget: true } : { budget }),
            })
          ).limit;
    try {
      return { model: name, budget: await send(model.maxInputTokens) };
    } catch (err) {
      if (!(err instanceof CtxlayerError && err.kind === "invalid" && err.field === "budget")) {
        throw err;
      }
      const budget = await send(undefined);
      const n = (x: number) => x.toLocaleString("en-US");
      const window = daemonWindow(err);
      const text =
        (window
          ? `ctxlayer takes ${name}'s window as ${n(window)} tokens where the editor reports ` +
            `${n(model.maxInputTokens)}`
          : `ctxlayer refused the ${n(model.maxInputTokens)} tokens the editor reports for ` +
            `${name} (${err.message})`) +
        `: fitting this chat to ctxlayer's default budget for ${name}, ${n(budget)} tokens`;
      this.hooks.log.warn(`@ctxlayer ${sessionId}: ${text}`);
      stream.markdown(`> ${text}.\n\n`);
      return { model: name, budget };
    }
  }

  private async append(client: CtxlayerClient, sessionId: string, messages: Message[]) {
    await client.request("ctx/session/append", { sessionId, messages });
  }

  private async runTool(
    call: { callId: string; name: string; input: object },
    request: api.ChatRequest,
    token: api.CancellationToken,
  ): Promise<string> {
    try {
      const result = await api.invokeTool(call.name, call.input, request.toolInvocationToken, token);
      return resultText(result.content);
    } catch (err) {
      // the model reads the failure and can answer without the tool
      const text = err instanceof Error ? err.message : String(err);
      this.hooks.log.warn(`tool ${call.name} failed: ${text}`);
      return `The tool ${call.name} failed: ${text}`;
    }
  }

  private async setMode(
    client: CtxlayerClient,
    sessionId: string,
    name: string,
    stream: api.ChatResponseStream,
  ) {
    const modes = this.hooks.modes();
    const names = Object.keys(modes);
    if (!names.includes(name)) {
      stream.markdown(`Say which mode: ${names.map((n) => `\`/mode ${n}\``).join(", ")}.`);
      return;
    }
    const budget = await client.request("ctx/session/setMode", {
      sessionId,
      mode: name as SessionSetModeParams["mode"],
    });
    stream.markdown(
      `Mode **${name}**: ${modeRoom(modes[name]!)}. ` +
        `The chat now uses ${budget.used.toLocaleString("en-US")} of ${budget.limit.toLocaleString("en-US")} tokens.`,
    );
    this.hooks.onTurn(sessionId);
  }

  private async addRule(
    client: CtxlayerClient,
    sessionId: string,
    text: string,
    stream: api.ChatResponseStream,
  ) {
    if (!text) {
      stream.markdown("Write the rule after the command: `/rule Never use any in TypeScript`.");
      return;
    }
    const added = await client.request("ctx/session/addRule", {
      sessionId,
      rule: { text, weight: 1 },
    });
    stream.markdown(
      `Rule \`${added.ruleId}\` added: it stays in every turn of this chat.` +
        (added.demoted.length ? ` Demoted to working memory: ${added.demoted.join(", ")}.` : "") +
        (added.warning ? `\n\n${added.warning}` : ""),
    );
    this.hooks.onTurn(sessionId);
  }
}
