import { defineConfig } from "vitest/config";

// The one test in a real VS Code (code-server + Debian's Chromium): slow, run on its own.
export default defineConfig({
  test: {
    include: ["test/real/**/*.test.ts"],
    testTimeout: 240_000,
    hookTimeout: 240_000,
    fileParallelism: false,
  },
});
