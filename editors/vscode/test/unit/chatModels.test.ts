// The ctxlayer models: listed for every other vendor's model, requests fitted by ctx/prepare
// (answered here by an in-memory daemon), sent to the model underneath, answers streamed.
import { beforeEach, describe, expect, it } from "vitest";
import { CtxlayerClient } from "@ctxlayer/client";
import { CtxlayerModels, modelInfo, VENDOR } from "../../src/chatModels";
import { ORIGIN } from "../../src/chatConvert";
import * as api from "../../src/vscodeapi";
import {
  LanguageModelChatMessage,
  LanguageModelChatMessageRole as Role,
  LanguageModelDataPart,
  LanguageModelTextPart as Text,
  LanguageModelToolCallPart as Call,
  chatModels,
  resetMock,
} from "./vscode.mock";
import { FakeConnection } from "./fakeDaemon";

/** A model of another extension: records what it gets, answers text then a tool call. */
function upstream(vendor = "acme", id = "acme-large") {
  const received: any[] = [];
  return {
    vendor, id, name: "Acme Large", family: "gpt-4o", version: "1", maxInputTokens: 6000,
    capabilities: { supportsToolCalling: true, supportsImageToText: true },
    received,
    async sendRequest(messages: any[], options: any) {
      received.push({ messages, options });
      async function* stream() {
        yield new Text("Hello");
        yield new Text(" there");
        yield new Call("c9", "read_file", { path: "a.py" });
        yield new LanguageModelDataPart(new TextEncoder().encode('{"prompt_tokens":812,"completion_tokens":5,"total_tokens":817}'), "usage");
      }
      return { stream: stream() };
    },
  };
}

let conn: FakeConnection;
let prepared: any[];
let models: CtxlayerModels;
const log = api.createLogChannel("t") as any;

beforeEach(() => {
  resetMock();
  prepared = [];
  conn = new FakeConnection({
    "ctx/prepare": (p: any) => {
      prepared.push(p);
      // the daemon drops the first user turn and summarizes nothing else
      const [system, , ...rest] = p.request.messages;
      return {
        request: { ...p.request, messages: [system, ...rest] },
        conversationId: "conv-7", sessionId: "prep:conv-7", tokens: 900, budget: p.budget,
        dropped: [{ action: "dropped", reason: "over budget", summary: "user: old", tokensBefore: 10, tokensAfter: 0 }],
        truncated: [], compacted: false, cacheReuseTokens: 0, cacheBreakpoints: [], notice: null,
      };
    },
    "ctx/session/reportUsage": () => ({ bias: 1.0 }),
    "ctx/count": (p: any) => ({ tokens: [7], total: 7, echo: p }),
  });
  models = new CtxlayerModels({ client: () => new CtxlayerClient(conn), onPrepared: (r) => prepared.push(["hook", r.conversationId]), log });
});

describe("ctxlayer models", () => {
  it("mirror every other vendor's model, never their own", async () => {
    const acme = upstream();
    chatModels.push(acme, { ...upstream(VENDOR, "acme/acme-large"), name: "ctxlayer · Acme Large" });
    await models.refresh();
    const list = models.provideLanguageModelChatInformation();
    expect(list).toEqual([modelInfo(acme as any)]);
    expect(list[0]).toMatchObject({
      id: "acme/acme-large", name: "ctxlayer · Acme Large", family: "gpt-4o", maxInputTokens: 6000,
      capabilities: { toolCalling: true, imageInput: true }, upstream: { vendor: "acme", id: "acme-large" },
    });
  });

  it("report the window of the model underneath, with no output allowance added", async () => {
    // VS Code's model object has no output figure: the input alone, as the picker's context
    chatModels.push({ ...upstream(), id: "small", maxInputTokens: 3000 });
    // a model object that does carry one: the same figure, not a default, not a sum
    chatModels.push({ ...upstream("other", "tiny"), maxInputTokens: 3500, maxOutputTokens: 500 });
    await models.refresh();
    const [small, tiny] = models.provideLanguageModelChatInformation();
    expect(small).toMatchObject({ id: "acme/small", maxInputTokens: 3000, maxOutputTokens: 0 });
    expect(tiny).toMatchObject({ id: "other/tiny", maxInputTokens: 3500, maxOutputTokens: 500 });
    expect(tiny.maxInputTokens + tiny.maxOutputTokens).toBe(4000);
  });

  it("tell VS Code when other vendors' models change, and only then", async () => {
    let fired = 0;
    models.onDidChangeLanguageModelChatInformation(() => fired++);
    expect(models.provideLanguageModelChatInformation()).toEqual([]); // answers at once, asks nobody
    chatModels.push(upstream());
    await models.refresh();
    await models.refresh(); // nothing new: our own listing changing must not loop
    expect(fired).toBe(1);
    chatModels.push(upstream("other", "small"));
    await models.refresh();
    expect(fired).toBe(2);
    expect(models.provideLanguageModelChatInformation().map((m) => m.id)).toEqual(["acme/acme-large", "other/small"]);
  });

  it("fit the prompt with ctx/prepare into the model's window and stream its answer back", async () => {
    const acme = upstream();
    chatModels.push(acme);
    await models.refresh();
    const [info] = models.provideLanguageModelChatInformation();
    const prompt = [
      new LanguageModelChatMessage(Role.System, "You are an agent."),
      new LanguageModelChatMessage(Role.User, "old question"),
      new LanguageModelChatMessage(Role.User, "new question"),
    ];
    const reported: unknown[] = [];
    const tools = [{ name: "read_file", description: "Read a file", inputSchema: { type: "object" } }];
    await models.provideLanguageModelChatResponse(
      info, prompt as any, { tools, toolMode: 1 } as any, { report: (p: unknown) => reported.push(p) }, {} as any,
    );
    const [params] = prepared;
    expect(params).toMatchObject({ format: "openai", model: "gpt-4o", budget: 6000 });
    expect(params.request.model).toBe("acme-large");
    expect(params.request.tools).toEqual([
      { type: "function", function: { name: "read_file", description: "Read a file", parameters: { type: "object" } } },
    ]);
    expect(params.request.messages.map((m: any) => m.content)).toEqual(["You are an agent.", "old question", "new question"]);
    expect(prepared[1]).toEqual(["hook", "conv-7"]);
    // the model underneath got the fitted prompt (the very message objects' parts) and the tools
    const [{ messages, options }] = acme.received;
    expect(messages.map((m: any) => m.content[0].value)).toEqual(["You are an agent.", "new question"]);
    expect(messages[1].content[0]).toBe(prompt[2].content[0]);
    expect(options.tools).toEqual(tools);
    expect(JSON.stringify(messages)).not.toContain(ORIGIN);
    // parts came back as they came, in order, and the usage went to the conversation's session
    expect(reported.map((p: any) => p.value ?? p.name ?? p.mimeType)).toEqual(["Hello", " there", "read_file", "usage"]);
    await new Promise((r) => setTimeout(r, 0));
    expect(conn.sent("ctx/session/reportUsage")).toEqual([
      { sessionId: "prep:conv-7", promptTokens: 812, estimatedTokens: 900 },
    ]);
  });

  it("count tokens with the daemon, texts and messages alike", async () => {
    chatModels.push(upstream());
    await models.refresh();
    const [info] = models.provideLanguageModelChatInformation();
    expect(await models.provideTokenCount(info, "hello")).toBe(7);
    expect(await models.provideTokenCount(info, new LanguageModelChatMessage(Role.User, "hi") as any)).toBe(7);
    const [texts, messages] = conn.sent("ctx/count");
    expect(texts).toEqual({ model: "gpt-4o", texts: ["hello"] });
    expect(messages).toMatchObject({ model: "gpt-4o", format: "openai", messages: [{ role: "user", content: "hi" }] });
  });

  it("say which model is gone instead of sending nowhere", async () => {
    chatModels.push(upstream());
    await models.refresh();
    const [info] = models.provideLanguageModelChatInformation();
    chatModels.length = 0;
    await expect(
      models.provideLanguageModelChatResponse(info, [] as any, {} as any, { report() {} }, {} as any),
    ).rejects.toThrow("the model acme-large of acme is gone");
  });
});
