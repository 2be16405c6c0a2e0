/**
 * Bad input from the user: a task file, a submission, a flag. The CLI prints `message` as one
 * paragraph and exits 2; nothing partial is written.
 */
export class InputError extends Error {
  override readonly name = "InputError";
  constructor(
    message: string,
    readonly where?: { file?: string; field?: string; line?: number },
  ) {
    super(message);
  }
}

/** The harness itself failed (missing interpreter, broken probe, runner fault): verdict `error`, exit 3. */
export class HarnessError extends Error {
  override readonly name = "HarnessError";
  constructor(
    message: string,
    readonly phase: string,
  ) {
    super(message);
  }
}
