/**
 * Starts, stops and restarts the daemon through vscode-languageclient, and hands out a typed
 * CtxlayerClient for the running connection. Owns the LanguageClient's lifetime and its
 * failure messages; it does not own what the budget means (controller.ts).
 */
import {
  CtxlayerClient,
  type InitializationOptions,
  type ServerAnnouncement,
  type SummarizeParams,
  type SummarizeResult,
} from "@ctxlayer/client";
import {
  CloseAction,
  ErrorAction,
  type CloseHandlerResult,
  LanguageClient,
  State,
  Trace,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { checkAnnouncement } from "./announcement";
import { errorText } from "./errors";
import { INSTALL_HINT, resolveServerCommand } from "./serverCommand";
import type { LogOutputChannel, Settings } from "./vscodeapi";
import * as api from "./vscodeapi";

export interface Running {
  client: CtxlayerClient;
  /** capabilities.experimental.ctxlayer, checked complete and of this protocol. */
  announcement: ServerAnnouncement;
}

export interface ServerHooks {
  summarize(params: SummarizeParams): Promise<SummarizeResult>;
  /** A start or restart begins: whatever the last one said no longer holds. */
  onStarting(): void;
  onStarted(running: Running): void | Promise<void>;
  onStopped(reason: string): void;
}

/** A daemon that exits by itself is started again, up to MAX_RESTARTS times within
 * RESTART_WINDOW_MS: one that keeps exiting is left stopped with one message, while one that
 * exits now and then (days apart) is still restarted each time. */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 3 * 60_000;
/** A daemon that has not answered initialize this long after its start is ended and said to
 * have failed: a command that starts something else (a script that never answers) would
 * otherwise leave the status bar's spinner turning for ever. */
export const START_LIMIT_MS = 30_000;
/** How long a stopped daemon's process may take to exit before it is killed: the next one
 * must not find the gateway's port still held. */
const EXIT_LIMIT_MS = 5_000;

export class DaemonServer {
  private languageClient: LanguageClient | undefined;
  private running: Running | undefined;
  /** When the recent automatic restarts happened (Date.now()), within RESTART_WINDOW_MS. */
  private restarts: number[] = [];
  /** The start or restart under way (or done): the next one waits for it. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The settings the next queued start uses: the latest asked for, until one takes them. */
  private wanted: Settings | undefined;
  /** Each client's lc.start(), to wait for when it is stopped while still starting. */
  private starting = new WeakMap<LanguageClient, Promise<void>>();
  /** The trace level asked for last (a start's settings, or setTrace since). */
  private trace: Settings["trace"] | undefined;

  constructor(
    private readonly log: LogOutputChannel,
    private readonly hooks: ServerHooks,
  ) {}

  get current(): Running | undefined {
    return this.running;
  }

  /** Start the daemon, once any start or restart under way is done. */
  start(settings: Settings): Promise<boolean> {
    return this.queued(settings);
  }

  /** Stop the daemon (if any) and start it with `settings`, after any under way. */
  restart(settings: Settings): Promise<boolean> {
    return this.queued(settings, { resetRestarts: true });
  }

  /**
   * The LSP trace level (`ctxlayer.trace.server`) for the daemon that runs, through
   * `$/setTrace`, and for any started later. No restart: that moved the gateway to a new port.
   */
  async setTrace(trace: Settings["trace"]): Promise<void> {
    this.trace = trace;
    const lc = this.languageClient;
    if (!lc || lc.state !== State.Running) return; // one starting takes it once it answers
    await lc.setTrace(Trace.fromString(trace)).catch((err: unknown) => {
      this.log.warn(`setting the trace level: ${errorText(err)}`);
    });
  }

  /**
   * Starts and restarts run one at a time: two settings changes close together otherwise
   * started a second daemon while the first was still starting (which vscode-languageclient
   * cannot stop), and the first, no longer tracked, kept the gateway's port. Those asked
   * while one runs collapse into one run with the latest settings; an automatic restart
   * (the daemon exited) never replaces settings asked for since.
   */
  private queued(
    settings: Settings,
    how: { resetRestarts?: boolean; unlessAsked?: boolean } = {},
  ): Promise<boolean> {
    this.wanted = how.unlessAsked ? (this.wanted ?? settings) : settings;
    if (!how.unlessAsked) this.trace = settings.trace;
    const run = this.queue.then(async () => {
      const next = this.wanted;
      // a run queued earlier already took these settings
      if (next === undefined) return this.running !== undefined;
      this.wanted = undefined;
      if (how.resetRestarts) this.restarts = [];
      this.hooks.onStarting();
      await this.stop();
      return this.launch(next);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async launch(settings: Settings): Promise<boolean> {
    const workspace = api.workspaceFolder();
    const found = resolveServerCommand(settings.serverCommand, workspace);
    if (!found) {
      this.log.error(INSTALL_HINT);
      this.hooks.onStopped("daemon not found");
      void api.showError(INSTALL_HINT, "Open Settings", "Show Logs").then((choice) => {
        if (choice === "Open Settings")
          void api.executeCommand("workbench.action.openSettings", "ctxlayer.serverCommand");
        if (choice === "Show Logs") this.log.show();
      });
      return false;
    }
    this.log.info(`starting ${found.command} ${found.args.join(" ")} (from ${found.source})`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: found.args,
      options: { cwd: workspace },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      // typed by the protocol's struct: an option the daemon does not read fails the build
      initializationOptions: {
        // no mode: the daemon announces initialize's mode as the workspace's default, and a
        // setting cleared later went back to the setting's old value instead (the workspace
        // session gets the mode when it opens, as Neovim's does)
        model: settings.model,
        // only when asked: otherwise the workspace's ctxlayer.toml decides
        ...(settings.gateway.enabled
          ? { config: { gateway: { enabled: true, port: settings.gateway.port } } }
          : {}),
      } satisfies InitializationOptions,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.closed(lc, settings),
      },
    };
    const lc = new LanguageClient("ctxlayer", "ctxlayer", serverOptions, clientOptions);
    lc.registerFeature({
      fillClientCapabilities(capabilities: any) {
        capabilities.experimental = {
          ...(capabilities.experimental ?? {}),
          ctxlayer: { summarize: true },
        };
      },
      initialize() {},
      getState: () => ({ kind: "static" }),
      clear() {},
    } as any);
    const client = new CtxlayerClient(lc);
    client.onSummarize((params) => this.hooks.summarize(params));
    this.languageClient = lc;
    try {
      await this.startWithin(lc, START_LIMIT_MS);
    } catch (err) {
      if (this.languageClient !== lc) {
        // stop() ended it while it started (the window closing): nothing failed
        this.log.info(`the daemon was stopped while it started: ${errorText(err)}`);
        return false;
      }
      const message =
        `ctxlayer: the daemon (${found.command}) did not start: ${errorText(err)}. ` +
        "Check `ctxlayer.serverCommand`, or run `ctxlayer serve` in a terminal to see the error.";
      this.log.error(message);
      this.languageClient = undefined;
      await this.end(lc); // one that never answered is still starting: its process ends here
      this.hooks.onStopped(`the daemon did not start: ${errorText(err)}`);
      void api.showError(message, "Show Logs").then((c) => c && this.log.show());
      return false;
    }
    await lc.setTrace(Trace.fromString(this.trace ?? settings.trace));
    const checked = checkAnnouncement((lc.initializeResult?.capabilities as any)?.experimental?.ctxlayer);
    if (checked.problem !== undefined) {
      // said once: the daemon is stopped, so nothing retries and repeats it
      this.log.error(checked.problem);
      this.languageClient = undefined;
      await lc.stop(5000).catch(() => undefined);
      this.hooks.onStopped("daemon too old");
      void api.showError(checked.problem, "Show Logs").then((c) => c && this.log.show());
      return false;
    }
    this.running = { client, announcement: checked.announcement };
    this.log.info(
      `daemon started: ${lc.initializeResult?.serverInfo?.name ?? "?"} ` +
        `${lc.initializeResult?.serverInfo?.version ?? ""}, ` +
        `protocol ${checked.announcement.protocolVersion}`,
    );
    await this.hooks.onStarted(this.running);
    return true;
  }

  /**
   * The daemon's process ended without stop(). It is started again through start(), never by
   * vscode-languageclient's own restart (CloseAction.Restart): that one skips start()'s
   * reading of the new daemon's announcement and onStarted, so the controller would stay
   * detached from a daemon that runs.
   */
  private closed(lc: LanguageClient, settings: Settings): CloseHandlerResult {
    if (this.languageClient !== lc || this.running === undefined) {
      // a client we already replaced, or a daemon that exited before it started: start()
      // says why (its lc.start() fails)
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    this.languageClient = undefined;
    this.running = undefined;
    this.hooks.onStopped("daemon exited");
    const now = Date.now();
    this.restarts = this.restarts.filter((at) => now - at < RESTART_WINDOW_MS);
    if (this.restarts.length >= MAX_RESTARTS) {
      return {
        action: CloseAction.DoNotRestart,
        message:
          "ctxlayer: the daemon keeps exiting. Run `ctxlayer: Show logs` to see why, then " +
          "`ctxlayer: Restart`.",
      };
    }
    this.restarts.push(now);
    const message =
      `the daemon exited; starting it again (${this.restarts.length} of ${MAX_RESTARTS} ` +
      `restarts within ${RESTART_WINDOW_MS / 60_000} minutes)`;
    void this.queued(settings, { unlessAsked: true });
    // vscode-languageclient logs this message (handled: no notification); without one it
    // would log that the server will not be restarted
    return { action: CloseAction.DoNotRestart, message, handled: true };
  }

  /** Stop the daemon; a start asked for and not begun yet is dropped (the window closes). */
  async stop(): Promise<void> {
    this.wanted = undefined;
    const lc = this.languageClient;
    this.languageClient = undefined;
    this.running = undefined;
    if (lc) await this.end(lc);
  }

  /** lc.start(), failing after `limitMs` (the client is still starting then: end() it). */
  private async startWithin(lc: LanguageClient, limitMs: number): Promise<void> {
    const started = lc.start();
    this.starting.set(lc, started);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<never>((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`it did not answer initialize within ${limitMs / 1000} s`)),
        limitMs,
      );
    });
    try {
      await Promise.race([started, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Stop `lc` and see its process gone. vscode-languageclient refuses to stop a client still
   * starting ("Client is not running and can't be stopped"), and the daemon it started went
   * on running untracked: its process is ended and its start awaited first.
   */
  private async end(lc: LanguageClient): Promise<void> {
    const process = lc.serverProcess;
    try {
      if (lc.state === State.Starting) {
        process?.kill();
        await within(this.starting.get(lc)?.catch(() => undefined), EXIT_LIMIT_MS);
      }
      if (lc.state === State.Running) await lc.stop(EXIT_LIMIT_MS);
    } catch (err) {
      this.log.warn(`stopping the daemon: ${errorText(err)}`);
    }
    if (process && process.exitCode === null && process.signalCode === null) {
      const exited = new Promise((ok) => process.once("exit", ok));
      if ((await within(exited, EXIT_LIMIT_MS)) === TIMED_OUT) process.kill("SIGKILL");
    }
  }
}

const TIMED_OUT = Symbol("timed out");

/** `promise`'s value, or TIMED_OUT after `ms`. */
async function within<T>(
  promise: Promise<T> | undefined,
  ms: number,
): Promise<T | typeof TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof TIMED_OUT>((ok) => (timer = setTimeout(() => ok(TIMED_OUT), ms)));
  try {
    return await Promise.race([promise ?? Promise.resolve(undefined as T), late]);
  } finally {
    clearTimeout(timer);
  }
}
