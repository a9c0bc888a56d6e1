import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Unit tests replace the `vscode` module; the e2e tests never import it.
export default defineConfig({
  resolve: {
    alias: { vscode: fileURLToPath(new URL("./test/unit/vscode.mock.ts", import.meta.url)) },
  },
  test: {
    include: ["test/unit/**/*.test.ts", "test/e2e/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
