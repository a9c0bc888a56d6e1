/**
 * Which command starts the daemon: the `ctxlayer.serverCommand` setting, else `ctxlayer` on
 * PATH, else the workspace's virtual environment. Owns only that search and the message that
 * says how to install ctxlayer when nothing is found.
 */
import { existsSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it was found, for the log. */
  source: "setting" | "PATH" | "workspace venv";
}

export const INSTALL_HINT =
  "ctxlayer: the daemon was not found. Install it from a checkout of ctxlayer with " +
  "`pipx install /path/to/ctxlayer` (or `pip install -e .` in it), or set `ctxlayer.serverCommand` to the full command, " +
  'e.g. ["/path/to/venv/bin/ctxlayer", "serve"].';

function isExecutable(path: string): boolean {
  try {
    return statSync(path).isFile() && (statSync(path).mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

export function resolveServerCommand(
  setting: string[],
  workspace: string | undefined,
  envPath: string = process.env.PATH ?? "",
): ServerCommand | undefined {
  if (setting.length > 0 && setting[0].trim() !== "") {
    return { command: setting[0], args: setting.slice(1), source: "setting" };
  }
  for (const dir of envPath.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, "ctxlayer");
    if (isExecutable(candidate)) return { command: candidate, args: ["serve"], source: "PATH" };
  }
  if (workspace) {
    for (const venv of [".venv", "venv", ".env"]) {
      const candidate = join(workspace, venv, "bin", "ctxlayer");
      if (existsSync(candidate) && isExecutable(candidate)) {
        return { command: candidate, args: ["serve"], source: "workspace venv" };
      }
    }
  }
  return undefined;
}
