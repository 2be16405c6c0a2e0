import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ChartLibraryMissingError, chartJsSource } from "../assets/chart-js.js";
import { parseScorecardFilter, scopeOf, type ScorecardFilter } from "../core/scorecard/scorecard.js";
import { renderScorecardHtml } from "../core/scorecard/scorecard-html.js";
import type { StoreDb } from "../store/db.js";
import { scorecardOf, scorecardView } from "../store/scorecard-rows.js";

/** Where the scorecard dashboard is served. */
export const DASHBOARD_PATH = "/probegate/scorecard";

export interface Dashboard {
  db: StoreDb;
  /** The password of HTTP Basic auth (any user name); null: the dashboard is off. */
  token: string | null;
  now?: () => Date;
  /** Where the page's PR links point (GitHub Enterprise: its URL); default https://github.com. */
  serverUrl?: string;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Whether `header` is HTTP Basic auth whose password is `token` (compared in constant time). */
export function authorized(header: string | undefined, token: string): boolean {
  const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header ?? "");
  if (!m) return false;
  const decoded = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return false;
  return timingSafeEqual(digest(decoded.slice(colon + 1)), digest(token));
}

/** The scorecard filter of a dashboard URL's query (`basis`, `repo`, `since`); a string says what is wrong. */
export function filterOf(query: URLSearchParams): ScorecardFilter | string {
  const parsed = parseScorecardFilter({ basis: query.get("basis"), repo: query.get("repo"), since: query.get("since"), probeSet: query.get("probe-set") });
  return parsed.ok ? parsed.filter : `${parsed.field} ${parsed.message}`;
}

function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers }).end(body);
}

/**
 * Serves the org's scorecard from the store: `GET /probegate/scorecard` (an HTML page with charts)
 * and `/probegate/scorecard.json`, filtered by `?basis=&repo=&since=`. The scorecard names
 * repositories and agents, so it is behind HTTP Basic auth with `PROBEGATE_DASHBOARD_TOKEN` as the
 * password, and off without one. Returns false for any other path (the webhook middleware's).
 */
export function handleDashboard(d: Dashboard, req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname !== DASHBOARD_PATH && url.pathname !== `${DASHBOARD_PATH}.json`) return false;
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, 405, "text/plain; charset=utf-8", "probegate: the scorecard answers GET only\n", { allow: "GET, HEAD" });
    return true;
  }
  if (d.token === null) {
    send(res, 404, "text/plain; charset=utf-8", "probegate: the scorecard dashboard is off; set PROBEGATE_DASHBOARD_TOKEN to turn it on\n");
    return true;
  }
  if (!authorized(req.headers.authorization, d.token)) {
    send(res, 401, "text/plain; charset=utf-8", "probegate: the scorecard needs the dashboard token as the password (HTTP Basic auth)\n", {
      "www-authenticate": 'Basic realm="probegate scorecard", charset="UTF-8"',
    });
    return true;
  }
  const filter = filterOf(url.searchParams);
  if (typeof filter === "string") {
    send(res, 400, "text/plain; charset=utf-8", `probegate: ${filter}\n`);
    return true;
  }
  const now = d.now?.() ?? new Date();
  try {
    if (url.pathname.endsWith(".json")) {
      send(res, 200, "application/json", `${JSON.stringify({ scope: scopeOf(filter), ...scorecardOf(d.db, filter) })}\n`);
    } else {
      // The page's only script is its own inline one: nothing may load from elsewhere.
      const { card, drill } = scorecardView(d.db, filter);
      const page = renderScorecardHtml(card, { chartJs: chartJsSource(), title: "probegate scorecard", generatedAt: now.toISOString(), scope: scopeOf(filter), drill, serverUrl: d.serverUrl });
      send(res, 200, "text/html; charset=utf-8", page, {
        "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:",
      });
    }
  } catch (e) {
    const why = e instanceof ChartLibraryMissingError ? e.message : "the store could not be read";
    send(res, 500, "text/plain; charset=utf-8", `probegate: ${why}\n`);
  }
  return true;
}
