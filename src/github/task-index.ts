import { parse } from "yaml";
import type { GitHubClient } from "./client.js";
import { repoRef, type Evaluator } from "./evaluator.js";

/** The task's GPU count could not be read from the evaluator repository. */
export class TaskGpusError extends Error {
  override readonly name = "TaskGpusError";
}

/** What the app reads of a task in the evaluator repository. */
export interface TaskFacts {
  /** The GPUs the task needs (its own `gpus`, or a probe's, whichever is more). */
  gpus: number;
  /** `base: { pr: true }`: a repository gate, which a `paths:` route should name. */
  repositoryGate: boolean;
}

/**
 * The GPUs a task needs, read from `<tasksPath>/<task>/task.yml` in the evaluator repository at
 * the commit the evaluation is keyed by (so the count is the one the evaluator will run with):
 * the task's `gpus` (default 1, as the task schema says), or more when a probe listed there asks
 * for more. The app has no task specs of its own; the evaluator repository is where they live.
 */
export async function taskGpus(gh: GitHubClient, ev: Evaluator & { tasksPath: string }, commit: string, task: string): Promise<number> {
  return (await taskFacts(gh, ev, commit, task)).gpus;
}

/** The task's GPU count (as `taskGpus`) and whether it is a repository gate, from its task.yml in the evaluator repository. */
export async function taskFacts(gh: GitHubClient, ev: Evaluator & { tasksPath: string }, commit: string, task: string): Promise<TaskFacts> {
  const path = `${ev.tasksPath.replace(/\/+$/, "")}/${task}/task.yml`;
  let text: string;
  try {
    const { data } = await gh.rest.repos.getContent({ ...repoRef(ev.repository), path, ref: commit });
    if (Array.isArray(data) || data.type !== "file" || !("content" in data)) throw new TaskGpusError(`${ev.repository}/${path} is not a file`);
    text = Buffer.from(data.content, "base64").toString("utf8");
  } catch (e) {
    if ((e as { status?: number }).status === 404) {
      throw new TaskGpusError(`${ev.repository} has no ${path} at ${commit.slice(0, 12)}: declare the GPU count on the route (\`gpus:\`) or set \`evaluator.tasksPath\``);
    }
    throw e;
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new TaskGpusError(`${ev.repository}/${path} is not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  const spec = (doc ?? {}) as { gpus?: unknown; probes?: unknown; base?: { pr?: unknown } | null };
  const own = spec.gpus === undefined ? 1 : spec.gpus;
  if (typeof own !== "number" || !Number.isInteger(own) || own < 0) throw new TaskGpusError(`${ev.repository}/${path}: \`gpus\` is ${JSON.stringify(own)}, not a whole number`);
  return { gpus: Math.max(own, ...probeJobGpus(spec.probes)), repositoryGate: spec.base?.pr === true };
}

/** The GPUs each probe job of task.yml's `probes:` asks for (`probes.jobs.<name>.gpus`): a runner must hold the largest. */
export function probeJobGpus(probes: unknown): number[] {
  const jobs = probes && typeof probes === "object" && !Array.isArray(probes) ? (probes as { jobs?: unknown }).jobs : undefined;
  const list = Array.isArray(probes) ? probes : jobs && typeof jobs === "object" ? Object.values(jobs as Record<string, unknown>) : [];
  return list.map((j) => (j && typeof j === "object" && typeof (j as { gpus?: unknown }).gpus === "number" ? (j as { gpus: number }).gpus : 0));
}
