// @ctxlayer on the real daemon: a turn of a model with a small window, while the editor
// offers many tools. The tool definitions go to the model beside the assembled messages, so
// both together must fit the window, and the status bar's figure counts both.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnDaemon, type SpawnedDaemon } from "@ctxlayer/client/src/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolsToOpenAI } from "../../src/chatConvert";
import { BudgetController, type BudgetSink, type LiveChat } from "../../src/controller";
import { CtxlayerParticipant } from "../../src/participant";
import * as api from "../../src/vscodeapi";
import { LanguageModelTextPart as Text, lm, recorded, resetMock } from "../unit/vscode.mock";
import { announcement } from "../unit/fakeDaemon";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const WINDOW = 3000;

let daemon: SpawnedDaemon;
/** The daemon's workspace (the first folder) and a second folder of the same window. */
let base: string;
let second: string;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "ctxlayer-participant-"));
  execFileSync("git", ["init", "-q"], { cwd: base });
  writeFileSync(join(base, "app.py"), "print('hello')\n");
  second = mkdtempSync(join(tmpdir(), "ctxlayer-participant-second-"));
  writeFileSync(join(second, "beta.py"), "BETA_MARKER = 'from the second folder'\n");
  daemon = await spawnDaemon({
    command: [python, "-m", "ctxlayer", "serve"],
    workspace: base,
    env: { ...process.env, HOME: base, XDG_CONFIG_HOME: join(base, "config"), CTXLAYER_STATE_DIR: join(base, "state") },
  });
});

afterAll(async () => {
  await daemon?.close();
});

/** The editor's tools: `n` of them, each with a long description and a schema. */
function editorTools(n: number) {
  lm.tools.length = 0;
  for (let i = 0; i < n; i++) {
    lm.tools.push({
      name: `tool_${i}`,
      description: `Tool ${i}: reads, searches and edits the files of the workspace. `.repeat(12),
      inputSchema: { type: "object", properties: { path: { type: "string", description: "a file" } } },
    });
  }
}

/** A model of `window` tokens that records what it is sent and answers in one line. */
function smallModel(family = "gpt-4o", window = WINDOW) {
  const received: { messages: any[]; options: any }[] = [];
  return {
    vendor: "acme", id: "small", name: "Small", family, version: "1",
    maxInputTokens: window, received,
    async sendRequest(messages: any[], options: any) {
      received.push({ messages, options });
      async function* stream() {
        yield new Text("An answer.");
      }
      return { stream: stream() };
    },
  };
}

class Sink implements BudgetSink {
  live: LiveChat[] = [];
  showBudget() {}
  showLive(chat: LiveChat) {
    this.live.push(chat);
  }
  showProblem() {}
}

/** An earlier chat of `n` turns, as VS Code's history holds it: more than the window. */
function earlierTurns(n: number) {
  const words = (i: number) => `Turn ${i}: the cache layer, the retry policy, the migrations. `.repeat(12);
  return Array.from({ length: n }, (_, i) => [
    { prompt: `Question ${i}. ${words(i)}` },
    { response: [{ value: { value: `Answer ${i}. ${words(i)}` } }], result: {} },
  ]).flat();
}

/** The participant as the extension makes it, its modes and tools from ``controller``. */
function participantOf(controller: BudgetController) {
  return new CtxlayerParticipant({
    client: () => daemon.client,
    modes: () => controller.modes,
    onTurn: () => undefined,
    onTools: (id, tokens, window) => controller.toolsBeside(id, tokens, window),
    log: api.createLogChannel("e2e") as any,
  });
}

async function turn(
  m: ReturnType<typeof smallModel>,
  history: unknown[] = [],
  files: string[] = [],
  prompt = "what does app.py print?",
) {
  resetMockKeepingTools();
  recorded.workspaceFolder = base;
  recorded.moreFolders = [second];
  const sink = new Sink();
  const controller = new BudgetController(sink, { model: "gpt-4o", budget: null, mode: null }, "e2e-p");
  await controller.attach(daemon.client, announcement());
  const out: string[] = [];
  const participant = participantOf(controller);
  const references = files.map((f) => ({ id: f, value: { scheme: "file", fsPath: f } }));
  const request = { prompt, model: m, references, toolReferences: [] } as any;
  const stream = { markdown: (t: string) => out.push(t), progress: () => undefined };
  const result = await participant.handle(request, { history } as any, stream as any, { isCancellationRequested: false } as any);
  await new Promise((ok) => setTimeout(ok, 200)); // the daemon's ctx/budgetChanged
  return { out, sink, result, sessionId: (result.metadata as any).sessionId as string };
}

function resetMockKeepingTools() {
  const tools = [...lm.tools];
  resetMock();
  lm.tools.length = 0;
  lm.tools.push(...tools);
}

/** What the daemon counts a request of these messages and tools at. */
async function requestTokens(sent: { messages: any[]; options: any }): Promise<number> {
  const texts = sent.messages.map((msg: any) =>
    msg.content.map((p: any) => (p instanceof Text ? p.value : JSON.stringify(p))).join(""),
  );
  const definitions = toolsToOpenAI(sent.options.tools);
  if (definitions) texts.push(JSON.stringify(definitions));
  return (await daemon.client.count({ model: "gpt-4o", texts })).total;
}

describe("@ctxlayer on the real daemon, with the editor's tools", () => {
  it("fits messages and tool definitions together into the model's window", async () => {
    editorTools(5);
    const m = smallModel();
    const { sink, sessionId } = await turn(m, earlierTurns(12));
    const [sent] = m.received;
    expect(sent.options.tools).toHaveLength(5);
    const tools = (await daemon.client.count({ model: "gpt-4o", texts: [JSON.stringify(toolsToOpenAI(sent.options.tools))] })).total;
    expect(tools).toBeGreaterThan(500);
    const whole = await requestTokens(sent);
    expect(whole).toBeLessThanOrEqual(WINDOW);
    expect(whole).toBeGreaterThan(WINDOW * 0.8); // the chat filled what the tools left
    // the status bar's figure is the whole request: the messages and the tools, of the window
    const shown = sink.live.filter((c) => c.sessionId === sessionId);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown[0].budget.limit).toBe(WINDOW);
    expect(shown[0].budget.used).toBeGreaterThan(whole * 0.9);
    expect(shown[0].budget.used).toBeLessThanOrEqual(WINDOW);
  });

  it("offers the tools that fit in half the window when all of them do not, saying so", async () => {
    editorTools(28);
    const m = smallModel();
    const { out } = await turn(m);
    const match = out[0].match(
      /^> ctxlayer: the definitions of the editor's 28 tools need ([\d,]+) tokens, over 50% of Small's window of 3,000: this turn offers the (\d+) that fit \(([\d,]+) tokens: .*\), not the other (\d+)\.\n\n$/,
    );
    expect(match, out[0]).not.toBeNull();
    const [, whole, offered, tokens, others] = match!;
    expect(Number(whole.replace(/,/g, ""))).toBeGreaterThan(WINDOW);
    expect(Number(offered) + Number(others)).toBe(28);
    const sent = m.received[0].options.tools;
    expect(sent).toHaveLength(Number(offered));
    const counted = (await daemon.client.count({ model: "gpt-4o", texts: [JSON.stringify(toolsToOpenAI(sent))] })).total;
    expect(counted).toBe(Number(tokens.replace(/,/g, "")));
    expect(counted).toBeLessThanOrEqual(WINDOW / 2);
    expect(await requestTokens(m.received[0])).toBeLessThanOrEqual(WINDOW);
  });
});

describe("@ctxlayer in a multi-root workspace, on the real daemon", () => {
  it("attaches files of every folder, and says in the chat which it left out", async () => {
    editorTools(0);
    const m = smallModel();
    const outside = join(mkdtempSync(join(tmpdir(), "ctxlayer-elsewhere-")), "secret.txt");
    writeFileSync(outside, "SECRET_MARKER\n");
    const { out } = await turn(m, [], [join(base, "app.py"), join(second, "beta.py"), outside]);
    const sent = m.received[0].messages
      .map((msg: any) => msg.content.map((p: any) => (p instanceof Text ? p.value : "")).join(""))
      .join("\n");
    expect(sent).toContain("print('hello')"); // the daemon's folder: read by the daemon
    expect(sent).toContain(`\`\`\`${join(second, "beta.py")}\nBETA_MARKER = 'from the second folder'\n\`\`\``);
    expect(sent).not.toContain("SECRET_MARKER");
    expect(out[0]).toBe(`> ctxlayer: not attached: \`${outside}\` (outside the workspace's folders).\n\n`);
  });

  it("never sends another folder's file that may hold secrets (the daemon's rule)", async () => {
    editorTools(0);
    const m = smallModel();
    writeFileSync(join(second, ".env"), "API_KEY=ENV_MARKER\n");
    const { out } = await turn(m, [], [join(second, ".env"), join(second, "beta.py")]);
    const sent = m.received[0].messages
      .map((msg: any) => msg.content.map((p: any) => (p instanceof Text ? p.value : "")).join(""))
      .join("\n");
    expect(sent).toContain("BETA_MARKER");
    expect(sent).not.toContain("ENV_MARKER");
    expect(out[0]).toBe(
      `> ctxlayer: not attached: \`${join(second, ".env")}\` ` +
        "(.env may hold secrets (keys, tokens, passwords): never sent).\n\n",
    );
  });
});

describe("@ctxlayer with a model whose window ctxlayer counts smaller than the editor", () => {
  it("fits every turn to the daemon's budget for the model and says so once", async () => {
    // Copilot's "GPT 4" reports 28,501 input tokens; ctxlayer's table gives gpt-4 8,192 and
    // refused the session's budget of 28,501: every turn failed with the refusal
    editorTools(0);
    const m = smallModel("gpt-4", 28_501);
    const first = await turn(m, earlierTurns(60));
    const said = first.out.filter((t) => t.includes("ctxlayer takes gpt-4's window"));
    expect(said).toEqual([
      "> ctxlayer takes gpt-4's window as 8,192 tokens where the editor reports 28,501: " +
        "fitting this chat to ctxlayer's default budget for gpt-4, 4,096 tokens.\n\n",
    ]);
    const history = [
      ...earlierTurns(60),
      { prompt: "what does app.py print?" },
      { response: [{ value: { value: "An answer." } }], result: first.result },
    ];
    const second = await turn(m, history, [], "and then?");
    expect(second.sessionId).toBe(first.sessionId);
    // said once, where the session opened; no turn's assembly goes over the window
    expect(second.out.filter((t) => t.includes("window"))).toEqual([]);
    expect(first.out.filter((t) => t.includes("may refuse"))).toEqual([]);
    for (const sent of m.received) {
      const texts = sent.messages.map((msg: any) =>
        msg.content.map((p: any) => (p instanceof Text ? p.value : JSON.stringify(p))).join(""),
      );
      const { total } = await daemon.client.count({ model: "gpt-4", texts });
      expect(total).toBeGreaterThan(3000); // the history filled the budget
      expect(total).toBeLessThanOrEqual(4096);
    }
  });
});

describe("@ctxlayer when the model picker changes mid-chat", () => {
  it("counts and fits each turn with the model that answers it", async () => {
    // the session kept its first model: a chat begun with gpt-4 (ctxlayer's default budget of
    // 4,096) stayed cut to 4k under gpt-4o, and claude-sonnet-4's turns counted as gpt-4o's
    editorTools(0);
    resetMockKeepingTools();
    recorded.workspaceFolder = base;
    const sink = new Sink();
    const controller = new BudgetController(sink, { model: "gpt-4o", budget: null, mode: null }, "e2e-switch");
    await controller.attach(daemon.client, announcement());
    const participant = participantOf(controller);
    const history: unknown[] = [];
    const seen: { model: string; limit: number; session: string }[] = [];
    const ask = async (m: ReturnType<typeof smallModel>, prompt: string, p = participant) => {
      const out: string[] = [];
      const stream = { markdown: (t: string) => out.push(t), progress: () => undefined };
      const request = { prompt, model: m, references: [], toolReferences: [] } as any;
      const result = await p.handle(request, { history: [...history] } as any, stream as any, { isCancellationRequested: false } as any);
      await new Promise((ok) => setTimeout(ok, 200)); // the daemon's ctx/budgetChanged
      history.push({ prompt }, { response: [{ value: { value: "An answer." } }], result });
      const sessionId = (result.metadata as any).sessionId as string;
      const { sessions } = await daemon.client.request("ctx/session/list", {});
      const shown = sink.live.filter((c) => c.sessionId === sessionId).at(-1)!;
      seen.push({ model: sessions.find((s) => s.sessionId === sessionId)!.model, limit: shown.budget.limit, session: sessionId });
      return out;
    };
    const first = await ask(smallModel("gpt-4", 28_501), "what does app.py print?");
    expect(first.some((t) => t.includes("default budget for gpt-4, 4,096 tokens"))).toBe(true);
    await ask(smallModel("gpt-4o", 128_000), "and then?");
    await ask(smallModel("claude-sonnet-4", 200_000), "and after that?");
    // a window reloaded (a new participant, nothing remembered) with the picker changed again
    const reloaded = new CtxlayerParticipant({
      client: () => daemon.client,
      modes: () => controller.modes,
      onTurn: () => undefined,
      onTools: () => undefined,
      log: api.createLogChannel("e2e") as any,
    });
    await ask(smallModel("gpt-4o", 128_000), "one more?", reloaded);
    expect(new Set(seen.map((s) => s.session)).size).toBe(1);
    expect(seen.map(({ model, limit }) => ({ model, limit }))).toEqual([
      { model: "gpt-4", limit: 4096 },
      { model: "gpt-4o", limit: 128_000 },
      { model: "claude-sonnet-4", limit: 200_000 },
      { model: "gpt-4o", limit: 128_000 },
    ]);
    // the live figure names the model that answered, as the status bar shows it
    expect(sink.live.at(-1)!.budget.model).toBe("gpt-4o");
  });
});

describe("@ctxlayer /mode on the real daemon", () => {
  it("says the mode's room as the settings do: working memory of the mode's cap, rules whole", async () => {
    // it said "rules up to 40% and working memory up to 80% of this chat's budget": the 80% is
    // of deep's cap (8,000 tokens), and the rules' 40% limits nothing
    editorTools(0);
    const m = smallModel();
    const modes = daemon.initializeResult.capabilities.experimental.ctxlayer.modes;
    const said: string[] = [];
    const participant = new CtxlayerParticipant({
      client: () => daemon.client,
      modes: () => modes,
      onTurn: () => undefined,
      onTools: () => undefined,
      log: api.createLogChannel("e2e") as any,
    });
    const stream = { markdown: (t: string) => said.push(t), progress: () => undefined };
    const request = { prompt: "deep", command: "mode", model: m, references: [], toolReferences: [] } as any;
    await participant.handle(request, { history: [] } as any, stream as any, { isCancellationRequested: false } as any);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      /^Mode \*\*deep\*\*: working memory up to 80% of 8,000 tokens, less what the rules take \(rules are always shown whole\)\. The chat now uses [\d,]+ of [\d,]+ tokens\.$/,
    );
  });
});
