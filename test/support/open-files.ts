import { readdirSync, readlinkSync } from 'node:fs';

/** The files this process holds open under `dir` (its /proc/self/fd links; Linux only). */
export function openFilesUnder(dir: string): string[] {
  return readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        // Closed between the listing and the read (the listing's own descriptor among them).
        return '';
      }
    })
    .filter((target) => target.startsWith(dir));
}
