/**
 * The extension's view of the context budget: which session it uses, the latest Budget, and
 * how to refresh them from the daemon. It opens one session per workspace and follows
 * ctx/budgetChanged (server.ts starts only a daemon of this protocol, sessions and all).
 * No vscode import: the status bar is behind the BudgetSink interface.
 */
import { CtxlayerError } from "@ctxlayer/client";
import { announces } from "./announcement";
import type {
  AssembleParams,
  AssembleResult,
  Budget,
  CountParams,
  CountResult,
  CtxlayerClient,
  Disposable,
  Message,
  ModeSuggestion,
  ServerAnnouncement,
  SessionConfigureParams,
  SessionOpenResult,
  TrimParams,
  TrimResult,
} from "@ctxlayer/client";

export interface BudgetSink {
  /** The workspace's own budget (shown as such while no chat is live). */
  showBudget(budget: Budget, source: string): void;
  /** The chat that last sent a request through ctxlayer; undefined: none is live any more
   * (its session was closed), the workspace's figure is shown again. */
  showLive(chat: LiveChat | undefined): void;
  showProblem(text: string, detail: string): void;
}

/** A chat that sent a request through ctxlayer: its conversation, session and budget. */
export interface LiveChat {
  conversationId: string;
  sessionId?: string;
  source: string;
  budget: Budget;
}

export interface ControllerSettings {
  model: string;
  budget: number | null;
  /** One of the daemon's modes (the protocol's names; the manifest's enum is generated from
   * them), or null: the workspace's own default (`session.default_mode`, announced). */
  mode: ServerAnnouncement["defaultMode"] | null;
}

/**
 * The daemon's refusal of the budget setting, in this editor's terms: its hint names what
 * other clients can set for a larger window (initializationOptions.contextWindow, Neovim's
 * context_window), which VS Code has no setting for; here the user can lower ctxlayer.budget
 * or empty it. Any other error as it came.
 */
export function budgetRefusal(err: unknown, budget: number | null): unknown {
  if (!(err instanceof CtxlayerError && err.kind === "invalid" && err.field === "budget")) return err;
  const found = /over the ([\d,]+)-token context window of (.+?): leave the budget out for the model's default \(([\d,]+)\)/.exec(
    err.message,
  );
  if (!found || budget === null) return err;
  const [, window, model, fallback] = found;
  return new Error(
    `ctxlayer.budget: ${budget.toLocaleString("en-US")} tokens is over the ${window}-token context ` +
      `window of ${model}: set it to at most ${window}, or leave it empty for the model's default (${fallback})`,
  );
}

type Listener = (budget: Budget) => void;
type NoticeListener = (chat: LiveChat, notice: string) => void;
type WarningListener = (warning: string) => void;

export class BudgetController {
  private client: CtxlayerClient | undefined;
  private subscriptions: Disposable[] = [];
  private listeners = new Set<Listener>();
  sessionId: string | undefined;
  /** Why the workspace session failed to open (the daemon's error), said by every command
   * that needs it; undefined while it opens or once open. */
  sessionError: string | undefined;
  budget: Budget | undefined;
  suggestion: ModeSuggestion | undefined;
  /** The chat that last sent a request (models, @ctxlayer or the gateway). */
  live: LiveChat | undefined;
  /** What the daemon announced at initialize (modes, defaults, gateway), once it runs. */
  announcement: ServerAnnouncement | undefined;
  private noticeListeners = new Set<NoticeListener>();
  private warningListeners = new Set<WarningListener>();
  private warned = new Set<string>();
  private liveListeners = new Set<(chat: LiveChat) => void>();
  /** The workspace session's mode, as the daemon last answered it: a mode left empty keeps
   * the session's own, which may be neither the setting nor the workspace's default. */
  private sessionMode: ServerAnnouncement["defaultMode"] | undefined;
  /** What the tool definitions sent beside a @ctxlayer chat's assembly take, by session. */
  private toolTokens = new Map<string, { tokens: number; window: number }>();

  constructor(
    private readonly sink: BudgetSink,
    private settings: ControllerSettings,
    private readonly workspaceKey: string,
  ) {}

  get connected(): boolean {
    return this.client !== undefined;
  }

  /** The mode the workspace session holds, as the daemon answered it (opened, configured,
   * set); before it opens, the one it will get: the setting, else the workspace's default. */
  get mode(): ServerAnnouncement["defaultMode"] | undefined {
    return this.sessionMode ?? this.settings.mode ?? this.announcement?.defaultMode;
  }

  updateSettings(settings: ControllerSettings): void {
    this.settings = settings;
  }

  /** Called when the daemon (re)started. */
  async attach(client: CtxlayerClient, announcement: ServerAnnouncement): Promise<void> {
    this.detach();
    this.client = client;
    this.announcement = announcement;
    this.sessionId = undefined;
    this.sessionMode = undefined;
    this.sessionError = undefined;
    this.subscriptions.push(
      client.onBudgetChanged((b) => {
        // any chat's, live or not: every turn of a failing state folder says it again
        if (b.warning) this.warn(b.warning);
        if (b.live && b.sessionId === this.sessionId && !b.conversationId) {
          this.publish(b); // our own workspace session (Copy assembled prompt): its figure
        } else if (b.live) {
          // the daemon says which chat is live (the one that last sent a request) and keeps
          // that identity when a file event re-measures it: the status bar just follows
          const chat = {
            conversationId: b.conversationId ?? b.sessionId ?? "",
            sessionId: b.sessionId ?? undefined,
            source: b.source ?? "session",
            budget: this.withTools(b),
          };
          this.showLive(chat);
          if (b.notice) for (const l of this.noticeListeners) l(chat, b.notice);
        } else if (!b.conversationId && (!b.sessionId || b.sessionId === this.sessionId)) {
          this.publish(b);
        }
      }),
    );
    const opened = await client
      .request("ctx/session/open", {
        sessionId: `vscode:${this.workspaceKey}`,
        model: this.settings.model || undefined, // "" is no model: the daemon's, as configure does
        mode: this.settings.mode ?? undefined, // unset: the workspace's session.default_mode
        budget: this.settings.budget ?? undefined,
      })
      .catch((err: unknown) => {
        const said = budgetRefusal(err, this.settings.budget);
        this.sessionError = said instanceof Error ? said.message : String(said);
        throw said;
      });
    // ctx/session/budget measures it against the workspace (no assembly: an assembly is a
    // request, which would make the workspace session the daemon's live chat)
    this.sessionId = opened.sessionId;
    this.sessionMode = opened.mode;
    await this.configureSession(client, opened).catch((err: unknown) => {
      throw budgetRefusal(err, this.settings.budget);
    });
    await this.refresh();
  }

  /**
   * The workspace session keeps its id across restarts, and reopening it answers it unchanged
   * (PROTOCOL.md): the settings it holds otherwise (changed while no daemon ran, or a model
   * changed, which restarts it) go to it with ctx/session/configure. A budget left empty is the model's default (the
   * window minus the output reserve: `resetBudget`), as the setting says; a mode left empty
   * keeps the session's own. A daemon without that request keeps the session's, and one
   * warning says which.
   */
  private async configureSession(client: CtxlayerClient, opened: SessionOpenResult): Promise<void> {
    const { budget, mode } = this.settings;
    const wanted = { model: this.settings.model || null, budget, mode };
    const changes: Omit<SessionConfigureParams, "sessionId"> = {};
    if (wanted.model !== null && wanted.model !== opened.model) changes.model = wanted.model;
    if (wanted.budget !== null && wanted.budget !== opened.budget) changes.budget = wanted.budget;
    if (wanted.budget === null && !this.atDefaultBudget(changes.model ?? opened.model, opened)) {
      changes.resetBudget = true;
    }
    if (wanted.mode !== null && wanted.mode !== opened.mode) changes.mode = wanted.mode;
    const fields = Object.keys(changes) as (keyof typeof changes)[];
    if (!fields.length) return;
    if (!announces(this.announcement, "ctx/session/configure")) {
      const kept = fields.map((f) =>
        f === "resetBudget"
          ? `budget ${opened.budget} (setting ctxlayer.budget: empty, the model's default)`
          : `${f} ${opened[f]} (setting ctxlayer.${f}: ${changes[f]})`,
      );
      this.warn(
        "this daemon cannot change the workspace session's settings (no ctx/session/configure); " +
          `it keeps ${kept.join(", ")}: update ctxlayer (\`pip install -U ctxlayer\`)`,
      );
      return;
    }
    this.publish(await client.request("ctx/session/configure", { sessionId: opened.sessionId, ...changes }));
    if (changes.mode) this.sessionMode = changes.mode;
  }

  /**
   * Whether the session's budget is already the default of `model`: known only for the model
   * the daemon announced a default budget for; otherwise the daemon is asked to reset it.
   */
  private atDefaultBudget(model: string, opened: SessionOpenResult): boolean {
    const a = this.announcement;
    return a !== undefined && model === opened.model && model === a.model &&
      opened.budget === a.defaultBudget;
  }

  /**
   * A @ctxlayer chat sends `tokens` of tool definitions beside its next assembly, into a
   * model's `window`: the daemon's figures of that session count the messages only (of what
   * the tools leave), the status bar shows the whole request of the whole window.
   */
  toolsBeside(sessionId: string, tokens: number, window: number): void {
    if (tokens > 0) this.toolTokens.set(sessionId, { tokens, window });
    else this.toolTokens.delete(sessionId);
  }

  /** An assembled session's budget with the tools sent beside it counted in. */
  private withTools(b: Budget): Budget {
    const ours = b.source === "session" && b.sessionId;
    const tools = ours ? this.toolTokens.get(b.sessionId!) : undefined;
    if (!tools) return b;
    const used = b.used + tools.tokens;
    const limit = Math.max(tools.window, 1);
    return { ...b, used, limit, percent: Math.round((1000 * used) / limit) / 10 };
  }

  /** A warning for the user, once per text. */
  private warn(text: string): void {
    if (this.warned.has(text)) return;
    this.warned.add(text);
    for (const l of this.warningListeners) l(text);
  }

  detach(): void {
    for (const s of this.subscriptions) s.dispose();
    this.subscriptions = [];
    this.client = undefined;
    // the live chat was the old daemon's: a restarted one holds none until a chat sends a
    // request, and the status bar says "no live chat" (a click shows the workspace context)
    this.live = undefined;
  }

  /** The task modes the daemon announced; none before it runs. */
  get modes(): ServerAnnouncement["modes"] {
    return this.announcement?.modes ?? {};
  }

  private showLive(chat: LiveChat): void {
    this.live = chat;
    this.sink.showLive(chat);
    for (const l of this.liveListeners) l(chat);
  }

  /** Every budget of the live chat (a request, a re-measure): the inspector tabs refresh. */
  onLive(listener: (chat: LiveChat) => void): Disposable {
    this.liveListeners.add(listener);
    return { dispose: () => this.liveListeners.delete(listener) };
  }

  /** The daemon's notice of a live chat's request (what it summarized or cut), once each. */
  onNotice(listener: NoticeListener): Disposable {
    this.noticeListeners.add(listener);
    return { dispose: () => this.noticeListeners.delete(listener) };
  }

  /**
   * The daemon's warning beside a chat's request (its state folder failed: the request went
   * all the same), once per text.
   */
  onWarning(listener: WarningListener): Disposable {
    this.warningListeners.add(listener);
    return { dispose: () => this.warningListeners.delete(listener) };
  }

  onBudgetChanged(listener: Listener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Re-read the budget from the daemon and show it. */
  async refresh(): Promise<Budget | undefined> {
    const client = this.need();
    try {
      const budget = await client.sessionBudget(this.session());
      this.publish(budget);
      return budget;
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      this.sink.showProblem("ctx error", text);
      throw err;
    }
  }

  private publish(budget: Budget): void {
    this.budget = budget;
    this.sink.showBudget(budget, `session ${this.sessionId}`);
    for (const l of this.listeners) l(budget);
  }

  async trim(params: TrimParams): Promise<TrimResult> {
    return this.need().trim({ model: this.settings.model, ...params });
  }

  async count(params: CountParams): Promise<CountResult> {
    return this.need().count({ model: this.settings.model, ...params });
  }

  async assemble(params: Partial<AssembleParams> = {}): Promise<AssembleResult> {
    const sessionId = params.sessionId ?? this.session();
    const result = await this.need().assemble({ ...params, sessionId });
    this.suggestion = result.modeSuggestion ?? undefined;
    return result;
  }

  /** The workspace session's assembled prompt as text. */
  async assembledText(): Promise<string> {
    // format ctxlayer: Message objects
    const messages = (await this.assemble()).messages as Message[];
    return messages.map((m) => `## ${m.role}\n\n${m.content}`).join("\n\n");
  }

  async setMode(mode: ControllerSettings["mode"]): Promise<void> {
    this.settings = { ...this.settings, mode };
    const client = this.need();
    // the setting cleared: back to the workspace's default (announced once attached)
    const next = mode ?? this.announcement!.defaultMode;
    const budget = await client.request("ctx/session/setMode", { sessionId: this.session(), mode: next });
    this.sessionMode = next;
    this.publish(budget);
  }

  /**
   * The mode setting changed while the daemon runs: the session takes the new mode (the
   * workspace's default when the setting was cleared) unless it holds it already (the Set
   * mode command sets the session before the setting). Compared with the session's own mode,
   * not the old setting: setting the default while the session kept another did nothing.
   */
  async followModeSetting(mode: ControllerSettings["mode"]): Promise<void> {
    if ((mode ?? this.announcement?.defaultMode) === this.mode) {
      this.settings = { ...this.settings, mode };
      return;
    }
    await this.setMode(mode);
  }

  /**
   * The budget setting changed while the daemon runs: the workspace session takes it with
   * ctx/session/configure (cleared: the model's default, `resetBudget`). Before, the daemon
   * was restarted for it, and its gateway moved to a new port (`gateway.port` 0): the chat
   * tools pointed at the announced URL lost it. A budget the daemon refuses is said naming
   * the setting; the session keeps its own.
   */
  async followBudgetSetting(budget: ControllerSettings["budget"]): Promise<void> {
    this.settings = { ...this.settings, budget };
    const client = this.need();
    const sessionId = this.session();
    if (!announces(this.announcement, "ctx/session/configure")) {
      this.warn(
        "this daemon cannot change the workspace session's budget (no ctx/session/configure); " +
          "it keeps its own: update ctxlayer (`pip install -U ctxlayer`)",
      );
      return;
    }
    const change = budget === null ? { resetBudget: true } : { budget };
    const answered = await client
      .request("ctx/session/configure", { sessionId, ...change })
      .catch((err: unknown) => {
        throw budgetRefusal(err, budget);
      });
    this.publish(answered);
  }

  async addRule(text: string, weight = 1): Promise<{ ruleId: string; warning?: string | null }> {
    return this.need().request("ctx/session/addRule", {
      sessionId: this.session(),
      rule: { text, weight },
    });
  }

  /**
   * The inspector page for the live chat, else the workspace session. A live chat whose
   * session the daemon no longer has (closed by ctx/session/close, by any client: no
   * notification says so) is forgotten: the workspace session's page, and its figure shown.
   */
  async inspectorHtml(chat: LiveChat | undefined = this.live): Promise<string> {
    const client = this.need();
    const live = chat && (chat.sessionId ?? (await this.sessionOfConversation(chat.conversationId)));
    try {
      return (await client.inspect({ sessionId: live ?? this.session() })).html;
    } catch (err) {
      const gone = err instanceof CtxlayerError && err.kind === "unknown_session";
      if (!gone || live === undefined || chat !== this.live) throw err;
      this.forgetLive();
      return (await client.inspect({ sessionId: this.session() })).html;
    }
  }

  /** No chat is live any more: the status bar says so, with the workspace's figure. */
  private forgetLive(): void {
    this.live = undefined;
    this.sink.showLive(undefined);
  }

  private async sessionOfConversation(conversationId: string): Promise<string | undefined> {
    const { conversations } = await this.need().conversations();
    return conversations.find((c) => c.conversationId === conversationId)?.sessionId;
  }

  /** The running daemon's client; throws saying how to get it back when there is none. */
  requireClient(): CtxlayerClient {
    return this.need();
  }

  /** The workspace session, open once attach() has run. */
  private session(): string {
    if (this.sessionError !== undefined) {
      throw new Error(`the workspace session could not be opened: ${this.sessionError}`);
    }
    if (!this.sessionId) throw new Error("the workspace session is not open yet: the daemon is starting");
    return this.sessionId;
  }

  private need(): CtxlayerClient {
    if (!this.client) {
      throw new Error("the ctxlayer daemon is not running: run `ctxlayer: Restart`");
    }
    return this.client;
  }
}
