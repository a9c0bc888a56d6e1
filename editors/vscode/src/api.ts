/**
 * The API other extensions (chat participants) get from
 * `vscode.extensions.getExtension("ctxlayer.ctxlayer").exports`: assemble, trim, count,
 * prepare and onBudgetChanged, all on the daemon this extension runs.
 */
import type {
  AssembleParams,
  AssembleResult,
  Budget,
  CountParams,
  CountResult,
  Disposable,
  PrepareParams,
  PrepareResult,
  TrimParams,
  TrimResult,
} from "@ctxlayer/client";
import type { BudgetController } from "./controller";

export interface CtxlayerApi {
  /** Assemble the workspace session's context (sessionId defaults to it). */
  assemble(params?: Partial<AssembleParams>): Promise<AssembleResult>;
  /** Fit a conversation into a budget (model defaults to the `ctxlayer.model` setting). */
  trim(params: TrimParams): Promise<TrimResult>;
  count(params: CountParams): Promise<CountResult>;
  /** Fit the provider request a chat is about to send (ctx/prepare); the status bar follows it. */
  prepare(params: PrepareParams): Promise<PrepareResult>;
  /** Called with every new budget of the workspace session. */
  onBudgetChanged(listener: (budget: Budget) => void): Disposable;
  /** The latest budget, if one is known. */
  readonly budget: Budget | undefined;
}

export function createApi(controller: BudgetController): CtxlayerApi {
  return {
    assemble: (params) => controller.assemble(params),
    trim: (params) => controller.trim(params),
    count: (params) => controller.count(params),
    // the daemon publishes the prepared chat's budget (marked live): the status bar follows it
    prepare: (params) => controller.requireClient().prepare(params),
    onBudgetChanged: (listener) => controller.onBudgetChanged(listener),
    get budget() {
      return controller.budget;
    },
  };
}
