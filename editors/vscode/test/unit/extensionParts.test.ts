import { beforeEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CtxlayerClient } from "@ctxlayer/client";
import * as commands from "../../src/commands";
import { BudgetController } from "../../src/controller";
import { BudgetStatusItem } from "../../src/statusBar";
import { summarize, summaryPrompt } from "../../src/summarize";
import { createApi } from "../../src/api";
import { settingsChange, settingsWarning } from "../../src/settings";
import * as api from "../../src/vscodeapi";
import { recorded, resetMock } from "./vscode.mock";
import { announcement, budget, FakeConnection, opened } from "./fakeDaemon";

const manifest = JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8"));

beforeEach(() => resetMock());

describe("status bar item", () => {
  const live = (used: number, limit: number, extra: object = {}) => ({
    conversationId: "conv-1",
    sessionId: "s1",
    source: "gateway",
    budget: { ...budget(used, limit, "s1"), ...extra },
  });

  it("says no chat is live, with the workspace's figure in the tooltip only", () => {
    const status = new BudgetStatusItem();
    status.showBudget(budget(42_100, 128_000), "workspace");
    const item = recorded.statusItems[0];
    expect(item.text).toBe("ctx · no live chat");
    expect(item.tooltip.value).toContain("The workspace context alone: 42,100 tokens");
    expect(item.tooltip.value).not.toContain("Gateway:");
    status.gateway = { openai: "http://127.0.0.1:4000/v1", anthropic: "http://127.0.0.1:4000" };
    status.showBudget(budget(42_100, 128_000), "workspace");
    expect(item.tooltip.value).toContain("Gateway: OpenAI base URL `http://127.0.0.1:4000/v1`");
  });

  it("shows the live chat with cached tokens, error band, next compaction and colours", () => {
    const status = new BudgetStatusItem();
    const item = recorded.statusItems[0];
    expect(item.visible).toBe(true);
    expect(item.command).toBe("ctxlayer.showContext");
    status.showLive(live(42_100, 128_000, { cachedTokens: 30_500, errorBand: 0.042, nextCompactionAt: 89_600 }));
    expect(item.text).toBe("ctx 42.1k / 128k (33%) · 30.5k cached");
    expect(item.backgroundColor).toBeUndefined();
    const tip = item.tooltip.value;
    expect(tip).toContain("| Workspace | 41,100 |");
    expect(tip).toContain("the gateway, conversation `conv-1`");
    expect(tip).toContain("Cached by the provider on the last turn: 30,500 tokens.");
    expect(tip).toContain("Counts are within ±4% of the provider's.");
    expect(tip).toContain("Next compaction at 89,600 tokens (47,500 to go).");
    // a workspace figure arriving later does not hide the live chat
    status.showBudget(budget(1000, 128_000), "workspace");
    expect(item.text).toBe("ctx 42.1k / 128k (33%) · 30.5k cached");
    status.showLive(live(75_000, 100_000));
    expect(item.text).toBe("ctx 75k / 100k (75%)");
    expect(item.backgroundColor.id).toBe("statusBarItem.warningBackground");
    status.showLive(live(95_000, 100_000));
    expect(item.backgroundColor.id).toBe("statusBarItem.errorBackground");
    status.showProblem("ctx off", "daemon exited");
    expect(item.text).toBe("$(warning) ctx off");
  });
});

describe("settings", () => {
  it("are read with the manifest's defaults", () => {
    const props = manifest.contributes.configuration.properties;
    expect(api.readSettings()).toEqual({
      model: props["ctxlayer.model"].default,
      budget: props["ctxlayer.budget"].default,
      mode: props["ctxlayer.mode"].default,
      serverCommand: props["ctxlayer.serverCommand"].default,
      trace: props["ctxlayer.trace.server"].default,
      gateway: { enabled: props["ctxlayer.gateway.enabled"].default, port: props["ctxlayer.gateway.port"].default },
    });
    recorded.settings.set("model", "claude-sonnet-4");
    recorded.settings.set("budget", 50_000);
    recorded.settings.set("mode", "debug");
    recorded.settings.set("serverCommand", ["/venv/bin/ctxlayer", "serve"]);
    const problems: string[] = [];
    expect(api.readSettings(problems)).toMatchObject({
      model: "claude-sonnet-4", budget: 50_000, mode: "debug", serverCommand: ["/venv/bin/ctxlayer", "serve"],
    });
    expect(problems).toEqual([]);
  });

  it("of the wrong kind are replaced by the manifest's defaults, each problem naming its setting", () => {
    const props = manifest.contributes.configuration.properties;
    const wrong: Record<string, unknown> = {
      model: 4,
      budget: "64000",
      mode: "turbo",
      serverCommand: "/venv/bin/ctxlayer serve",
      "trace.server": "loud",
      "gateway.enabled": "yes",
      "gateway.port": 70_000,
    };
    for (const [key, value] of Object.entries(wrong)) recorded.settings.set(key, value);
    const problems: string[] = [];
    expect(api.readSettings(problems)).toEqual({
      model: props["ctxlayer.model"].default,
      budget: null,
      mode: null,
      serverCommand: [],
      trace: "off",
      gateway: { enabled: false, port: 0 },
    });
    expect(problems).toEqual([
      "`ctxlayer.model` must be a non-empty string, not 4",
      '`ctxlayer.budget` must be an integer of at least 1 or null, not "64000"',
      '`ctxlayer.mode` must be one of null, "short", "deep", "debug", not "turbo"',
      '`ctxlayer.serverCommand` must be a list of strings, not "/venv/bin/ctxlayer serve"',
      '`ctxlayer.trace.server` must be one of "off", "messages", "verbose", not "loud"',
      '`ctxlayer.gateway.enabled` must be true or false, not "yes"',
      "`ctxlayer.gateway.port` must be an integer from 0 to 65535, not 70000",
    ]);
    expect(settingsWarning(problems)).toMatch(/^ctxlayer: `ctxlayer.model` must be .*; `ctxlayer.budget` must be .*Using the default/);
    expect(settingsWarning([])).toBeUndefined();
    for (const [key, value] of [["budget", 0], ["budget", 1.5], ["serverCommand", ["ctxlayer", 2]]] as const) {
      recorded.settings.set(key, value);
      const more: string[] = [];
      api.readSettings(more);
      expect(more.some((p) => p.startsWith(`\`ctxlayer.${key}\``)), `${key} ${JSON.stringify(value)}`).toBe(true);
    }
  });
});

function deps(answers: Record<string, (p: any) => unknown>) {
  const conn = new FakeConnection(answers);
  const status = new BudgetStatusItem();
  const controller = new BudgetController(status, api.readSettings(), "k");
  let restarts = 0;
  const log = api.createLogChannel("ctxlayer") as any;
  return {
    conn,
    controller,
    log,
    restarts: () => restarts,
    attach: () => controller.attach(new CtxlayerClient(conn), announcement()),
    deps: { controller, log, restart: async () => restarts++ } as commands.CommandDeps,
  };
}

const sessionAnswers = {
  "ctx/session/open": opened,
  "ctx/session/budget": (p: any) => budget(5000, 100_000, p.sessionId),
  "ctx/session/setMode": (p: any) => budget(6000, 100_000, p.sessionId),
  "ctx/session/addRule": () => ({ ruleId: "r1", demoted: [], warning: "say it in the imperative" }),
  "ctx/inspect": () => ({ html: "<!doctype html><p>page</p>" }),
  "ctx/assemble": () => ({ messages: [{ role: "user", content: "hello" }] }),
};

describe("commands", () => {
  it("opens one inspector tab per chat, which refreshes while open", async () => {
    let page = 0;
    const d = deps(
      { ...sessionAnswers, "ctx/inspect": (p: any) => ({ html: `<p>${p.sessionId} ${++page}</p>` }) },
    );
    await d.attach();
    const live = (used: number, sid: string, cid: string) =>
      d.conn.notify("ctx/budgetChanged", { ...budget(used, 8000, sid), conversationId: cid, source: "gateway", live: true });
    live(1000, "chat-a", "a");
    await commands.showContext(d.deps);
    await commands.showContext(d.deps);
    expect(recorded.panels).toHaveLength(1); // the same chat: its tab comes forward
    expect(recorded.panels[0].revealed).toBe(1);
    live(1500, "chat-a", "a"); // its next request: the open tab follows
    await new Promise((r) => setTimeout(r, 0));
    expect(recorded.panels[0].webview.html).toBe("<p>chat-a 3</p>");
    live(900, "chat-b", "b");
    await commands.showContext(d.deps);
    expect(recorded.panels).toHaveLength(2); // another chat: its own tab
    expect(recorded.panels[1].webview.html).toMatch(/^<p>chat-b /);
    expect(recorded.panels[0].webview.html).toBe("<p>chat-a 3</p>"); // not b's figures
    for (const panel of recorded.panels) panel.dispose();
  });

  it("registers exactly the commands the manifest contributes", () => {
    const d = deps({});
    commands.register(d.deps);
    const contributed = manifest.contributes.commands.map((c: any) => c.command).sort();
    expect([...recorded.commands.keys()].sort()).toEqual(contributed);
  });

  it("Show context opens the inspector page in a webview with scripts", async () => {
    const d = deps(sessionAnswers);
    await d.attach();
    await commands.showContext(d.deps);
    expect(recorded.panels).toHaveLength(1);
    expect(recorded.panels[0].webview.html).toContain("<p>page</p>");
    expect(recorded.panels[0].options.enableScripts).toBe(true);
  });

  it("Set mode offers the daemon's modes, marks its default and the suggestion, applies the pick", async () => {
    const d = deps(sessionAnswers);
    await d.attach();
    d.controller.suggestion = { mode: "debug", reason: "a stack trace in the last message" };
    recorded.nextQuickPick = "debug";
    await commands.setMode(d.deps);
    const debug = recorded.quickPickItems.find((i) => i.label === "debug");
    expect(debug.description).toBe("suggested: a stack trace in the last message");
    expect(debug.detail).toBe(
      "working memory up to 90% of 4,000 tokens, less what the rules take (rules are always shown whole)",
    );
    expect(recorded.quickPickItems.map((i) => i.label)).toEqual(["short", "deep", "debug"]);
    expect(recorded.quickPickItems.find((i) => i.label === "deep").description).toBe("default");
    expect(recorded.updates).toEqual([["mode", "debug"]]);
    expect(d.conn.sent("ctx/session/setMode")).toEqual([{ sessionId: "vscode:k", mode: "debug" }]);
  });

  it("Add rule sends the rule and shows the daemon's warning", async () => {
    const d = deps(sessionAnswers);
    await d.attach();
    recorded.nextInput = "  the project usually avoids any  ";
    await commands.addRule(d.deps);
    expect(d.conn.sent("ctx/session/addRule")).toEqual([
      { sessionId: "vscode:k", rule: { text: "the project usually avoids any", weight: 1 } },
    ]);
    expect(recorded.infos).toEqual(["ctxlayer: say it in the imperative"]);
  });

  it("Copy assembled prompt puts the prompt on the clipboard", async () => {
    const d = deps(sessionAnswers);
    await d.attach();
    await commands.copyAssembled(d.deps);
    expect(recorded.clipboard).toBe("## user\n\nhello");
  });

  it("a failure shows one actionable message, and its button restarts", async () => {
    const d = deps({});
    recorded.nextErrorChoice = "Restart";
    await commands.refresh(d.deps);
    expect(recorded.errors).toHaveLength(1);
    expect(recorded.errors[0].message).toMatch(/Refresh failed: .*ctxlayer: Restart/);
    expect(recorded.errors[0].actions).toEqual(["Show Logs", "Restart"]);
    expect(d.restarts()).toBe(1);
    expect(d.log.lines.at(-1)).toMatch(/^error ctxlayer: Refresh failed/);
  });

  it("a daemon's answer about the request offers no restart, which would not help", async () => {
    const gone = () => {
      throw Object.assign(new Error("sessionId: the chat is not in memory until its next request"),
        { code: -32002 });
    };
    const d = deps({ ...sessionAnswers, "ctx/inspect": gone });
    await d.attach();
    await commands.showContext(d.deps);
    expect(recorded.errors).toHaveLength(1);
    expect(recorded.errors[0].message).toMatch(/Show context failed: .*not in memory/);
    expect(recorded.errors[0].actions).toEqual(["Show Logs"]);
  });
});

describe("exported API", () => {
  it("passes assemble, trim and count to the daemon and reports budget changes", async () => {
    const d = deps(
      {
        ...sessionAnswers,
        "ctx/trim": (p: any) => ({ messages: p.messages, tokens: 3, budget: 10, dropped: [] }),
        "ctx/count": (p: any) => ({ tokens: [1], total: 1, model: p.model }),
      },
    );
    await d.attach();
    const exported = createApi(d.controller);
    const seen: number[] = [];
    exported.onBudgetChanged((b) => seen.push(b.used));
    d.conn.notify("ctx/budgetChanged", budget(7000, 100_000, "vscode:k"));
    expect(seen).toEqual([7000]);
    expect(exported.budget?.used).toBe(7000);
    expect((await exported.count({ texts: ["x"] })).total).toBe(1);
    expect(d.conn.sent("ctx/count")[0].model).toBe("gpt-4o");
    expect((await exported.trim({ messages: [{ role: "user", content: "x" }] })).tokens).toBe(3);
    expect((await exported.assemble()).messages).toHaveLength(1);
    expect(d.conn.sent("ctx/assemble")[0].sessionId).toBe("vscode:k");
  });

  it("prepares another extension's chat request and shows that chat on the status bar", async () => {
    const d = deps(
      {
        ...sessionAnswers,
        "ctx/prepare": (p: any) => ({
          request: p.request, conversationId: "their-chat", sessionId: "chat-their-chat", tokens: 1200,
          budget: 8000, dropped: [], truncated: [], compacted: false, cacheReuseTokens: 0,
        }),
      },
    );
    await d.attach();
    const request = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] };
    const result = await createApi(d.controller).prepare({ format: "openai", request });
    expect(result.request).toEqual(request);
    // the figure is the daemon's ctx/budgetChanged of that chat, marked live
    d.conn.notify("ctx/budgetChanged", {
      ...budget(1200, 8000, "chat-their-chat"), conversationId: "their-chat", source: "prepare", live: true,
    });
    await new Promise((r) => setTimeout(r, 0));
    expect(recorded.statusItems[0].text).toBe("ctx 1.2k / 8k (15%)");
  });
});

describe("ctx/summarize", () => {
  const params = {
    messages: [{ role: "user" as const, content: "fix the bug", id: "m1" }],
    instructions: "Summarize: decided, open, constraints.",
    maxTokens: 200,
  };

  it("asks the editor's model with the instructions and the transcript", async () => {
    let asked = "";
    const result = await summarize(params, async (prompt) => {
      asked = prompt;
      return "  decided: x  ";
    });
    expect(result).toEqual({ text: "decided: x" });
    expect(asked).toBe(summaryPrompt(params));
    expect(asked).toContain("under 200 tokens");
    expect(asked).toContain("[user m1]\nfix the bug");
  });

  it("refuses when no editor model is available, so the daemon falls back", async () => {
    await expect(summarize(params, async () => undefined)).rejects.toThrow(/offline summary/);
    // the mocked vscode has no `lm`
    expect(await api.summarizeWithEditorModel("x")).toBeUndefined();
  });
});

describe("settings changes", () => {
  it("restart the daemon for model, command and gateway; budget, trace and mode go to the running one", () => {
    const base = api.readSettings();
    expect(settingsChange(base, { ...base })).toEqual([]);
    expect(settingsChange(base, { ...base, mode: "debug" })).toEqual(["mode"]);
    expect(settingsChange(base, { ...base, model: "claude-sonnet-4" })).toEqual(["restart"]);
    // taken while the daemon runs: a restart would move the gateway to a new port
    expect(settingsChange(base, { ...base, budget: 1000 })).toEqual(["budget"]);
    expect(settingsChange(base, { ...base, trace: "verbose" })).toEqual(["trace"]);
    expect(settingsChange(base, { ...base, budget: 1000, trace: "verbose", mode: "debug" })).toEqual(
      ["budget", "trace", "mode"]);
    expect(settingsChange(base, { ...base, budget: 1000, model: "claude-sonnet-4" })).toEqual(["restart"]);
    expect(settingsChange(base, { ...base, serverCommand: ["x", "serve"] })).toEqual(["restart"]);
    expect(settingsChange(base, { ...base, gateway: { enabled: true, port: 0 } })).toEqual(["restart"]);
  });
});
