import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from '../store/index.js';
import { serverSecrets } from './tables.js';

/**
 * Named secrets every replica shares without configuration: the first process that needs one
 * generates it (insert-if-absent, so concurrent first uses agree on one value), later reads are
 * served from memory. 256 random bits, base64url.
 */
export class ServerSecrets {
  private readonly cache = new Map<string, Promise<Buffer>>();

  constructor(private readonly db: Db) {}

  get(name: string): Promise<Buffer> {
    let secret = this.cache.get(name);
    if (!secret) {
      secret = this.load(name);
      secret.catch(() => this.cache.delete(name)); // a failed read is retried next time
      this.cache.set(name, secret);
    }
    return secret;
  }

  private async load(name: string): Promise<Buffer> {
    await this.db
      .insert(serverSecrets)
      .values({ name, value: randomBytes(32).toString('base64url') })
      .onConflictDoNothing();
    const [row] = await this.db.select().from(serverSecrets).where(eq(serverSecrets.name, name));
    if (!row) throw new Error(`server secret ${name} vanished after insert`);
    return Buffer.from(row.value, 'base64url');
  }
}
