/**
 * Which runner an evaluation is dispatched to: the smallest runner of the repository's `runners:`
 * map (GPU count → runner label or ARC scale-set name) with at least the GPUs the task needs.
 * ARC targets a scale set by its name alone, so the name is the whole `runs-on`.
 */
export type RunnerChoice = { ok: true; label: string; gpus: number } | { ok: false; why: string };

/** Picks the smallest runner that fits `gpus`; refuses, naming the largest, when none does. */
export function chooseRunner(gpus: number, runners: Readonly<Record<string, string>>): RunnerChoice {
  const sizes = Object.entries(runners)
    .map(([count, label]) => ({ count: Number(count), label }))
    .sort((a, b) => a.count - b.count);
  const fit = sizes.find((s) => s.count >= gpus);
  if (fit) return { ok: true, label: fit.label, gpus: fit.count };
  const largest = sizes[sizes.length - 1];
  return {
    ok: false,
    why: `the task needs ${gpus} GPU${gpus === 1 ? "" : "s"}, and the largest runner in \`runners:\` of .github/probegate.yml has ${largest?.count ?? 0} (${largest?.label ?? "none"}); add a runner with at least ${gpus}`,
  };
}
