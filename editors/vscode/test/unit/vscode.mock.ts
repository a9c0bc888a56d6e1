// A stand-in for the `vscode` module (aliased in vitest.config.mts): records what the
// extension asked of the editor, so its logic runs without VS Code.
import { readFileSync } from "node:fs";
import { join } from "node:path";

type Listener = (...args: any[]) => unknown;

/** The manifest's setting defaults, which VS Code answers for settings the user left unset. */
const contributed: Record<string, { default?: unknown }> = JSON.parse(
  readFileSync(join(__dirname, "../../package.json"), "utf8"),
).contributes.configuration.properties;

export const recorded = {
  commands: new Map<string, Listener>(),
  executed: [] as unknown[][],
  errors: [] as { message: string; actions: string[] }[],
  infos: [] as string[],
  warnings: [] as string[],
  statusItems: [] as any[],
  panels: [] as any[],
  clipboard: "",
  settings: new Map<string, unknown>(),
  updates: [] as [string, unknown][],
  quickPickItems: [] as any[],
  nextQuickPick: undefined as string | undefined,
  nextInput: undefined as string | undefined,
  nextErrorChoice: undefined as string | undefined,
  workspaceFolder: "/work/project" as string | undefined,
  /** The workspace's further folders (a multi-root workspace), after workspaceFolder. */
  moreFolders: [] as string[],
  settingsListeners: [] as Listener[],
};

/** The user edited ctxlayer settings: VS Code's onDidChangeConfiguration for them. */
export function changeSettings(values: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(values)) recorded.settings.set(key, value);
  for (const l of recorded.settingsListeners) l({ affectsConfiguration: (s: string) => s === "ctxlayer" });
}

export function resetMock(): void {
  recorded.commands.clear();
  recorded.executed = [];
  recorded.errors = [];
  recorded.infos = [];
  recorded.warnings = [];
  recorded.statusItems = [];
  recorded.panels = [];
  recorded.clipboard = "";
  recorded.settings.clear();
  recorded.updates = [];
  recorded.quickPickItems = [];
  recorded.nextQuickPick = undefined;
  recorded.nextInput = undefined;
  recorded.nextErrorChoice = undefined;
  recorded.workspaceFolder = "/work/project";
  recorded.moreFolders = [];
  recorded.settingsListeners = [];
  chatModels.length = 0;
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ViewColumn {
  Active = -1,
}
export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}
export class MarkdownString {
  isTrusted = false;
  constructor(readonly value: string) {}
}
export class Uri {
  constructor(readonly fsPath: string) {}
  static parse(s: string) {
    return new Uri(s);
  }
}

function log() {
  const lines: string[] = [];
  const at = (level: string) => (msg: string) => lines.push(`${level} ${msg}`);
  return {
    lines,
    shown: 0,
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    debug: at("debug"),
    trace: at("trace"),
    appendLine: at("line"),
    show() {
      this.shown++;
    },
    dispose() {},
  };
}

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number) {
    const item = {
      id,
      alignment,
      priority,
      text: "",
      tooltip: undefined as unknown,
      backgroundColor: undefined as ThemeColor | undefined,
      command: undefined as string | undefined,
      name: "",
      visible: false,
      show() {
        this.visible = true;
      },
      hide() {
        this.visible = false;
      },
      dispose() {},
    };
    recorded.statusItems.push(item);
    return item;
  },
  createOutputChannel: (_name: string, _opts?: unknown) => log(),
  async showErrorMessage(message: string, ...actions: string[]) {
    recorded.errors.push({ message, actions });
    return recorded.nextErrorChoice;
  },
  async showInformationMessage(message: string) {
    recorded.infos.push(message);
    return undefined;
  },
  async showWarningMessage(message: string) {
    recorded.warnings.push(message);
    return undefined;
  },
  async showQuickPick(items: any[]) {
    recorded.quickPickItems = items;
    return items.find((i) => i.label === recorded.nextQuickPick);
  },
  async showInputBox() {
    return recorded.nextInput;
  },
  createWebviewPanel(viewType: string, title: string, column: unknown, options: unknown) {
    const disposed: Listener[] = [];
    const panel = {
      viewType, title, column, options, webview: { html: "" }, revealed: 0,
      reveal() { panel.revealed++; },
      onDidDispose(fn: Listener) { disposed.push(fn); return { dispose() {} }; },
      dispose() { for (const fn of disposed) fn(); },
    };
    recorded.panels.push(panel);
    return panel;
  },
};

export const commands = {
  registerCommand(id: string, fn: Listener) {
    recorded.commands.set(id, fn);
    return { dispose: () => recorded.commands.delete(id) };
  },
  async executeCommand(...args: unknown[]) {
    recorded.executed.push(args);
  },
};

export const workspace = {
  getConfiguration(section: string) {
    return {
      get: <T>(key: string, fallback?: T): T | undefined =>
        recorded.settings.has(key)
          ? (recorded.settings.get(key) as T)
          : ((contributed[`${section}.${key}`]?.default as T | undefined) ?? fallback),
      async update(key: string, value: unknown) {
        recorded.updates.push([key, value]);
        recorded.settings.set(key, value);
      },
    };
  },
  get workspaceFolders() {
    return recorded.workspaceFolder
      ? [recorded.workspaceFolder, ...recorded.moreFolders].map((f, index) => ({
          uri: new Uri(f),
          name: index ? `folder${index}` : "project",
          index,
        }))
      : undefined;
  },
  onDidChangeConfiguration(l: Listener) {
    recorded.settingsListeners.push(l);
    return { dispose() {} };
  },
};

export const env = {
  clipboard: {
    async writeText(text: string) {
      recorded.clipboard = text;
    },
  },
  async openExternal() {
    return true;
  },
};

// the language model classes as VS Code 1.139 has them (System is the proposed role Copilot sends)
export enum LanguageModelChatMessageRole {
  User = 1,
  Assistant = 2,
  System = 3,
}
export class LanguageModelTextPart {
  constructor(public value: string) {}
}
export class LanguageModelToolCallPart {
  constructor(
    public callId: string,
    public name: string,
    public input: object,
  ) {}
}
export class LanguageModelToolResultPart {
  constructor(
    public callId: string,
    public content: unknown[],
  ) {}
}
export class LanguageModelDataPart {
  constructor(
    public data: Uint8Array,
    public mimeType: string,
  ) {}
  static text(value: string, mime = "text/plain") {
    return new LanguageModelDataPart(new TextEncoder().encode(value), mime);
  }
}
export class LanguageModelToolResult {
  constructor(public content: unknown[]) {}
}
export class LanguageModelChatMessage {
  constructor(
    public role: LanguageModelChatMessageRole,
    content: string | unknown[],
    public name?: string,
  ) {
    this.content = typeof content === "string" ? [new LanguageModelTextPart(content)] : content;
  }
  content: unknown[];
  static User(content: string | unknown[], name?: string) {
    return new LanguageModelChatMessage(LanguageModelChatMessageRole.User, content, name);
  }
  static Assistant(content: string | unknown[], name?: string) {
    return new LanguageModelChatMessage(LanguageModelChatMessageRole.Assistant, content, name);
  }
}
export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (l: (e: T) => void) => {
    this.listeners.push(l);
    return { dispose: () => (this.listeners = this.listeners.filter((x) => x !== l)) };
  };
  fire(e: T) {
    for (const l of this.listeners) l(e);
  }
}
export class ThemeIcon {
  constructor(readonly id: string) {}
}

/** Chat models the editor offers (set by a test), each answering from `answer`. */
export const chatModels: any[] = [];
export const lm = {
  async selectChatModels(selector: { vendor?: string; id?: string } = {}) {
    return chatModels.filter(
      (m) => (!selector.vendor || m.vendor === selector.vendor) && (!selector.id || m.id === selector.id),
    );
  },
  onDidChangeChatModels: (_l: Listener) => ({ dispose() {} }),
  registerLanguageModelChatProvider: (_vendor: string, _provider: unknown) => ({ dispose() {} }),
  registerTool: (_name: string, _tool: unknown) => ({ dispose() {} }),
  tools: [] as any[],
};
export const chat = {
  createChatParticipant: (id: string, handler: unknown) => ({ id, handler, iconPath: undefined, dispose() {} }),
};
export class CancellationTokenSource {
  token = { isCancellationRequested: false };
}
