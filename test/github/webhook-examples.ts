import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const examples = require("@octokit/webhooks-examples/api.github.com/index.json") as Array<{ name: string; examples: Array<Record<string, any>> }>;

/** A real payload from GitHub's webhook examples: the first of `event` matching `pick`. */
export function webhookExample(event: string, pick: (p: Record<string, any>) => boolean = () => true): Record<string, any> {
  const found = examples.find((e) => e.name === event)?.examples.find(pick);
  if (!found) throw new Error(`no ${event} example matches`);
  return structuredClone(found);
}
