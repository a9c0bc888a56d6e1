/** The status-bar item: shows a Budget with its colour and tooltip, or a problem. */
import type { Budget } from "@ctxlayer/client";
import { severity, statusText, tooltip } from "./budgetView";
import type { BudgetSink } from "./controller";
import * as api from "./vscodeapi";

export class BudgetStatusItem implements BudgetSink {
  readonly item: api.StatusBarItem;

  constructor() {
    this.item = api.createStatusBarItem("ctxlayer.budget");
    this.item.name = "ctxlayer budget";
    this.item.command = "ctxlayer.showContext";
    this.item.text = "ctx $(sync~spin)";
    this.item.tooltip = "ctxlayer: starting the daemon";
    this.item.show();
  }

  showBudget(budget: Budget, source: string): void {
    this.item.text = statusText(budget);
    this.item.tooltip = api.markdown(tooltip(budget, source));
    const level = severity(budget);
    this.item.backgroundColor =
      level === "error"
        ? api.themeColor("statusBarItem.errorBackground")
        : level === "warning"
          ? api.themeColor("statusBarItem.warningBackground")
          : undefined;
  }

  showProblem(text: string, detail: string): void {
    this.item.text = `$(warning) ${text}`;
    this.item.tooltip = `ctxlayer: ${detail}`;
    this.item.backgroundColor = api.themeColor("statusBarItem.errorBackground");
  }

  dispose(): void {
    this.item.dispose();
  }
}
