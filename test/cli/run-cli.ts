import { main } from "../../src/cli/main.js";

/** Runs the CLI in-process, as `probegate <argv…>`, capturing what it prints and its exit code. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}
