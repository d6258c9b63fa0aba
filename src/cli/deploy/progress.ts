/** Bytes for people: 0 B, 512 B, 1.2 KB, 3.4 MB (powers of 1024). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export interface Output {
  write(text: string): void;
  isTTY: boolean;
  columns?: number;
}

/**
 * The upload's progress in files and bytes. On a terminal one line redrawn in place (at most every
 * 100 ms); elsewhere (CI logs, pipes) a plain line at each tenth of the files and at the end, so a
 * log shows progress without thousands of lines.
 */
export class Progress {
  private files = 0;
  private bytes = 0;
  private lastDecile = 0;
  private lastDraw = 0;
  private drawn = false;

  constructor(
    private readonly out: Output,
    private readonly totalFiles: number,
    private readonly totalBytes: number,
  ) {}

  /** One more file uploaded. */
  add(bytes: number): void {
    this.files++;
    this.bytes += bytes;
    const done = this.files === this.totalFiles;
    if (this.out.isTTY) {
      const now = Date.now();
      if (done || now - this.lastDraw >= 100) {
        this.lastDraw = now;
        this.redraw();
      }
      if (done) this.finishLine();
      return;
    }
    const decile = Math.floor((this.files * 10) / this.totalFiles);
    if (decile > this.lastDecile || done) {
      this.lastDecile = decile;
      this.out.write(`${this.text()}\n`);
    }
  }

  /** A note (a retry) on its own line, above the redrawn one on a terminal. */
  note(text: string): void {
    if (this.out.isTTY && this.drawn) this.out.write('\r\x1b[2K');
    this.out.write(`${text}\n`);
    if (this.out.isTTY && this.drawn) this.redraw();
  }

  /** Ends the redrawn line (after a failure too, so that the error starts on a fresh line). */
  finishLine(): void {
    if (this.out.isTTY && this.drawn) this.out.write('\n');
    this.drawn = false;
  }

  private text(): string {
    const share = this.totalBytes ? this.bytes / this.totalBytes : this.files / Math.max(1, this.totalFiles);
    const percent = Math.floor(share * 100);
    return `uploaded ${this.files}/${plural(this.totalFiles, 'file')}, ${formatBytes(this.bytes)} of ${formatBytes(this.totalBytes)} (${percent}%)`;
  }

  private redraw(): void {
    const share = this.totalBytes ? this.bytes / this.totalBytes : this.files / Math.max(1, this.totalFiles);
    const text = this.text();
    const columns = this.out.columns || 80;
    // The bar gives way to the words on a narrow terminal.
    const width = Math.min(24, columns - text.length - 4);
    const filled = Math.round(share * Math.max(0, width));
    const bar = width >= 5 ? `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ` : '';
    this.out.write(`\r\x1b[2K${`${bar}${text}`.slice(0, columns - 1)}`);
    this.drawn = true;
  }
}

export { plural };
