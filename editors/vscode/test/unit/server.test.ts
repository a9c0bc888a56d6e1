// DaemonServer over a stand-in LanguageClient (fakeDaemon.ts): what the extension shows when the
// daemon exits by itself and comes back.
import { beforeEach, describe, expect, it, vi } from "vitest";
import { BudgetController } from "../../src/controller";
import { DaemonServer, START_LIMIT_MS } from "../../src/server";
import { BudgetStatusItem } from "../../src/statusBar";
import * as api from "../../src/vscodeapi";
import { budget, CloseAction, FakeLanguageClient, FakeProcess, State, opened } from "./fakeDaemon";
import { recorded, resetMock } from "./vscode.mock";

vi.mock("vscode-languageclient/node", async () =>
  (await vi.importActual<typeof import("./fakeDaemon")>("./fakeDaemon")).languageClientModule);

const tick = () => new Promise((r) => setTimeout(r, 0));

/** The extension's wiring (extension.ts) of the daemon, the controller and the status bar. */
function wire() {
  const status = new BudgetStatusItem();
  const controller = new BudgetController(status, api.readSettings(), "k");
  const log = api.createLogChannel("ctxlayer") as any;
  const daemon = new DaemonServer(log, {
    summarize: async () => ({ text: "" }),
    onStarting: () => {
      controller.detach();
      status.showStarting();
    },
    onStarted: (running) => controller.attach(running.client, running.announcement),
    onStopped: (reason) => {
      controller.detach();
      status.showProblem("ctx off", reason);
    },
  });
  return { status, controller, daemon, log, item: () => recorded.statusItems[0] };
}

beforeEach(() => {
  resetMock();
  recorded.settings.set("serverCommand", ["/opt/ctxlayer/bin/ctxlayer", "serve"]);
  FakeLanguageClient.made = [];
  FakeLanguageClient.answers = {
    "ctx/session/open": opened,
    "ctx/session/budget": (p: any) => budget(5000, 100_000, p.sessionId),
  };
  vi.restoreAllMocks();
});

describe("the daemon exits by itself", () => {
  it("is restarted and attached again: the status bar, the controller and Refresh come back", async () => {
    const w = wire();
    expect(await w.daemon.start(api.readSettings())).toBe(true);
    expect(w.item().text).toBe("ctx · no live chat");
    await FakeLanguageClient.made.at(-1)!.exit();
    await tick();
    expect(w.controller.connected).toBe(true);
    expect(w.item().text).toBe("ctx · no live chat");
    expect(w.item().tooltip.value).toContain("The workspace context alone: 5,000 tokens");
    // the new daemon's session is opened and read again
    const now = FakeLanguageClient.made.at(-1)!;
    expect(now.sent("ctx/session/open")).toHaveLength(1);
    expect((await w.controller.refresh())?.used).toBe(5000);
    expect(w.daemon.current?.announcement.protocolVersion).toBeDefined();
    expect(recorded.errors).toEqual([]);
  });

  it("is left stopped with one message when it keeps exiting, and restarted again later", async () => {
    const clock = vi.spyOn(Date, "now").mockReturnValue(1_000_000);
    const w = wire();
    await w.daemon.start(api.readSettings());
    for (let i = 0; i < 3; i++) {
      await FakeLanguageClient.made.at(-1)!.exit();
      await tick();
      expect(w.controller.connected).toBe(true);
    }
    const last = FakeLanguageClient.made.at(-1)!;
    await last.exit();
    await tick();
    expect(w.controller.connected).toBe(false);
    expect(w.item().text).toBe("$(warning) ctx off");
    expect(last.closedResults.at(-1)).toMatchObject({
      action: CloseAction.DoNotRestart,
      message: expect.stringMatching(/keeps exiting/),
    });
    // a daemon that exits now and then (not in a loop) is restarted each time
    await w.daemon.restart(api.readSettings());
    for (let minutes = 10; minutes <= 50; minutes += 10) {
      clock.mockReturnValue(1_000_000 + minutes * 60_000);
      await FakeLanguageClient.made.at(-1)!.exit();
      await tick();
      expect(w.controller.connected).toBe(true);
    }
  });
});

/** A gate the stand-in daemons wait on before they answer initialize. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((ok) => (open = ok));
  FakeLanguageClient.initialized = () => opened;
  return open;
}

describe("starts and restarts", () => {
  beforeEach(() => {
    FakeLanguageClient.initialized = undefined;
    FakeProcess.alive.clear();
  });

  it("run one at a time when settings change close together: one daemon, the latest settings", async () => {
    const w = wire();
    const open = gate();
    const first = w.daemon.start(api.readSettings());
    await tick();
    // two settings changes while the first daemon is still starting
    recorded.settings.set("model", "gpt-4o-mini");
    const second = w.daemon.restart(api.readSettings());
    recorded.settings.set("model", "claude-sonnet-4");
    const third = w.daemon.restart(api.readSettings());
    open();
    expect(await first).toBe(true);
    expect(await second).toBe(true);
    expect(await third).toBe(true);
    // the first daemon was stopped, the two changes made one more, with the latest settings
    expect(FakeLanguageClient.made).toHaveLength(2);
    const now = FakeLanguageClient.made.at(-1)!;
    expect(now.clientOptions.initializationOptions.model).toBe("claude-sonnet-4");
    expect([...FakeProcess.alive]).toEqual([now.serverProcess]);
    expect(w.log.lines.filter((l: string) => l.includes("stopping the daemon"))).toEqual([]);
    expect(w.controller.connected).toBe(true);
  });

  it("a daemon still starting is stopped: its process ends, none is left behind", async () => {
    const w = wire();
    gate(); // never opened: the daemon never answers
    const started = w.daemon.start(api.readSettings());
    await tick();
    const starting = FakeLanguageClient.made[0];
    expect(starting.state).toBe(State.Starting);
    await w.daemon.stop();
    expect(FakeProcess.alive.size).toBe(0);
    expect(w.log.lines.filter((l: string) => l.includes("can't be stopped"))).toEqual([]);
    // stopped on purpose (the window closing): no failure is said
    expect(await started).toBe(false);
    expect(recorded.errors).toEqual([]);
  });

  it("a daemon that never answers initialize is ended after the time limit, and said failed", async () => {
    vi.useFakeTimers();
    try {
      const w = wire();
      gate(); // never opened
      const started = w.daemon.start(api.readSettings());
      await vi.advanceTimersByTimeAsync(START_LIMIT_MS - 1000);
      expect(w.item().text).toBe("ctx $(sync~spin)");
      await vi.advanceTimersByTimeAsync(1000);
      expect(await started).toBe(false);
      expect(w.item().text).toBe("$(warning) ctx off");
      expect(w.item().tooltip).toMatch(/the daemon did not start: it did not answer initialize within 30 s/);
      expect(recorded.errors.map((e) => e.message)).toEqual([
        expect.stringMatching(/did not start: it did not answer initialize within 30 s/),
      ]);
      expect(FakeProcess.alive.size).toBe(0);
      // a restart starts again from the spinner, not from the last failure
      const again = w.daemon.restart(api.readSettings());
      await vi.advanceTimersByTimeAsync(0);
      expect(w.item().text).toBe("ctx $(sync~spin)");
      await vi.advanceTimersByTimeAsync(START_LIMIT_MS);
      expect(await again).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
