/**
 * The one module that imports `vscode`. Everything else takes these wrappers, so unit tests
 * can replace the `vscode` module (vitest alias) and the rest stays plain TypeScript.
 */
import * as vscode from "vscode";
import type { ControllerSettings } from "./controller";
import { checkedSetting } from "./settings";

export type { Disposable, ExtensionContext, LogOutputChannel, StatusBarItem } from "vscode";

export const StatusBarAlignment = vscode.StatusBarAlignment;

export function createStatusBarItem(id: string): vscode.StatusBarItem {
  return vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Right, 100);
}

export function createLogChannel(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function themeColor(id: string): vscode.ThemeColor {
  return new vscode.ThemeColor(id);
}

export function markdown(text: string): vscode.MarkdownString {
  const md = new vscode.MarkdownString(text);
  md.isTrusted = false;
  return md;
}

export function registerCommand(
  id: string,
  run: (...args: any[]) => unknown,
): vscode.Disposable {
  return vscode.commands.registerCommand(id, run);
}

export function executeCommand(id: string, ...args: unknown[]): Thenable<unknown> {
  return vscode.commands.executeCommand(id, ...args);
}

export interface Settings {
  model: string;
  budget: number | null;
  mode: ControllerSettings["mode"];
  serverCommand: string[];
  trace: "off" | "messages" | "verbose";
  /** Run the daemon's HTTP gateway, so chat tools outside VS Code show up as live chats. */
  gateway: { enabled: boolean; port: number };
}

/**
 * The settings, each defaulting to package.json's value (VS Code answers it for an unset one):
 * the daemon's defaults are written there by `python -m ctxlayer.editor_settings`, so none is
 * repeated here. VS Code hands over a hand-edited settings.json as it is (a budget of "64000",
 * a command as one string): such a value is replaced by the default and its problem added to
 * `problems` (settings.ts says it in one message).
 */
export function readSettings(problems: string[] = []): Settings {
  const c = vscode.workspace.getConfiguration("ctxlayer");
  const get = <T>(key: string): T => checkedSetting<T>(key, (k) => c.get(k), problems);
  return {
    model: get<string>("model"),
    budget: get<number | null>("budget") ?? null,
    mode: get<Settings["mode"]>("mode") ?? null, // unset: the workspace's default
    serverCommand: get<string[]>("serverCommand"),
    trace: get<Settings["trace"]>("trace.server"),
    gateway: { enabled: get<boolean>("gateway.enabled"), port: get<number>("gateway.port") },
  };
}

export function updateSetting(key: string, value: unknown): Thenable<void> {
  return vscode.workspace
    .getConfiguration("ctxlayer")
    .update(key, value, vscode.ConfigurationTarget.Workspace);
}

export function onSettingsChanged(listener: () => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration("ctxlayer")) listener();
  });
}

/** The daemon's workspace: the first folder of a multi-root workspace. */
export function workspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** Every folder of the workspace, the daemon's (the first) first. */
export function workspaceFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

export function showError(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(message, ...actions);
}

export function showInfo(message: string): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message);
}

export function showWarning(message: string): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message);
}

export function showQuickPick<T extends vscode.QuickPickItem>(
  items: T[],
  placeHolder: string,
): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, { placeHolder });
}

export function showInputBox(prompt: string, placeHolder?: string): Thenable<string | undefined> {
  return vscode.window.showInputBox({ prompt, placeHolder });
}

export function copyToClipboard(text: string): Thenable<void> {
  return vscode.env.clipboard.writeText(text);
}

export function openExternal(url: string): Thenable<boolean> {
  return vscode.env.openExternal(vscode.Uri.parse(url));
}

export type InspectorPanel = Pick<vscode.WebviewPanel, "webview" | "reveal" | "onDidDispose">;

export function createInspectorPanel(title: string): vscode.WebviewPanel {
  return vscode.window.createWebviewPanel("ctxlayer.inspector", title, vscode.ViewColumn.Active, {
    enableScripts: true,
    localResourceRoots: [],
  });
}

/** Summarize with the editor's own language model; undefined when none is available. */
export async function summarizeWithEditorModel(
  prompt: string,
  token?: vscode.CancellationToken,
): Promise<string | undefined> {
  const lm = (vscode as any).lm as typeof vscode.lm | undefined;
  if (!lm?.selectChatModels) return undefined;
  const [model] = await lm.selectChatModels({});
  if (!model) return undefined;
  const response = await model.sendRequest(
    [vscode.LanguageModelChatMessage.User(prompt)],
    {},
    token ?? new vscode.CancellationTokenSource().token,
  );
  let text = "";
  for await (const part of response.text) text += part;
  return text;
}

// --- chat: language models, participants, tools -------------------------------------------------

export type {
  CancellationToken,
  ChatContext,
  ChatRequest,
  ChatResponseStream,
  ChatResult,
  LanguageModelChat,
  LanguageModelChatInformation,
  LanguageModelChatProvider,
  LanguageModelChatRequestMessage,
  LanguageModelChatTool,
  LanguageModelResponsePart,
  Progress,
  ProvideLanguageModelChatResponseOptions,
} from "vscode";

export const LanguageModelChatMessage = vscode.LanguageModelChatMessage;
export const LanguageModelChatMessageRole = vscode.LanguageModelChatMessageRole;
export const LanguageModelTextPart = vscode.LanguageModelTextPart;
export const LanguageModelToolCallPart = vscode.LanguageModelToolCallPart;
export const LanguageModelToolResultPart = vscode.LanguageModelToolResultPart;
export const LanguageModelDataPart = vscode.LanguageModelDataPart;
export const LanguageModelToolResult = vscode.LanguageModelToolResult;
export type LanguageModelChatMessage = vscode.LanguageModelChatMessage;
export type LanguageModelTextPart = vscode.LanguageModelTextPart;
export type LanguageModelToolCallPart = vscode.LanguageModelToolCallPart;
export type LanguageModelToolResultPart = vscode.LanguageModelToolResultPart;
export type LanguageModelDataPart = vscode.LanguageModelDataPart;

/** The system role Copilot Chat sends (a proposed API): 3 when the running editor has it. */
export function systemRole(): number | undefined {
  return (vscode.LanguageModelChatMessageRole as unknown as { System?: number }).System;
}

export function newCancellation(): vscode.CancellationTokenSource {
  return new vscode.CancellationTokenSource();
}

export function selectChatModels(
  selector: vscode.LanguageModelChatSelector = {},
): Thenable<vscode.LanguageModelChat[]> {
  return vscode.lm.selectChatModels(selector);
}

export function onDidChangeChatModels(listener: () => void): vscode.Disposable {
  return vscode.lm.onDidChangeChatModels(listener);
}

export function registerChatModelProvider(
  vendor: string,
  provider: vscode.LanguageModelChatProvider,
): vscode.Disposable {
  return vscode.lm.registerLanguageModelChatProvider(vendor, provider);
}

export function createChatParticipant(
  id: string,
  handler: vscode.ChatRequestHandler,
  icon?: string,
): vscode.ChatParticipant {
  const participant = vscode.chat.createChatParticipant(id, handler);
  if (icon) participant.iconPath = new vscode.ThemeIcon(icon);
  return participant;
}

export function registerTool<T>(name: string, tool: vscode.LanguageModelTool<T>): vscode.Disposable {
  return vscode.lm.registerTool(name, tool);
}

/** The tools other extensions registered, as a chat request offers them to a model. */
export function availableTools(): vscode.LanguageModelChatTool[] {
  return vscode.lm.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
  }));
}

export function invokeTool(
  name: string,
  input: object,
  toolInvocationToken: vscode.ChatParticipantToolToken | undefined,
  token: vscode.CancellationToken,
): Thenable<vscode.LanguageModelToolResult> {
  return vscode.lm.invokeTool(name, { input, toolInvocationToken }, token);
}

export function showInfoWith(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message, ...actions);
}

export function eventEmitter<T>(): vscode.EventEmitter<T> {
  return new vscode.EventEmitter<T>();
}
