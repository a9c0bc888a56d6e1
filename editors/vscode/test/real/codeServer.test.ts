// The extension in a real VS Code: code-server 4.139.1 with the packaged .vsix, driven by
// Playwright (playwright-core) and Debian's Chromium. The status bar shows the budget, it
// changes after a save, and Show context opens the inspector. Screenshots go to
// test-results/ (the README's picture is one of them).
//
// Needs CTXLAYER_CODE_SERVER, CTXLAYER_NODE24_BIN and CTXLAYER_CHROMIUM (scripts/ensure-tools.sh
// prints them). Missing tools skip the test, except with CTXLAYER_REQUIRE_EDITORS=1 (CI).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
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

const STATUS = /^ctx \d+(\.\d+)?k? \/ \d+(\.\d+)?[kM]? \(\d+%\)$/;

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
    writeFileSync(
      join(workspace, ".vscode", "settings.json"),
      JSON.stringify({ "ctxlayer.serverCommand": [python, "-m", "ctxlayer", "serve"] }, null, 2),
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
        "chat.disableAIFeatures": true,
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
    execFileSync(codeServer, [...common, "--install-extension", vsix], { env, stdio: "pipe" });
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
    await browser?.close();
    if (server && server.exitCode === null) {
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
    }
  });

  let first = "";

  it("shows the budget in the status bar", async () => {
    first = await waitForStatus(page, (t) => STATUS.test(t), "a budget");
    expect(first).toMatch(STATUS);
    await page.screenshot({ path: join(results, "vscode-status-bar.png") });
  });

  it("moves the budget after a save", async () => {
    await page.keyboard.press("Control+P");
    await page.keyboard.type("README.md");
    await page.waitForTimeout(500);
    await page.keyboard.press("Enter");
    const editor = page.locator(".monaco-editor .view-lines").first();
    await editor.waitFor();
    await editor.click();
    await page.keyboard.press("Control+End");
    const words = "\nIt keeps a list of greetings, their languages and who asked for them. ";
    await page.keyboard.insertText(words.repeat(40));
    await page.keyboard.press("Control+S");
    const after = await waitForStatus(page, (t) => STATUS.test(t) && t !== first, "a change");
    expect(after).not.toBe(first);
    await page.screenshot({ path: join(results, "vscode-after-save.png") });
  });

  it("opens the inspector with Show context", async () => {
    await page.locator(".statusbar-item", { hasText: /^ctx / }).first().click();
    const frame = await findFrame(page, "#budget-slider");
    expect(await frame.locator("h2").first().textContent()).toContain("Layers against the window");
    expect(await frame.locator("li.msg").count()).toBeGreaterThan(0);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(results, "vscode-inspector.png") });
  });
});
