// The ctxlayer.mode setting, through activate() (the vscode mock), on the real daemon: a
// LanguageClient stand-in starts `ctxlayer serve` with the extension's own
// initializationOptions and carries its requests. Before, the setting went to the daemon as
// initialize's mode, which the daemon announces as the workspace's default: clearing the
// setting set the session back to the old setting, not to the workspace's
// session.default_mode, and the Set mode command marked the setting as "default". And a mode
// setting equal to the announced default was compared with the old setting, not with the
// mode the session held: setting it did nothing while the session kept another mode.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnDaemon, type SpawnedDaemon } from "@ctxlayer/client/src/connect";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { activate, deactivate } from "../../src/extension";
import { changeSettings, recorded, resetMock } from "../unit/vscode.mock";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");

/** The workspace and its state folder, shared by the tests' daemons (one at a time). */
const home = mkdtempSync(join(tmpdir(), "ctxlayer-mode-setting-"));
execFileSync("git", ["init", "-q"], { cwd: home });
let stateDir = "";

/** vscode-languageclient's LanguageClient over a real daemon: only what server.ts uses. */
class DaemonLanguageClient {
  static made: DaemonLanguageClient[] = [];
  daemon: SpawnedDaemon | undefined;
  initializeResult: any;
  state = 1;
  private handlers = new Map<string, (p: any) => void>();
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    DaemonLanguageClient.made.push(this);
  }
  registerFeature() {}
  async setTrace() {}
  async start() {
    this.state = 3;
    this.daemon = await spawnDaemon({
      command: [python, "-m", "ctxlayer", "serve"],
      workspace: home,
      initializationOptions: this.clientOptions.initializationOptions,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, "config"), CTXLAYER_STATE_DIR: stateDir },
    });
    this.initializeResult = this.daemon.initializeResult;
    this.daemon.connection.onNotification("ctx/budgetChanged", (p: any) => this.handlers.get("ctx/budgetChanged")?.(p));
    this.state = 2;
  }
  sendRequest(method: string, params: unknown): Promise<unknown> {
    return this.daemon!.connection.sendRequest(method, params);
  }
  onNotification(method: string, handler: (p: any) => void) {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }
  onRequest() {
    return { dispose() {} };
  }
  async stop() {
    this.state = 1;
    await this.daemon?.close();
  }
}

// the factory runs before this module's body: the class is read when a client is made
vi.mock("vscode-languageclient/node", () => ({
  LanguageClient: function (...args: [string, string, any, any]) {
    return new DaemonLanguageClient(...args);
  },
  CloseAction: { DoNotRestart: 1, Restart: 2 },
  State: { Stopped: 1, Running: 2, Starting: 3, StartFailed: 4 },
  ErrorAction: { Continue: 1, Shutdown: 2 },
  Trace: { fromString: (s: string) => s },
}));

const client = () => DaemonLanguageClient.made.at(-1)!;
const SESSION = /^vscode:/;

/** The workspace session's mode as the daemon holds it (undefined before it opens). */
async function sessionMode(): Promise<string | undefined> {
  const daemon = client()?.daemon;
  if (!daemon) return undefined;
  const { sessions } = (await daemon.connection.sendRequest("ctx/session/list", {})) as any;
  return sessions.find((s: any) => SESSION.test(s.sessionId))?.mode;
}

/** Waits (at most 20 s) for the session's mode to be `mode`, and answers the one it has. */
async function modeBecomes(mode: string): Promise<string | undefined> {
  let now: string | undefined;
  for (let i = 0; i < 100; i++) {
    now = await sessionMode();
    if (now === mode) return now;
    await new Promise((ok) => setTimeout(ok, 200));
  }
  return now;
}

/** activate() with these settings, until the workspace session is open. */
async function start(mode: string | null) {
  resetMock();
  recorded.workspaceFolder = home;
  recorded.settings.set("serverCommand", [python, "-m", "ctxlayer", "serve"]);
  recorded.settings.set("budget", null); // VS Code answers a null default as null
  recorded.settings.set("mode", mode);
  await activate({ subscriptions: [] } as any);
  for (let i = 0; i < 100 && !recorded.statusItems[0]?.text.startsWith("ctx ·"); i++) {
    await new Promise((ok) => setTimeout(ok, 200));
  }
  expect(recorded.statusItems[0].text).toMatch(/^ctx ·/);
}

beforeEach(() => {
  DaemonLanguageClient.made = [];
  stateDir = mkdtempSync(join(home, "state-"));
});

afterEach(async () => {
  await deactivate();
});

describe("ctxlayer.mode on the real daemon", () => {
  it("cleared while the daemon runs, takes the session to the workspace's default", async () => {
    await start("short");
    expect(await sessionMode()).toBe("short");
    const announced = client().initializeResult.capabilities.experimental.ctxlayer;
    expect(announced.defaultMode).toBe("deep"); // the workspace's session.default_mode
    // the Set mode command marks the workspace's default as such
    await recorded.commands.get("ctxlayer.setMode")!();
    const marked = recorded.quickPickItems.filter((i: any) => i.description?.includes("default"));
    expect(marked.map((i: any) => i.label)).toEqual(["deep"]);
    changeSettings({ mode: null });
    expect(await modeBecomes("deep")).toBe("deep");
  });

  it("set to the workspace's default while the session keeps another mode, takes it", async () => {
    await start("short");
    await deactivate();
    // the setting removed while VS Code was closed: the session keeps its own mode (README)
    await start(null);
    expect(await sessionMode()).toBe("short");
    changeSettings({ mode: "deep" });
    expect(await modeBecomes("deep")).toBe("deep");
    // and back to another one, as before
    changeSettings({ mode: "debug" });
    expect(await modeBecomes("debug")).toBe("debug");
  });
});
