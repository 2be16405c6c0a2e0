/** Byte sizes written the way people write them in YAML: `512`, `64KiB`, `8GiB`, `1.5GB`. */
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Parses a size; returns undefined when the text is not one (the caller names the field). */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  if (!m) return undefined;
  const unit = (m[2] ?? "").toLowerCase() || "b";
  const factor = UNITS[unit];
  if (factor === undefined) return undefined;
  return Math.floor(Number(m[1]) * factor);
}

/** `67108864` → `64.0 MiB`; for messages and tables. */
export function formatBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  if (abs < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = bytes / 1024;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** `83.456` → `1m 23.5s`; `0.25` → `0.25s`. */
export function formatSeconds(seconds: number): string {
  if (seconds < 1) return `${seconds.toFixed(2)}s`;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const m = Math.floor(seconds / 60);
  return `${m}m ${(seconds - m * 60).toFixed(1)}s`;
}
