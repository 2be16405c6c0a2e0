import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { buildScorecard, type Scorecard } from "../core/scorecard.js";
import { renderScorecardHtml } from "../core/scorecard-html.js";
import type { StoreDb } from "./db.js";
import { countedAttempts, type ScorecardFilter } from "./scorecard-rows.js";

/** The HTML scorecard cannot be drawn here; the message says what is missing. */
export class ChartLibraryMissingError extends Error {
  override readonly name = "ChartLibraryMissingError";
}

let chartJs: string | undefined;

/**
 * Chart.js's browser build, inlined into scorecard pages so they open from a file or an intranet
 * with no network. Resolved at run time from the installed package (a dependency of probegate), not
 * bundled: the name is built so the bundler leaves it alone, and since its exports map hides dist/,
 * the path goes through the CommonJS entry, which sits in dist/ beside the browser build.
 */
export function chartJsSource(): string {
  if (chartJs !== undefined) return chartJs;
  const require = createRequire(import.meta.url);
  let file: string;
  try {
    file = join(dirname(require.resolve(["chart", "js"].join("."))), "chart.umd.min.js");
    chartJs = readFileSync(file, "utf8");
  } catch (e) {
    throw new ChartLibraryMissingError(`the HTML scorecard needs the chart.js package installed beside probegate (npm ci installs it): ${(e as Error).message}`);
  }
  return chartJs;
}

/** The scorecard of the counted attempts in the store. */
export function scorecardOf(db: StoreDb, filter: ScorecardFilter): Scorecard {
  return buildScorecard(countedAttempts(db, filter), filter.basis);
}

/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
export function scopeOf(filter: ScorecardFilter): string {
  return filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
}

/** A self-contained HTML scorecard page of the store (see `renderScorecardHtml`). */
export function scorecardPage(db: StoreDb, filter: ScorecardFilter, now: Date): string {
  return renderScorecardHtml(scorecardOf(db, filter), { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: now.toISOString(), scope: scopeOf(filter) });
}
