/**
 * Spawn a ctxlayer daemon over stdio and perform the LSP handshake (for tests, scripts and
 * tools without an LSP client library). Owns the child process and its connection; it does
 * not own request typing (client.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { CtxlayerClient, type ClientOptions, type RpcConnection } from "./client";
import type { InitializationOptions } from "./protocol.generated";

export interface SpawnOptions extends ClientOptions {
  /** Daemon command line, e.g. ["ctxlayer", "serve"]. */
  command: string[];
  /** The workspace folder. */
  workspace: string;
  initializationOptions?: InitializationOptions;
  /** Declare that this client answers ctx/summarize. */
  summarize?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Receives the daemon's stderr (its log). */
  onStderr?: (chunk: string) => void;
}

export interface SpawnedDaemon {
  client: CtxlayerClient;
  connection: MessageConnection;
  process: ChildProcess;
  initializeResult: any;
  /** Sends a save notification for a file, as an editor does after writing it. */
  didSave(path: string): void;
  /** shutdown + exit, then waits for the process (kills it after 5 s). */
  close(): Promise<number | null>;
}

export async function spawnDaemon(options: SpawnOptions): Promise<SpawnedDaemon> {
  const [cmd, ...args] = options.command;
  const child = spawn(cmd, args, {
    cwd: options.workspace,
    env: options.env ?? process.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  const spawnError = new Promise<never>((_, reject) => child.on("error", reject));
  const stderr = new StderrTail();
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (d: string) => {
    stderr.add(d);
    options.onStderr?.(d);
  });
  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout!),
    new StreamMessageWriter(child.stdin!),
  );
  connection.listen();
  // Told by the process, not the connection, that the daemon is gone: the process knows
  // the exit code, and 'close' comes once its stderr is read to the end.
  const client = new CtxlayerClient(withoutOnClose(connection), options);
  child.on("close", (code, signal) => client.connectionClosed(stderr.exit(code, signal)));
  child.on("error", (err) => client.connectionClosed(`the daemon process failed: ${err.message}`));
  const rootUri = pathToFileURL(options.workspace).toString();
  const init = connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri,
    workspaceFolders: [{ uri: rootUri, name: "workspace" }],
    capabilities: {
      experimental: { ctxlayer: { summarize: options.summarize ?? false } },
    },
    initializationOptions: options.initializationOptions ?? {},
  });
  const initializeResult = await Promise.race([init, spawnError]);
  await connection.sendNotification("initialized", {});
  return {
    client,
    connection,
    process: child,
    initializeResult,
    didSave(path: string) {
      void connection.sendNotification("textDocument/didSave", {
        textDocument: { uri: pathToFileURL(path).toString() },
      });
    },
    async close() {
      const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
      try {
        await Promise.race([connection.sendRequest("shutdown"), exited]);
        await connection.sendNotification("exit");
      } catch {
        child.kill("SIGTERM");
      }
      const code = await exited;
      clearTimeout(kill);
      connection.dispose();
      return code;
    },
  };
}

/** The connection as CtxlayerClient sees it, minus onClose (see spawnDaemon). */
function withoutOnClose(connection: MessageConnection): RpcConnection {
  return {
    sendRequest: (method, params) => connection.sendRequest(method, params),
    onNotification: (method, handler) => connection.onNotification(method, handler),
    onRequest: (method, handler) => connection.onRequest(method, handler),
  };
}

/** The end of the daemon's stderr, for saying why it exited. */
class StderrTail {
  private text = "";
  add(chunk: string): void {
    this.text = (this.text + chunk).slice(-4096);
  }
  /** "the daemon exited (code 2): <its last stderr line>" */
  exit(code: number | null, signal: NodeJS.Signals | null): string {
    const line = this.text.trimEnd().split("\n").pop()?.trim();
    return `the daemon exited (${signal ?? `code ${code}`})${line ? `: ${line}` : ""}`;
  }
}
