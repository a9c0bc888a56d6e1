/**
 * The daemon's rule on files that may hold secrets (server/ctxlayer/workspace/selected.py, as
 * workspace/attachments.py applies it to an attached file), for the files the extension reads
 * itself: those a question attaches from the window's other folders, which the daemon never
 * sees. The lists are the daemon's, generated (secretRule.generated.ts), and the reasons are
 * its words; test/e2e/secrets.test.ts compares the verdicts with the daemon's on real files.
 */
import { basename, isAbsolute, relative, sep } from "node:path";
import {
  ENV_TEMPLATES,
  SECRET_FOLDERS,
  SECRET_NAMES,
  SECRET_SUFFIXES,
  SECRETS,
} from "./secretRule.generated";

/** Whether a file of this name may hold secrets (selected.may_hold_secrets). */
export function mayHoldSecrets(name: string): boolean {
  const lower = name.toLowerCase();
  if (ENV_TEMPLATES.includes(lower)) return false;
  return (
    SECRET_NAMES.includes(lower) ||
    lower.startsWith(".env.") ||
    lower.endsWith(".env") ||
    SECRET_SUFFIXES.some((suffix) => lower.endsWith(suffix))
  );
}

/** The folder of `path` that holds secrets, if any (selected.in_secret_folder): counted from
 * `root` when the path is in it, as the root's own path says nothing of its files. */
export function inSecretFolder(path: string, root: string): string | undefined {
  const rel = relative(root, path);
  const inside = rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
  const parts = (inside ? rel : path).split(sep).filter(Boolean);
  return parts.slice(0, -1).find((part) => SECRET_FOLDERS.includes(part));
}

/**
 * Why the attached file `path` of the folder `root` is never sent, else undefined (the
 * daemon's attachments._secret): its own name or folder, or those of the file it resolves to,
 * `real` in `realRoot` (a cloned repo's `notes.txt -> .env` or `cfg -> .git/config`).
 */
export function secretReason(
  path: string,
  root: string,
  real: string,
  realRoot: string,
): string | undefined {
  const name = basename(path);
  if (mayHoldSecrets(name)) return `${name} ${SECRETS}`;
  const folder = inSecretFolder(path, root);
  if (folder) return `the files of ${folder}/ ${SECRETS}`;
  const realName = basename(real);
  if (mayHoldSecrets(realName)) return `a link to ${realName}, which ${SECRETS}`;
  const realFolder = inSecretFolder(real, realRoot);
  return realFolder ? `a link into ${realFolder}/, whose files ${SECRETS}` : undefined;
}
