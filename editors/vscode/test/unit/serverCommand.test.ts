import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { INSTALL_HINT, resolveServerCommand } from "../../src/serverCommand";

function executable(path: string, mode = 0o755) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, mode);
}

describe("finding the daemon", () => {
  const root = mkdtempSync(join(tmpdir(), "ctxlayer-cmd-"));
  const binDir = join(root, "bin");
  const workspace = join(root, "ws");
  executable(join(binDir, "ctxlayer"));
  executable(join(workspace, ".venv", "bin", "ctxlayer"));

  it("takes the setting first, as given", () => {
    expect(resolveServerCommand(["/opt/x/ctxlayer", "serve", "-v"], workspace, binDir)).toEqual({
      command: "/opt/x/ctxlayer",
      args: ["serve", "-v"],
      source: "setting",
    });
  });

  it("then `ctxlayer` on PATH", () => {
    const found = resolveServerCommand([], workspace, `/nonexistent:${binDir}`);
    expect(found).toEqual({ command: join(binDir, "ctxlayer"), args: ["serve"], source: "PATH" });
  });

  it("then the workspace's virtual environment", () => {
    const found = resolveServerCommand([], workspace, "/nonexistent");
    expect(found?.command).toBe(join(workspace, ".venv", "bin", "ctxlayer"));
    expect(found?.source).toBe("workspace venv");
  });

  it("ignores files that are not executable", () => {
    const dir = join(root, "noexec");
    executable(join(dir, "ctxlayer"), 0o644);
    expect(resolveServerCommand([], undefined, dir)).toBeUndefined();
  });

  it("finds nothing, and the hint says how to install", () => {
    expect(resolveServerCommand([""], join(root, "empty"), "/nonexistent")).toBeUndefined();
    expect(INSTALL_HINT).toMatch(/pipx install \/path\/to\/ctxlayer/);
    expect(INSTALL_HINT).toMatch(/ctxlayer\.serverCommand/);
  });
});
