/**
 * Runs a command that can stop early with what it has (validate --power): the first SIGTERM or
 * SIGINT aborts its signal; it returns its exit code then, and the process ends with it at once,
 * leaving the work it abandoned (job processes in a sandbox end with it). A second signal ends the
 * process as the signal would.
 */
export async function interruptible(run: (signal: AbortSignal) => Promise<number>): Promise<number> {
  const stop = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(128 + (sig === "SIGINT" ? 2 : 15));
    process.stderr.write(`\nprobegate: ${sig}: stopping; reporting what finished (again to stop at once)\n`);
    stop.abort(sig);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const code = await run(stop.signal);
    if (stop.signal.aborted) process.exit(code);
    return code;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
