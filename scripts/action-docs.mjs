// Writes the README's Action inputs/outputs tables from action.yml, between marker comments, so
// the two are never written twice. `--check` fails instead of writing when the README is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const action = parse(readFileSync(join(root, "action.yml"), "utf8"));
const cell = (s) => String(s ?? "").replace(/\|/g, "\\|").replace(/\n/g, " ").trim();
const rows = [
  "| input | required | default | description |",
  "| --- | --- | --- | --- |",
  ...Object.entries(action.inputs).map(([k, v]) => `| \`${k}\` | ${v.required ? "yes" : "no"} | ${v.default ? `\`${cell(v.default)}\`` : ""} | ${cell(v.description)} |`),
  "",
  "| output | description |",
  "| --- | --- |",
  ...Object.entries(action.outputs).map(([k, v]) => `| \`${k}\` | ${cell(v.description)} |`),
];
const START = "<!-- action-docs:start (generated from action.yml by npm run docs) -->";
const END = "<!-- action-docs:end -->";
const readme = readFileSync(join(root, "README.md"), "utf8");
const a = readme.indexOf(START);
const b = readme.indexOf(END);
if (a < 0 || b < a) throw new Error(`README.md lacks the markers ${START} … ${END}`);
const next = `${readme.slice(0, a + START.length)}\n${rows.join("\n")}\n${readme.slice(b)}`;
if (process.argv.includes("--check")) {
  if (next !== readme) {
    console.error("README.md's Action tables differ from action.yml: run `npm run docs` and commit.");
    process.exit(1);
  }
  console.log("README.md's Action tables match action.yml.");
} else writeFileSync(join(root, "README.md"), next);
