import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Evaluations spawn Python process trees; two cores are shared with them.
    maxWorkers: 2,
  },
});
