import { createServer } from "node:net";
import { nextPort } from "../../core/packing.js";
import type { RunnerClaims } from "../claims/runner-claims.js";
import { HarnessError } from "../errors.js";

/** Rendezvous ports handed to jobs: above torch's default 29500, which other software assumes. */
export const PORTS = { from: 29600, to: 29999 };

/** Whether nothing listens on 127.0.0.1:port now (so a rank 0 can bind it). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen({ port, host: "127.0.0.1", exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * A pool's rendezvous ports: handed out round-robin over the range, each claimed across the runner's
 * probegate processes (the claim folder) before it is checked free on 127.0.0.1, and given back when
 * the job that held it is released.
 */
export class RendezvousPorts {
  private readonly held = new Set<number>();
  private last: number;

  constructor(
    private readonly claims: RunnerClaims,
    private readonly range: { from: number; to: number } = PORTS,
  ) {
    this.last = range.from - 1;
  }

  async take(): Promise<number> {
    const { range } = this;
    for (let tries = 0; tries <= range.to - range.from; tries += 1) {
      const p = nextPort(this.held, this.last, range);
      if (p === null) break;
      this.last = p;
      this.held.add(p);
      // Claimed first (no other probegate process on this runner hands it out), then checked free.
      if (this.claims.claim(`port-${p}`)) {
        if (await portFree(p)) return p;
        this.claims.release(`port-${p}`);
      }
      this.held.delete(p);
    }
    throw new HarnessError(`no free rendezvous port in ${range.from}-${range.to} on 127.0.0.1`, "packing");
  }

  give(port: number): void {
    this.held.delete(port);
    this.claims.release(`port-${port}`);
  }
}
