// The @ctxlayer participant over an in-memory daemon: a turn appends the question, assembles
// the session into the model's window, runs the tool the model calls, keeps the tool round
// in the result metadata; the commands act on the session.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CtxlayerClient } from "@ctxlayer/client";
import { CtxlayerParticipant, historyMessages, toChatMessages, whyMarkdown } from "../../src/participant";
import * as api from "../../src/vscodeapi";
import {
  LanguageModelChatMessageRole as Role,
  LanguageModelTextPart as Text,
  LanguageModelToolCallPart as Call,
  LanguageModelToolResult,
  LanguageModelToolResultPart as Result,
  lm,
  recorded,
  resetMock,
} from "./vscode.mock";
import { FakeConnection, budget } from "./fakeDaemon";

const modes = {
  short: { rulesShare: 0.2, workingShare: 0.5, cap: 2000 },
  deep: { rulesShare: 0.4, workingShare: 0.8, cap: 8000 },
};

let conn: FakeConnection;
let session: any[];
let turns: string[];
/** What the fake daemon counts each tool's definition at, by name (a text: its tools' sum). */
let toolCost: Record<string, number>;
let toolsBeside: [string, number, number][];
let compacted: boolean;
let participant: CtxlayerParticipant;

function model() {
  const received: any[] = [];
  return {
    vendor: "acme", id: "m", name: "M", family: "gpt-4o", version: "1", maxInputTokens: 5000, received,
    async sendRequest(messages: any[], options: any) {
      received.push({ messages, options });
      const answeredTool = messages.at(-1).content[0] instanceof Result;
      async function* stream() {
        if (answeredTool) yield new Text("The project has app.py.");
        else {
          yield new Text("Let me look. ");
          yield new Call("call-1", "ctxlayer_workspace", {});
        }
      }
      return { stream: stream() };
    },
  };
}

function chatStream() {
  const out: string[] = [];
  return { out, markdown: (t: string) => out.push(t), progress: (t: string) => out.push(`(${t})`) };
}

beforeEach(() => {
  resetMock();
  session = [];
  turns = [];
  compacted = false;
  toolCost = { ctxlayer_workspace: 300 };
  toolsBeside = [];
  conn = new FakeConnection({
    "ctx/count": (p: any) => {
      const tokens = p.texts.map((t: string) =>
        JSON.parse(t).reduce((sum: number, d: any) => sum + toolCost[d.function.name], 0),
      );
      return { tokens, total: tokens.reduce((a: number, b: number) => a + b, 0) };
    },
    "ctx/session/list": () => ({ sessions: [] }),
    "ctx/session/open": (p: any) => ({ sessionId: p.sessionId, model: p.model, mode: "deep", budget: p.budget, createdAt: "now" }),
    "ctx/session/append": (p: any) => {
      session.push(...p.messages);
      return budget(1000, 5000, p.sessionId);
    },
    "ctx/assemble": (p: any) => ({
      messages: [{ role: "system", content: "rules" }, ...session],
      cacheBoundary: 1, tokens: { total: 1200 }, budget: p.budget,
      dropped: compacted ? [{ action: "dropped", reason: "old", summary: "x", tokensBefore: 5, tokensAfter: 0 }] : [],
      truncated: [], compacted,
      notice: compacted ? "ctxlayer: summarized older turns and dropped 1 messages to fit 1,200 / 5,000 tokens" : null,
    }),
    "ctx/session/setMode": (p: any) => budget(1500, 5000, p.sessionId),
    "ctx/session/addRule": () => ({ ruleId: "rule-1", demoted: [] }),
    "ctx/why": () => ({ entries: [{ messageId: "m3", action: "truncated", reason: "tool output over its cap", summary: "tool: ls", tokensBefore: 900, tokensAfter: 120 }] }),
    "ctx/restore": () => ({}),
  });
  lm.tools.length = 0;
  lm.tools.push({ name: "ctxlayer_workspace", description: "the workspace", inputSchema: { type: "object" } });
  (lm as any).invokeTool = async (name: string) => new LanguageModelToolResult([new Text(`result of ${name}`)]);
  participant = new CtxlayerParticipant({
    client: () => new CtxlayerClient(conn),
    modes: () => modes,
    onTurn: (id) => turns.push(id),
    onTools: (id, tokens, window) => toolsBeside.push([id, tokens, window]),
    log: api.createLogChannel("t") as any,
  });
});

const request = (prompt: string, m: any, command?: string) =>
  ({ prompt, command, model: m, toolInvocationToken: undefined, references: [], toolReferences: [] }) as any;
const noCancel = { isCancellationRequested: false } as any;

describe("@ctxlayer", () => {
  it("answers from the assembled session, running the tool the model calls", async () => {
    const m = model();
    const s = chatStream();
    const result = await participant.handle(request("what is in this project?", m), { history: [] }, s as any, noCancel);
    const meta = result.metadata as any;
    expect(meta.sessionId).toMatch(/^vscode-chat:/);
    expect(s.out).toEqual(["Let me look. ", "(Running ctxlayer_workspace)", "The project has app.py."]);
    expect(session.map((x) => x.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(session[1].toolCalls).toEqual([{ id: "call-1", name: "ctxlayer_workspace", arguments: "{}" }]);
    expect(session[2]).toEqual({ role: "tool", toolCallId: "call-1", content: "result of ctxlayer_workspace" });
    // the tool round is in the metadata, as VS Code's history will not have it
    expect(meta.appended).toEqual(session.slice(1));
    // the second request carried the tool pair, after the session's system layer
    const second = m.received[1].messages;
    expect(second[0].role).toBe(Role.System);
    expect(second.at(-2).content[1]).toEqual(new Call("call-1", "ctxlayer_workspace", {}));
    expect(second.at(-1).content[0]).toEqual(new Result("call-1", [new Text("result of ctxlayer_workspace")]));
    expect(m.received[0].options.tools.map((t: any) => t.name)).toEqual(["ctxlayer_workspace"]);
    // the tool definitions go beside the messages: they take their share of the window
    expect(conn.sent("ctx/assemble")[0]).toEqual({ sessionId: meta.sessionId, budget: 4700 });
    expect(turns).toContain(meta.sessionId);
  });

  it("counts the tool definitions it sends and assembles the messages into what they leave", async () => {
    const m = model();
    const result = await participant.handle(request("hi", m), { history: [] }, chatStream() as any, noCancel);
    const id = (result.metadata as any).sessionId;
    // counted as the JSON a model is sent (as ctx/prepare counts a request's tools)
    const [counted] = conn.sent("ctx/count");
    expect(counted.model).toBe("gpt-4o");
    expect(JSON.parse(counted.texts[0])).toEqual([
      { type: "function", function: { name: "ctxlayer_workspace", description: "the workspace", parameters: { type: "object" } } },
    ]);
    expect(conn.sent("ctx/assemble").map((a) => a.budget)).toEqual([4700, 4700]);
    // the status bar learns what the tools take before each assembly
    expect(toolsBeside).toEqual([[id, 300, 5000], [id, 300, 5000]]);
  });

  it("offers the tools that fit in half the window, its own first, and says which in the chat", async () => {
    lm.tools.length = 0;
    for (const name of ["read_file", "ctxlayer_workspace", "run_in_terminal", "search"]) {
      lm.tools.push({ name, description: name, inputSchema: { type: "object" } });
    }
    toolCost = { read_file: 1500, ctxlayer_workspace: 300, run_in_terminal: 2500, search: 700 };
    const m = model();
    const s = chatStream();
    await participant.handle(request("hi", m), { history: [] }, s as any, noCancel);
    expect(s.out[0]).toBe(
      "> ctxlayer: the definitions of the editor's 4 tools need 5,000 tokens, over 50% of M's " +
        "window of 5,000: this turn offers the 3 that fit (2,500 tokens: `ctxlayer_workspace`, " +
        "`read_file`, `search`), not the other 1.\n\n",
    );
    expect(m.received[0].options.tools.map((t: any) => t.name)).toEqual(["ctxlayer_workspace", "read_file", "search"]);
    expect(conn.sent("ctx/assemble")[0].budget).toBe(2500);
    expect(toolsBeside[0].slice(1)).toEqual([2500, 5000]);
  });

  it("says in the chat when no tool definition fits, and goes without them", async () => {
    toolCost = { ctxlayer_workspace: 7813 };
    const m = model();
    const s = chatStream();
    await participant.handle(request("hi", m), { history: [] }, s as any, noCancel);
    expect(s.out[0]).toBe(
      "> ctxlayer: the definitions of the editor's 1 tools need 7,813 tokens, over 50% of M's " +
        "window of 5,000: this turn goes without tools.\n\n",
    );
    expect(m.received[0].options).toEqual({});
    expect(conn.sent("ctx/assemble")[0].budget).toBe(5000);
    expect(toolsBeside.every(([, n]) => n === 0)).toBe(true);
  });

  it("shows the notice when the assembly cut something", async () => {
    compacted = true;
    const s = chatStream();
    await participant.handle(request("hi", model()), { history: [] }, s as any, noCancel);
    // the daemon's line, with one "ctxlayer:" prefix
    expect(s.out[0]).toMatch(/^> ctxlayer: summarized older turns and dropped 1 messages to fit 1,200 \/ 5,000 tokens/);
    expect(s.out[0]).not.toContain("ctxlayer: ctxlayer:");
  });

  it("rebuilds a session the daemon lost from the history and the metadata", async () => {
    const appended = [
      { role: "assistant", content: "", toolCalls: [{ id: "c", name: "t", arguments: "{}" }] },
      { role: "tool", toolCallId: "c", content: "out" },
      { role: "assistant", content: "done" },
    ];
    const history = [
      { prompt: "first", participant: "ctxlayer.chat" },
      { response: [], result: { metadata: { sessionId: "vscode-chat:old", appended } }, participant: "ctxlayer.chat" },
    ];
    expect(historyMessages({ history } as any)).toEqual([{ role: "user", content: "first" }, ...appended]);
    await participant.handle(request("second", model()), { history } as any, chatStream() as any, noCancel);
    expect(conn.sent("ctx/session/open")[0].sessionId).toBe("vscode-chat:old");
    expect(session.slice(0, 5).map((x) => x.content)).toEqual(["first", "", "out", "done", "second"]);
  });

  it("sets the mode, adds a rule, says why and restores, on the chat's session", async () => {
    const s = chatStream();
    const m = model();
    const first = await participant.handle(request("deep", m, "mode"), { history: [] }, s as any, noCancel);
    const id = (first.metadata as any).sessionId;
    const history = [{ prompt: "deep", command: "mode" }, { response: [], result: first, command: "mode" }];
    (conn as any).answers["ctx/session/list"] = () => ({ sessions: [{ sessionId: id }] });
    await participant.handle(request("Never use any", m, "rule"), { history } as any, s as any, noCancel);
    await participant.handle(request("", m, "why"), { history } as any, s as any, noCancel);
    await participant.handle(request("m3", m, "restore"), { history } as any, s as any, noCancel);
    await participant.handle(request("turbo", m, "mode"), { history } as any, s as any, noCancel);
    expect(conn.sent("ctx/session/setMode")).toEqual([{ sessionId: id, mode: "deep" }]);
    expect(conn.sent("ctx/session/addRule")).toEqual([{ sessionId: id, rule: { text: "Never use any", weight: 1 } }]);
    expect(conn.sent("ctx/why")).toEqual([{ sessionId: id }]);
    expect(conn.sent("ctx/restore")).toEqual([{ sessionId: id, messageId: "m3" }]);
    // the working memory's share is of the mode's cap; the rules' share limits nothing
    expect(s.out[0]).toContain(
      "Mode **deep**: working memory up to 80% of 8,000 tokens, less what the rules take " +
        "(rules are always shown whole). The chat now uses 1,500 of 5,000 tokens.",
    );
    expect(s.out[0]).not.toContain("40%");
    expect(s.out[1]).toContain("Rule `rule-1` added");
    expect(s.out[2]).toContain("| `m3` | truncated | tool output over its cap | 900 → 120 | tool: ls |");
    expect(s.out[3]).toBe("`m3` comes back whole in the next turn.");
    expect(s.out[4]).toBe("Say which mode: `/mode short`, `/mode deep`.");
    expect(conn.sent("ctx/session/append")).toEqual([]); // commands are not chat turns
    expect(m.received).toEqual([]);
  });

  it("says the daemon's reason when a message cannot be restored, and asks no audit log", async () => {
    (conn as any).answers["ctx/restore"] = () => {
      throw Object.assign(new Error("messageId: this session holds no message with id 'm9'"), { code: -32602 });
    };
    const s = chatStream();
    await participant.handle(request("m9", model(), "restore"), { history: [] }, s as any, noCancel);
    expect(s.out[0]).toBe("`m9` stays as the last turn left it: messageId: this session holds no message with id 'm9'");
    expect(conn.sent("ctx/session/audit")).toEqual([]);
  });

  it("lets any other failure of /why and /restore through as the chat's error", async () => {
    const gone = () => {
      throw Object.assign(new Error("sessionId: no live conversation"), { code: -32002 });
    };
    (conn as any).answers["ctx/why"] = gone;
    (conn as any).answers["ctx/restore"] = gone;
    for (const command of ["why", "restore"]) {
      const result = await participant.handler(request("m9", model(), command), { history: [] }, chatStream() as any, noCancel);
      expect(result.errorDetails?.message).toMatch(/no live conversation/);
    }
    expect(conn.sent("ctx/session/audit")).toEqual([]);
  });

  it("answers a failure with one error in the chat", async () => {
    delete (conn as any).answers["ctx/assemble"];
    const result = await participant.handler(request("hi", model()), { history: [] }, chatStream() as any, noCancel);
    expect(result.errorDetails?.message).toBe("ctxlayer: ctx/assemble: Unhandled method ctx/assemble");
  });

  it("attaches the files a question references, for the daemon to read", async () => {
    const req = request("explain #file:app.py", model());
    req.references = [
      { id: "file", value: { scheme: "file", fsPath: "/work/project/app.py" } },
      { id: "sel", value: { uri: { scheme: "file", fsPath: "/work/project/app.py" }, range: {} } },
      { id: "web", value: { scheme: "https", fsPath: "/x" } },
      { id: "text", value: "just a string" },
      { id: "elsewhere", value: { scheme: "file", fsPath: "/etc/passwd" } },
    ];
    await participant.handle(req, { history: [] }, chatStream() as any, noCancel);
    expect(session[0]).toEqual({ role: "user", content: "explain #file:app.py", files: ["/work/project/app.py"] });
  });

  it("says in the chat which referenced files it could not attach, and why", async () => {
    recorded.moreFolders = ["/work/second"];
    const req = request("compare", model());
    req.references = [
      { id: "gone", value: { scheme: "file", fsPath: "/work/second/gone.py" } },
      { id: "elsewhere", value: { scheme: "file", fsPath: "/etc/passwd" } },
      { id: "prefix", value: { scheme: "file", fsPath: "/work/project-old/x.py" } },
    ];
    const s = chatStream();
    await participant.handle(req, { history: [] }, s as any, noCancel);
    expect(s.out[0]).toBe(
      "> ctxlayer: not attached: `/etc/passwd` (outside the workspace's folders), " +
        "`/work/project-old/x.py` (outside the workspace's folders), " +
        "`/work/second/gone.py` (could not be read: ENOENT).\n\n",
    );
    expect(session[0]).toEqual({ role: "user", content: "compare" });
  });

  it("never reads another folder's file that may hold secrets (the daemon's rule)", async () => {
    // the daemon's rule (selected.py): a secret's name, a secret folder, a link to either
    const second = mkdtempSync(join(tmpdir(), "ctxlayer-second-"));
    const outside = mkdtempSync(join(tmpdir(), "ctxlayer-outside-"));
    mkdirSync(join(second, "keys"));
    mkdirSync(join(second, ".ssh"));
    mkdirSync(join(second, ".git"));
    const files: Record<string, string> = {
      ".env": "ENV_MARKER",
      "prod.env": "PROD_MARKER",
      "keys/id_rsa.pem": "PEM_MARKER",
      "Server.KEY": "KEY_MARKER",
      ".ssh/config": "SSH_MARKER",
      ".git/config": "GIT_MARKER",
      ".env.example": "TEMPLATE_MARKER",
      "plain.py": "PLAIN_MARKER",
    };
    for (const [name, text] of Object.entries(files)) {
      writeFileSync(join(second, name), `${text}\n`);
    }
    writeFileSync(join(outside, "token.txt"), "OUTSIDE_MARKER\n");
    symlinkSync(join(second, ".env"), join(second, "notes.txt"));
    symlinkSync(join(second, ".git/config"), join(second, "settings.ini"));
    symlinkSync(join(outside, "token.txt"), join(second, "token.txt"));
    recorded.moreFolders = [second];
    const attached = [...Object.keys(files), "notes.txt", "settings.ini", "token.txt"];
    const req = request("look", model());
    req.references = attached.map((f) => ({
      id: f,
      value: { scheme: "file", fsPath: join(second, f) },
    }));
    const s = chatStream();
    await participant.handle(req, { history: [] }, s as any, noCancel);
    const sent = session[0].content as string;
    expect(sent).toContain("TEMPLATE_MARKER"); // a template holds no values: it is sent
    expect(sent).toContain("PLAIN_MARKER");
    for (const marker of ["ENV", "PROD", "PEM", "KEY", "SSH", "GIT", "OUTSIDE"]) {
      expect(sent).not.toContain(`${marker}_MARKER`);
    }
    const secrets = "may hold secrets (keys, tokens, passwords): never sent";
    const real = (f: string) => realpathSync(join(outside, f));
    expect(s.out[0]).toBe(
      "> ctxlayer: not attached: " +
        [
          `\`${join(second, ".env")}\` (.env ${secrets})`,
          `\`${join(second, "prod.env")}\` (prod.env ${secrets})`,
          `\`${join(second, "keys/id_rsa.pem")}\` (id_rsa.pem ${secrets})`,
          `\`${join(second, "Server.KEY")}\` (Server.KEY ${secrets})`,
          `\`${join(second, ".ssh/config")}\` (the files of .ssh/ ${secrets})`,
          `\`${join(second, ".git/config")}\` (the files of .git/ ${secrets})`,
          `\`${join(second, "notes.txt")}\` (a link to .env, which ${secrets})`,
          `\`${join(second, "settings.ini")}\` (a link into .git/, whose files ${secrets})`,
          `\`${join(second, "token.txt")}\` (resolves outside the workspace's folders ` +
            `(to ${real("token.txt")}))`,
        ].join(", ") +
        ".\n\n",
    );
  });

  it("never waits on another folder's named pipe, and reads at most what the daemon would", async () => {
    const second = mkdtempSync(join(tmpdir(), "ctxlayer-second-"));
    execFileSync("mkfifo", [join(second, "pipe.log")]); // a read of it waited for ever
    writeFileSync(join(second, "big.txt"), "B".repeat(1_200_000));
    recorded.moreFolders = [second];
    const req = request("look", model());
    req.references = ["pipe.log", "big.txt"].map((f) => ({
      id: f,
      value: { scheme: "file", fsPath: join(second, f) },
    }));
    const s = chatStream();
    await participant.handle(req, { history: [] }, s as any, noCancel);
    expect(s.out[0]).toBe(
      `> ctxlayer: not attached: \`${join(second, "pipe.log")}\` (not a regular file: never read).\n\n`,
    );
    const sent = session[0].content as string;
    expect(sent).toContain("[... cut at 1,000,000 bytes ...]");
    // the file's run of B (a B of the temporary folder's name is not the file's)
    expect(Math.max(...(sent.match(/B+/g) ?? []).map((run) => run.length))).toBe(1_000_000);
  });

  it("says so when nothing was cut", () => {
    expect(whyMarkdown([])).toBe("The last assembly kept everything whole.");
  });

  it("turns session messages into chat messages with tool pairs", () => {
    const out = toChatMessages([
      { role: "assistant", content: "", toolCalls: [{ id: "c", name: "t", arguments: '{"a":1}' }] },
      { role: "tool", toolCallId: "c", content: "out" },
    ]);
    expect(out[0].content).toEqual([new Call("c", "t", { a: 1 })]);
    expect(out[1].content).toEqual([new Result("c", [new Text("out")])]);
  });
});
