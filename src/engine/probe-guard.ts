import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { cpSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { categoryFromName } from "../core/probe-outcome.js";

/**
 * The engine's side of the gaming defences (issue 29; docs/sandbox.md, "Gaming defences"): the kit
 * copied under a per-evaluation package name behind its public one, the launcher each probe process
 * starts through, its configuration (on stdin, so it is in no environment and no file), and the
 * check that every results line of a kit-based probe carries the seal only the kit and the guard
 * can make.
 */

/** The public name probes import the kit by. */
export const KIT_PUBLIC_NAME = "probegate_probe";
/** The launcher file, beside the kit's packages. */
export const LAUNCHER = "probegate_launch.py";

/** Where the kit was copied for one evaluation. */
export interface MountedKit {
  /** The folder put on PYTHONPATH (holds the launcher, the kit's package and its public name). */
  dir: string;
  /** The kit's package name in this evaluation (what `probegate_probe` resolves to). */
  alias: string;
  launcher: string;
}

/** A per-evaluation package name: an identifier that says nothing about probes. */
export function kitAlias(): string {
  return `_m${randomBytes(5).toString("hex")}`;
}

/**
 * Copies the kit folder to `dest` with its package renamed to `alias`, and a `probegate_probe`
 * package that only hands out that one (so probes import it as always, and the guard can take the
 * public name out of sys.modules before the submission is imported). The caller locks it read-only.
 */
export function copyKit(kitDir: string, dest: string, alias = kitAlias()): MountedKit {
  cpSync(kitDir, dest, { recursive: true, filter: (p) => basename(p) !== "__pycache__" && basename(p) !== "tests" });
  renameSync(join(dest, KIT_PUBLIC_NAME), join(dest, alias));
  mkdirSync(join(dest, KIT_PUBLIC_NAME));
  writeFileSync(
    join(dest, KIT_PUBLIC_NAME, "__init__.py"),
    [
      "# The probe kit's public name: the kit itself lives under this evaluation's own package name.",
      "import importlib as _importlib",
      "import sys as _sys",
      "",
      `_kit = _importlib.import_module(${JSON.stringify(alias)})`,
      "for _name, _module in list(_sys.modules.items()):",
      `    if _name.startswith(${JSON.stringify(`${alias}.`)}):`,
      `        _sys.modules[${JSON.stringify(KIT_PUBLIC_NAME)} + _name[${alias.length}:]] = _module`,
      "_sys.modules[__name__] = _kit",
      "",
    ].join("\n"),
  );
  return { dir: dest, alias, launcher: join(dest, LAUNCHER) };
}

/**
 * The probe command run through the launcher: `python PROBE args` becomes `python LAUNCHER PROBE
 * args`. A command that does not name the probe file as an argument (a custom runner) is left as
 * it is, and gets no guard.
 */
export function launchedArgv(argv: readonly string[], probePath: string, launcher: string): { argv: string[]; launched: boolean } {
  const at = argv.indexOf(probePath);
  if (at < 1) return { argv: [...argv], launched: false };
  return { argv: [...argv.slice(0, at), launcher, ...argv.slice(at)], launched: true };
}

/** What the launcher reads on stdin (one JSON line). */
export interface GuardConfig {
  /** Hex key that seals every results line the kit and the guard write. */
  key: string;
  /** The kit's package name in this evaluation. */
  kit: string;
  /** The official command, expanded: the probe's sys.argv is made to look like its. */
  command: string[];
  /** The official run's PYTHONPATH, which the probe's environment shows once the submission runs. */
  pythonpath: string;
  workspace: string;
  /** Paths the submission must not look at (the kit, the probes, the results file). */
  watched: string[];
}

const SEALED = /^(\{.*), "seal": "([0-9a-f]{64})"\}$/;

function sealOk(body: string, seal: string, key: Buffer): boolean {
  const want = createHmac("sha256", key).update(body, "utf8").digest();
  const got = Buffer.from(seal, "hex");
  return got.length === want.length && timingSafeEqual(got, want);
}

/**
 * Checks the seals of one probe run's results and returns the text the probe protocol parser gets:
 * sealed lines without their seal, the kit's marker dropped, and every line that is not sealed by
 * the kit (once the kit announced itself) or carries a wrong seal replaced by a failed check
 * `<probe>.forged-line-N` — only code in the probe process, that is the submission, can have written
 * it. A probe that never imported the kit writes plain lines, which pass as they are.
 */
export function unsealResults(text: string, key: Buffer, probe: string): { text: string; forged: number } {
  const lines = text.split("\n");
  const parsed = lines.map((raw) => {
    const line = raw.trim();
    if (!line) return { kind: "blank" as const, line };
    const m = SEALED.exec(line);
    if (!m) return { kind: "plain" as const, line };
    const body = `${m[1]}}`;
    if (!sealOk(body, m[2] as string, key)) return { kind: "bad" as const, line };
    let marker = false;
    try {
      marker = (JSON.parse(body) as { probegate?: unknown }).probegate !== undefined;
    } catch {
      return { kind: "bad" as const, line };
    }
    return { kind: marker ? ("marker" as const) : ("sealed" as const), line: body };
  });
  const kit = parsed.some((p) => p.kind === "marker");
  const id = probe.replace(/_/g, "-").toLowerCase();
  let forged = 0;
  const out = parsed.map((p, i) => {
    if (p.kind === "blank" || p.kind === "marker") return "";
    if (p.kind === "sealed" || (p.kind === "plain" && !kit)) return p.line;
    forged++;
    return JSON.stringify({
      id: `${id}.forged-line-${i + 1}`,
      category: categoryFromName(probe),
      status: "failed",
      message: `results line ${i + 1} was not written by the probe kit (${p.kind === "bad" ? "its seal does not match" : "it has no seal"}): something else in the probe process — the submission — wrote or changed the probe's results`,
    });
  });
  return { text: out.filter((l) => l !== "").join("\n") + (out.length ? "\n" : ""), forged };
}

/** A fresh seal key for one probe run. */
export function sealKey(): Buffer {
  return randomBytes(32);
}
