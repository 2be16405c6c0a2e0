import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The HTML scorecard cannot be drawn here; the message says what is missing. */
export class ChartLibraryMissingError extends Error {
  override readonly name = "ChartLibraryMissingError";
}

let chartJs: string | undefined;

/**
 * Chart.js's browser build, inlined into scorecard pages so they open from a file or an intranet
 * with no network. Read by the shells that serve or write a page (the CLI, the app's dashboard),
 * never by the store or the core. Resolved at run time from the installed package (a dependency of
 * probegate), not bundled: the name is built so the bundler leaves it alone, and since its exports
 * map hides dist/, the path goes through the CommonJS entry, which sits in dist/ beside the
 * browser build.
 */
export function chartJsSource(): string {
  if (chartJs !== undefined) return chartJs;
  const require = createRequire(import.meta.url);
  try {
    const file = join(dirname(require.resolve(["chart", "js"].join("."))), "chart.umd.min.js");
    chartJs = readFileSync(file, "utf8");
  } catch (e) {
    throw new ChartLibraryMissingError(`the HTML scorecard needs the chart.js package installed beside probegate (npm ci installs it): ${(e as Error).message}`);
  }
  return chartJs;
}
