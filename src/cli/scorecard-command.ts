import { existsSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Table from "cli-table3";
import { ChartLibraryMissingError, chartJsSource } from "../assets/chart-js.js";
import { isCounted, judgedByProbeSet, parseScorecardFilter, scopeOf, buildScorecard, type Scorecard, type ScorecardBasis, type ScorecardFilter } from "../core/scorecard/scorecard.js";
import { latestPerAgent, type EvaluationLine } from "../core/scorecard/scorecard-drilldown.js";
import { renderScorecardHtml } from "../core/scorecard/scorecard-html.js";
import { RANKING_HEAD, rankingCells, renderScorecardMarkdown } from "../core/scorecard/scorecard-markdown.js";
import { factsOfResults, type SkippedFile } from "../core/scorecard/scorecard-results.js";
import { formatRate } from "../core/wilson.js";
import { InputError } from "../engine/errors.js";
import { openStore } from "../store/db.js";
import { scorecardView } from "../store/scorecard-rows.js";
import { readResultsFolder } from "./results-folder.js";

export interface ScorecardFlags {
  db?: string;
  results?: string;
  keyEnv?: string;
  basis: ScorecardBasis;
  repo?: string;
  since?: string;
  /** Only attempts judged by this probe set (a commit or probe-set hash prefix). */
  probeSet?: string;
  format: "table" | "json" | "markdown" | "html";
  out?: string;
  serverUrl?: string;
  strict?: boolean;
}

type Io = { stdout: (s: string) => void; stderr: (s: string) => void };

/** What a scorecard was made of. */
interface Scored {
  card: Scorecard;
  drill: Map<string | null, EvaluationLine[]>;
  scope: string;
  skipped: SkippedFile[];
}

function fromStore(flags: ScorecardFlags, filter: ScorecardFilter): Scored {
  const file = resolve(flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite");
  if (!existsSync(file)) {
    throw new InputError(`no store at ${file}: point --db (or $PROBEGATE_DB) at the probegate app's SQLite file, or --results at a folder of result files.`, { file, field: "--db" });
  }
  let db;
  try {
    db = openStore(file);
  } catch (e) {
    throw new InputError(`${file}: not a probegate store (${(e as Error).message}).`, { file });
  }
  try {
    return { ...scorecardView(db, filter), scope: scopeOf(filter), skipped: [] };
  } finally {
    db.close();
  }
}

function fromResults(flags: ScorecardFlags, filter: ScorecardFilter, io: Io): Scored {
  const dir = flags.results as string;
  const keyName = flags.keyEnv ?? "PROBEGATE_SIGNING_KEY";
  const key = process.env[keyName];
  if (flags.keyEnv && !key) throw new InputError(`--key-env ${keyName}: that variable is not set, so no signature can be checked.`, { field: "--key-env" });
  const read = readResultsFolder(dir, { key, onProgress: (n, total) => io.stderr(`read ${n}/${total} result files\n`) });
  const probeSet = filter.probeSet;
  const { facts, lines, skipped } = factsOfResults(probeSet ? read.files.filter((f) => judgedByProbeSet(f.result, probeSet)) : read.files);
  const inScope = (l: EvaluationLine) => !filter.owner || (l.owner === filter.owner && (!filter.repo || l.repo === filter.repo));
  const since = filter.since?.getTime();
  const keep = facts.map((f, i) => inScope(lines[i] as EvaluationLine));
  const card = buildScorecard(facts.filter((_, i) => keep[i]), filter.basis, filter.since);
  const counted = lines.filter((l, i) => keep[i] && isCounted(facts[i]!, filter.basis, since));
  const all = [...read.skipped, ...skipped];
  const signed = key ? `, signatures checked with $${keyName}` : ", signatures not checked (no key given)";
  io.stderr(`${read.files.length} result file(s) read from ${dir}${signed}; ${all.length} left out${all.length ? ":" : ""}\n`);
  for (const s of all) io.stderr(`  ✗ ${s.file}: ${s.why}\n`);
  return { card, drill: latestPerAgent(counted), scope: `${scopeOf(filter)} in ${dir}`, skipped: all };
}

function terminalTable(card: Scorecard): string {
  const t = new Table({ head: RANKING_HEAD, style: { head: [], border: [] }, chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } });
  for (const a of [...card.agents, card.total]) t.push(rankingCells(a));
  return t.toString();
}

/**
 * `probegate scorecard`: how each agent does, from the app's store (`--db`) or from a folder of
 * result files (`--results`, for teams with only the Action). Tables on the terminal, JSON or
 * markdown for tools and job summaries, a self-contained HTML page with charts (`--format html`).
 * Files of a results folder that cannot count are listed with why; `--strict` then exits 1.
 */
export function scorecardCommand(flags: ScorecardFlags, io: Io, now = new Date()): number {
  if (flags.db && flags.results) throw new InputError("--db and --results: give one source, the app's store or a folder of result files.", { field: "--results" });
  const parsed = parseScorecardFilter(flags);
  if (!parsed.ok) throw new InputError(`--${parsed.field} ${parsed.message}.`, { field: `--${parsed.field}` });
  const filter = parsed.filter;
  const s = flags.results ? fromResults(flags, filter, io) : fromStore(flags, filter);
  let text: string;
  switch (flags.format) {
    case "json":
      text = `${JSON.stringify({ scope: s.scope, ...s.card, skipped: s.skipped }, null, 2)}\n`;
      break;
    case "markdown":
      text = `${renderScorecardMarkdown(s.card, { scope: s.scope, skipped: s.skipped })}\n`;
      break;
    case "html": {
      let chartJs: string;
      try {
        chartJs = chartJsSource();
      } catch (e) {
        if (e instanceof ChartLibraryMissingError) throw new InputError(`${e.message}; --format table, markdown or json work without it.`);
        throw e;
      }
      const serverUrl = flags.serverUrl ?? process.env.GITHUB_SERVER_URL ?? "https://github.com";
      text = renderScorecardHtml(s.card, { chartJs, title: "probegate scorecard", generatedAt: now.toISOString(), scope: s.scope, drill: s.drill, serverUrl, skipped: s.skipped });
      break;
    }
    default: {
      const t = s.card.total.figures;
      text = `${s.scope}: ${t.evaluations} evaluations; probes rejected ${formatRate(t.probeRejection)} of official-test passes\n${terminalTable(s.card)}\n`;
    }
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
  return flags.strict && s.skipped.length ? 1 : 0;
}
