// A stand-in for the `vscode` module (aliased in vitest.config.mts): records what the
// extension asked of the editor, so its logic runs without VS Code.
type Listener = (...args: any[]) => unknown;

export const recorded = {
  commands: new Map<string, Listener>(),
  executed: [] as unknown[][],
  errors: [] as { message: string; actions: string[] }[],
  infos: [] as string[],
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
};

export function resetMock(): void {
  recorded.commands.clear();
  recorded.executed = [];
  recorded.errors = [];
  recorded.infos = [];
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
  async showQuickPick(items: any[]) {
    recorded.quickPickItems = items;
    return items.find((i) => i.label === recorded.nextQuickPick);
  },
  async showInputBox() {
    return recorded.nextInput;
  },
  createWebviewPanel(viewType: string, title: string, column: unknown, options: unknown) {
    const panel = { viewType, title, column, options, webview: { html: "" }, dispose() {} };
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
  getConfiguration(_section: string) {
    return {
      get: <T>(key: string, fallback: T): T =>
        recorded.settings.has(key) ? (recorded.settings.get(key) as T) : fallback,
      async update(key: string, value: unknown) {
        recorded.updates.push([key, value]);
        recorded.settings.set(key, value);
      },
    };
  },
  get workspaceFolders() {
    return recorded.workspaceFolder
      ? [{ uri: new Uri(recorded.workspaceFolder), name: "project", index: 0 }]
      : undefined;
  },
  onDidChangeConfiguration: (_l: Listener) => ({ dispose() {} }),
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

export const lm = undefined;
export const LanguageModelChatMessage = { User: (text: string) => ({ role: "user", text }) };
export class CancellationTokenSource {
  token = { isCancellationRequested: false };
}
