/**
 * The "ctxlayer · <model>" language models: one for each chat model another extension
 * provides, with its capabilities and window. A request (Copilot Chat's whole agent prompt)
 * is fitted by ctx/prepare into the model's maxInputTokens, sent to the underlying model, and
 * its answer streamed back part by part as it arrives. Token counts come from the daemon.
 * Owns the provider and the model list; the message mapping lives in chatConvert.ts.
 */
import type { CtxlayerClient, PrepareResult } from "@ctxlayer/client";
import { ORIGIN, fromOpenAI, toOpenAI, toolsToOpenAI, type OpenAIMessage } from "./chatConvert";
import * as api from "./vscodeapi";

export const VENDOR = "ctxlayer";

/** A ctxlayer model: the information VS Code shows, plus which model it goes to. */
export interface CtxlayerModelInfo extends api.LanguageModelChatInformation {
  readonly upstream: { vendor: string; id: string };
}

export interface ModelHooks {
  /** The running daemon's client; throws with an actionable message when there is none. */
  client(): CtxlayerClient;
  /** Every fitted request, for the status bar and the compaction notice. */
  onPrepared(result: PrepareResult, modelName: string): void;
  log: api.LogOutputChannel;
}

/** The model name the daemon counts with: the family names the tokenizer (gpt-4o, claude-...). */
export function daemonModel(m: Pick<api.LanguageModelChat, "family" | "id">): string {
  return m.family || m.id;
}

/**
 * What a ctxlayer model reports is the window of the model underneath, never more: its
 * maxInputTokens (the budget every request is fitted into) and its maxOutputTokens when the
 * editor's model object carries one. VS Code's LanguageModelChat has no output figure of its
 * own, and an allowance invented here would be added to the input by the model picker
 * ("Max context 7K" for a 4K model), so without one the output is reported as 0.
 */
export function modelInfo(m: api.LanguageModelChat): CtxlayerModelInfo {
  const caps = (m as unknown as { capabilities?: Record<string, unknown> }).capabilities ?? {};
  const maxOutput = (m as unknown as { maxOutputTokens?: unknown }).maxOutputTokens;
  return {
    id: `${m.vendor}/${m.id}`,
    name: `ctxlayer · ${m.name}`,
    family: m.family,
    version: m.version,
    maxInputTokens: m.maxInputTokens,
    maxOutputTokens: typeof maxOutput === "number" && maxOutput > 0 ? maxOutput : 0,
    tooltip: `${m.name} (${m.vendor}) with its prompt fitted by ctxlayer into ${m.maxInputTokens.toLocaleString("en-US")} tokens`,
    detail: "ctxlayer",
    capabilities: {
      imageInput: Boolean(caps.supportsImageToText ?? caps.imageInput ?? false),
      toolCalling: (caps.supportsToolCalling ?? caps.toolCalling ?? true) as boolean | number,
    },
    upstream: { vendor: m.vendor, id: m.id },
  };
}

/** A usage report a model streams as a data part (OpenAI usage shape), if this part is one. */
export function usageOf(part: unknown): { promptTokens: number } | undefined {
  const p = part as { mimeType?: unknown; data?: unknown };
  if (typeof p?.mimeType !== "string" || !(p.data instanceof Uint8Array)) return undefined;
  if (p.mimeType.startsWith("image/")) return undefined;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(p.data));
    return typeof parsed?.prompt_tokens === "number"
      ? { promptTokens: parsed.prompt_tokens }
      : undefined;
  } catch {
    return undefined;
  }
}

export class CtxlayerModels implements api.LanguageModelChatProvider<CtxlayerModelInfo> {
  private readonly changed = api.eventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;
  private models: CtxlayerModelInfo[] = [];
  private upstreamKey = "";

  constructor(private readonly hooks: ModelHooks) {}

  /**
   * The last list of other vendors' models. Never asks the editor here: selectChatModels
   * resolves every provider, this one included, and would wait on itself.
   */
  provideLanguageModelChatInformation(): CtxlayerModelInfo[] {
    return this.models;
  }

  /**
   * Read the editor's models again (at start and whenever they change) and tell VS Code
   * when other vendors' models changed. Our own are left out: a wrapper of a wrapper.
   */
  async refresh(): Promise<void> {
    const upstreams = (await api.selectChatModels({})).filter((m) => m.vendor !== VENDOR);
    const next = key(upstreams);
    if (next === this.upstreamKey) return;
    this.upstreamKey = next;
    this.models = upstreams.map(modelInfo);
    this.changed.fire();
  }

  async provideLanguageModelChatResponse(
    model: CtxlayerModelInfo,
    messages: readonly api.LanguageModelChatRequestMessage[],
    options: api.ProvideLanguageModelChatResponseOptions,
    progress: api.Progress<api.LanguageModelResponsePart>,
    token: api.CancellationToken,
  ): Promise<void> {
    const [upstream] = await api.selectChatModels(model.upstream);
    if (!upstream) {
      throw new Error(
        `ctxlayer: the model ${model.upstream.id} of ${model.upstream.vendor} is gone; pick another model`,
      );
    }
    const client = this.hooks.client();
    const sent = toOpenAI(messages);
    const tools = toolsToOpenAI(options.tools);
    const prepared = await client.prepare({
      format: "openai",
      model: daemonModel(upstream),
      budget: upstream.maxInputTokens,
      request: { model: upstream.id, messages: sent.messages, ...(tools ? { tools } : {}) },
    });
    const fitted = fromOpenAI(
      ((prepared.request as { messages?: OpenAIMessage[] }).messages ?? []) as OpenAIMessage[],
      sent,
      prepared.cacheBreakpoints ?? [],
    );
    this.hooks.log.info(
      `${model.name}: ${messages.length} messages -> ${fitted.length}, ` +
        `${prepared.tokens} / ${prepared.budget} tokens, ${prepared.dropped.length} dropped` +
        (prepared.compacted ? ", compacted" : ""),
    );
    this.hooks.onPrepared(prepared, upstream.name);
    // shown by the status bar's controller, with the budget of the turn (any chat's)
    if (prepared.warning) this.hooks.log.warn(`ctx/prepare: ${prepared.warning}`);
    const response = await upstream.sendRequest(
      fitted,
      { tools: options.tools ? [...options.tools] : undefined, toolMode: options.toolMode, modelOptions: options.modelOptions },
      token,
    );
    for await (const part of response.stream) {
      const usage = usageOf(part);
      if (usage) {
        client
          .request("ctx/session/reportUsage", {
            sessionId: prepared.sessionId,
            promptTokens: usage.promptTokens,
            estimatedTokens: prepared.tokens,
          })
          .catch((err) => this.hooks.log.warn(`reporting usage: ${String(err)}`));
      }
      progress.report(part as api.LanguageModelResponsePart);
    }
  }

  /**
   * One string's or one message's tokens. VS Code asks message by message and adds the answers
   * up: a message's count is its own, never the reply priming ctx/count's total adds once per
   * request (3 tokens too many a message: 280 for a chat of 20 that costs 223).
   */
  async provideTokenCount(
    model: CtxlayerModelInfo,
    text: string | api.LanguageModelChatRequestMessage,
  ): Promise<number> {
    const client = this.hooks.client();
    const name = daemonModel({ family: model.family, id: model.upstream.id });
    if (typeof text === "string") return (await client.count({ model: name, texts: [text] })).total;
    const messages = toOpenAI([text]).messages.map(({ [ORIGIN]: _, ...m }) => m);
    const counted = await client.count({ model: name, format: "openai", messages });
    return counted.total - (counted.replyPriming ?? 0);
  }
}

function key(models: readonly api.LanguageModelChat[]): string {
  return models.map((m) => `${m.vendor}/${m.id}:${m.maxInputTokens}`).sort().join("|");
}
