// spawnDaemon and CtxlayerClient against the real daemon (`ctxlayer serve` over stdio), and
// against daemons that fail them: each failure is a clear error at once, never a hang.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { PassThrough, type Readable } from "node:stream";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { CtxlayerClient, CtxlayerError } from "../src/client";
import { spawnDaemon, type SpawnedDaemon } from "../src/connect";

const repo = resolve(__dirname, "../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const daemonCommand = [python, "-m", "ctxlayer", "serve"];

/** A daemon that answers initialize, then reads every request and answers none. */
const neverAnswers = [
  python,
  "-c",
  `import json, sys
def read():
    n = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line: sys.exit(0)
        if not line.strip():
            if n: return json.loads(sys.stdin.buffer.read(n))
            continue
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length": n = int(v)
m = read()
body = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"capabilities": {}}}).encode()
sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
sys.stdout.buffer.flush()
while True: read()`,
];

const base = mkdtempSync(join(tmpdir(), "ctxlayer-ts-client-"));
const workspace = join(base, "ws");
mkdirSync(workspace);
writeFileSync(join(workspace, "README.md"), "# Demo\n");
const env = {
  ...process.env,
  HOME: base,
  XDG_CONFIG_HOME: join(base, "config"),
  CTXLAYER_STATE_DIR: join(base, "state"),
};
const started: SpawnedDaemon[] = [];

afterAll(async () => {
  for (const d of started) d.process.kill("SIGKILL");
});

async function failure(promise: Promise<unknown>): Promise<{ error: any; ms: number }> {
  const t0 = Date.now();
  const error = await promise.then(
    () => new Error("it succeeded"),
    (e: unknown) => e,
  );
  return { error, ms: Date.now() - t0 };
}

/** Settles within `ms` or says it did not (the bug was a promise that never settled). */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms),
    ),
  ]);
}

describe("spawnDaemon", () => {
  it("rejects with the exit code and the daemon's last stderr line when it exits", async () => {
    let stderr = "";
    const { error } = await within(
      15_000,
      failure(
        spawnDaemon({
          command: [...daemonCommand, "--no-such-flag"],
          workspace,
          env,
          onStderr: (s) => (stderr += s),
        }),
      ),
    );
    expect(stderr).toContain("--no-such-flag"); // the log still reaches onStderr
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("connection_closed");
    expect(error.message).toMatch(/exited \(code 2\) before answering initialize/);
    expect(error.message).toContain("unrecognized arguments: --no-such-flag");
  }, 20_000);

  it("says why when the daemon exits at once, every time", async () => {
    // a wrapper whose program is missing exits before initialize is written: 4 runs of 5
    // rejected with the writer's error (a plain Error, "write EPIPE", code -32099)
    const gone = ["sh", "-c", "echo 'ctxlayer: command not found' >&2; exit 127"];
    for (let run = 0; run < 5; run++) {
      const { error } = await within(10_000, failure(spawnDaemon({ command: gone, workspace })));
      expect(error).toBeInstanceOf(CtxlayerError);
      expect(error.kind).toBe("connection_closed");
      expect(error.message).toBe(
        "initialize: the daemon exited (code 127) before answering initialize: " +
          "ctxlayer: command not found",
      );
    }
  }, 60_000);

  it("says the command was not found when it does not exist", async () => {
    // it rejected with Node's own Error (spawn /no/such/ctxlayer ENOENT)
    const missing = ["/no/such/ctxlayer", "serve"];
    const { error } = await within(10_000, failure(spawnDaemon({ command: missing, workspace })));
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("connection_closed");
    expect(error.message).toBe(
      "initialize: the daemon command was not found: /no/such/ctxlayer",
    );
    const nowhere = join(base, "no-such-folder");
    const lost = await within(
      10_000,
      failure(spawnDaemon({ command: ["sh"], workspace: nowhere })),
    );
    expect(lost.error.message).toBe(`initialize: the workspace folder does not exist: ${nowhere}`);
  }, 30_000);

  it("rejects after timeoutMs when the daemon stays silent, and stops it", async () => {
    const pidFile = join(base, "silent.pid");
    const silent = [
      python,
      "-c",
      `import os, sys, time; open(${JSON.stringify(pidFile)}, "w").write(str(os.getpid()))
sys.stdin.buffer.read(); time.sleep(60)`,
    ];
    const { error } = await within(
      10_000,
      failure(spawnDaemon({ command: silent, workspace, env, timeoutMs: 1000 })),
    );
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("timeout");
    expect(error.message).toBe("initialize: no answer in 1000 ms");
    const pid = Number(readFileSync(pidFile, "utf8"));
    await new Promise((r) => setTimeout(r, 300));
    expect(() => process.kill(pid, 0)).toThrow(); // killed, not left running
  }, 20_000);
});

describe("a daemon that dies", () => {
  it("fails a pending request at once, and every later one", async () => {
    const d = await spawnDaemon({ command: neverAnswers, workspace, env, timeoutMs: 20_000 });
    started.push(d);
    const pending = failure(d.client.count({ texts: ["a"] }));
    setTimeout(() => d.process.kill("SIGKILL"), 300);
    const { error } = await within(15_000, pending);
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("connection_closed");
    expect(error.message).toMatch(/^ctx\/count: connection closed: the daemon exited \(SIGKILL\)/);
    const next = await within(2000, failure(d.client.segment()));
    expect(next.error.kind).toBe("connection_closed");
    expect(await within(10_000, d.close())).toBeNull();
  }, 30_000);
});

/** A client over a plain connection to `child` (its output, unless another `output` is
 * given, read as the daemon's), not spawnDaemon's. */
function clientOf(child: ChildProcess, output: Readable = child.stdout!) {
  const connection = createMessageConnection(
    new StreamMessageReader(output),
    new StreamMessageWriter(child.stdin!),
  );
  connection.listen();
  return { connection, client: new CtxlayerClient(connection, { timeoutMs: 20_000 }) };
}

describe("a connection that closes", () => {
  it("fails a pending request at once when the connection has onClose", async () => {
    const [cmd, ...args] = neverAnswers;
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
    const { connection, client } = clientOf(child);
    await connection.sendRequest("initialize", {});
    const pending = failure(client.count({ texts: ["a"] }));
    setTimeout(() => child.kill("SIGKILL"), 300);
    const { error } = await within(15_000, pending);
    expect(error.kind).toBe("connection_closed");
    expect(error.message).toBe("ctx/count: connection closed: the daemon closed the connection");
    connection.dispose();
  }, 30_000);
});

describe("a connection that is gone", () => {
  it("fails a request with connection_closed, not as the daemon's answer", async () => {
    // the connection's own error (vscode-jsonrpc's ConnectionError, code 1 or 2) came as a
    // daemon error of code 1, kind "error", in the moment before the connection said it closed
    const [cmd, ...args] = neverAnswers;
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
    const { connection, client } = clientOf(child);
    connection.dispose();
    const { error } = await within(15_000, failure(client.count({ texts: ["a"] })));
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("connection_closed");
    expect(error.code).toBeUndefined();
    const next = await within(2000, failure(client.segment()));
    expect(next.error.kind).toBe("connection_closed");
    child.kill("SIGKILL");
  }, 30_000);
});

describe("a daemon gone while a request is written", () => {
  it("fails it with connection_closed, not the writer's error", async () => {
    // its output kept open here, so only the write says the daemon is gone (EPIPE, which
    // came as a daemon error of code -32099)
    const child = spawn("sleep", ["60"], { stdio: ["pipe", "ignore", "inherit"] });
    const { connection, client } = clientOf(child, new PassThrough());
    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));
    const big = "word ".repeat(2_000_000);
    const { error } = await within(15_000, failure(client.count({ texts: [big] })));
    expect(error).toBeInstanceOf(CtxlayerError);
    expect(error.kind).toBe("connection_closed");
    const next = await within(2000, failure(client.segment()));
    expect(next.error.kind).toBe("connection_closed");
    connection.dispose();
  }, 30_000);
});

describe("daemon errors", () => {
  it("carry the code, the kind and the field the daemon named", async () => {
    const d = await spawnDaemon({ command: daemonCommand, workspace, env, timeoutMs: 30_000 });
    started.push(d);
    const invalid = await failure(d.client.count({ texts: [1 as unknown as string] }));
    expect(invalid.error).toBeInstanceOf(CtxlayerError);
    expect(invalid.error.code).toBe(-32602);
    expect(invalid.error.kind).toBe("invalid");
    expect(invalid.error.field).toBe("texts[0]");
    const unknown = await failure(d.client.sessionBudget("nope"));
    expect(unknown.error.kind).toBe("unknown_session");
    expect(unknown.error.field).toBe("sessionId");
    expect(unknown.error.data).toEqual({ kind: "unknown_session", field: "sessionId" });
    expect(await d.close()).toBe(0);
  }, 30_000);
});

describe("a request its caller gives up", () => {
  it("is cancelled at the daemon, on its timeout or its signal, and not stored", async () => {
    // given up while waiting for its session behind a large append, a small append still
    // ran and was stored (301 messages): the daemon was never told
    const d = await spawnDaemon({ command: daemonCommand, workspace, env, timeoutMs: 60_000 });
    started.push(d);
    const quick = new CtxlayerClient(d.connection, { timeoutMs: 300 });
    await d.client.request("ctx/session/open", { sessionId: "s", budget: 100_000 });
    const big = Array.from({ length: 300 }, (_, i) => ({
      role: "user" as const,
      content: `line ${i} `.repeat(4000),
      id: `b${i}`,
    }));
    const slow = d.client.request("ctx/session/append", { sessionId: "s", messages: big });
    let slowDone = false;
    void slow.then(() => (slowDone = true));
    await new Promise((r) => setTimeout(r, 50));
    const small = (text: string) => ({
      sessionId: "s",
      messages: [{ role: "user" as const, content: text, id: text }],
    });
    const timedOut = failure(quick.request("ctx/session/append", small("timed-out-one")));
    const abort = new AbortController();
    const aborted = failure(
      d.client.request("ctx/session/append", small("aborted-one"), { signal: abort.signal }),
    );
    setTimeout(() => abort.abort(), 300);
    expect((await timedOut).error.kind).toBe("timeout");
    expect((await aborted).error.kind).toBe("cancelled");
    expect(slowDone).toBe(false); // both were given up while the large one still ran
    await slow;
    const listed = await d.client.request("ctx/session/list", {});
    expect(listed.sessions.map((s) => [s.sessionId, s.messages])).toEqual([["s", 300]]);
    const page = await d.client.inspect({ sessionId: "s" });
    expect(page.html).not.toContain("timed-out-one");
    expect(page.html).not.toContain("aborted-one");
    expect(await d.close()).toBe(0);
  }, 60_000);
});
