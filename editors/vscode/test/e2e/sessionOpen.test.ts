// End to end: the workspace session on the real daemon when a setting or the state folder
// keeps it from opening. Before, `ctxlayer.model` cleared in the Settings UI ("") passed the
// settings check, the daemon refused to open a session with model "", and every command said
// "the daemon is starting" for good; a session that failed to open for any reason was told the
// same way.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Budget } from "@ctxlayer/client";
import { spawnDaemon, type SpawnedDaemon } from "@ctxlayer/client/src/connect";
import { afterEach, describe, expect, it } from "vitest";
import manifest from "../../package.json";
import { checkAnnouncement } from "../../src/announcement";
import { BudgetController, type BudgetSink, type LiveChat } from "../../src/controller";
import { checkedSetting, settingsWarning } from "../../src/settings";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const defaultModel = manifest.contributes.configuration.properties["ctxlayer.model"].default;

class Sink implements BudgetSink {
  shown: Budget[] = [];
  problems: string[] = [];
  showBudget(b: Budget) {
    this.shown.push(b);
  }
  showLive(_chat: LiveChat) {}
  showProblem(text: string, detail: string) {
    this.problems.push(`${text}: ${detail}`);
  }
}

let running: SpawnedDaemon | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A real daemon in a fresh git workspace; `stateDir` overrides its state folder. */
async function daemon(stateDir?: string): Promise<SpawnedDaemon> {
  const base = mkdtempSync(join(tmpdir(), "ctxlayer-session-open-"));
  const workspace = join(base, "ws");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "README.md"), "# Demo\n");
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  execFileSync("git", ["init", "-q"], { cwd: workspace, env });
  running = await spawnDaemon({
    command: [python, "-m", "ctxlayer", "serve"],
    workspace,
    env: {
      ...env,
      HOME: base,
      XDG_CONFIG_HOME: join(base, "config"),
      CTXLAYER_STATE_DIR: stateDir ?? join(base, "state"),
    },
    timeoutMs: 30_000,
  });
  return running;
}

function announced(d: SpawnedDaemon) {
  const checked = checkAnnouncement(d.initializeResult.capabilities.experimental.ctxlayer);
  if (checked.problem !== undefined) throw new Error(checked.problem);
  return checked.announcement;
}

describe("the workspace session when it cannot open as set", () => {
  it("ctxlayer.model cleared (\"\") is the default model, said in one warning", async () => {
    const problems: string[] = [];
    const model = checkedSetting<string>("model", () => "", problems);
    expect(model).toBe(defaultModel);
    expect(problems).toHaveLength(1);
    expect(settingsWarning(problems)).toContain("`ctxlayer.model` must be a non-empty string");

    const d = await daemon();
    const sink = new Sink();
    const controller = new BudgetController(sink, { model, budget: null, mode: null }, "empty");
    await controller.attach(d.client, announced(d));
    expect(controller.sessionId).toBe("vscode:empty");
    expect(sink.shown.at(-1)?.model).toBe(defaultModel);
  });

  it("a model of \"\" reaching the controller anyway opens the session with the daemon's", async () => {
    const d = await daemon();
    const controller = new BudgetController(new Sink(), { model: "", budget: null, mode: null }, "k");
    await controller.attach(d.client, announced(d));
    expect(controller.sessionId).toBe("vscode:k");
  });

  it("a session that failed to open: the commands say why, not that the daemon is starting", async () => {
    const base = mkdtempSync(join(tmpdir(), "ctxlayer-session-open-"));
    const stateFile = join(base, "state-is-a-file");
    writeFileSync(stateFile, "not a folder\n");
    const d = await daemon(stateFile);
    const controller = new BudgetController(new Sink(), { model: "gpt-4o", budget: null, mode: null }, "k");
    await expect(controller.attach(d.client, announced(d))).rejects.toThrow(stateFile);
    for (const command of [() => controller.setMode("short"), () => controller.assembledText()]) {
      const err = await command().then(() => undefined, (e: Error) => e);
      expect(err?.message).toContain("the workspace session could not be opened");
      expect(err?.message).toContain(stateFile);
      expect(err?.message).not.toContain("starting");
    }
  });

  it("a budget over the model's window: the refusal names what VS Code can set", async () => {
    // the daemon's hint names initializationOptions.contextWindow (Neovim: context_window):
    // VS Code has no setting for the window, only ctxlayer.budget
    const d = await daemon();
    const wanted = (budget: number | null) => ({ model: "gpt-4o", budget, mode: null });
    const first = new BudgetController(new Sink(), wanted(500_000), "over");
    const refused = await first.attach(d.client, announced(d)).then(() => undefined, (e: Error) => e);
    const said =
      "ctxlayer.budget: 500,000 tokens is over the 128,000-token context window of gpt-4o: set it " +
      "to at most 128,000, or leave it empty for the model's default";
    expect(refused?.message).toContain(said);
    expect(first.sessionError).toContain(said);
    expect(refused?.message).not.toContain("initializationOptions");
    // the session opened at a budget that fits, then the setting raised past the window
    await new BudgetController(new Sink(), wanted(100_000), "over").attach(d.client, announced(d));
    const again = new BudgetController(new Sink(), wanted(500_000), "over");
    const reconfigured = await again.attach(d.client, announced(d)).then(() => undefined, (e: Error) => e);
    expect(reconfigured?.message).toContain(said);
    expect(reconfigured?.message).not.toContain("initializationOptions");
  });
});
