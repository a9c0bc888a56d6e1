// An in-memory RpcConnection for unit tests: answers requests from handlers and lets the
// test push notifications. The e2e tests use the real daemon instead.
import type { RpcConnection } from "@ctxlayer/client";

export class FakeConnection implements RpcConnection {
  requests: [string, any][] = [];
  private notificationHandlers = new Map<string, (p: any) => void>();
  requestHandlers = new Map<string, (p: any) => unknown>();

  constructor(private readonly answers: Record<string, (params: any) => unknown>) {}

  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push([method, params]);
    const answer = this.answers[method];
    if (!answer) throw Object.assign(new Error(`Unhandled method ${method}`), { code: -32601 });
    return answer(params);
  }
  onNotification(method: string, handler: (p: any) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }
  onRequest(method: string, handler: (p: any) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params);
  }
  sent(method: string): any[] {
    return this.requests.filter(([m]) => m === method).map(([, p]) => p);
  }
}

export const budget = (used: number, limit: number, sessionId?: string) => ({
  used,
  limit,
  percent: (100 * used) / limit, // as the daemon sends it: a percentage
  byLayer: { system: 1000, workspace: used - 1000, rules: 0, working: 0, history: 0 },
  model: "gpt-4o",
  ...(sessionId ? { sessionId } : {}),
});
