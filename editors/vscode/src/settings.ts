/**
 * The settings as the extension uses them: each value checked against what package.json
 * contributes for it (its type, choices and bounds; the daemon-owned ones are written there by
 * `python -m ctxlayer.editor_settings`), a wrong one replaced by the manifest's default and
 * named in one warning; and what a settings change asks for (a daemon restart, a new mode, or
 * nothing). No vscode here: vscodeapi.ts hands in the raw values.
 */
import manifest from "../package.json";
import type { Settings } from "./vscodeapi";

/** What a settings change asks of the running daemon: a restart (which takes every setting),
 * else the workspace session's new budget (ctx/session/configure), the LSP trace level
 * (`$/setTrace`) and its new mode. */
export type SettingsChange = "restart" | "budget" | "trace" | "mode";

/**
 * Only what the daemon reads at its start restarts it. A restart moves its gateway to a new
 * port (`gateway.port` 0, the default) and the chat tools pointed at the announced URL (Claude
 * Code, Codex, aider) lose it: the budget and the trace level, which it takes while it runs,
 * restarted it before.
 */
export function settingsChange(before: Settings, after: Settings): SettingsChange[] {
  const changed = (k: keyof Settings) => JSON.stringify(before[k]) !== JSON.stringify(after[k]);
  const restartKeys: (keyof Settings)[] = ["model", "serverCommand", "gateway"];
  if (restartKeys.some(changed)) return ["restart"];
  const live: [keyof Settings, SettingsChange][] = [["budget", "budget"], ["trace", "trace"], ["mode", "mode"]];
  return live.filter(([k]) => changed(k)).map(([, change]) => change);
}

/** The part of JSON Schema that the manifest's settings use. */
interface SettingSchema {
  type?: string | string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  items?: SettingSchema;
  default?: unknown;
}

const SECTION = "ctxlayer";
const contributed = manifest.contributes.configuration.properties as Record<string, SettingSchema>;

function hasType(value: unknown, type: string, schema: SettingSchema): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "string":
      // ctxlayer.model cleared in the Settings UI is "": no model at all
      return typeof value === "string" && value.length >= (schema.minLength ?? 0);
    case "boolean":
      return typeof value === "boolean";
    case "integer":
    case "number": {
      if (typeof value !== "number" || !Number.isFinite(value)) return false;
      if (type === "integer" && !Number.isInteger(value)) return false;
      return (
        (schema.minimum === undefined || value >= schema.minimum) &&
        (schema.maximum === undefined || value <= schema.maximum)
      );
    }
    case "array":
      return Array.isArray(value) && (!schema.items || value.every((v) => fits(v, schema.items!)));
    default:
      return true; // a kind the manifest does not use: VS Code's own editor checks it
  }
}

function fits(value: unknown, schema: SettingSchema): boolean {
  if (schema.enum && !schema.enum.some((choice) => choice === value)) return false;
  const types = schema.type === undefined ? [] : ([] as string[]).concat(schema.type);
  return types.length === 0 || types.some((t) => hasType(value, t, schema));
}

/** What a setting takes, in words: `an integer from 0 to 65535`, `one of null, "short"`. */
function expected(schema: SettingSchema): string {
  if (schema.enum) return "one of " + schema.enum.map((v) => JSON.stringify(v)).join(", ");
  const types = schema.type === undefined ? [] : ([] as string[]).concat(schema.type);
  const bounds =
    schema.minimum !== undefined && schema.maximum !== undefined
      ? ` from ${schema.minimum} to ${schema.maximum}`
      : schema.minimum !== undefined
        ? ` of at least ${schema.minimum}`
        : schema.maximum !== undefined
          ? ` of at most ${schema.maximum}`
          : "";
  const words: Record<string, string> = {
    null: "null",
    string: (schema.minLength ?? 0) > 0 ? "a non-empty string" : "a string",
    boolean: "true or false",
    integer: `an integer${bounds}`,
    number: `a number${bounds}`,
    array: schema.items?.type === "string" ? "a list of strings" : "a list",
  };
  return types.map((t) => words[t] ?? t).join(" or ");
}

/**
 * The value of `ctxlayer.<key>`: the one `get` answers (the user's, else the manifest's
 * default) when it is of the contributed kind; else the manifest's default, with the problem
 * added to `problems` naming the setting.
 */
export function checkedSetting<T>(key: string, get: (key: string) => unknown, problems: string[]): T {
  const schema = contributed[`${SECTION}.${key}`];
  const value = get(key);
  if (!schema || fits(value, schema)) return value as T;
  problems.push(`\`${SECTION}.${key}\` must be ${expected(schema)}, not ${JSON.stringify(value)}`);
  return schema.default as T;
}

/** The one message for the settings that were replaced by their defaults; undefined if none. */
export function settingsWarning(problems: string[]): string | undefined {
  if (problems.length === 0) return undefined;
  return `ctxlayer: ${problems.join("; ")}. Using the default instead until the setting is fixed.`;
}
