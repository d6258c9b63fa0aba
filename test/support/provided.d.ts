import type { MailpitEnv } from './mailpit.js';
import type { S3Env } from './minio.js';

// What test/global-setup.ts hands to the tests through `inject()`.
declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL to the `postgres` database of the throwaway server; see createDatabase(). */
    postgresUrl: string;
    /** The throwaway MinIO server; see createBucket(). */
    s3: S3Env;
    /** The shared Mailpit (SMTP sink): filter its messages by a recipient unique to the test. */
    mailpit: MailpitEnv;
  }
}
