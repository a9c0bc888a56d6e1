/**
 * Spawn a ctxlayer daemon over stdio and perform the LSP handshake (for tests, scripts and
 * tools without an LSP client library). Owns the child process and its connection; it does
 * not own request typing (client.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import {
  CtxlayerClient,
  CtxlayerError,
  DEFAULT_TIMEOUT_MS,
  isConnectionFailure,
  type ClientOptions,
  type RpcConnection,
} from "./client";
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

/**
 * Starts the daemon and initializes it. Rejects, and kills the process, when the daemon exits
 * first (a CtxlayerError of kind `connection_closed` with its exit code and last stderr line)
 * or does not answer within `timeoutMs` (kind `timeout`).
 */
export async function spawnDaemon(options: SpawnOptions): Promise<SpawnedDaemon> {
  const [cmd, ...args] = options.command;
  const child = spawn(cmd, args, {
    cwd: options.workspace,
    env: options.env ?? process.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
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
  let initializeResult: any;
  try {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    initializeResult = await answered(init, child, timeoutMs, stderr, [cmd, options.workspace]);
  } catch (err) {
    child.kill("SIGKILL");
    connection.dispose();
    throw err;
  }
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

/**
 * The answer to initialize, or why there is none: the process could not start (its command not
 * found), exited (with its code and last stderr line), or said nothing for `timeoutMs`.
 */
function answered(
  init: Promise<unknown>,
  child: ChildProcess,
  timeoutMs: number,
  stderr: StderrTail,
  [command, cwd]: [string, string],
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const failure = (message: string, kind: string) =>
      new CtxlayerError("initialize", undefined, message, { kind });
    const timer = setTimeout(
      () => fail(failure(`no answer in ${timeoutMs} ms`, "timeout")),
      timeoutMs,
    );
    let lost: ReturnType<typeof setTimeout> | undefined;
    const onClose = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(failure(stderr.exit(code, signal, " before answering initialize"), "connection_closed"));
    const onError = (err: NodeJS.ErrnoException) =>
      fail(failure(notStarted(err, command, cwd), "connection_closed"));
    const settle = () => {
      clearTimeout(timer);
      clearTimeout(lost);
      child.off("error", onError);
      child.off("close", onClose);
    };
    function fail(err: unknown) {
      settle();
      reject(err);
    }
    child.on("error", onError);
    child.on("close", onClose);
    init.then(
      (result) => {
        settle();
        resolve(result);
      },
      (err: { message?: string }) => {
        if (!isConnectionFailure(err)) return fail(err); // the daemon's own answer
        // a daemon that exited at once fails the write of initialize (EPIPE, a destroyed
        // stream) before its 'close' says why: the exit code and stderr come a moment later
        lost = setTimeout(
          () => fail(failure(`connection closed: ${err.message}`, "connection_closed")),
          EXIT_GRACE_MS,
        );
      },
    );
  });
}

/** How long a failed write waits for the process to say why it is gone. */
const EXIT_GRACE_MS = 2000;

/** Why the process did not start, in the user's terms (ENOENT: the command is not there). */
function notStarted(err: NodeJS.ErrnoException, command: string, cwd: string): string {
  if (err.code !== "ENOENT") return `the daemon could not be started: ${err.message}`;
  // Node says ENOENT for a missing working directory as well
  return existsSync(cwd)
    ? `the daemon command was not found: ${command}`
    : `the workspace folder does not exist: ${cwd}`;
}

/** The connection as CtxlayerClient sees it, minus onClose (see spawnDaemon). */
function withoutOnClose(connection: MessageConnection): RpcConnection {
  return {
    // vscode-jsonrpc takes an undefined last argument for a second parameter, not "no token"
    sendRequest: (method, params, token) =>
      token
        ? connection.sendRequest(method, params, token)
        : connection.sendRequest(method, params),
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
  /** "the daemon exited (code 2)<when>: <its last stderr line>" */
  exit(code: number | null, signal: NodeJS.Signals | null, when = ""): string {
    const line = this.text.trimEnd().split("\n").pop()?.trim();
    return `the daemon exited (${signal ?? `code ${code}`})${when}${line ? `: ${line}` : ""}`;
  }
}
