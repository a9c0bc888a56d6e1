/** One place that turns anything thrown into a one-line message. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
