// An in-memory RpcConnection for unit tests: answers requests from handlers and lets the
// test push notifications. The e2e tests use the real daemon instead.
import { PROTOCOL_VERSION, type RpcConnection, type ServerAnnouncement } from "@ctxlayer/client";
import { METHODS } from "../../src/announcement";

export class FakeConnection implements RpcConnection {
  requests: [string, any][] = [];
  private notificationHandlers = new Map<string, (p: any) => void>();
  requestHandlers = new Map<string, (p: any) => unknown>();

  constructor(private readonly answers: Record<string, (params: any) => unknown>) {}

  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push([method, params]);
    const answer = this.answers[method];
    if (!answer) throw Object.assign(new Error(`Unhandled method ${method}`), { code: -32601 });
    return answer(params);
  }
  onNotification(method: string, handler: (p: any) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }
  onRequest(method: string, handler: (p: any) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params);
  }
  sent(method: string): any[] {
    return this.requests.filter(([m]) => m === method).map(([, p]) => p);
  }
}

export const budget = (used: number, limit: number, sessionId?: string) => ({
  used,
  limit,
  percent: (100 * used) / limit, // as the daemon sends it: a percentage
  byLayer: { system: 1000, workspace: used - 1000, rules: 0, working: 0, history: 0 },
  model: "gpt-4o",
  ...(sessionId ? { sessionId } : {}),
});

/**
 * ctx/session/open as the daemon answers it: a session opened without a model or budget has
 * the announced model and its default budget (announcement(): gpt-4o, 100,000).
 */
export const opened = (p: any) => ({
  ...p,
  model: p.model ?? "gpt-4o",
  budget: p.budget ?? 100_000,
  mode: p.mode ?? "deep",
  createdAt: "now",
});

/** A complete announcement of this protocol, as the daemon sends it at initialize. */
export function announcement(overrides: Partial<ServerAnnouncement> = {}): ServerAnnouncement {
  return {
    protocolVersion: PROTOCOL_VERSION,
    methods: [...METHODS],
    notifications: ["ctx/segmentChanged", "ctx/budgetChanged"],
    model: "gpt-4o",
    defaultBudget: 100_000,
    defaultMode: "deep",
    modes: {
      short: { rulesShare: 0.2, workingShare: 0.5, cap: 2000 },
      deep: { rulesShare: 0.4, workingShare: 0.8, cap: 8000 },
      debug: { rulesShare: 0.1, workingShare: 0.9, cap: 4000 },
    },
    ...overrides,
  };
}

/**
 * A stand-in for vscode-languageclient's LanguageClient (vi.mock of "vscode-languageclient/node"):
 * answers like FakeConnection, announces `announcement()` at start, and on `exit()` does what
 * vscode-languageclient 11 does when the daemon's process ends (handleConnectionClosed): asks
 * the error handler, and on CloseAction.Restart calls its own start() again.
 */
export const CloseAction = { DoNotRestart: 1, Restart: 2 } as const;
/** vscode-languageclient's public states (its State enum). */
export const State = { Stopped: 1, Running: 2, Starting: 3, StartFailed: 4 } as const;

/** A daemon process of the stand-in client: alive until killed or stopped. */
export class FakeProcess {
  static alive = new Set<FakeProcess>();
  exitCode: number | null = null;
  signalCode: string | null = null;
  private exits: (() => void)[] = [];
  constructor() {
    FakeProcess.alive.add(this);
  }
  kill(signal = "SIGTERM") {
    this.end(null, signal);
    return true;
  }
  end(code: number | null, signal: string | null = null) {
    if (!FakeProcess.alive.delete(this)) return;
    this.exitCode = code;
    this.signalCode = signal;
    for (const l of this.exits.splice(0)) l();
  }
  once(_event: "exit", listener: () => void) {
    this.exits.push(listener);
  }
}

export class FakeLanguageClient extends FakeConnection {
  static made: FakeLanguageClient[] = [];
  static answers: Record<string, (params: any) => unknown> = {};
  /** When set, a start waits for this before its daemon answers initialize (never: a hang). */
  static initialized: (() => Promise<void>) | undefined;
  initializeResult: any;
  state: number = State.Stopped;
  starts = 0;
  serverProcess: FakeProcess | undefined;
  closedResults: { action: number; message?: string; handled?: boolean }[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    super(FakeLanguageClient.answers);
    FakeLanguageClient.made.push(this);
  }
  /** The trace levels set ($/setTrace), in order. */
  traces: string[] = [];
  registerFeature() {}
  async setTrace(trace: string) {
    this.traces.push(trace);
  }
  async start() {
    this.starts++;
    this.state = State.Starting;
    const process = (this.serverProcess = new FakeProcess());
    const exited = new Promise<void>((ok) => process.once("exit", ok));
    // a process that ends before it answered fails the start, as the real client's does
    const answered = await Promise.race([
      (FakeLanguageClient.initialized?.() ?? Promise.resolve()).then(() => true),
      exited.then(() => false),
    ]);
    if (!answered) {
      this.state = State.StartFailed;
      throw new Error("Connection to server got closed. Server will not be restarted.");
    }
    this.state = State.Running;
    this.initializeResult = {
      serverInfo: { name: "ctxlayer", version: "test" },
      capabilities: { experimental: { ctxlayer: announcement() } },
    };
  }
  async stop() {
    if (this.state === State.Starting) {
      // what vscode-languageclient 11 does (shutdown)
      throw new Error("Client is not running and can't be stopped. It's current state is: starting");
    }
    this.state = State.Stopped;
    this.serverProcess?.end(0);
  }
  /** The daemon's process ended by itself (a crash). */
  async exit() {
    this.state = State.Stopped;
    this.serverProcess?.end(1);
    const result = await this.clientOptions.errorHandler.closed();
    this.closedResults.push(result);
    if (result.action === CloseAction.Restart) await this.start();
  }
}

/** What the tests mock `vscode-languageclient/node` with: this stand-in client and the enums
 * the extension reads from the module. */
export const languageClientModule = {
  LanguageClient: FakeLanguageClient,
  CloseAction,
  State,
  ErrorAction: { Continue: 1, Shutdown: 2 },
  Trace: { fromString: (s: string) => s },
};
