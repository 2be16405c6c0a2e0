#!/usr/bin/env node
import { main } from "./main.js";

// A reader that stops early (`probegate merge-power … | head`) closes the pipe: what is left to
// print is dropped and the process is stopped as by SIGTERM (a command that can stop early ends
// with what it has, src/cli/main.ts), instead of an unhandled EPIPE and a stack trace.
let closed = false;
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code !== "EPIPE") throw err;
  if (!closed) process.kill(process.pid, "SIGTERM");
  closed = true;
});

const code = await main(process.argv.slice(2), {
  stdout: (s) => {
    if (!closed) process.stdout.write(s);
  },
  stderr: (s) => process.stderr.write(s),
});
process.exitCode = code;
