// VS Code chat messages <-> OpenAI messages: what Copilot Chat sends a third-party model
// (system role, cache breakpoints as "cache_control" data parts, tool results in user
// messages, images, opaque parts), what ctx/prepare gets, and what comes back.
import { describe, expect, it } from "vitest";
import {
  CACHE_CONTROL,
  ORIGIN,
  fromOpenAI,
  toOpenAI,
  toolsToOpenAI,
  type OpenAIMessage,
} from "../../src/chatConvert";
import {
  LanguageModelChatMessage,
  LanguageModelChatMessageRole as Role,
  LanguageModelDataPart,
  LanguageModelTextPart as Text,
  LanguageModelToolCallPart as Call,
  LanguageModelToolResultPart as Result,
} from "./vscode.mock";

const breakpoint = () => new LanguageModelDataPart(new TextEncoder().encode("ephemeral"), CACHE_CONTROL);
const png = new Uint8Array([137, 80, 78, 71]);
/** A part only the editor understands (a thinking part, say): plain object, unknown shape. */
const thinking = { value: ["thought"], id: "t1", metadata: { signature: "abc" } };

function copilotPrompt() {
  return [
    new LanguageModelChatMessage(Role.System, [new Text("You are an agent."), breakpoint()]),
    new LanguageModelChatMessage(Role.User, [new Text("Fix the failing test in "), new Text("app.py")]),
    new LanguageModelChatMessage(Role.Assistant, [
      thinking,
      new Text("Reading it."),
      new Call("call_1", "read_file", { path: "app.py" }),
    ]),
    new LanguageModelChatMessage(Role.User, [
      new Result("call_1", [new Text("def greet(): ..."), breakpoint()]),
    ]),
    new LanguageModelChatMessage(Role.User, [new Text("and this screenshot"), new LanguageModelDataPart(png, "image/png")]),
  ];
}

const strip = (m: OpenAIMessage) => {
  const { [ORIGIN]: _, ...rest } = m;
  return rest;
};

describe("VS Code messages to OpenAI", () => {
  it("maps roles, text, tool calls, tool results, images and cache breakpoints", () => {
    const { messages } = toOpenAI(copilotPrompt() as any);
    expect(messages.map(strip)).toEqual([
      { role: "system", content: "You are an agent.", cache_control: { type: "ephemeral" } },
      { role: "user", content: "Fix the failing test in app.py" },
      {
        role: "assistant",
        content: "Reading it.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"app.py"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "def greet(): ...", cache_control: { type: "ephemeral" } },
      {
        role: "user",
        content: [
          { type: "text", text: "and this screenshot" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw==" } },
        ],
      },
    ]);
    // every message names where it came from, uniquely
    const origins = messages.map((m) => m[ORIGIN]);
    expect(new Set(origins).size).toBe(messages.length);
  });

  it("puts the tool results of a user message before its text, so each follows its call", () => {
    const { messages } = toOpenAI([
      new LanguageModelChatMessage(Role.Assistant, [new Call("a", "t", {}), new Call("b", "t", {})]),
      new LanguageModelChatMessage(Role.User, [new Text("thanks"), new Result("a", [new Text("1")]), new Result("b", [new Text("2")])]),
    ] as any);
    expect(messages.map((m) => [m.role, m.tool_call_id ?? m.content])).toEqual([
      ["assistant", null],
      ["tool", "a"],
      ["tool", "b"],
      ["user", "thanks"],
    ]);
  });

  it("gives tools the OpenAI function shape", () => {
    expect(toolsToOpenAI([{ name: "read_file", description: "Read", inputSchema: { type: "object" } }])).toEqual([
      { type: "function", function: { name: "read_file", description: "Read", parameters: { type: "object" } } },
    ]);
    expect(toolsToOpenAI([])).toBeUndefined();
  });
});

describe("OpenAI messages back to VS Code", () => {
  it("gives back the very parts of every message the daemon kept unchanged", () => {
    const prompt = copilotPrompt();
    const sent = toOpenAI(prompt as any);
    const back = fromOpenAI(structuredClone(sent.messages), sent);
    expect(back).toHaveLength(prompt.length);
    back.forEach((m, i) => {
      expect(m.role).toBe(prompt[i].role);
      expect(m.content).toHaveLength(prompt[i].content.length);
      for (const part of prompt[i].content) expect(m.content).toContain(part); // same objects
    });
  });

  it("rebuilds shortened and new messages, keeping their breakpoints and opaque parts", () => {
    const prompt = copilotPrompt();
    const sent = toOpenAI(prompt as any);
    const [system, , assistant, tool, last] = structuredClone(sent.messages);
    const fitted: OpenAIMessage[] = [
      system,
      { role: "system", content: "Summary: the user wants the failing test fixed." }, // the daemon's
      { ...assistant, content: "Reading…" }, // shortened
      { ...tool, content: "def greet(): [12 lines cut]" }, // shortened tool output
      last,
    ];
    const back = fromOpenAI(fitted, sent, [1]);
    expect(back.map((m) => m.role)).toEqual([Role.System, Role.System, Role.Assistant, Role.User, Role.User]);
    expect(back[0].content).toEqual(prompt[0].content);
    expect(back[1].content).toEqual([new Text("Summary: the user wants the failing test fixed."), breakpoint()]);
    expect(back[2].content).toEqual([new Text("Reading…"), new Call("call_1", "read_file", { path: "app.py" }), thinking]);
    expect(back[3].content).toEqual([new Result("call_1", [new Text("def greet(): [12 lines cut]"), breakpoint()])]);
    expect(back[4].content[1]).toBe(prompt[4].content[1]); // the image, untouched
  });

  it("turns a changed image part back into image data", () => {
    const sent = toOpenAI([]);
    const [m] = fromOpenAI(
      [{ role: "user", content: [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw==" } }] }],
      sent,
    );
    expect(m.content[0]).toEqual(new Text("see"));
    expect(m.content[1]).toEqual(new LanguageModelDataPart(Buffer.from(png), "image/png"));
  });

  it("names the field of what it cannot turn back", () => {
    const sent = toOpenAI([]);
    expect(() => fromOpenAI([{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }], sent)).toThrow(
      'request.messages[0].content[0].type: "input_audio" has no VS Code part',
    );
    expect(() =>
      fromOpenAI(
        [{ role: "assistant", content: null, tool_calls: [{ id: "x", type: "function", function: { name: "f", arguments: "{" } }] }],
        sent,
      ),
    ).toThrow("request.messages[0].tool_calls[0].function.arguments: not JSON");
  });
});
