// The extension in a real VS Code: code-server 4.139.1 with the packaged .vsix and a test
// extension (test/real/standin) that provides a stand-in upstream chat model, driven by
// Playwright (playwright-core) and Debian's Chromium. The status bar says no chat is live;
// a long chat sent through vscode.lm to "ctxlayer · Stand-in" reaches the stand-in fitted
// into its window with tool pairs whole and the newest message intact; @ctxlayer answers in
// the chat view (with a tool round) and the status bar follows it; Show context opens the
// inspector on the live chat. Screenshots go to test-results/ (the README's picture is one).
//
// Needs CTXLAYER_CODE_SERVER, CTXLAYER_NODE24_BIN and CTXLAYER_CHROMIUM (scripts/ensure-tools.sh
// prints them). Missing tools skip the test, except with CTXLAYER_REQUIRE_EDITORS=1 (CI).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnDaemon } from "@ctxlayer/client/src/connect";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const here = resolve(__dirname, "../..");
const repo = resolve(here, "../..");
const codeServer = process.env.CTXLAYER_CODE_SERVER ?? "";
const node24 = process.env.CTXLAYER_NODE24_BIN ?? "";
const chromiumPath = process.env.CTXLAYER_CHROMIUM ?? "/usr/bin/chromium";
const vsix = process.env.CTXLAYER_VSIX ?? join(here, "ctxlayer.vsix");
const python = process.env.CTXLAYER_PYTHON ?? join(repo, ".venv/bin/python");
const results = join(here, "test-results");

const missing = [
  [codeServer, "code-server (CTXLAYER_CODE_SERVER)"],
  [node24 && join(node24, "node"), "node 24 (CTXLAYER_NODE24_BIN)"],
  [chromiumPath, "chromium"],
  [vsix, "the packaged extension (npm run package)"],
  [python, "the ctxlayer Python environment"],
].filter(([path]) => !path || !existsSync(path)).map(([, what]) => what);
const required = process.env.CTXLAYER_REQUIRE_EDITORS === "1";
if (missing.length && required) {
  throw new Error(`missing for the real VS Code test: ${missing.join(", ")}`);
}
const suite = missing.length ? describe.skip : describe;

const LIVE = /^ctx \d+(\.\d+)?k? \/ 3k \(\d+%\)( · [\d.]+k? cached)?$/;
const IDLE = "ctx · no live chat";
const ANY_LIVE = /^ctx \d+(\.\d+)?k? \/ \d+(\.\d+)?[kM]? \(\d+%\)( · [\d.]+k? cached)?$/;
const WINDOW = 3000; // the stand-in model's maxInputTokens

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as any).port;
      srv.close(() => ok(port));
    });
    srv.on("error", fail);
  });
}

async function waitForHttp(url: string, proc: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`code-server exited: ${log()}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`code-server did not answer at ${url}: ${log()}`);
}

async function statusText(page: Page): Promise<string> {
  const item = page.locator(".statusbar-item", { hasText: /^ctx / }).first();
  return ((await item.textContent({ timeout: 1000 })) ?? "").trim();
}

async function waitForStatus(page: Page, ok: (text: string) => boolean, what: string) {
  let last = "";
  for (let i = 0; i < 900; i++) {
    last = await statusText(page).catch(() => "");
    if (ok(last)) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`status bar never showed ${what}; last text: ${JSON.stringify(last)}`);
}

async function findFrame(page: Page, selector: string): Promise<Frame> {
  for (let i = 0; i < 600; i++) {
    for (const frame of page.frames()) {
      if (await frame.$(selector).catch(() => null)) return frame;
    }
    await page.waitForTimeout(100);
  }
  throw new Error(`no frame with ${selector}`);
}

suite("ctxlayer in a real VS Code (code-server)", () => {
  let server: ChildProcess;
  let browser: Browser;
  let page: Page;
  let workspace: string;
  let serverLog = "";
  let provider: ChildProcess;
  let gatewayPort = 0;

  beforeAll(async () => {
    mkdirSync(results, { recursive: true });
    const base = mkdtempSync(join(tmpdir(), "ctxlayer-code-server-"));
    const userData = join(base, "user-data");
    const extensions = join(base, "extensions");
    workspace = join(base, "demo-project");
    mkdirSync(join(userData, "User"), { recursive: true });
    mkdirSync(join(workspace, ".vscode"), { recursive: true });
    writeFileSync(
      join(workspace, "README.md"),
      "# Demo project\n\nA small service that greets people.\n",
    );
    writeFileSync(join(workspace, "app.py"), "def greet(name):\n    return f'hello {name}'\n");
    // the stand-in provider (tests/providers/standin.py) behind the daemon's gateway
    provider = spawn(python, [join(repo, "tests/providers/standin.py"), "--port", "0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const providerUrls = JSON.parse(await firstLine(provider));
    gatewayPort = await freePort();
    // where the gateway forwards is the user's own setting (a workspace's is refused)
    mkdirSync(join(base, "config", "ctxlayer"), { recursive: true });
    writeFileSync(
      join(base, "config", "ctxlayer", "ctxlayer.toml"),
      `[gateway]\nopenai_base_url = "${providerUrls.openai}"\n`,
    );
    writeFileSync(
      join(workspace, ".vscode", "settings.json"),
      JSON.stringify(
        {
          "ctxlayer.serverCommand": [python, "-m", "ctxlayer", "serve"],
          "ctxlayer.gateway.enabled": true,
          "ctxlayer.gateway.port": gatewayPort,
        },
        null,
        2,
      ),
    );
    writeFileSync(
      join(userData, "User", "settings.json"),
      JSON.stringify({
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "telemetry.telemetryLevel": "off",
        "security.workspace.trust.enabled": false,
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "update.mode": "none",
        "workbench.welcomePage.experimentalOnboarding": false,
        "workbench.colorTheme": "Default Light Modern",
        "workbench.secondarySideBar.defaultVisibility": "hidden",
      }),
    );
    const env = {
      ...process.env,
      PATH: `${node24}:${process.env.PATH}`,
      HOME: base,
      XDG_CONFIG_HOME: join(base, "config"),
      XDG_DATA_HOME: join(base, "data"),
      CTXLAYER_STATE_DIR: join(base, "state"),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
    };
    execFileSync("git", ["init", "-q"], { cwd: workspace, env });
    const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
    const standin = join(base, "standin.vsix");
    execFileSync(
      join(here, "node_modules/.bin/vsce"),
      ["package", "--no-dependencies", "--skip-license", "--allow-missing-repository", "-o", standin],
      { cwd: join(here, "test/real/standin"), env, stdio: "pipe" },
    );
    for (const ext of [vsix, standin]) {
      execFileSync(codeServer, [...common, "--install-extension", ext], { env, stdio: "pipe" });
    }
    const port = await freePort();
    server = spawn(
      codeServer,
      [
        ...common,
        "--auth", "none",
        "--bind-addr", `127.0.0.1:${port}`,
        "--disable-workspace-trust",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-getting-started-override",
        "--enable-proposed-api", "ctxlayer-tests.standin",
        workspace,
      ],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    server.stdout!.on("data", (d) => (serverLog += d));
    server.stderr!.on("data", (d) => (serverLog += d));
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, server, () => serverLog);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
  });

  afterAll(async () => {
    provider?.kill("SIGTERM");
    await browser?.close();
    if (server && server.exitCode === null) {
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
    }
  });

  it("says no chat is live before any chat sent a request", async () => {
    const text = await waitForStatus(page, (t) => t === IDLE, "that no chat is live");
    expect(text).toBe(IDLE);
    await page.screenshot({ path: join(results, "vscode-status-idle.png") });
  });

  it("fits a long chat sent through vscode.lm to the ctxlayer model into the stand-in's window", async () => {
    await runCommand(page, "Stand-in: send a long chat to the ctxlayer model");
    const report = JSON.parse(await waitForFile(join(workspace, ".standin", "long-chat.json")));
    expect(report.error).toBeNull();
    expect(report.models).toContainEqual({
      id: "standin/standin-small",
      name: "ctxlayer · Stand-in",
      maxInputTokens: WINDOW,
    });
    // the answer streamed back through the ctxlayer model: text, then the tool call
    expect(report.text).toBe("Stand-in answer, streamed.");
    expect(report.toolCalls).toEqual([{ callId: expect.any(String), name: "read_file" }]);
    expect(report.countedByModel).toBeGreaterThan(0);

    const received = readJsonLines(join(workspace, ".standin", "received.jsonl"));
    const got = received.find((r) => r.tools.includes("read_file"))!;
    expect(got.messages.length).toBeLessThan(report.sent);
    // the system message first, in Copilot's role, with its cache breakpoint
    expect(got.messages[0].role).toBe(3);
    expect(got.messages[0].content).toEqual([
      { kind: "text", text: "You are helping with the greeting service." },
      { kind: "data", mime: "cache_control", text: "ephemeral" },
    ]);
    // the newest message is there whole, last
    const last = got.messages.at(-1)!;
    expect(last.content).toEqual([{ kind: "text", text: report.newest }]);
    // tool pairs intact: every result follows its call, every call of an earlier turn has its result
    const calls = new Map<string, number>();
    got.messages.forEach((m, i) => {
      for (const p of m.content) {
        if (p.kind === "call") calls.set(p.callId, i);
        if (p.kind === "result") {
          expect(calls.get(p.callId), `result ${p.callId} without its call`).toBeLessThan(i);
        }
      }
    });
    const results = new Set(got.messages.flatMap((m) => m.content.filter((p) => p.kind === "result").map((p) => p.callId)));
    for (const id of calls.keys()) expect(results.has(id), `call ${id} without its result`).toBe(true);
    // within the window: what arrived, counted by the daemon with the model's tokenizer
    expect(await countOpenAI(got.messages)).toBeLessThanOrEqual(WINDOW);

    const status = await waitForStatus(page, (t) => LIVE.test(t), "the live chat");
    expect(status).toMatch(LIVE);
  });

  it("answers @ctxlayer in the chat view, with a tool round, and the status bar follows", async () => {
    const before = await statusText(page);
    await runCommand(page, "Stand-in: ask @ctxlayer what is in the project");
    const answer = page.getByText(/Stand-in read the tool result/).first();
    await answer.waitFor({ timeout: 120_000 });
    expect(await answer.textContent()).toContain("Workspace segment");
    const after = await waitForStatus(page, (t) => LIVE.test(t) && t !== before, "the @ctxlayer chat");
    expect(after).toMatch(LIVE);
    const received = readJsonLines(join(workspace, ".standin", "received.jsonl"));
    const toolRound = received.at(-1)!;
    expect(toolRound.messages.at(-1)!.content[0]).toMatchObject({ kind: "result" });
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(results, "vscode-chat.png") });
  });

  it("answers /why in the same chat without asking the model", async () => {
    await runCommand(page, "Stand-in: ask @ctxlayer /why");
    await page.getByText(/kept everything whole|brings one back whole/).first().waitFor({ timeout: 60_000 });
    const requests = readJsonLines(join(workspace, ".standin", "received.jsonl"));
    expect(requests).toHaveLength(3); // the long chat and the two rounds of the question: /why asks no model
  });

  it("follows a chat tool's request through the gateway", async () => {
    const before = await statusText(page);
    const answer = await fetch(`http://127.0.0.1:${gatewayPort}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
      body: JSON.stringify({
        model: "gpt-4o",
        messages: [
          { role: "system", content: "You are a terse assistant." },
          { role: "user", content: "Say hello to the gateway. ".repeat(200) },
        ],
      }),
    });
    expect(answer.status).toBe(200);
    expect(Number(answer.headers.get("x-ctxlayer-tokens"))).toBeGreaterThan(1000);
    const after = await waitForStatus(page, (t) => ANY_LIVE.test(t) && t !== before, "the gateway's chat");
    expect(after).toMatch(/^ctx 1\.\dk \//);
  });

  it("opens the inspector on the live chat", async () => {
    await page.locator(".statusbar-item", { hasText: /^ctx / }).first().click();
    const frame = await findFrame(page, "#budget-slider");
    expect(await frame.locator("h2").first().textContent()).toContain("Layers against the window");
    expect(await frame.locator("li.msg").count()).toBeGreaterThan(0);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(results, "vscode-inspector.png") });
  });
});

async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press("Enter");
}

function firstLine(proc: ChildProcess): Promise<string> {
  return new Promise((ok, fail) => {
    let out = "";
    proc.stdout!.on("data", (d) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl >= 0) ok(out.slice(0, nl));
    });
    proc.on("exit", (code) => fail(new Error(`the stand-in provider exited (${code}) before listening`)));
  });
}

async function waitForFile(path: string): Promise<string> {
  for (let i = 0; i < 1200; i++) {
    if (existsSync(path)) {
      const text = readFileSync(path, "utf8");
      if (text.trim()) return text;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${path} never appeared`);
}

interface Recorded {
  model: string;
  tools: string[];
  messages: { role: number; content: any[] }[];
}

function readJsonLines(path: string): Recorded[] {
  return readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

/** What the stand-in received, as OpenAI messages counted by a daemon of our own. */
async function countOpenAI(messages: Recorded["messages"]): Promise<number> {
  const openai: object[] = [];
  for (const m of messages) {
    for (const p of m.content.filter((p) => p.kind === "result")) {
      const content = p.content.map((c: any) => c.text ?? "").join("");
      openai.push({ role: "tool", tool_call_id: p.callId, content });
    }
    const text = m.content.filter((p) => p.kind === "text").map((p) => p.text).join("");
    const calls = m.content
      .filter((p) => p.kind === "call")
      .map((p) => ({ id: p.callId, type: "function", function: { name: p.name, arguments: JSON.stringify(p.input) } }));
    const role = m.role === 2 ? "assistant" : m.role === 3 ? "system" : "user";
    if (text || calls.length) openai.push({ role, content: text, ...(calls.length ? { tool_calls: calls } : {}) });
  }
  const base = mkdtempSync(join(tmpdir(), "ctxlayer-count-"));
  const daemon = await spawnDaemon({
    command: [python, "-m", "ctxlayer", "serve"],
    workspace: base,
    env: { ...process.env, HOME: base, CTXLAYER_STATE_DIR: join(base, "state") },
  });
  try {
    return (await daemon.client.count({ model: "gpt-4o", format: "openai", messages: openai })).total;
  } finally {
    await daemon.close();
  }
}
