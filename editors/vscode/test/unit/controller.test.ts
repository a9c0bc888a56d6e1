import { CtxlayerClient, type Budget } from "@ctxlayer/client";
import { beforeEach, describe, expect, it } from "vitest";
import { BudgetController, type BudgetSink, type LiveChat } from "../../src/controller";
import { budget, FakeConnection } from "./fakeDaemon";

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

describe("with sessions", () => {
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
    await controller.attach(
      new CtxlayerClient(conn),
      new Set(["ctx/session/open", "ctx/session/budget", "ctx/inspect"]),
    );
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

  it("assembles the session and remembers the mode suggestion", async () => {
    const text = await controller.assembledText();
    expect(text).toBe("## system\n\nsys\n\n## user\n\nhi");
    expect(controller.suggestion).toEqual({ mode: "debug", reason: "stack trace" });
  });

  it("inspects the session", async () => {
    expect(await controller.inspectorHtml()).toBe("<html>vscode:abc</html>");
  });

  it("shows the chat that last sent a request, and inspects it on a click", async () => {
    const gateway = { ...budget(40_000, 120_000, "gw:1"), conversationId: "conv-a", source: "gateway" as const, cachedTokens: 30_000 };
    conn.notify("ctx/budgetChanged", gateway);
    expect(sink.live.at(-1)).toEqual({ conversationId: "conv-a", sessionId: "gw:1", source: "gateway", budget: gateway });
    expect(await controller.inspectorHtml()).toBe("<html>gw:1</html>");
    // a @ctxlayer chat's session budget (no conversation id) becomes the live chat once followed
    conn.notify("ctx/budgetChanged", budget(5000, 100_000, "vscode-chat:x"));
    expect(sink.live).toHaveLength(1);
    await controller.followChat("vscode-chat:x");
    conn.notify("ctx/budgetChanged", budget(6000, 100_000, "vscode-chat:x"));
    expect(sink.live.at(-1)).toMatchObject({ conversationId: "vscode-chat:x", source: "session", budget: { used: 6000 } });
    // a ctxlayer model's fitted request: its own figures
    await controller.followPrepared({
      conversationId: "conv-b", sessionId: "prep:b", tokens: 3100, budget: 6000, dropped: [], truncated: [],
      compacted: false, cacheReuseTokens: 0, request: {},
    });
    expect(sink.live.at(-1)).toMatchObject({
      conversationId: "conv-b", sessionId: "prep:b", source: "prepare",
      budget: { used: 3100, limit: 6000, conversationId: "conv-b", source: "prepare" },
    });
    expect(await controller.inspectorHtml()).toBe("<html>prep:b</html>");
  });
});

describe("before sessions", () => {
  let conn: FakeConnection;
  let sink: Sink;
  let controller: BudgetController;
  let segmentTokens = 3000;

  beforeEach(async () => {
    segmentTokens = 3000;
    conn = new FakeConnection({
      "ctx/segment": () => ({ tokens: segmentTokens, text: "", hash: "h", version: 1 }),
      "ctx/systemPrompt": () => ({ messages: [{ role: "system", content: "sys" }], tokens: 0 }),
      "ctx/trim": (p) => {
        const tokens = p.messages.length === 1 ? segmentTokens + 500 : 7000;
        return { messages: p.messages, tokens, budget: p.budget ?? 111_616, dropped: [] };
      },
    });
    sink = new Sink();
    controller = new BudgetController(sink, settings, "abc");
    await controller.attach(
      new CtxlayerClient(conn),
      new Set(["ctx/segment", "ctx/systemPrompt", "ctx/trim"]),
    );
  });

  it("shows the system prompt with the workspace segment against the model's budget", () => {
    const [b, source] = sink.shown.at(-1)!;
    expect(source).toBe("workspace");
    expect(b).toMatchObject({
      used: 3500,
      limit: 111_616,
      byLayer: { system: 500, workspace: 3000, history: 0 },
    });
  });

  it("refreshes itself when the segment changes (a save)", async () => {
    segmentTokens = 4000;
    conn.notify("ctx/segmentChanged", { hash: "h2", version: 2, tokens: 4000, changed: ["files"] });
    await tick();
    await tick();
    expect(sink.shown.at(-1)?.[0].byLayer.workspace).toBe(4000);
  });

  it("adds the last trimmed conversation as history", async () => {
    await controller.trim({
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
      ],
    });
    await tick();
    await tick();
    expect(sink.shown.at(-1)?.[0]).toMatchObject({ used: 10_500, byLayer: { history: 7000 } });
    expect(conn.sent("ctx/trim").at(-2)).toMatchObject({ model: "gpt-4o" });
  });

  it("says that rules need sessions", async () => {
    await expect(controller.addRule("Never use any")).rejects.toThrow(/sessions/);
  });

  it("reports a daemon error on the status bar", async () => {
    conn = new FakeConnection({});
    await expect(
      controller.attach(new CtxlayerClient(conn), new Set(["ctx/segment"])),
    ).rejects.toThrow(/Unhandled method/);
    expect(sink.problems.at(-1)).toMatch(/ctx error/);
  });
});

describe("not connected", () => {
  it("says how to get the daemon back", async () => {
    const controller = new BudgetController(new Sink(), settings, "k");
    await expect(controller.count({ texts: ["x"] })).rejects.toThrow(/ctxlayer: Restart/);
  });
});
