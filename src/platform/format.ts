const units = ['B', 'KB', 'MB', 'GB', 'TB'];

/** Human-readable size in binary units: 0 B, 512 B, 1.5 KB, 500 MB. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const rounded = unit === 0 ? value : Math.round(value * 100) / 100;
  return `${rounded} ${units[unit]}`;
}

/** Share of a limit in percent, 0-100 with two decimals; 0 when the limit is unlimited. */
export function percentage(current: number, limit: number | null): number {
  if (limit === null || limit <= 0) return 0;
  return Math.min(100, Math.round((current / limit) * 10000) / 100);
}
