/**
 * Starts, stops and restarts the daemon through vscode-languageclient, and hands out a typed
 * CtxlayerClient for the running connection. Owns the LanguageClient's lifetime and its
 * failure messages; it does not own what the budget means (controller.ts).
 */
import {
  CtxlayerClient,
  type ServerAnnouncement,
  type SummarizeParams,
  type SummarizeResult,
} from "@ctxlayer/client";
import {
  CloseAction,
  ErrorAction,
  type CloseHandlerResult,
  LanguageClient,
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
  onStarted(running: Running): void | Promise<void>;
  onStopped(reason: string): void;
}

/** A daemon that exits by itself is started again, up to MAX_RESTARTS times within
 * RESTART_WINDOW_MS: one that keeps exiting is left stopped with one message, while one that
 * exits now and then (days apart) is still restarted each time. */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 3 * 60_000;

export class DaemonServer {
  private languageClient: LanguageClient | undefined;
  private running: Running | undefined;
  /** When the recent automatic restarts happened (Date.now()), within RESTART_WINDOW_MS. */
  private restarts: number[] = [];

  constructor(
    private readonly log: LogOutputChannel,
    private readonly hooks: ServerHooks,
  ) {}

  get current(): Running | undefined {
    return this.running;
  }

  async start(settings: Settings): Promise<boolean> {
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
      initializationOptions: {
        model: settings.model,
        mode: settings.mode ?? undefined, // unset: the workspace's session.default_mode
        // only when asked: otherwise the workspace's ctxlayer.toml decides
        ...(settings.gateway.enabled
          ? { config: { gateway: { enabled: true, port: settings.gateway.port } } }
          : {}),
      },
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
      await lc.start();
    } catch (err) {
      const message =
        `ctxlayer: the daemon (${found.command}) did not start: ${errorText(err)}. ` +
        "Check `ctxlayer.serverCommand`, or run `ctxlayer serve` in a terminal to see the error.";
      this.log.error(message);
      this.hooks.onStopped("start failed");
      void api.showError(message, "Show Logs").then((c) => c && this.log.show());
      this.languageClient = undefined;
      return false;
    }
    await lc.setTrace(Trace.fromString(settings.trace));
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
    void this.start(settings);
    // vscode-languageclient logs this message (handled: no notification); without one it
    // would log that the server will not be restarted
    return { action: CloseAction.DoNotRestart, message, handled: true };
  }

  async stop(): Promise<void> {
    const lc = this.languageClient;
    this.languageClient = undefined;
    this.running = undefined;
    if (lc) {
      try {
        await lc.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the daemon: ${errorText(err)}`);
      }
    }
  }

  async restart(settings: Settings): Promise<boolean> {
    this.restarts = [];
    await this.stop();
    return this.start(settings);
  }
}
