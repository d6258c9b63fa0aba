import { execFileSync } from 'node:child_process';

/** Debian's headless Chromium (installed by test/tools/build.sh); a missing one is a failure. */
export function chromiumPath(): string {
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {
      // try the next name
    }
  }
  throw new Error('chromium is not installed: run `bash test/tools/build.sh` (or apt-get install chromium)');
}
