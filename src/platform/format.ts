const units = ['B', 'KB', 'MB', 'GB', 'TB'];

/** Human-readable size in binary units: 0 B, 512 B, 1.5 KB, 500 MB. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  let rounded = unit === 0 ? value : Math.round(value * 100) / 100;
  // 1048575 B is 1023.999 KB: rounding reaches 1024, which reads as the next unit.
  if (rounded >= 1024 && unit < units.length - 1) {
    rounded = 1;
    unit += 1;
  }
  return `${rounded} ${units[unit]}`;
}

/**
 * Share of a limit in percent, 0-100, truncated (not rounded) to two decimals so it never
 * reports a threshold such as 80 % before it is reached; 0 when the limit is unlimited.
 */
export function percentage(current: number, limit: number | null): number {
  if (limit === null || limit <= 0) return 0;
  return Math.min(100, Math.floor((current * 10000) / limit) / 100);
}
