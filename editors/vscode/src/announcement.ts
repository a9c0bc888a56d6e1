/**
 * What the extension needs of the daemon it started: the protocol it was built against, every
 * request of it (but the optional ones), and a complete initialize announcement. A daemon that
 * falls short is told apart once, with what to do ("update ctxlayer"), instead of being
 * half-served by fallbacks.
 * No vscode import.
 */
import { PROTOCOL_VERSION, type ModeInfo, type Requests, type ServerAnnouncement } from "@ctxlayer/client";

/** Every request of the protocol: a method added to it fails the typecheck until listed. */
const REQUESTS: Record<keyof Requests, true> = {
  "ctx/segment": true,
  "ctx/systemPrompt": true,
  "ctx/count": true,
  "ctx/trim": true,
  "ctx/session/open": true,
  "ctx/session/append": true,
  "ctx/session/addItem": true,
  "ctx/session/addRule": true,
  "ctx/session/removeRule": true,
  "ctx/session/setMode": true,
  "ctx/session/configure": true,
  "ctx/assemble": true,
  "ctx/session/compact": true,
  "ctx/session/reportUsage": true,
  "ctx/session/budget": true,
  "ctx/session/audit": true,
  "ctx/session/list": true,
  "ctx/session/close": true,
  "ctx/inspect": true,
  "ctx/prepare": true,
  "ctx/conversations": true,
  "ctx/why": true,
  "ctx/restore": true,
};
export const METHODS = Object.keys(REQUESTS) as (keyof Requests)[];
/** Requests the extension does without when a daemon of this protocol predates them: such a
 * daemon is not refused, and what the request would have done is said instead. */
export const OPTIONAL_METHODS: ReadonlySet<keyof Requests> = new Set(["ctx/session/configure"]);
export const NEEDED_METHODS = METHODS.filter((m) => !OPTIONAL_METHODS.has(m));

/** Whether the daemon announced `method` (an optional one may be missing). */
export function announces(announcement: ServerAnnouncement | undefined, method: keyof Requests): boolean {
  return announcement?.methods.includes(method) ?? false;
}

/** The announcement's fields without which the extension cannot show the daemon's figures. */
const NEEDED_FIELDS = ["protocolVersion", "methods", "model", "defaultBudget", "defaultMode", "modes"];

/** The announcement when it is complete and of this protocol, else the problem, as one line. */
export function checkAnnouncement(
  raw: unknown,
): { announcement: ServerAnnouncement; problem?: undefined } | { problem: string } {
  const update = "update ctxlayer (`pip install -U ctxlayer` where `ctxlayer.serverCommand` points)";
  const found = (raw ?? {}) as Partial<ServerAnnouncement>;
  if (found.protocolVersion !== PROTOCOL_VERSION) {
    const theirs = found.protocolVersion ? `protocol ${found.protocolVersion}` : "no protocol version";
    return {
      problem:
        `ctxlayer: this daemon speaks ${theirs}; the extension needs protocol ` +
        `${PROTOCOL_VERSION}: ${update}.`,
    };
  }
  const absentFields = NEEDED_FIELDS.filter((f) => (found as Record<string, unknown>)[f] == null);
  const methods = new Set(found.methods ?? []);
  const absent = [...absentFields, ...NEEDED_METHODS.filter((m) => !methods.has(m))];
  if (absent.length) {
    return {
      problem:
        `ctxlayer: this daemon is older than protocol ${PROTOCOL_VERSION} as the extension ` +
        `knows it (it lacks ${absent.join(", ")}): ${update}.`,
    };
  }
  return { announcement: found as ServerAnnouncement };
}

/**
 * A mode's room in words, as the settings' descriptions say it (editor_settings.py): the
 * working memory's share is of the mode's cap, not of the chat's budget, and the rules' share
 * limits nothing (rules are always shown whole), so it is not shown as a limit.
 */
export function modeRoom(info: ModeInfo): string {
  return (
    `working memory up to ${Math.round(info.workingShare * 100)}% of ` +
    `${info.cap.toLocaleString("en-US")} tokens, less what the rules take (rules are always shown whole)`
  );
}
