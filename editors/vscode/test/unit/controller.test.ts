import { CtxlayerClient, type Budget } from "@ctxlayer/client";
import { beforeEach, describe, expect, it } from "vitest";
import { BudgetController, type BudgetSink, type LiveChat } from "../../src/controller";
import { checkAnnouncement, NEEDED_METHODS } from "../../src/announcement";
import { announcement, budget, FakeConnection } from "./fakeDaemon";

class Sink implements BudgetSink {
  shown: [Budget, string][] = [];
  problems: string[] = [];
  showBudget(b: Budget, source: string) {
    this.shown.push([b, source]);
  }
  live: LiveChat[] = [];
  showLive(chat: LiveChat) {
    this.live.push(chat);
  }
  showProblem(text: string, detail: string) {
    this.problems.push(`${text}: ${detail}`);
  }
}

const settings = { model: "gpt-4o", budget: null, mode: "short" as const };
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("the workspace session", () => {
  let conn: FakeConnection;
  let sink: Sink;
  let controller: BudgetController;

  beforeEach(async () => {
    conn = new FakeConnection({
      "ctx/session/open": (p) => ({ ...p, budget: 100_000, createdAt: "now", mode: "short" }),
      "ctx/session/budget": (p) => budget(20_000, 100_000, p.sessionId),
      "ctx/session/setMode": (p) => budget(25_000, 100_000, p.sessionId),
      "ctx/inspect": (p) => ({ html: `<html>${p.sessionId}</html>` }),
      "ctx/assemble": () => ({
        messages: [{ role: "system", content: "sys" }, { role: "user", content: "hi" }],
        modeSuggestion: { mode: "debug", reason: "stack trace" },
      }),
    });
    sink = new Sink();
    controller = new BudgetController(sink, settings, "abc");
    await controller.attach(new CtxlayerClient(conn), announcement());
  });

  it("opens one session for the workspace and shows its budget", () => {
    expect(conn.sent("ctx/session/open")).toEqual([
      { sessionId: "vscode:abc", model: "gpt-4o", mode: "short", budget: undefined },
    ]);
    expect(controller.sessionId).toBe("vscode:abc");
    expect(sink.shown.at(-1)?.[0].used).toBe(20_000);
    expect(sink.shown.at(-1)?.[1]).toBe("session vscode:abc");
  });

  it("follows ctx/budgetChanged for its own session only", () => {
    const seen: number[] = [];
    controller.onBudgetChanged((b) => seen.push(b.used));
    conn.notify("ctx/budgetChanged", budget(30_000, 100_000, "vscode:abc"));
    conn.notify("ctx/budgetChanged", budget(99_000, 100_000, "someone-else"));
    expect(seen).toEqual([30_000]);
    expect(sink.shown.at(-1)?.[0].used).toBe(30_000);
  });

  it("sets the mode on the session", async () => {
    await controller.setMode("deep");
    expect(conn.sent("ctx/session/setMode")).toEqual([{ sessionId: "vscode:abc", mode: "deep" }]);
    expect(sink.shown.at(-1)?.[0].used).toBe(25_000);
  });

  it("without a mode setting, leaves the mode to the workspace's default", async () => {
    const conn2 = new FakeConnection({
      "ctx/session/open": (p) => ({ ...p, budget: 100_000, createdAt: "now", mode: "debug" }),
      "ctx/session/budget": (p) => budget(20_000, 100_000, p.sessionId),
      "ctx/session/setMode": (p) => budget(25_000, 100_000, p.sessionId),
    });
    const unset = new BudgetController(new Sink(), { ...settings, mode: null }, "abc");
    const told = { ...announcement(), defaultMode: "debug" as const };
    await unset.attach(new CtxlayerClient(conn2), told);
    // the daemon opens it in the workspace's session.default_mode, not one the editor names
    expect(conn2.sent("ctx/session/open")).toEqual([
      { sessionId: "vscode:abc", model: "gpt-4o", mode: undefined, budget: undefined },
    ]);
    expect(unset.mode).toBe("debug");
    await unset.setMode("short");
    await unset.setMode(null); // the setting cleared: back to the workspace's default
    expect(conn2.sent("ctx/session/setMode")).toEqual([
      { sessionId: "vscode:abc", mode: "short" },
      { sessionId: "vscode:abc", mode: "debug" },
    ]);
  });

  it("assembles the session and remembers the mode suggestion", async () => {
    const text = await controller.assembledText();
    expect(text).toBe("## system\n\nsys\n\n## user\n\nhi");
    expect(controller.suggestion).toEqual({ mode: "debug", reason: "stack trace" });
  });

  it("inspects the session", async () => {
    expect(await controller.inspectorHtml()).toBe("<html>vscode:abc</html>");
  });

  it("shows the chat that last sent a request, and inspects it on a click", async () => {
    const gateway = { ...budget(40_000, 120_000, "gw:1"), conversationId: "conv-a", source: "gateway" as const, cachedTokens: 30_000, live: true };
    conn.notify("ctx/budgetChanged", gateway);
    expect(sink.live.at(-1)).toEqual({ conversationId: "conv-a", sessionId: "gw:1", source: "gateway", budget: gateway });
    expect(await controller.inspectorHtml()).toBe("<html>gw:1</html>");
    // a budget the daemon does not mark live (another chat re-measured) leaves the status bar
    conn.notify("ctx/budgetChanged", { ...budget(290, 3000, "vscode-chat:x"), live: false });
    conn.notify("ctx/budgetChanged", { ...budget(290, 3000, "gw:2"), conversationId: "conv-z", live: false });
    expect(sink.live.at(-1)?.conversationId).toBe("conv-a");
    // a @ctxlayer chat that assembled: the daemon marks its session budget live
    conn.notify("ctx/budgetChanged", { ...budget(6000, 100_000, "vscode-chat:x"), source: "session", live: true });
    expect(sink.live.at(-1)).toMatchObject({ conversationId: "vscode-chat:x", source: "session", budget: { used: 6000 } });
    // a ctxlayer model's fitted request, with the daemon's notice: shown once, as it came
    const notices: string[] = [];
    controller.onNotice((_chat, text) => notices.push(text));
    conn.notify("ctx/budgetChanged", {
      ...budget(3100, 6000, "prep:b"), conversationId: "conv-b", source: "prepare", live: true,
      compacted: true, notice: "ctxlayer: summarized 57 older messages (9k tokens) to fit 6k",
    });
    expect(sink.live.at(-1)).toMatchObject({
      conversationId: "conv-b", sessionId: "prep:b", source: "prepare",
      budget: { used: 3100, limit: 6000, conversationId: "conv-b", source: "prepare" },
    });
    expect(notices).toEqual(["ctxlayer: summarized 57 older messages (9k tokens) to fit 6k"]);
    expect(await controller.inspectorHtml()).toBe("<html>prep:b</html>");
  });

  it("forgets the live chat when the daemon restarts: a click shows the workspace context", async () => {
    const gateway = { ...budget(40_000, 120_000, "gw:1"), conversationId: "conv-a", source: "gateway" as const, live: true };
    conn.notify("ctx/budgetChanged", gateway);
    expect(controller.live?.conversationId).toBe("conv-a");
    // extension.ts on Restart, a settings change or a crash: detach, then attach the new daemon,
    // which holds no chat yet (its ctx/inspect of the old chat's session is "not in memory")
    controller.detach();
    const fresh = new FakeConnection({
      "ctx/session/open": (p) => ({ ...p, budget: 100_000, createdAt: "now", mode: "short" }),
      "ctx/session/budget": (p) => budget(20_000, 100_000, p.sessionId),
      "ctx/inspect": (p) => {
        if (p.sessionId !== "vscode:abc") throw Object.assign(new Error(`chat '${p.sessionId}' is not in memory`), { code: -32001 });
        return { html: `<html>${p.sessionId}</html>` };
      },
    });
    await controller.attach(new CtxlayerClient(fresh), announcement());
    expect(controller.live).toBeUndefined();
    expect(await controller.inspectorHtml()).toBe("<html>vscode:abc</html>");
  });

  it("forgets a live chat whose session was closed: a click shows the workspace context", async () => {
    const closed = new Set<string>();
    const daemon = new FakeConnection({
      "ctx/session/open": (p) => ({ ...p, budget: 100_000, createdAt: "now", mode: "short" }),
      "ctx/session/budget": (p) => budget(20_000, 100_000, p.sessionId),
      "ctx/inspect": (p) => {
        if (closed.has(p.sessionId)) throw Object.assign(new Error(`no session '${p.sessionId}'`), { code: -32002 });
        return { html: `<html>${p.sessionId}</html>` };
      },
    });
    const shown = new Sink();
    const c = new BudgetController(shown, settings, "abc");
    await c.attach(new CtxlayerClient(daemon), announcement());
    // a @ctxlayer chat assembled: its session is the live chat; then any client closes it
    daemon.notify("ctx/budgetChanged", { ...budget(6000, 100_000, "vscode-chat:x"), source: "session", live: true });
    expect(c.live?.sessionId).toBe("vscode-chat:x");
    closed.add("vscode-chat:x");
    expect(await c.inspectorHtml()).toBe("<html>vscode:abc</html>");
    expect(c.live).toBeUndefined();
    expect(shown.live.at(-1)).toBeUndefined(); // the status bar: no live chat, the workspace's figure
  });

  it("says the daemon's warning once per text, whichever chat's budget carries it", () => {
    const warnings: string[] = [];
    controller.onWarning((text) => warnings.push(text));
    const full = "the state folder could not keep this turn's audit: the disk is full";
    for (const live of [true, false, true]) {
      conn.notify("ctx/budgetChanged", {
        ...budget(3100, 6000, "gw:w"), conversationId: "conv-w", source: "gateway", live,
        warning: full,
      });
    }
    conn.notify("ctx/budgetChanged", { ...budget(3200, 6000, "gw:w"), conversationId: "conv-w", live: true });
    expect(warnings).toEqual([full]);
  });
});

describe("not connected", () => {
  it("says how to get the daemon back", async () => {
    const controller = new BudgetController(new Sink(), settings, "k");
    await expect(controller.count({ texts: ["x"] })).rejects.toThrow(/ctxlayer: Restart/);
  });
});

describe("a workspace session whose settings changed since it was opened", () => {
  // the daemon answers a reopened id unchanged: the session as an earlier run left it
  const earlier = { model: "gpt-4o", budget: 20_000, mode: "deep" as const };
  const daemon = (extra: Record<string, (p: any) => unknown> = {}) =>
    new FakeConnection({
      "ctx/session/open": (p) => ({ ...earlier, sessionId: p.sessionId, createdAt: "then" }),
      "ctx/session/budget": (p) => budget(50, earlier.budget, p.sessionId),
      ...extra,
    });
  const configured = (p: any) => ({
    ...budget(58, p.budget ?? earlier.budget, p.sessionId),
    model: p.model ?? earlier.model,
  });

  it("sends what differs with ctx/session/configure and shows the session as configured", async () => {
    let session = { ...earlier };
    const conn = new FakeConnection({
      "ctx/session/open": (p) => ({ ...session, sessionId: p.sessionId, createdAt: "then" }),
      "ctx/session/configure": (p) => {
        session = { ...session, ...p };
        return { ...budget(58, session.budget, p.sessionId), model: session.model };
      },
      "ctx/session/budget": (p) => ({ ...budget(58, session.budget, p.sessionId), model: session.model }),
    });
    const sink = new Sink();
    const now = { model: "claude-sonnet-4", budget: 60_000, mode: "short" as const };
    const controller = new BudgetController(sink, now, "abc");
    await controller.attach(new CtxlayerClient(conn), announcement());
    expect(conn.sent("ctx/session/configure")).toEqual([{ sessionId: "vscode:abc", ...now }]);
    expect(sink.shown.at(-1)?.[0]).toMatchObject({ limit: 60_000, model: "claude-sonnet-4" });
    expect(controller.mode).toBe("short");
    // the next start finds the session as configured: nothing to send
    await controller.attach(new CtxlayerClient(conn), announcement());
    expect(conn.sent("ctx/session/configure")).toHaveLength(1);
  });

  it("takes a budget left empty back to the model's default, leaves an empty mode to the session", async () => {
    // the setting says "Empty: the model's window minus the output reserve": the session's
    // 20,000 of an earlier setting goes (it stayed for good before resetBudget)
    const conn = daemon({ "ctx/session/configure": configured });
    const controller = new BudgetController(new Sink(), { model: "gpt-4o", budget: null, mode: null }, "abc");
    await controller.attach(new CtxlayerClient(conn), announcement());
    expect(conn.sent("ctx/session/configure")).toEqual([{ sessionId: "vscode:abc", resetBudget: true }]);
    // a session at the announced model's default already: nothing to send
    const atDefault = new FakeConnection({
      "ctx/session/open": (p) => ({ ...earlier, budget: 100_000, sessionId: p.sessionId, createdAt: "then" }),
      "ctx/session/budget": (p) => budget(50, 100_000, p.sessionId),
    });
    await controller.attach(new CtxlayerClient(atDefault), announcement());
    expect(atDefault.sent("ctx/session/configure")).toEqual([]);
    // a new model too: its default, whatever the session's budget is
    const switched = daemon({ "ctx/session/configure": configured });
    const other = new BudgetController(new Sink(), { model: "claude-sonnet-4", budget: null, mode: null }, "abc");
    await other.attach(new CtxlayerClient(switched), announcement());
    expect(switched.sent("ctx/session/configure")).toEqual([
      { sessionId: "vscode:abc", model: "claude-sonnet-4", resetBudget: true },
    ]);
    const onlyBudget = daemon({ "ctx/session/configure": configured });
    const third = new BudgetController(new Sink(), { model: "gpt-4o", budget: 32_000, mode: null }, "abc");
    await third.attach(new CtxlayerClient(onlyBudget), announcement());
    expect(onlyBudget.sent("ctx/session/configure")).toEqual([{ sessionId: "vscode:abc", budget: 32_000 }]);
  });

  it("with a daemon without ctx/session/configure: taken, one warning names what it keeps", async () => {
    const conn = daemon();
    const sink = new Sink();
    const controller = new BudgetController(sink, { model: "gpt-4o", budget: 60_000, mode: null }, "abc");
    const warnings: string[] = [];
    controller.onWarning((text) => warnings.push(text));
    const older = announcement({ methods: NEEDED_METHODS });
    expect(checkAnnouncement(older).problem).toBeUndefined();
    await controller.attach(new CtxlayerClient(conn), older);
    await controller.attach(new CtxlayerClient(conn), older);
    expect(conn.sent("ctx/session/configure")).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("budget 20000 (setting ctxlayer.budget: 60000)");
    expect(warnings[0]).toContain("update ctxlayer");
    expect(sink.shown.at(-1)?.[0].limit).toBe(20_000); // the session's own, as it is
  });
});
