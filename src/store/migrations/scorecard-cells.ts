import { BUCKETS, FLOOR } from "../../core/median-sketch.js";
import { CATEGORIES } from "../../core/probe-check.js";

/**
 * Migration 7's SQL: pre-counted scorecard cells, kept by triggers on scorecard_rows, so a scorecard
 * of a million attempts folds a few thousand rows instead of crossing every attempt into JS.
 *
 * `scorecard_cells`: per (agent, owner, repo, task, area, week, first/best flags) the attempts, their
 * verdicts, failed categories, timed attempts and GPU seconds: every figure but medians.
 * `scorecard_durations`: per (dimension, agent, key, duration bucket, flags) how many attempts took
 * that long, on MedianSketch's buckets (1% wide), for the slices past MedianSketch.EXACT_LIMIT
 * durations, whose median today's sketch already takes from those buckets. (Smaller slices read
 * their exact durations through the indexes below.) Dimensions: 1 repository, 2 task, 3 area, 4 week;
 * an agent's overall histogram is the sum of its repository ones. Keys that may be NULL (agent,
 * area, repository label) are stored json_quote'd so the primary keys hold no NULL.
 *
 * Triggers follow scorecard_rows (which migration 5's triggers keep), for INSERT, DELETE and any
 * UPDATE of a column the cells read; an update subtracts the old row and adds the new one.
 * The week index is floor((finished_at - 1970-01-05) / 1 week), as the core's weekOf. The bucket is
 * computed with SQLite's ln(), which agrees with V8's Math.log except within an ulp or so of a bucket
 * edge (test/store/scorecard-cells.test.ts measures it).
 */
const WEEK = (r: string) => `((${r}.finished_at - 345600000) / 604800000 - ((${r}.finished_at - 345600000) % 604800000 < 0))`;
const VALID = (r: string) => `(${r}.duration_s >= 0 AND ${r}.duration_s < 9e999)`;
const BUCKET = (r: string) => `(CASE WHEN ${r}.duration_s < ${FLOOR} THEN 0 ELSE min(${BUCKETS - 1}, 1 + CAST(floor(ln(${r}.duration_s / ${FLOOR}) / ln(1.01)) AS INTEGER)) END)`;
const REPO_LABEL = (r: string) => `(CASE WHEN ${r}.owner = '' OR ${r}.repo = '' THEN NULL ELSE ${r}.owner || '/' || ${r}.repo END)`;

const CAT_COLS = CATEGORIES.map((_, i) => `cat${i}`);
const SUM_COLS = ["n", "resolved", "rejected", "official_failed", "errors", ...CAT_COLS, "timed", "gpu"];
const KEY_COLS = ["agent_j", "owner", "repo", "task", "area_j", "wk", "flags"];

/** One row's contribution to its cell, times `sign`. */
function cellValues(r: string, sign: number): string[] {
  const s = (e: string) => (sign === 1 ? `(${e})` : `-(${e})`);
  return [
    `json_quote(${r}.agent)`, `${r}.owner`, `${r}.repo`, `${r}.task`, `json_quote(${r}.area)`, WEEK(r), `${r}.counted`,
    s("1"), s(`${r}.verdict_rank = 3`), s(`${r}.verdict_rank = 2`), s(`${r}.verdict_rank = 1`), s(`${r}.verdict_rank = 0`),
    ...CATEGORIES.map((_, i) => s(`(${r}.failed_mask >> ${i}) & 1`)),
    s(`COALESCE(${VALID(r)}, 0)`), s(`COALESCE(${r}.gpu_seconds, 0.0)`),
  ];
}

const cellUpsert = (r: string, sign: number) => `
    INSERT INTO scorecard_cells (${[...KEY_COLS, ...SUM_COLS].join(", ")}) VALUES (${cellValues(r, sign).join(", ")})
      ON CONFLICT DO UPDATE SET ${SUM_COLS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")};`;

const durationUpsert = (r: string, sign: number) => `
    INSERT INTO scorecard_durations (dim, agent_j, key_j, bucket, flags, n) VALUES
        ${[REPO_LABEL(r), `${r}.task`, `${r}.area`, WEEK(r)].map((k, i) => `(${i + 1}, json_quote(${r}.agent), json_quote(${k}), ${BUCKET(r)}, ${r}.counted, ${sign})`).join(",\n        ")}
      ON CONFLICT DO UPDATE SET n = n + excluded.n;`;

/** Columns whose change moves a row to another cell or changes what it adds. */
const CELL_COLS = ["agent", "owner", "repo", "task", "area", "finished_at", "counted", "verdict_rank", "failed_mask", "duration_s", "gpu_seconds"];
const DURATION_COLS = ["agent", "owner", "repo", "task", "area", "finished_at", "counted", "duration_s"];
const changed = (cols: string[]) => cols.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(" OR ");

export const SCORECARD_CELLS_SQL = `
  CREATE TABLE scorecard_cells (
    agent_j TEXT NOT NULL, owner TEXT NOT NULL, repo TEXT NOT NULL, task TEXT NOT NULL, area_j TEXT NOT NULL, wk INTEGER NOT NULL, flags INTEGER NOT NULL,
    n INTEGER NOT NULL, resolved INTEGER NOT NULL, rejected INTEGER NOT NULL, official_failed INTEGER NOT NULL, errors INTEGER NOT NULL,
    ${CAT_COLS.map((c) => `${c} INTEGER NOT NULL`).join(", ")}, timed INTEGER NOT NULL, gpu REAL NOT NULL,
    PRIMARY KEY (${KEY_COLS.join(", ")})
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE scorecard_durations (
    dim INTEGER NOT NULL, agent_j TEXT NOT NULL, key_j TEXT NOT NULL, bucket INTEGER NOT NULL, flags INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (dim, agent_j, key_j, bucket, flags)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX scorecard_rows_agent_task ON scorecard_rows (agent, task);
  CREATE INDEX scorecard_rows_agent_repo ON scorecard_rows (agent, owner, repo);
  CREATE INDEX scorecard_rows_agent_area ON scorecard_rows (agent, area);

  INSERT INTO scorecard_cells (${[...KEY_COLS, ...SUM_COLS].join(", ")})
    SELECT ${KEY_COLS.join(", ")}, ${SUM_COLS.map((c) => `SUM(${c})`).join(", ")}
    FROM (SELECT ${cellValues("r", 1).map((e, i) => `${e} AS ${[...KEY_COLS, ...SUM_COLS][i]}`).join(", ")} FROM scorecard_rows r)
    GROUP BY ${KEY_COLS.join(", ")};
  INSERT INTO scorecard_durations (dim, agent_j, key_j, bucket, flags, n)
    SELECT d.dim, json_quote(r.agent), json_quote(CASE d.dim WHEN 1 THEN ${REPO_LABEL("r")} WHEN 2 THEN r.task WHEN 3 THEN r.area ELSE ${WEEK("r")} END),
        ${BUCKET("r")}, r.counted, COUNT(*)
      FROM scorecard_rows r, (SELECT 1 AS dim UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) d
      WHERE ${VALID("r")}
      GROUP BY 1, 2, 3, 4, 5;

  CREATE TRIGGER scorecard_cells_insert AFTER INSERT ON scorecard_rows BEGIN${cellUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_cells_delete AFTER DELETE ON scorecard_rows BEGIN${cellUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_cells_update AFTER UPDATE ON scorecard_rows WHEN ${changed(CELL_COLS)} BEGIN${cellUpsert("OLD", -1)}${cellUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_durations_insert AFTER INSERT ON scorecard_rows WHEN ${VALID("NEW")} BEGIN${durationUpsert("NEW", 1)}
  END;
  CREATE TRIGGER scorecard_durations_delete AFTER DELETE ON scorecard_rows WHEN ${VALID("OLD")} BEGIN${durationUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_durations_update_old AFTER UPDATE ON scorecard_rows WHEN ${VALID("OLD")} AND (${changed(DURATION_COLS)}) BEGIN${durationUpsert("OLD", -1)}
  END;
  CREATE TRIGGER scorecard_durations_update_new AFTER UPDATE ON scorecard_rows WHEN ${VALID("NEW")} AND (${changed(DURATION_COLS)}) BEGIN${durationUpsert("NEW", 1)}
  END;
`;
