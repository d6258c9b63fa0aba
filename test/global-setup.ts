import type { TestProject } from 'vitest/node';
import { startMailpit } from './support/mailpit.js';
import { startMinio } from './support/minio.js';
import { startPostgres } from './support/postgres.js';

const timed = async <T>(what: string, start: () => Promise<T>): Promise<T> => {
  const t0 = performance.now();
  const server = await start();
  console.log(`[global-setup] ${what} ready in ${Math.round(performance.now() - t0)} ms`);
  return server;
};

/**
 * Starts the real PostgreSQL, MinIO and Mailpit every test run uses; failing to start any of
 * them fails the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const results = await Promise.allSettled([
    timed('postgres', startPostgres),
    timed('minio', startMinio),
    timed('mailpit', startMailpit),
  ] as const);
  const [postgres, minio, mailpit] = results;
  if (postgres.status === 'rejected' || minio.status === 'rejected' || mailpit.status === 'rejected') {
    const errors: unknown[] = [];
    const stops: Promise<void>[] = [];
    if (postgres.status === 'fulfilled') stops.push(postgres.value.stop());
    else errors.push(postgres.reason);
    if (minio.status === 'fulfilled') stops.push(minio.value.stop());
    else errors.push(minio.reason);
    if (mailpit.status === 'fulfilled') stops.push(mailpit.value.close());
    else errors.push(mailpit.reason);
    await Promise.all(stops);
    throw errors.length === 1 ? errors[0] : new AggregateError(errors, 'test servers failed to start');
  }

  const { endpoint, accessKeyId, secretAccessKey, region } = minio.value;
  project.provide('postgresUrl', postgres.value.url);
  project.provide('s3', { endpoint, accessKeyId, secretAccessKey, region });
  project.provide('mailpit', { smtpUrl: mailpit.value.smtpUrl, apiUrl: mailpit.value.apiUrl });

  return async () => {
    await Promise.all([postgres.value.stop(), minio.value.stop(), mailpit.value.close()]);
  };
}
