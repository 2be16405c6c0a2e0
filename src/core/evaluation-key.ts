/**
 * The evaluation key: one final check run and one store row per (repository, head SHA, task,
 * probe-set version). It is the check run's external_id, so it stays short and printable.
 */
export function evaluationKey(k: { owner: string; repo: string; headSha: string; task: string; probeSet: string }): string {
  const probes = k.probeSet.replace(/^sha256:/, "").slice(0, 16);
  return `${k.owner}/${k.repo}@${k.headSha}:${k.task}:${probes}`;
}
