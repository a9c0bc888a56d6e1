// DaemonServer over a stand-in LanguageClient (fakeDaemon.ts): what the extension shows when the
// daemon exits by itself and comes back.
import { beforeEach, describe, expect, it, vi } from "vitest";
import { BudgetController } from "../../src/controller";
import { DaemonServer } from "../../src/server";
import { BudgetStatusItem } from "../../src/statusBar";
import * as api from "../../src/vscodeapi";
import { budget, CloseAction, FakeLanguageClient } from "./fakeDaemon";
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
    "ctx/session/open": (p: any) => ({ ...p }),
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
