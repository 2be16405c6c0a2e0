import { existsSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Table from "cli-table3";
import { parseScorecardFilter, percent, renderScorecardMarkdown, VERDICT_ORDER, type Scorecard, type ScorecardBasis } from "../core/scorecard.js";
import { InputError } from "../engine/errors.js";
import { openStore } from "../store/db.js";
import { renderScorecardHtml } from "../core/scorecard-html.js";
import { ChartLibraryMissingError, chartJsSource, scopeOf, scorecardOf } from "../store/scorecard-page.js";

export interface ScorecardFlags {
  db?: string;
  basis: ScorecardBasis;
  repo?: string;
  since?: string;
  format: "table" | "json" | "markdown" | "html";
  out?: string;
}

function terminalTable(card: Scorecard): string {
  const t = new Table({
    head: ["agent", "subm.", "resolved", "caught by probes", "official failed", "error", "resolved rate", "caught rate"],
    style: { head: [], border: [] },
    chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" },
  });
  for (const a of [...card.agents, card.total]) {
    t.push([a.agent, a.submissions, ...VERDICT_ORDER.map((v) => a.verdicts[v]), percent(a.resolvedRate), percent(a.caughtRate)]);
  }
  return t.toString();
}

/**
 * `probegate scorecard`: how each agent does, from the app's store. Tables on the terminal, JSON or
 * markdown for tools, and a self-contained HTML page with charts (`--format html --out page.html`).
 */
export function scorecardCommand(flags: ScorecardFlags, io: { stdout: (s: string) => void; stderr: (s: string) => void }, now = new Date()): number {
  const file = resolve(flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite");
  if (!existsSync(file)) {
    throw new InputError(`no store at ${file}: point --db (or $PROBEGATE_DB) at the probegate app's SQLite file.`, { file, field: "--db" });
  }
  const parsed = parseScorecardFilter(flags);
  if (!parsed.ok) throw new InputError(`--${parsed.field} ${parsed.message}.`, { field: `--${parsed.field}` });
  const filter = parsed.filter;
  let db;
  try {
    db = openStore(file);
  } catch (e) {
    throw new InputError(`${file}: not a probegate store (${(e as Error).message}).`, { file });
  }
  let card: Scorecard;
  let page = "";
  try {
    card = scorecardOf(db, filter);
    if (flags.format === "html") page = renderScorecardHtml(card, { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: now.toISOString(), scope: scopeOf(filter) });
  } catch (e) {
    if (e instanceof ChartLibraryMissingError) throw new InputError(`${e.message}; --format table, markdown or json work without it.`);
    throw e;
  } finally {
    db.close();
  }
  const scope = scopeOf(filter);
  let text: string;
  switch (flags.format) {
    case "json":
      text = `${JSON.stringify({ scope, since: filter.since?.toISOString() ?? null, ...card }, null, 2)}\n`;
      break;
    case "markdown":
      text = `${renderScorecardMarkdown(card)}\n`;
      break;
    case "html":
      text = page;
      break;
    default:
      text = `${scope}: ${card.total.submissions} submissions, ${percent(card.total.caughtRate)} of official-test passes caught by probes\n${terminalTable(card)}\n`;
  }
  if (flags.out) {
    const out = resolve(flags.out);
    if (!existsSync(dirname(out))) throw new InputError(`--out ${out}: the folder ${dirname(out)} does not exist.`, { field: "--out" });
    const tmp = `${out}.tmp-${process.pid}`;
    writeFileSync(tmp, text);
    renameSync(tmp, out);
    io.stderr(`scorecard written to ${out}\n`);
  } else {
    io.stdout(text);
  }
  return 0;
}
