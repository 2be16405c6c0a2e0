import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Evaluations spawn Python process trees; two cores are shared with them.
    maxWorkers: 2,
    // The committed bundles run through Node's own loader, exactly as on a runner (and untransformed).
    server: { deps: { external: [/\/dist\//] } },
  },
});
