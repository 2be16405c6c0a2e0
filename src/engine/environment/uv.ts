import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { HarnessError } from "../errors.js";

/** The uv version probegate is tested with; the install hint names it. */
export const UV_VERSION = "0.13.8";

/** uv: `$PROBEGATE_UV`, else `uv` on PATH; a HarnessError saying how to install it where there is none. */
export function findUv(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.PROBEGATE_UV;
  const candidates = explicit ? [explicit] : (env.PATH ?? "").split(":").filter(Boolean).map((d) => join(d, "uv"));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  throw new HarnessError(
    explicit
      ? `PROBEGATE_UV names ${explicit}, which is not an executable file. Point it at uv, or install uv: python3 -m pip install uv==${UV_VERSION}`
      : `the task declares an environment, and building it needs uv, which is not on PATH. Install it (python3 -m pip install uv==${UV_VERSION}; with Debian's python3 add --break-system-packages, which puts it in /usr/local/bin) or set PROBEGATE_UV to its path.`,
    "environment",
  );
}

/** What uv runs with: never download an interpreter (the base is a system one), plain output. */
export function uvEnv(): Record<string, string> {
  return { UV_PYTHON_DOWNLOADS: "never", NO_COLOR: "1", UV_NO_PROGRESS: "1" };
}

const uvVersions = new Map<string, Promise<string>>();

/** `uv --version`'s number (cached per process). */
export function uvVersion(uv: string): Promise<string> {
  let v = uvVersions.get(uv);
  if (!v) {
    v = execa(uv, ["--version"], { reject: false, timeout: 30_000 }).then((r) => (r.exitCode === 0 ? (String(r.stdout).trim().split(/\s+/)[1] ?? "unknown") : "unknown"));
    uvVersions.set(uv, v);
  }
  return v;
}

/** One uv command's outcome: its exit code and stderr (uv writes its progress and errors there). */
export interface UvRun {
  exitCode: number;
  stderr: string;
}

/**
 * Runs uv, passing on the summary lines of its output ("Resolved 30 packages", "Downloading torch
 * (858.1MiB)", "Installed 30 packages in 2.1s") as they come: the rest is long and says nothing to
 * a person waiting. `cwd`: where relative file arguments are read (and so how uv's annotations name them).
 */
export async function runUv(uv: string, args: readonly string[], onLine: (line: string) => void, timeoutS: number, cwd?: string): Promise<UvRun> {
  const child = execa(uv, args, { reject: false, timeout: timeoutS * 1000, env: uvEnv(), stdin: "ignore", all: false, cwd });
  let stderr = "";
  let partial = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    partial += chunk.toString();
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) if (/^\s*(Resolved|Downloading|Prepared|Installed|Uninstalled|Audited|warning)\b/.test(l)) onLine(l.trim());
  });
  const r = await child;
  if (r.timedOut) return { exitCode: 124, stderr: `${stderr}\nerror: uv ${args[0]} ${args[1] ?? ""} did not finish in ${timeoutS} s` };
  return { exitCode: typeof r.exitCode === "number" ? r.exitCode : 1, stderr };
}
