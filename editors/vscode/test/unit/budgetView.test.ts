import { describe, expect, it } from "vitest";
import { compact, liveTooltip, severity, statusText, tooltip } from "../../src/budgetView";
import { budget } from "./fakeDaemon";

describe("status text", () => {
  it("reads like `ctx 42.1k / 128k (33%)`", () => {
    expect(statusText(budget(42_100, 128_000))).toBe("ctx 42.1k / 128k (33%)");
  });

  it.each([
    [0, "0"],
    [950, "950"],
    [1000, "1k"],
    [28_000, "28k"],
    [28_250, "28.3k"], // a tie rounds up (`ctxlayer chats` reads it so: test_token_figures.py)
    [42_100, "42.1k"],
    [99_950, "100k"],
    [111_600, "112k"],
    [1_125_000, "1.13M"],
    [128_000, "128k"],
    [1_048_576, "1.05M"],
    [2_000_000, "2M"],
    [999.6, "1k"],
    [999_499, "999k"],
    [999_600, "1M"],
  ])("compacts %d as %s", (n, text) => {
    expect(compact(n)).toBe(text);
  });

  it("shows the daemon's percentage, computing none of its own", () => {
    expect(statusText({ ...budget(50, 200), percent: 33 })).toBe("ctx 50 / 200 (33%)");
    expect(severity({ ...budget(50, 200), percent: 95 })).toBe("error");
  });
});

describe("severity", () => {
  // by the percent the text shows: 89.5% reads "(90%)" and was a warning (README: yellow from
  // 70%, red from 90%)
  it.each([
    [69_400, "(69%)", "ok"],
    [69_600, "(70%)", "warning"],
    [70_000, "(70%)", "warning"],
    [89_400, "(89%)", "warning"],
    [89_500, "(90%)", "error"],
    [89_960, "(90%)", "error"],
    [120_000, "(120%)", "error"],
  ])("%d of 100k reads %s and is %s", (used, shown, level) => {
    const b = { ...budget(used, 100_000), percent: Math.round(used / 100) / 10 }; // one decimal, as the daemon sends it
    expect(statusText(b)).toContain(shown);
    expect(severity(b)).toBe(level);
  });
});

describe("tooltip", () => {
  it("breaks the budget down by layer and says where compaction happens", () => {
    const text = tooltip({ ...budget(30_000, 100_000), nextCompactionAt: 70_000 }, "workspace");
    expect(text).toContain("| System | 1,000 |");
    expect(text).toContain("| Workspace | 29,000 |");
    expect(text).toContain("| History | 0 |");
    expect(text).toContain("Next compaction at 70,000 tokens (40,000 to go)");
    expect(text).toContain("gpt-4o");
  });

  it("says compaction is due past the daemon's threshold", () => {
    const text = tooltip({ ...budget(80_000, 100_000), nextCompactionAt: 70_000 }, "s");
    expect(text).toContain("History compaction is due (threshold 70,000 tokens).");
  });

  it("names no threshold when the daemon gives none", () => {
    for (const b of [{ ...budget(80_000, 128_000), nextCompactionAt: null }, budget(95_000, 128_000)]) {
      const text = tooltip(b, "s");
      expect(text).not.toMatch(/compaction/i);
      expect(text).not.toContain("89,600"); // 70% of the limit: not the daemon's figure
      expect(text).toMatch(/\*\* \|\n\nClick to show the context\.$/); // one blank line
    }
  });
});

describe("live tooltip", () => {
  const chat = (errorBand: number | null) => ({
    conversationId: "c1",
    source: "gateway",
    budget: { ...budget(12_300, 128_000), errorBand },
  });

  it("shows the daemon's error band, a fraction, as a percentage", () => {
    expect(liveTooltip(chat(0.0213))).toContain("Counts are within ±2% of the provider's.");
    expect(liveTooltip(chat(0.15))).toContain("±15%");
    expect(liveTooltip(chat(0.0213))).not.toContain("tokens of the provider's");
  });

  it("leaves the band out when there is none or it rounds to 0%", () => {
    expect(liveTooltip(chat(null))).not.toContain("Counts are within");
    expect(liveTooltip(chat(0.001))).not.toContain("Counts are within");
  });
});
