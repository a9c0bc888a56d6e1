// The ctxlayer models on the real daemon: a long Copilot-shaped chat (system role with a cache
// breakpoint, tool rounds, a new question) goes through ctx/prepare and reaches the model
// underneath (a recording stand-in in the mocked editor) fitted into its window, tool pairs
// whole, the newest message intact, kept messages as the very parts they came with.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnDaemon, type SpawnedDaemon } from "@ctxlayer/client/src/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CACHE_CONTROL, ORIGIN, classify, toOpenAI } from "../../src/chatConvert";
import { CtxlayerModels } from "../../src/chatModels";
import * as api from "../../src/vscodeapi";
import {
  LanguageModelChatMessage,
  LanguageModelChatMessageRole as Role,
  LanguageModelDataPart,
  LanguageModelTextPart as Text,
  LanguageModelToolCallPart as Call,
  LanguageModelToolResultPart as Result,
  chatModels,
} from "../unit/vscode.mock";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const WINDOW = 1500;

let daemon: SpawnedDaemon;

beforeAll(async () => {
  const base = mkdtempSync(join(tmpdir(), "ctxlayer-prepare-"));
  execFileSync("git", ["init", "-q"], { cwd: base });
  daemon = await spawnDaemon({
    command: [python, "-m", "ctxlayer", "serve"],
    workspace: base,
    env: { ...process.env, HOME: base, XDG_CONFIG_HOME: join(base, "config"), CTXLAYER_STATE_DIR: join(base, "state") },
  });
});

afterAll(async () => {
  await daemon?.close();
});

const breakpoint = () => new LanguageModelDataPart(new TextEncoder().encode("ephemeral"), CACHE_CONTROL);

function longChat() {
  const filler = (i: number) => `Turn ${i}: the cache layer, the retry policy, the migrations. `.repeat(8);
  const out = [new LanguageModelChatMessage(Role.System, [new Text("You are an agent."), breakpoint()])];
  for (let i = 1; i <= 24; i++) {
    out.push(new LanguageModelChatMessage(Role.User, `Question ${i}. ${filler(i)}`));
    if (i % 4 === 0) {
      out.push(new LanguageModelChatMessage(Role.Assistant, [new Text(`Reading f${i}.`), new Call(`t${i}`, "read_file", { path: `f${i}` })]));
      out.push(new LanguageModelChatMessage(Role.User, [new Result(`t${i}`, [new Text(`f${i}: ${filler(i)}`)])]));
    }
    out.push(new LanguageModelChatMessage(Role.Assistant, `Answer ${i}. ${filler(i)}`));
  }
  out.push(new LanguageModelChatMessage(Role.User, "NEWEST: what did we decide about retries?"));
  return out;
}

describe("a ctxlayer model on the real daemon", () => {
  it("fits a long chat into the model's window for the model underneath", async () => {
    const received: any[][] = [];
    chatModels.length = 0;
    chatModels.push({
      vendor: "acme", id: "small", name: "Small", family: "gpt-4o", version: "1", maxInputTokens: WINDOW,
      async sendRequest(messages: any[]) {
        received.push(messages);
        async function* stream() {
          yield new Text("ok");
        }
        return { stream: stream() };
      },
    });
    const prepared: any[] = [];
    const models = new CtxlayerModels({
      client: () => daemon.client,
      onPrepared: (r) => prepared.push(r),
      log: api.createLogChannel("t") as any,
    });
    await models.refresh();
    const [info] = models.provideLanguageModelChatInformation();
    const chat = longChat();
    const parts: unknown[] = [];
    await models.provideLanguageModelChatResponse(info, chat as any, { toolMode: 1 } as any, { report: (p) => parts.push(p) }, {} as any);
    expect(parts).toEqual([new Text("ok")]);
    const [got] = received;
    expect(got.length).toBeLessThan(chat.length);
    expect(prepared[0].tokens).toBeLessThanOrEqual(WINDOW);
    // what arrived, counted again by the daemon as OpenAI messages: within the window
    const messages = toOpenAI(got).messages.map(({ [ORIGIN]: _, ...m }) => m);
    const { total } = await daemon.client.count({ model: "gpt-4o", format: "openai", messages });
    expect(total).toBeLessThanOrEqual(WINDOW);
    // the system message first, its breakpoint kept; the newest message last, whole, the same part
    expect(got[0].role).toBe(Role.System);
    expect(got[0].content.some((p: unknown) => classify(p).kind === "data")).toBe(true);
    expect(got.at(-1).content).toEqual(chat.at(-1)!.content);
    expect(got.at(-1).content[0]).toBe(chat.at(-1)!.content[0]);
    // tool pairs: each result right after its call's message, each call with its result
    const calls = new Map<string, number>();
    got.forEach((m: any, i: number) => {
      for (const p of m.content) {
        const c = classify(p);
        if (c.kind === "call") calls.set(c.callId, i);
        if (c.kind === "result") expect(calls.get(c.callId), `result ${c.callId}`).toBe(i - 1);
      }
    });
    const results = new Set(got.flatMap((m: any) => m.content.map(classify).filter((c: any) => c.kind === "result").map((c: any) => c.callId)));
    for (const id of calls.keys()) expect(results.has(id), `call ${id}`).toBe(true);
  });
});

describe("a ctxlayer model's token counts on the real daemon", () => {
  it("counts a chat message by message as the daemon counts the whole chat, less the reply priming", async () => {
    // VS Code adds provideTokenCount's answers up, one a message: each had the reply priming
    // in it (280 for a chat of 20 messages that `ctxlayer count` gives 223)
    chatModels.length = 0;
    chatModels.push({ vendor: "acme", id: "small", name: "Small", family: "gpt-4o", version: "1", maxInputTokens: WINDOW });
    const models = new CtxlayerModels({ client: () => daemon.client, onPrepared: () => undefined, log: api.createLogChannel("t") as any });
    await models.refresh();
    const [info] = models.provideLanguageModelChatInformation();
    const chat = Array.from({ length: 20 }, (_, i) =>
      new LanguageModelChatMessage(i % 2 ? Role.Assistant : Role.User, `message number ${i} with some words`));
    let sum = 0;
    for (const m of chat) sum += await models.provideTokenCount(info, m as any);
    const messages = toOpenAI(chat as any).messages.map(({ [ORIGIN]: _, ...m }) => m);
    const whole = await daemon.client.count({ model: "gpt-4o", format: "openai", messages });
    expect(whole.replyPriming).toBeGreaterThan(0);
    expect(sum).toBe(whole.total - whole.replyPriming!);
    // a string is its own tokens, as before
    const text = "message number 0 with some words";
    expect(await models.provideTokenCount(info, text)).toBe((await daemon.client.count({ model: "gpt-4o", texts: [text] })).total);
  });
});
