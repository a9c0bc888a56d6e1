// End to end: the extension's controller on the real daemon (`ctxlayer serve` over stdio,
// spoken to with vscode-jsonrpc), in a real git workspace. No vscode module involved.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync, appendFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Budget, ServerAnnouncement } from "@ctxlayer/client";
import { spawnDaemon, type SpawnedDaemon } from "@ctxlayer/client/src/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkAnnouncement } from "../../src/announcement";
import { BudgetController, type BudgetSink, type LiveChat } from "../../src/controller";
import { severity, statusText } from "../../src/budgetView";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");

class Sink implements BudgetSink {
  shown: Budget[] = [];
  problems: string[] = [];
  waiters: ((b: Budget) => void)[] = [];
  showBudget(b: Budget) {
    this.shown.push(b);
    for (const w of this.waiters.splice(0)) w(b);
  }
  live: LiveChat[] = [];
  showLive(chat: LiveChat) {
    this.live.push(chat);
  }
  showProblem(text: string, detail: string) {
    this.problems.push(`${text}: ${detail}`);
  }
  next(timeoutMs = 20_000): Promise<Budget> {
    return new Promise((ok, fail) => {
      const t = setTimeout(() => fail(new Error("no budget update")), timeoutMs);
      this.waiters.push((b) => {
        clearTimeout(t);
        ok(b);
      });
    });
  }
}

let base: string;
let workspace: string;
let daemon: SpawnedDaemon;
let stderr = "";

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "ctxlayer-vscode-e2e-"));
  workspace = join(base, "ws");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "README.md"), "# Demo\n\nA small project.\n");
  writeFileSync(join(workspace, "main.py"), "print('hello')\n");
  const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  execFileSync("git", ["init", "-q"], { cwd: workspace, env: gitEnv });
  daemon = await spawnDaemon({
    command: [python, "-m", "ctxlayer", "serve"],
    workspace,
    initializationOptions: { model: "gpt-4o" },
    env: {
      ...gitEnv,
      HOME: base,
      XDG_CONFIG_HOME: join(base, "config"),
      CTXLAYER_STATE_DIR: join(base, "state"),
    },
    onStderr: (s) => (stderr += s),
    timeoutMs: 30_000,
  });
});

afterAll(async () => {
  const code = await daemon?.close();
  expect(code).toBe(0);
});

function methods(): Set<string> {
  return new Set(daemon.initializeResult.capabilities.experimental.ctxlayer.methods);
}

/** The daemon's announcement, as the extension checks it before attaching. */
function announced(): ServerAnnouncement {
  const checked = checkAnnouncement(daemon.initializeResult.capabilities.experimental.ctxlayer);
  if (checked.problem !== undefined) throw new Error(checked.problem);
  return checked.announcement;
}

describe("the extension's controller on the real daemon", () => {
  const sink = new Sink();
  const controller = new BudgetController(
    sink,
    { model: "gpt-4o", budget: null, mode: "short" },
    "e2e",
  );

  it("starts: the daemon announces ctxlayer and every method of the extension's protocol", () => {
    expect(daemon.initializeResult.serverInfo.name).toBe("ctxlayer");
    expect(methods()).toContain("ctx/trim");
    expect(methods()).toContain("ctx/inspect");
    expect(checkAnnouncement(daemon.initializeResult.capabilities.experimental.ctxlayer).problem).toBeUndefined();
  });

  it("shows a budget for the workspace", async () => {
    await controller.attach(daemon.client, announced());
    const b = sink.shown.at(-1)!;
    expect(b.used).toBeGreaterThan(0);
    expect(b.limit).toBeGreaterThan(100_000); // gpt-4o's window minus its output reserve
    expect(b.byLayer.workspace ?? 0).toBeGreaterThan(0);
    expect(statusText(b)).toMatch(/^ctx \d+(\.\d)?k? \/ \d+k \(\d+%\)$/);
    expect(severity(b)).toBe("ok");
    expect(sink.problems).toEqual([]);
  });

  it("moves by itself after a save", async () => {
    const before = sink.shown.at(-1)!;
    const update = sink.next();
    appendFileSync(join(workspace, "README.md"), "\n" + "More words about the project. ".repeat(60));
    daemon.didSave(join(workspace, "README.md"));
    const after = await update;
    expect(after.byLayer.workspace ?? 0).toBeGreaterThan(before.byLayer.workspace ?? 0);
    expect(after.used).toBeGreaterThan(before.used);
  });

  it("trims and counts through the exported API's path", async () => {
    const messages = Array.from({ length: 30 }, (_, i) => ({
      role: (i % 2 ? "assistant" : "user") as "assistant" | "user",
      content: `message ${i} ` + "word ".repeat(50),
      id: `m${i}`,
    }));
    const trimmed = await controller.trim({ messages, budget: 600 });
    expect(trimmed.tokens).toBeLessThanOrEqual(600);
    expect(trimmed.dropped.length).toBeGreaterThan(0);
    expect((trimmed.messages.at(-1) as { id?: string } | undefined)?.id).toBe("m29");
    const counted = await controller.count({ texts: ["hello world"] });
    expect(counted.total).toBe(2);
  });

  it("gets the inspector page for what it shows", async () => {
    const html = await controller.inspectorHtml();
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain('id="budget-slider"');
    expect(html).toContain("gpt-4o");
  });

  it("copies a prompt that contains the workspace", async () => {
    const text = await controller.assembledText();
    expect(text).toContain("README.md");
  });

  it("takes the workspace session back to the model's default when the budget setting is cleared", async () => {
    const set = new Sink();
    await new BudgetController(set, { model: "gpt-4o", budget: 20_000, mode: null }, "e2e-reset")
      .attach(daemon.client, announced());
    expect(set.shown.at(-1)!.limit).toBe(20_000);
    // the setting cleared, the daemon restarted: the session is reopened, then reset
    const cleared = new Sink();
    await new BudgetController(cleared, { model: "gpt-4o", budget: null, mode: null }, "e2e-reset")
      .attach(daemon.client, announced());
    expect(announced().defaultBudget).toBeGreaterThan(100_000);
    expect(cleared.shown.at(-1)!.limit).toBe(announced().defaultBudget);
    const reopened = await daemon.client.request("ctx/session/open", { sessionId: "vscode:e2e-reset" });
    expect(reopened.budget).toBe(announced().defaultBudget);
  });

  it("answers a bad request with the field named, and keeps running", async () => {
    await expect(
      daemon.client.trim({ messages: [{ role: "robot" as any, content: "x" }] }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/role/) });
    expect((await daemon.client.count({ texts: ["a b"] })).total).toBeGreaterThan(0);
  });
});
