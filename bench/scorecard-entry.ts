// What bench/scorecard.mjs measures, bundled from source by rolldown at the start of the bench (so
// it times the code as it is, with no dist/ rebuild): the store's own open, scorecard and GROUP BY.
export { chartJsSource } from "../src/assets/chart-js.js";
export { renderScorecardHtml } from "../src/core/scorecard/scorecard-html.js";
export { openStore, schemaVersion } from "../src/store/db.js";
export { MIGRATIONS } from "../src/store/migrations/index.js";
export { scorecardOf, scorecardRows, scorecardScan, scorecardView } from "../src/store/scorecard-rows.js";
