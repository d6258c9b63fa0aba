import type { TestProject } from 'vitest/node';
import { startMinio, type MinioServer } from './support/minio.js';
import { startPostgres, type PostgresServer } from './support/postgres.js';

const timed = async <T>(what: string, start: () => Promise<T>): Promise<T> => {
  const t0 = performance.now();
  const server = await start();
  console.log(`[global-setup] ${what} ready in ${Math.round(performance.now() - t0)} ms`);
  return server;
};

/** Starts the real PostgreSQL and MinIO every test run uses; failing to start either fails the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [postgres, minio] = await Promise.allSettled([
    timed('postgres', startPostgres),
    timed('minio', startMinio),
  ]);
  if (postgres.status === 'rejected' || minio.status === 'rejected') {
    const started: (PostgresServer | MinioServer)[] = [];
    const errors: unknown[] = [];
    for (const result of [postgres, minio]) {
      if (result.status === 'fulfilled') started.push(result.value);
      else errors.push(result.reason);
    }
    await Promise.all(started.map((server) => server.stop()));
    throw errors.length === 1
      ? errors[0]
      : new AggregateError(errors, 'postgres and minio both failed to start');
  }

  const { endpoint, accessKeyId, secretAccessKey, region } = minio.value;
  project.provide('postgresUrl', postgres.value.url);
  project.provide('s3', { endpoint, accessKeyId, secretAccessKey, region });

  return async () => {
    await Promise.all([postgres.value.stop(), minio.value.stop()]);
  };
}
