/**
 * VS Code chat messages <-> OpenAI Chat Completions messages, the format ctx/prepare fits.
 *
 * Owns the mapping of every part kind both ways and the promise that nothing is lost: each
 * OpenAI message carries a reference to the VS Code message and parts it came from, so a
 * message the daemon kept unchanged goes back as the very parts it arrived with (thinking,
 * stateful markers, images, cache breakpoints), and a shortened one keeps its parts that the
 * OpenAI shape cannot hold. Does not talk to the daemon or to a model (chatModels.ts does).
 */
import * as api from "./vscodeapi";

/** The key under which each message names its origin; never sent to a model. */
export const ORIGIN = "vscode_origin";
/** Copilot Chat marks a cache breakpoint with a data part of this mime type. */
export const CACHE_CONTROL = "cache_control";

export type OpenAIPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: string; [key: string]: unknown };

export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface OpenAIMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content: string | null | OpenAIPart[];
  tool_calls?: OpenAIToolCall[];
  tool_call_id?: string;
  name?: string;
  cache_control?: { type: "ephemeral" };
  [ORIGIN]?: string;
  [key: string]: unknown;
}

export interface OpenAITool {
  type: "function";
  function: { name: string; description: string; parameters?: object };
}

type Part = api.LanguageModelChatRequestMessage["content"][number];
type Role = number;

/** What an OpenAI message was made from: the VS Code message (index and role) and its parts. */
interface Origin {
  message: number;
  role: Role;
  parts: readonly Part[];
  /** Parts the OpenAI shape cannot carry (thinking, stateful markers, other data). */
  opaque: readonly Part[];
  sent: OpenAIMessage;
}

export interface Converted {
  messages: OpenAIMessage[];
  origins: Map<string, Origin>;
}

type Classified =
  | { kind: "text"; text: string }
  | { kind: "call"; callId: string; name: string; input: object }
  | { kind: "result"; callId: string; content: readonly unknown[] }
  | { kind: "data"; mime: string; data: Uint8Array }
  | { kind: "other" };

/** Which kind a part is: by class where the class is ours, by shape where it crossed over. */
export function classify(part: unknown): Classified {
  const p = part as Record<string, any>;
  if (part instanceof api.LanguageModelTextPart) return { kind: "text", text: p.value };
  if (part instanceof api.LanguageModelToolCallPart || isCall(p)) {
    return { kind: "call", callId: p.callId, name: p.name, input: p.input ?? {} };
  }
  if (part instanceof api.LanguageModelToolResultPart || isResult(p)) {
    return { kind: "result", callId: p.callId, content: p.content };
  }
  if (part instanceof api.LanguageModelDataPart || isData(p)) {
    return { kind: "data", mime: p.mimeType, data: p.data };
  }
  // a text part from another extension's copy of the class: only a string value
  if (p && typeof p.value === "string" && Object.keys(p).length === 1) {
    return { kind: "text", text: p.value };
  }
  return { kind: "other" };
}

const isCall = (p: Record<string, any>) =>
  p && typeof p.callId === "string" && typeof p.name === "string" && "input" in p;
const isResult = (p: Record<string, any>) =>
  p && typeof p.callId === "string" && Array.isArray(p.content);
const isData = (p: Record<string, any>) =>
  p && typeof p.mimeType === "string" && p.data instanceof Uint8Array;

const isImage = (mime: string) => mime.startsWith("image/");
const decoder = new TextDecoder();

/** Text of a tool result's content: text parts, text-like data; other parts named, not lost. */
export function resultText(content: readonly unknown[]): string {
  return content
    .map((c) => {
      const part = classify(c);
      if (part.kind === "text") return part.text;
      if (isBreakpoint(c)) return "";
      if (part.kind === "data") {
        return isImage(part.mime) ? `[image ${part.mime}]` : decoder.decode(part.data);
      }
      const value = (c as { value?: unknown })?.value;
      return value === undefined ? "" : JSON.stringify(value);
    })
    .join("");
}

function roleName(role: Role): OpenAIMessage["role"] {
  if (role === api.LanguageModelChatMessageRole.Assistant) return "assistant";
  if (role === api.systemRole()) return "system";
  return "user";
}

/** VS Code messages as OpenAI messages, each naming its origin; tools as OpenAI tools. */
export function toOpenAI(messages: readonly api.LanguageModelChatRequestMessage[]): Converted {
  const out: OpenAIMessage[] = [];
  const origins = new Map<string, Origin>();
  messages.forEach((message, index) => {
    let sub = 0;
    const emit = (m: OpenAIMessage, parts: readonly Part[], opaque: readonly Part[]) => {
      const ref = `${index}.${sub++}`;
      const sent: OpenAIMessage = { ...m, [ORIGIN]: ref };
      origins.set(ref, { message: index, role: message.role, parts, opaque, sent });
      out.push(sent);
    };
    const role = roleName(message.role);
    const texts: OpenAIPart[] = [];
    const textParts: Part[] = [];
    const opaque: Part[] = [];
    const calls: OpenAIToolCall[] = [];
    let cache = false;
    for (const part of message.content) {
      const c = classify(part);
      if (c.kind === "result") {
        // tool results answer the assistant message before: they come first, one message each
        const m: OpenAIMessage = {
          role: "tool",
          tool_call_id: c.callId,
          content: resultText(c.content),
        };
        if (c.content.some(isBreakpoint)) m.cache_control = { type: "ephemeral" };
        emit(m, [part], []);
      } else if (c.kind === "text") {
        texts.push({ type: "text", text: c.text });
        textParts.push(part);
      } else if (c.kind === "call") {
        calls.push({
          id: c.callId,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.input) },
        });
        textParts.push(part);
      } else if (c.kind === "data" && c.mime === CACHE_CONTROL) {
        cache = true;
        textParts.push(part);
      } else if (c.kind === "data" && isImage(c.mime)) {
        const url = `data:${c.mime};base64,${Buffer.from(c.data).toString("base64")}`;
        texts.push({ type: "image_url", image_url: { url } });
        textParts.push(part);
      } else {
        opaque.push(part);
        textParts.push(part);
      }
    }
    if (textParts.length === 0) return;
    const onlyText = texts.every((t) => t.type === "text");
    const content: OpenAIMessage["content"] = onlyText
      ? texts.map((t) => (t as { text: string }).text).join("")
      : texts;
    const m: OpenAIMessage = { role, content: calls.length && content === "" ? null : content };
    if (calls.length) m.tool_calls = calls;
    if (message.name) m.name = message.name;
    if (cache) m.cache_control = { type: "ephemeral" };
    emit(m, textParts, opaque);
  });
  return { messages: out, origins };
}

export function toolsToOpenAI(
  tools: readonly api.LanguageModelChatTool[] | undefined,
): OpenAITool[] | undefined {
  if (!tools?.length) return undefined;
  return tools.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      description: t.description,
      ...(t.inputSchema ? { parameters: t.inputSchema } : {}),
    },
  }));
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function vscodeRole(role: string): Role {
  if (role === "assistant") return api.LanguageModelChatMessageRole.Assistant;
  if (role === "system" || role === "developer") {
    return api.systemRole() ?? api.LanguageModelChatMessageRole.User;
  }
  return api.LanguageModelChatMessageRole.User;
}

function partsFromContent(content: OpenAIMessage["content"], field: string): Part[] {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return content ? [new api.LanguageModelTextPart(content)] : [];
  if (!Array.isArray(content)) throw new Error(`${field}: expected a string, null or a list`);
  return content.map((part, i) => {
    if (part.type === "text") return new api.LanguageModelTextPart(String(part.text));
    if (part.type === "refusal") return new api.LanguageModelTextPart(String(part.refusal));
    if (part.type === "image_url") {
      const url = String((part.image_url as { url?: string })?.url ?? "");
      const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      if (m) return new api.LanguageModelDataPart(Buffer.from(m[2], "base64"), m[1]);
      return new api.LanguageModelTextPart(`[image ${url}]`);
    }
    throw new Error(`${field}[${i}].type: ${JSON.stringify(part.type)} has no VS Code part`);
  });
}

function partsOf(m: OpenAIMessage, field: string, origin: Origin | undefined): Part[] {
  if (origin && sameJson(m, origin.sent)) return [...origin.parts];
  if (m.role === "tool") {
    const text =
      typeof m.content === "string"
        ? m.content
        : resultText(partsFromContent(m.content, `${field}.content`));
    const content: unknown[] = [new api.LanguageModelTextPart(text)];
    // Copilot Chat puts a tool message's breakpoint inside the result
    if (m.cache_control) content.push(cacheBreakpoint());
    return [new api.LanguageModelToolResultPart(String(m.tool_call_id ?? ""), content)];
  }
  const parts: Part[] = partsFromContent(m.content, `${field}.content`);
  (m.tool_calls ?? []).forEach((call, i) => {
    let input: object;
    try {
      input = call.function.arguments ? JSON.parse(call.function.arguments) : {};
    } catch {
      throw new Error(`${field}.tool_calls[${i}].function.arguments: not JSON`);
    }
    parts.push(new api.LanguageModelToolCallPart(call.id, call.function.name, input));
  });
  // what OpenAI could not hold stays with the shortened message
  parts.push(...(origin?.opaque ?? []));
  if (m.cache_control) parts.push(cacheBreakpoint());
  return parts;
}

export function cacheBreakpoint(): api.LanguageModelDataPart {
  return new api.LanguageModelDataPart(new TextEncoder().encode("ephemeral"), CACHE_CONTROL);
}

function isBreakpoint(part: unknown): boolean {
  const c = classify(part);
  return c.kind === "data" && c.mime === CACHE_CONTROL;
}

const hasBreakpoint = (parts: readonly Part[]) => parts.some(isBreakpoint);

/**
 * The fitted OpenAI messages as VS Code messages: unchanged ones are their original parts,
 * messages from one VS Code message are one message again, and `breakpoints` (indices into
 * `messages`) get a cache breakpoint when they have none.
 */
export function fromOpenAI(
  messages: readonly OpenAIMessage[],
  sent: Converted,
  breakpoints: readonly number[] = [],
): api.LanguageModelChatMessage[] {
  const out: { origin: number | undefined; role: Role; parts: Part[] }[] = [];
  messages.forEach((m, i) => {
    const field = `request.messages[${i}]`;
    if (!m || typeof m !== "object") throw new Error(`${field}: not a message object`);
    const ref = typeof m[ORIGIN] === "string" ? m[ORIGIN] : undefined;
    const origin = ref ? sent.origins.get(ref) : undefined;
    const role = origin ? origin.role : vscodeRole(m.role);
    const parts = partsOf(m, field, origin);
    if (breakpoints.includes(i) && !hasBreakpoint(parts)) parts.push(cacheBreakpoint());
    const last = out[out.length - 1];
    if (last && origin && last.origin === origin.message && last.role === role) {
      last.parts.push(...parts);
    } else {
      out.push({ origin: origin?.message, role, parts });
    }
  });
  return out
    .filter((m) => m.parts.length > 0)
    .map((m) => new api.LanguageModelChatMessage(m.role, m.parts as any));
}
