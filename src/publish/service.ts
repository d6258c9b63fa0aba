import { randomBytes } from 'node:crypto';
import { and, eq, gt, lte, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { tempPages } from './tables.js';
import { tempPagesSweptTotal } from './metrics.js';

export const TEMP_PAGE_TTL_MS = 60 * 60 * 1000;
export const MAX_TEMP_HTML_BYTES = 1024 * 1024;
const PUBLISH_LOCK_KEY = 0x7075626c; // "publ"

/** Temporary pages: one HTML document each, public for 60 minutes, then refused and swept. */
export class PublishService {
  constructor(
    private readonly db: Db,
    /** Platform-wide ceiling on live temporary pages: anonymous publishing cannot fill the store. */
    private readonly cap: { pages: number; bytes: number } = { pages: 10_000, bytes: 1024 ** 3 },
  ) {}

  async publish(html: string, title?: string): Promise<{ id: string; expiresAt: Date }> {
    const id = randomBytes(12).toString('base64url');
    const expiresAt = new Date(Date.now() + TEMP_PAGE_TTL_MS);
    const bytes = Buffer.byteLength(html, 'utf8');
    await dbOp('publish_temp_page', () =>
      this.db.transaction(async (tx) => {
        // One lock orders the count-then-insert of every replica, so the cap is exact.
        await tx.execute(sql`select pg_advisory_xact_lock(${PUBLISH_LOCK_KEY})`);
        const [live] = await tx
          .select({
            pages: sql<number>`count(*)::int`,
            bytes: sql<number>`coalesce(sum(octet_length(${tempPages.html})), 0)::bigint`,
          })
          .from(tempPages)
          .where(gt(tempPages.expiresAt, sql`now()`));
        if ((live?.pages ?? 0) + 1 > this.cap.pages || Number(live?.bytes ?? 0) + bytes > this.cap.bytes) {
          throw new AppError('CAPACITY', {
            message: 'Temporary publishing is at capacity right now; try again in a few minutes.',
            retryAfterSeconds: 300,
          });
        }
        await tx.insert(tempPages).values({ id, html, title, expiresAt });
      }),
    );
    return { id, expiresAt };
  }

  /** The page's HTML while it has not expired; expiry is checked here, not only by the sweeper. */
  async view(id: string): Promise<string | undefined> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return undefined;
    const [page] = await dbOp('view_temp_page', () =>
      this.db
        .select({ html: tempPages.html })
        .from(tempPages)
        .where(and(eq(tempPages.id, id), gt(tempPages.expiresAt, sql`now()`))),
    );
    return page?.html;
  }

  async sweepExpired(): Promise<number> {
    const rows = await dbOp('sweep_temp_pages', () =>
      this.db
        .delete(tempPages)
        .where(lte(tempPages.expiresAt, sql`now()`))
        .returning({ id: tempPages.id }),
    );
    tempPagesSweptTotal.inc(rows.length);
    return rows.length;
  }
}
