// The extension's secret rule (src/secrets.ts, for the files it reads from the window's other
// folders) leaves out exactly the files the daemon's leaves out (workspace/attachments.py),
// with the daemon's words: both are asked about the same files on disk, links included.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { secretReason } from "../../src/secrets";

const repo = resolve(__dirname, "../../../..");
const python =
  process.env.CTXLAYER_PYTHON ??
  (existsSync(join(repo, ".venv/bin/python")) ? join(repo, ".venv/bin/python") : "python3");

const FILES = [
  ".env", ".ENV", ".env.local", ".env.example", ".Env.Sample", "prod.env", "prod.env.bak",
  ".envrc", "id_rsa", "id_rsa.pub", "ID_ED25519", "cert.pem", "tls/server.KEY", "store.jks",
  "credentials", "Credentials.md", ".npmrc", ".netrc", "README.md", "src/app.py", ".gitignore",
  ".git/config", "src/.ssh/known_hosts", ".SSH/config", ".aws/config", ".kube/config",
  "docs/.docker/config.json", "docs/.gnupg/pubring.kbx", "git/config", "env/settings.py",
  "misc/.aws", // a file named as a secret folder: its folders say, not its name
];
/** Links a cloned repo may ship, to the files above. */
const LINKS: Record<string, string> = {
  "notes.txt": ".env", "cfg.ini": ".git/config", "keys.txt": "cert.pem", "readme.txt": "README.md",
  "aws.txt": ".aws/config", "kube": ".kube", "kube.txt": "kube/config",
};

/** What the daemon says of each file: why it is not shown, or null (read_attachments). */
function daemonVerdicts(root: string, paths: string[]): Record<string, string | null> {
  const script = [
    "import json, sys",
    "from pathlib import Path",
    "from ctxlayer.workspace.attachments import read_attachments",
    "root, paths = Path(sys.argv[1]), json.loads(sys.argv[2])",
    "out = read_attachments(root, [(p, p) for p in paths])",
    "print(json.dumps({p: out[p][len('(not shown: '):-1]",
    "                  if out[p].startswith('(not shown: ') else None for p in paths}))",
  ].join("\n");
  const args = ["-c", script, root, JSON.stringify(paths)];
  return JSON.parse(execFileSync(python, args, { encoding: "utf8" }));
}

describe("the extension's secret rule is the daemon's", () => {
  it("leaves out the same attached files, saying the same why", () => {
    const root = mkdtempSync(join(tmpdir(), "ctxlayer-secrets-"));
    for (const rel of FILES) {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), `${rel}\n`);
    }
    for (const [link, target] of Object.entries(LINKS)) {
      symlinkSync(join(root, target), join(root, link));
    }
    const paths = [...FILES, ...Object.keys(LINKS).filter((l) => l !== "kube")];
    const daemon = daemonVerdicts(root, paths);
    const ours = Object.fromEntries(
      paths.map((p) => {
        const path = join(root, p);
        return [p, secretReason(path, root, realpathSync(path), realpathSync(root)) ?? null];
      }),
    );
    expect(ours).toEqual(daemon);
    // the comparison is not of two empty verdicts: the daemon refuses most, reads some
    const refused = Object.values(daemon).filter((v) => v !== null).length;
    expect(refused).toBeGreaterThan(15);
    expect(daemon["README.md"]).toBeNull();
    expect(daemon["notes.txt"]).toMatch(/^a link to \.env, which may hold secrets/);
  });
});
