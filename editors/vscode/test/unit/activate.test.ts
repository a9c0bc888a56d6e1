// activate() with the vscode mock and a stand-in LanguageClient (fakeDaemon.ts): what the user
// sees of settings of the wrong kind and of a daemon that refuses to open the session.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { activate, deactivate } from "../../src/extension";
import { budget, FakeLanguageClient, opened } from "./fakeDaemon";
import { changeSettings, recorded, resetMock } from "./vscode.mock";

vi.mock("vscode-languageclient/node", async () =>
  (await vi.importActual<typeof import("./fakeDaemon")>("./fakeDaemon")).languageClientModule);

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
};
const item = () => recorded.statusItems[0];

beforeEach(() => {
  resetMock();
  FakeLanguageClient.made = [];
  FakeLanguageClient.answers = {
    "ctx/session/open": opened,
    "ctx/session/budget": (p: any) => budget(5000, 100_000, p.sessionId),
  };
  vi.stubEnv("PATH", "/nonexistent"); // no ctxlayer found by itself: only the setting's
});

afterEach(async () => {
  await deactivate();
  vi.unstubAllEnvs();
});

describe("activate", () => {
  it("starts the daemon with defaults in place of wrong settings, said in one warning", async () => {
    recorded.settings.set("serverCommand", ["/venv/bin/ctxlayer", "serve"]);
    recorded.settings.set("budget", "64000");
    recorded.settings.set("model", 4);
    recorded.settings.set("mode", "turbo");
    await activate({ subscriptions: [] } as any);
    await settle();
    expect(recorded.warnings).toHaveLength(1);
    for (const name of ["ctxlayer.budget", "ctxlayer.model", "ctxlayer.mode"]) {
      expect(recorded.warnings[0]).toContain(name);
    }
    expect(recorded.warnings[0]).not.toContain("ctxlayer.serverCommand");
    const lc = FakeLanguageClient.made[0];
    expect(lc.clientOptions.initializationOptions).toMatchObject({ model: "gpt-4o" });
    // never a mode: the daemon would announce it as the workspace's default
    expect(lc.clientOptions.initializationOptions).not.toHaveProperty("mode");
    expect(lc.sent("ctx/session/open")).toEqual([
      { sessionId: expect.any(String), model: "gpt-4o", mode: undefined, budget: undefined },
    ]);
    expect(item().text).toBe("ctx · no live chat");
    // another settings change with the same problems says nothing again
    changeSettings({ "trace.server": "verbose" });
    await settle();
    expect(recorded.warnings).toHaveLength(1);
    changeSettings({ budget: 64_000 }); // fixed: the rest is still said, once
    await settle();
    expect(recorded.warnings).toHaveLength(2);
    expect(recorded.warnings[1]).not.toContain("ctxlayer.budget");
  });

  it("a command given as one string does not throw: the default search runs", async () => {
    recorded.settings.set("serverCommand", "/venv/bin/ctxlayer serve");
    const rejections: unknown[] = [];
    const onRejection = (err: unknown) => rejections.push(err);
    process.on("unhandledRejection", onRejection);
    try {
      await activate({ subscriptions: [] } as any);
      await settle();
    } finally {
      process.off("unhandledRejection", onRejection);
    }
    expect(rejections).toEqual([]);
    expect(recorded.warnings).toEqual([expect.stringContaining("`ctxlayer.serverCommand` must be a list of strings")]);
    expect(item().text).toBe("$(warning) ctx off"); // nothing on PATH: the install hint
    expect(recorded.errors[0].message).toMatch(/daemon was not found/);
  });

  it("shows the daemon's refusal of the session in the status bar instead of spinning", async () => {
    recorded.settings.set("serverCommand", ["/venv/bin/ctxlayer", "serve"]);
    FakeLanguageClient.answers["ctx/session/open"] = () => {
      throw Object.assign(new Error("invalid params: budget: Expected `int | null`, got `str`"), { code: -32602 });
    };
    await activate({ subscriptions: [] } as any);
    await settle();
    expect(item().text).toBe("$(warning) ctx error");
    expect(item().tooltip).toContain("budget: Expected `int | null`, got `str`");
    expect(item().tooltip).toContain("ctxlayer: Restart");
  });

  // A restart moves the gateway to a new port (gateway.port 0, the default): Claude Code,
  // Codex or aider pointed at the announced URL lose their streams. The budget and the trace
  // level restarted the daemon; the running one takes them now.
  it("a changed budget or trace level goes to the running daemon, which is not restarted", async () => {
    recorded.settings.set("serverCommand", ["/venv/bin/ctxlayer", "serve"]);
    FakeLanguageClient.answers["ctx/session/configure"] = (p: any) =>
      budget(5000, p.budget ?? 100_000, p.sessionId);
    const ours = await activate({ subscriptions: [] } as any);
    await settle();
    const lc = FakeLanguageClient.made[0];
    expect(lc.starts).toBe(1);
    expect(lc.traces).toEqual(["off"]);
    const sessionId = lc.sent("ctx/session/open")[0].sessionId;

    changeSettings({ budget: 64_000 });
    await settle();
    expect(FakeLanguageClient.made).toHaveLength(1);
    expect(lc.starts).toBe(1);
    expect(lc.sent("ctx/session/configure")).toEqual([{ sessionId, budget: 64_000 }]);
    expect(ours.budget?.limit).toBe(64_000); // the answer is the workspace's figure

    changeSettings({ budget: null }); // cleared: the model's default
    await settle();
    expect(lc.sent("ctx/session/configure")[1]).toEqual({ sessionId, resetBudget: true });

    changeSettings({ "trace.server": "verbose" });
    await settle();
    expect(FakeLanguageClient.made).toHaveLength(1);
    expect(lc.traces).toEqual(["off", "verbose"]);
    expect(recorded.errors).toEqual([]);
  });

  it("a budget the daemon refuses is said in one error; the daemon keeps running", async () => {
    recorded.settings.set("serverCommand", ["/venv/bin/ctxlayer", "serve"]);
    FakeLanguageClient.answers["ctx/session/configure"] = () => {
      throw Object.assign(new Error("invalid params"), { code: -32602 });
    };
    await activate({ subscriptions: [] } as any);
    await settle();
    changeSettings({ budget: 10_000_000 });
    await settle();
    expect(FakeLanguageClient.made).toHaveLength(1);
    expect(recorded.errors.map((e) => e.message)).toEqual([expect.stringContaining("invalid params")]);
  });
});
