// The stand-in upstream model for the real VS Code test (the only stand-in the tests use is a
// model provider). It records every request it receives in <workspace>/.standin/received.jsonl
// and answers like a tool-using model: text, then a call to ctxlayer_workspace when tools are
// offered; after a tool result, text that quotes it. Its two commands drive the ctxlayer model
// through vscode.lm and the @ctxlayer participant through the chat view.
const vscode = require("vscode");
const fs = require("fs");
const path = require("path");

const WINDOW = 3000;

function outDir() {
  const dir = path.join(vscode.workspace.workspaceFolders[0].uri.fsPath, ".standin");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** A part as plain JSON: which kind it is and what it holds. */
function describe(part) {
  if (part instanceof vscode.LanguageModelTextPart) return { kind: "text", text: part.value };
  if (part instanceof vscode.LanguageModelToolCallPart) {
    return { kind: "call", callId: part.callId, name: part.name, input: part.input };
  }
  if (part && typeof part.callId === "string" && Array.isArray(part.content)) {
    return { kind: "result", callId: part.callId, content: part.content.map(describe) };
  }
  if (part instanceof vscode.LanguageModelDataPart) {
    return { kind: "data", mime: part.mimeType, text: Buffer.from(part.data).toString("utf8") };
  }
  return { kind: "other", value: String(part && part.constructor && part.constructor.name) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const provider = {
  provideLanguageModelChatInformation() {
    return [
      {
        id: "standin-small",
        name: "Stand-in",
        family: "gpt-4o",
        version: "1",
        maxInputTokens: WINDOW,
        maxOutputTokens: 500,
        isDefault: true,
        isUserSelectable: true,
        capabilities: { toolCalling: true, imageInput: false },
      },
    ];
  },
  async provideLanguageModelChatResponse(model, messages, options, progress) {
    const received = messages.map((m) => ({ role: m.role, content: m.content.map(describe) }));
    const tools = (options.tools || []).map((t) => t.name);
    fs.appendFileSync(
      path.join(outDir(), "received.jsonl"),
      JSON.stringify({ model: model.id, messages: received, tools }) + "\n",
    );
    const last = received[received.length - 1];
    const result = last && last.content.find((p) => p.kind === "result");
    if (result) {
      const text = result.content.map((p) => p.text || "").join("");
      progress.report(new vscode.LanguageModelTextPart("Stand-in read the tool result: "));
      await sleep(20);
      progress.report(new vscode.LanguageModelTextPart(JSON.stringify(text.slice(0, 48)) + "."));
      return;
    }
    progress.report(new vscode.LanguageModelTextPart("Stand-in answer, "));
    await sleep(20);
    progress.report(new vscode.LanguageModelTextPart("streamed."));
    if (tools.length) {
      const name = tools.includes("ctxlayer_workspace") ? "ctxlayer_workspace" : tools[0];
      progress.report(new vscode.LanguageModelToolCallPart(`call-${received.length}`, name, {}));
    }
  },
  async provideTokenCount(_model, text) {
    const s = typeof text === "string" ? text : JSON.stringify(text.content);
    return Math.ceil(s.length / 4);
  },
};
// the name the API had before it was finalized, for an editor that still asks for it
provider.prepareLanguageModelChatInformation = provider.provideLanguageModelChatInformation;

/**
 * A long chat shaped as Copilot Chat sends it: a system message (the proposed System role, 3)
 * ending in a cache breakpoint, 30 turns of about 150 tokens, a tool round every fifth turn,
 * then the question.
 */
function longChat() {
  const { User, Assistant } = vscode.LanguageModelChatMessageRole;
  const System = vscode.LanguageModelChatMessageRole.System ?? 3;
  const breakpoint = () =>
    new vscode.LanguageModelDataPart(new TextEncoder().encode("ephemeral"), "cache_control");
  const filler = (i) =>
    `Turn ${i}: we looked at the cache layer, the retry policy and the order of the migrations. `.repeat(6);
  const out = [
    new vscode.LanguageModelChatMessage(System, [
      new vscode.LanguageModelTextPart("You are helping with the greeting service."),
      breakpoint(),
    ]),
  ];
  for (let i = 1; i <= 30; i++) {
    out.push(new vscode.LanguageModelChatMessage(User, `Question ${i}. ${filler(i)}`));
    if (i % 5 === 0) {
      out.push(
        new vscode.LanguageModelChatMessage(Assistant, [
          new vscode.LanguageModelTextPart(`Let me read file ${i}.`),
          new vscode.LanguageModelToolCallPart(`tool-${i}`, "read_file", { path: `f${i}.py` }),
        ]),
      );
      out.push(
        new vscode.LanguageModelChatMessage(User, [
          new vscode.LanguageModelToolResultPart(`tool-${i}`, [
            new vscode.LanguageModelTextPart(`contents of f${i}.py: ${filler(i)}`),
          ]),
        ]),
      );
    }
    out.push(new vscode.LanguageModelChatMessage(Assistant, `Answer ${i}. ${filler(i)}`));
  }
  out.push(
    new vscode.LanguageModelChatMessage(
      User,
      "NEWEST QUESTION: what did we decide about the retry policy? Keep this whole.",
    ),
  );
  return out;
}

async function sendLongChat() {
  const report = { models: [], sent: 0, text: "", toolCalls: [], error: null };
  try {
    report.tools = vscode.lm.tools.map((t) => t.name);
    // the ctxlayer models follow the editor's: give them a moment to list this one
    let models = [];
    for (let i = 0; i < 100 && !models.some((m) => m.id === "standin/standin-small"); i++) {
      if (i) await sleep(100);
      models = await vscode.lm.selectChatModels({ vendor: "ctxlayer" });
    }
    report.models = models.map((m) => ({ id: m.id, name: m.name, maxInputTokens: m.maxInputTokens }));
    const model = models.find((m) => m.id === "standin/standin-small");
    if (!model) throw new Error(`no ctxlayer model over the stand-in among ${JSON.stringify(report.models)}`);
    const chat = longChat();
    report.sent = chat.length;
    report.newest = chat[chat.length - 1].content[0].value;
    const tools = [{ name: "read_file", description: "Read a file", inputSchema: { type: "object" } }];
    const response = await model.sendRequest(chat, { tools });
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) report.text += part.value;
      else if (part instanceof vscode.LanguageModelToolCallPart) report.toolCalls.push({ callId: part.callId, name: part.name });
    }
    report.countedByModel = await model.countTokens("hello world");
  } catch (err) {
    report.error = String((err && err.stack) || err);
  }
  fs.writeFileSync(path.join(outDir(), "long-chat.json"), JSON.stringify(report, null, 2));
}

function activate(context) {
  context.subscriptions.push(
    vscode.lm.registerLanguageModelChatProvider("standin", provider),
    vscode.commands.registerCommand("standin.sendLongChat", sendLongChat),
    vscode.commands.registerCommand("standin.askCtxlayer", () =>
      vscode.commands.executeCommand("workbench.action.chat.open", {
        query: "@ctxlayer what is in this project?",
        mode: "ask",
      }),
    ),
    vscode.commands.registerCommand("standin.askCtxlayerWhy", () =>
      vscode.commands.executeCommand("workbench.action.chat.open", {
        query: "@ctxlayer /why",
        mode: "ask",
      }),
    ),
  );
}

module.exports = { activate };
