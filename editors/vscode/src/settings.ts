/** What a settings change asks for: a daemon restart, only a new mode, or nothing. */
import type { Settings } from "./vscodeapi";

export type SettingsChange = "restart" | "mode" | "none";

export function settingsChange(before: Settings, after: Settings): SettingsChange {
  const restartKeys: (keyof Settings)[] = ["model", "budget", "serverCommand", "trace", "gateway"];
  if (restartKeys.some((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))) {
    return "restart";
  }
  return before.mode !== after.mode ? "mode" : "none";
}
