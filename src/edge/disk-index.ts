/**
 * What the edge's disk cache holds (blob hash → size), in order of last access, bounded by bytes.
 * Pure bookkeeping: the caller removes the files of what `reserve` evicts. Space for a fill in
 * flight is reserved before it starts, so the files on disk plus the fills never pass the bound.
 */
export class DiskIndex {
  /** Insertion order is access order: the first key is the least recently used. */
  private readonly entries = new Map<string, number>();
  private stored = 0;
  private reserved = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes of complete files. */
  get bytes(): number {
    return this.stored;
  }

  get size(): number {
    return this.entries.size;
  }

  has(hash: string): boolean {
    return this.entries.has(hash);
  }

  /** Marks a blob used now; false when it is not held. */
  touch(hash: string): boolean {
    const size = this.entries.get(hash);
    if (size === undefined) return false;
    this.entries.delete(hash);
    this.entries.set(hash, size);
    return true;
  }

  /**
   * Makes room for `size` more bytes by evicting the least recently used blobs; returns the
   * evicted hashes, or undefined (nothing evicted) when `size` cannot fit even in an empty cache
   * beside the fills already reserved.
   */
  reserve(size: number): string[] | undefined {
    if (size > this.maxBytes - this.reserved) return undefined;
    const evicted: string[] = [];
    for (const [hash, bytes] of this.entries) {
      if (this.stored + this.reserved + size <= this.maxBytes) break;
      this.entries.delete(hash);
      this.stored -= bytes;
      evicted.push(hash);
    }
    this.reserved += size;
    return evicted;
  }

  /** A reservation that did not become a file (a failed fill). */
  release(size: number): void {
    this.reserved = Math.max(0, this.reserved - size);
  }

  /** A reserved fill became a file (most recently used). */
  commit(hash: string, size: number): void {
    this.release(size);
    this.add(hash, size);
  }

  /**
   * A file found on disk (start-up, another process's fill): held as most recently used; returns
   * what had to be evicted to keep the bound (possibly the file itself, when it cannot fit).
   */
  add(hash: string, size: number): string[] {
    this.remove(hash);
    this.entries.set(hash, size);
    this.stored += size;
    const evicted: string[] = [];
    for (const [old, bytes] of this.entries) {
      if (this.stored + this.reserved <= this.maxBytes) break;
      this.entries.delete(old);
      this.stored -= bytes;
      evicted.push(old);
    }
    return evicted;
  }

  /** Forgets a blob (its file vanished); true when it was held. */
  remove(hash: string): boolean {
    const size = this.entries.get(hash);
    if (size === undefined) return false;
    this.entries.delete(hash);
    this.stored -= size;
    return true;
  }
}
