/**
 * Typed requests to the ctxlayer daemon over any JSON-RPC connection.
 *
 * Owns the method names, parameter and result types (from protocol.generated.ts) and a
 * timeout on every request. It does not own the transport: pass a vscode-jsonrpc
 * MessageConnection, a vscode-languageclient LanguageClient, or anything with the same
 * `sendRequest` / `onNotification` / `onRequest` shape.
 */
import {
  type CancellationToken,
  CancellationTokenSource,
  ConnectionError,
  ErrorCodes as RpcErrorCodes,
} from "vscode-jsonrpc";
import type {
  AssembleParams,
  AssembleResult,
  Budget,
  ConversationsResult,
  CountParams,
  CountResult,
  InspectParams,
  InspectResult,
  Notifications,
  PrepareParams,
  PrepareResult,
  Requests,
  RestoreParams,
  SegmentChanged,
  ServerRequests,
  SummarizeParams,
  SummarizeResult,
  SystemPromptParams,
  SystemPromptResult,
  TrimParams,
  TrimResult,
  WhyParams,
  WhyResult,
  WorkspaceSegment,
} from "./protocol.generated";
import { ErrorCodes } from "./protocol.generated";

export interface Disposable {
  dispose(): void;
}

/** The part of a JSON-RPC connection this client needs. */
export interface RpcConnection {
  /** `token` is cancelled when the caller gives the request up (its timeout, its signal):
   * the connection then tells the daemon (`$/cancelRequest`, as vscode-jsonrpc does). */
  sendRequest(method: string, params: unknown, token?: CancellationToken): Promise<unknown>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onRequest(method: string, handler: (params: any) => unknown): Disposable;
  /** When the connection has it (a vscode-jsonrpc MessageConnection does), a request pending
   * when it closes fails at once instead of at its timeout. */
  onClose?(handler: () => void): Disposable;
}

/** Milliseconds before a request, or spawnDaemon's initialize, is given up by default. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * A daemon error with its JSON-RPC code and, when the daemon named one, the field
 * (`messages[3].role`). The client's own failures have no code and say their kind in `data`:
 * `timeout` (no answer in time), `cancelled` (the caller's signal aborted it) or
 * `connection_closed` (the daemon went away).
 */
export class CtxlayerError extends Error {
  constructor(
    readonly method: string,
    readonly code: number | undefined,
    message: string,
    /** The error's `data` as the daemon sent it: `{ kind, field }` for its own errors. */
    readonly data?: unknown,
  ) {
    super(`${method}: ${message}`);
    this.name = "CtxlayerError";
  }
  /** The offending field of the params, when the daemon named one. */
  get field(): string | undefined {
    const field = (this.data as { field?: unknown } | undefined)?.field;
    return typeof field === "string" ? field : undefined;
  }
  get kind(): string {
    switch (this.code) {
      case ErrorCodes.pinnedOverBudget:
        return "pinned_over_budget";
      case ErrorCodes.unknownSession:
        return "unknown_session";
      case ErrorCodes.outsideWorkspace:
        return "outside_workspace";
      case ErrorCodes.unauthorized:
        return "unauthorized";
      case ErrorCodes.store:
        return "store";
      case -32602:
        return "invalid";
      case -32601:
        return "unknown_method";
      case undefined: {
        const kind = (this.data as { kind?: unknown } | undefined)?.kind;
        return typeof kind === "string" ? kind : "timeout";
      }
      default:
        return "error";
    }
  }
}

/** vscode-jsonrpc's codes of a request its connection could not carry (a write to a daemon
 * that died, EPIPE; a read that failed; a connection no longer listening): no daemon answer. */
const CONNECTION_FAILED: (number | undefined)[] = [
  RpcErrorCodes.MessageWriteError,
  RpcErrorCodes.MessageReadError,
  RpcErrorCodes.ConnectionInactive,
];

/** Whether `err` is the connection's own failure (closed, disposed, a write to a daemon that
 * died), not an answer of the daemon. */
export function isConnectionFailure(err: unknown): boolean {
  return (
    err instanceof ConnectionError ||
    CONNECTION_FAILED.includes((err as { code?: number } | undefined)?.code)
  );
}

function connectionClosed(method: string, reason: string): CtxlayerError {
  return new CtxlayerError(method, undefined, `connection closed: ${reason}`, {
    kind: "connection_closed",
  });
}

function cancelled(method: string): CtxlayerError {
  return new CtxlayerError(method, undefined, "cancelled by the caller", { kind: "cancelled" });
}

export interface ClientOptions {
  /** Milliseconds before a request (and spawnDaemon's initialize) is given up (default 30 s). */
  timeoutMs?: number;
}

/** Per request: how its caller may give it up before its answer. */
export interface RequestOptions {
  /** Aborting it gives the request up: it rejects (kind `cancelled`) and the daemon is told,
   * so a request still waiting for its session is dropped, not run. */
  signal?: AbortSignal;
}

export class CtxlayerClient {
  private readonly timeoutMs: number;
  /** How each request in flight fails when the connection closes under it. */
  private readonly pending = new Set<(reason: string) => void>();
  private closedBecause: string | undefined;

  constructor(
    readonly connection: RpcConnection,
    options: ClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    connection.onClose?.(() => this.connectionClosed("the daemon closed the connection"));
  }

  /**
   * The daemon is gone: every request in flight, and every later one, fails at once with a
   * `connection_closed` CtxlayerError saying `reason`. The connection calls this when it has
   * `onClose`; spawnDaemon calls it with the daemon's exit code and last stderr line.
   */
  connectionClosed(reason: string): void {
    this.closedBecause ??= reason;
    for (const fail of [...this.pending]) fail(this.closedBecause);
  }

  /** Any request of the protocol, typed by its method name. */
  request<M extends keyof Requests>(
    method: M,
    params: Requests[M]["params"],
    options: RequestOptions = {},
  ): Promise<Requests[M]["result"]> {
    return this.send(method, params, options) as Promise<Requests[M]["result"]>;
  }

  segment(options?: RequestOptions): Promise<WorkspaceSegment> {
    return this.request("ctx/segment", {}, options);
  }
  systemPrompt(
    params: SystemPromptParams = {},
    options?: RequestOptions,
  ): Promise<SystemPromptResult> {
    return this.request("ctx/systemPrompt", params, options);
  }
  count(params: CountParams, options?: RequestOptions): Promise<CountResult> {
    return this.request("ctx/count", params, options);
  }
  trim(params: TrimParams, options?: RequestOptions): Promise<TrimResult> {
    return this.request("ctx/trim", params, options);
  }
  assemble(params: AssembleParams, options?: RequestOptions): Promise<AssembleResult> {
    return this.request("ctx/assemble", params, options);
  }
  sessionBudget(sessionId: string, options?: RequestOptions): Promise<Budget> {
    return this.request("ctx/session/budget", { sessionId }, options);
  }
  /** The inspector page (self-contained HTML) for a session or a conversation. */
  inspect(params: InspectParams, options?: RequestOptions): Promise<InspectResult> {
    return this.request("ctx/inspect", params, options);
  }

  /** The provider request a chat is about to send, fitted: send the result's `request`. */
  prepare(params: PrepareParams, options?: RequestOptions): Promise<PrepareResult> {
    return this.request("ctx/prepare", params, options);
  }
  /** The live chats: every conversation prepared by ctx/prepare or the gateway. */
  conversations(options?: RequestOptions): Promise<ConversationsResult> {
    return this.request("ctx/conversations", {}, options);
  }
  /** Why the last result of a conversation or session left out or shortened what it did. */
  why(params: WhyParams, options?: RequestOptions): Promise<WhyResult> {
    return this.request("ctx/why", params, options);
  }
  /** Bring a message back whole (and pinned) in the conversation's next result. */
  async restore(params: RestoreParams, options?: RequestOptions): Promise<void> {
    await this.request("ctx/restore", params, options);
  }

  onNotification<N extends keyof Notifications>(
    method: N,
    handler: (params: Notifications[N]) => void,
  ): Disposable {
    return this.connection.onNotification(method, handler);
  }
  onBudgetChanged(handler: (budget: Budget) => void): Disposable {
    return this.onNotification("ctx/budgetChanged", handler);
  }
  onSegmentChanged(handler: (change: SegmentChanged) => void): Disposable {
    return this.onNotification("ctx/segmentChanged", handler);
  }
  /** Answer the daemon's ctx/summarize (declare capabilities.experimental.ctxlayer.summarize). */
  onSummarize(
    handler: (params: SummarizeParams) => Promise<SummarizeResult> | SummarizeResult,
  ): Disposable {
    const method: keyof ServerRequests = "ctx/summarize";
    return this.connection.onRequest(method, handler);
  }

  private async send(
    method: string,
    params: unknown,
    { signal }: RequestOptions,
  ): Promise<unknown> {
    if (this.closedBecause !== undefined) throw connectionClosed(method, this.closedBecause);
    if (signal?.aborted) throw cancelled(method); // nothing sent
    // cancelled when the caller gives up: without it the daemon was never told, and a request
    // still waiting for its session ran and was stored (a retry stored it twice)
    const cancel = new CancellationTokenSource();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let fail: ((reason: string) => void) | undefined;
    let aborted: (() => void) | undefined;
    // vscode-jsonrpc leaves a request pending for ever when its connection closes
    const givenUp = new Promise<never>((_, reject) => {
      const giveUp = (error: CtxlayerError) => {
        cancel.cancel();
        reject(error);
      };
      timer = setTimeout(
        () =>
          giveUp(
            new CtxlayerError(method, undefined, `no answer in ${this.timeoutMs} ms`, {
              kind: "timeout",
            }),
          ),
        this.timeoutMs,
      );
      aborted = () => giveUp(cancelled(method));
      signal?.addEventListener("abort", aborted, { once: true });
      fail = (reason) => reject(connectionClosed(method, reason));
      this.pending.add(fail);
    });
    try {
      return await Promise.race([
        this.connection.sendRequest(method, params, cancel.token),
        givenUp,
      ]);
    } catch (err) {
      if (err instanceof CtxlayerError) throw err;
      const e = err as { code?: number; message?: string; data?: unknown };
      // the connection's own failure (closed, disposed, a write to a daemon that died), not
      // an answer of the daemon: it came as code 1 or -32099, kind "error", in the moment
      // before the connection said it closed
      if (isConnectionFailure(err)) {
        this.pending.delete(fail!); // this one fails here, not through its race, settled
        this.connectionClosed(e.message || "the connection is closed");
        throw connectionClosed(method, this.closedBecause ?? String(e.message));
      }
      throw new CtxlayerError(method, e.code ?? -1, e.message ?? String(err), e.data);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted!);
      this.pending.delete(fail!);
      cancel.dispose();
    }
  }
}
