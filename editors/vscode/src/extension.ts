/**
 * Entry point: wires settings, the daemon, the status bar, the commands and the exported API.
 * No logic lives here (STYLE.md section 10).
 */
import { createHash } from "node:crypto";
import { createApi, type CtxlayerApi } from "./api";
import * as commands from "./commands";
import { CtxlayerModels, VENDOR } from "./chatModels";
import { BudgetController } from "./controller";
import { errorText } from "./errors";
import { DaemonServer } from "./server";
import { CtxlayerParticipant, PARTICIPANT_ID } from "./participant";
import { settingsChange, settingsWarning } from "./settings";
import { BudgetStatusItem } from "./statusBar";
import { summarize } from "./summarize";
import * as api from "./vscodeapi";
import { registerWorkspaceTool } from "./workspaceTool";

let server: DaemonServer | undefined;

export async function activate(context: api.ExtensionContext): Promise<CtxlayerApi> {
  const log = api.createLogChannel("ctxlayer");
  const status = new BudgetStatusItem();
  const workspace = api.workspaceFolder() ?? "no-workspace";
  const key = createHash("sha256").update(workspace).digest("hex").slice(0, 12);
  // a setting of the wrong kind is replaced by its default, said once (again only when the
  // problems change: a restart or a settings change reads them again)
  let saidSettings: string | undefined;
  const readSettings = (): api.Settings => {
    const problems: string[] = [];
    const read = api.readSettings(problems);
    const warning = settingsWarning(problems);
    if (warning !== undefined && warning !== saidSettings) {
      log.warn(warning);
      void api.showWarning(warning);
    }
    saidSettings = warning;
    return read;
  };
  let settings = readSettings();
  const controller = new BudgetController(status, settings, key);
  const daemon = new DaemonServer(log, {
    summarize: (params) => summarize(params, (prompt) => api.summarizeWithEditorModel(prompt)),
    onStarting: () => {
      controller.detach();
      status.showStarting();
    },
    onStarted: async (running) => {
      status.gateway = running.announcement.gateway;
      try {
        await controller.attach(running.client, running.announcement);
      } catch (err) {
        // e.g. the daemon refused a setting (-32602 naming it): said where the spinner was
        log.error(`reading the budget: ${errorText(err)}`);
        status.showProblem(
          "ctx error",
          `reading the budget failed: ${errorText(err)}. Check the ctxlayer settings, then run ` +
            '"ctxlayer: Restart".',
        );
      }
    },
    onStopped: (reason) => {
      controller.detach();
      status.showProblem("ctx off", `${reason}. Run "ctxlayer: Restart" or "ctxlayer: Show logs".`);
    },
  });
  server = daemon;
  const restart = () => {
    const next = readSettings();
    controller.updateSettings(next);
    return daemon.restart(next);
  };
  const deps = { controller, restart, log };
  const client = () => controller.requireClient();
  const models = new CtxlayerModels({
    client,
    log,
    // the status bar and the notice follow the daemon's ctx/budgetChanged of the chat
    onPrepared: () => undefined,
  });
  const participant = new CtxlayerParticipant({
    client,
    log,
    modes: () => controller.modes,
    onTurn: () => undefined, // the daemon publishes the assembled chat's budget, marked live
    onTools: (sessionId, tokens, window) => controller.toolsBeside(sessionId, tokens, window),
  });
  // the compaction notice comes once, from the daemon (a @ctxlayer chat says it in the chat)
  const notices = controller.onNotice((chat, text) => {
    if (chat.source !== "session") void commands.compactionNotice(deps, text, chat);
  });
  // the daemon's state folder failed beside a request (a full disk): said once per text
  const warnings = controller.onWarning((text) => void api.showWarning(`ctxlayer: ${text}`));
  context.subscriptions.push(
    notices,
    warnings,
    log,
    status,
    ...commands.register(deps),
    api.registerChatModelProvider(VENDOR, models),
    api.onDidChangeChatModels(() => {
      models.refresh().catch((err) => log.warn(`listing the chat models: ${errorText(err)}`));
    }),
    api.createChatParticipant(PARTICIPANT_ID, participant.handler, "layers"),
    registerWorkspaceTool(client),
    api.onSettingsChanged(() => {
      const next = readSettings();
      const changes = settingsChange(settings, next);
      settings = next;
      if (changes.includes("restart")) {
        log.info("settings changed: restarting the daemon");
        void restart();
        return;
      }
      if (changes.includes("trace")) void daemon.setTrace(next.trace);
      if (!controller.connected) {
        controller.updateSettings(next); // the session takes them when it opens
        return;
      }
      if (changes.includes("budget")) {
        controller.followBudgetSetting(next.budget).catch((err) => {
          log.error(`set budget: ${errorText(err)}`);
          void api.showError(errorText(err));
        });
      }
      if (changes.includes("mode")) {
        controller.followModeSetting(next.mode).catch((err) => log.error(`set mode: ${errorText(err)}`));
      }
    }),
  );
  daemon.start(settings).catch((err) => {
    log.error(`starting the daemon: ${errorText(err)}`);
    status.showProblem("ctx off", `the daemon did not start: ${errorText(err)}. Run "ctxlayer: Show logs".`);
  });
  models.refresh().catch((err) => log.warn(`listing the chat models: ${errorText(err)}`));
  return createApi(controller);
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
