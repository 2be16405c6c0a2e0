import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { ROOT, tmp } from "./helpers.js";

/**
 * The given folders of src/ (with their sub-folders) transpiled to JavaScript in a temp folder that sees the repository's
 * node_modules, for tests that need real separate processes: plain Node 20 cannot load the
 * TypeScript sources. Child scripts written into the returned folder import `./<dir>/<file>.js`.
 * (Not in helpers.ts, which every test file loads: typescript is large.)
 */
export function transpiledSources(dirs: readonly string[]): string {
  const out = tmp("pg-src-js-");
  writeFileSync(join(out, "package.json"), '{"type":"module"}\n');
  symlinkSync(join(ROOT, "node_modules"), join(out, "node_modules"), "dir");
  const copy = (dir: string): void => {
    mkdirSync(join(out, dir), { recursive: true });
    for (const e of readdirSync(join(ROOT, "src", dir), { withFileTypes: true })) {
      if (e.isDirectory()) {
        copy(join(dir, e.name));
        continue;
      }
      if (!e.name.endsWith(".ts")) continue;
      const js = ts.transpileModule(readFileSync(join(ROOT, "src", dir, e.name), "utf8"), {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
      }).outputText;
      writeFileSync(join(out, dir, e.name.replace(/\.ts$/, ".js")), js);
    }
  };
  for (const dir of dirs) copy(dir);
  return out;
}

/** Runs a Node script (one written into a `transpiledSources` folder) in a child process; its stdout, or its exit code and stderr as the error. */
export function runNodeScript(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${script} exited ${code}: ${err}`))));
  });
}
