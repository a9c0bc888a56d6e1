// spawnDaemon and CtxlayerClient against the real daemon (`ctxlayer serve` over stdio).
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CtxlayerError } from "../src/client";
import { spawnDaemon, type SpawnedDaemon } from "../src/connect";

const repo = resolve(__dirname, "../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const daemonCommand = [python, "-m", "ctxlayer", "serve"];

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
