// The settings the extension shares with the daemon agree with the daemon's own: the
// manifest's contributes.configuration against ctxlayer.config (the tree docs/settings.md is
// generated from) and against what a real daemon announces at initialize.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnDaemon } from "@ctxlayer/client/src/connect";
import { describe, expect, it } from "vitest";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");
const manifest = JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8"));
const props = manifest.contributes.configuration.properties;

/** The daemon's settings tree: defaults and the allowed values of each key, from Python. */
function daemonSettings(): { defaults: any; modes: string[]; defaultModePattern: string; gateway: any } {
  const script = [
    "import json, msgspec",
    "from ctxlayer.config import Config, ModesConfig, SessionConfig",
    "schema = msgspec.json.schema(Config)",
    "defs = schema['$defs']",
    "session = defs['SessionConfig']",
    "print(json.dumps({",
    "  'defaults': msgspec.to_builtins(Config()),",
    "  'modes': list(ModesConfig.__struct_fields__),",
    "  'defaultModePattern': session['properties']['default_mode']['pattern'],",
    "  'gateway': defs['GatewayConfig']['properties'],",
    "}))",
  ].join("\n");
  return JSON.parse(execFileSync(python, ["-c", script], { encoding: "utf8" }));
}

describe("settings shared with the daemon", () => {
  const daemon = daemonSettings();

  it("ctxlayer.mode offers the daemon's modes, unset by default (the workspace's default mode)", () => {
    expect(props["ctxlayer.mode"].enum).toEqual([null, ...daemon.modes]);
    expect(props["ctxlayer.mode"].default).toBeNull();
    expect(props["ctxlayer.mode"].enumDescriptions[0]).toContain(daemon.defaults.session.default_mode);
    for (const mode of props["ctxlayer.mode"].enum.slice(1)) {
      expect(new RegExp(daemon.defaultModePattern).test(mode), mode).toBe(true);
    }
  });

  it("ctxlayer.gateway.* are the daemon's [gateway] enabled and port", () => {
    const enabled = props["ctxlayer.gateway.enabled"];
    const port = props["ctxlayer.gateway.port"];
    expect(enabled.type).toBe("boolean");
    expect(enabled.default).toBe(daemon.defaults.gateway.enabled);
    expect(port.type).toBe("integer");
    expect(port.default).toBe(daemon.defaults.gateway.port);
    expect([port.minimum, port.maximum]).toEqual([daemon.gateway.port.minimum, daemon.gateway.port.maximum]);
  });

  it("a running daemon announces the same modes and default", async () => {
    const base = mkdtempSync(join(tmpdir(), "ctxlayer-settings-"));
    execFileSync("git", ["init", "-q"], { cwd: base });
    const spawned = await spawnDaemon({
      command: [python, "-m", "ctxlayer", "serve"],
      workspace: base,
      env: { ...process.env, HOME: base, XDG_CONFIG_HOME: join(base, "config"), CTXLAYER_STATE_DIR: join(base, "state") },
    });
    try {
      const announced = spawned.initializeResult.capabilities.experimental.ctxlayer;
      expect(announced.defaultMode).toBe(daemon.defaults.session.default_mode);
      expect(Object.keys(announced.modes)).toEqual(props["ctxlayer.mode"].enum.slice(1));
      expect(announced.modes.deep).toEqual({
        rulesShare: daemon.defaults.session.modes.deep.rules_share,
        workingShare: daemon.defaults.session.modes.deep.working_share,
        cap: daemon.defaults.session.modes.deep.cap,
      });
    } finally {
      await spawned.close();
    }
  });
});
