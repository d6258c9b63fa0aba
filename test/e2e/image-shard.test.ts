import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { jsonRequest, rawRequest } from '../support/hostplane.js';
import { replicatedShardEnv } from '../support/litestream.js';
import { createBucket } from '../support/minio.js';
import {
  execIn,
  hardenBundle,
  hostplaneArchive,
  imageRecipe,
  litestreamArchive,
  litestreamBinDir,
  litestreamValues,
  podVolume,
  removeContainer,
  requireRuncAndImage,
  runContainer,
  runLitestreamInit,
  stopContainer,
  unpackBundle,
  type Container,
} from '../support/oci.js';
import { createDatabase } from '../support/postgres.js';
import { freePort, waitUntilReady } from '../support/procs.js';

// The image as the chart's sqlite pods run it (templates/sqlite.yaml): the Litestream binary and CA
// bundle copied by the init container from the Litestream image into an emptyDir, the data dir on
// a PVC at /var/lib/hostplane, read-only root filesystem, UID 10001, against the suite's PostgreSQL
// and MinIO. A database written through the API survives the pod: SIGTERM (the kubelet's stop)
// ends the container cleanly after Litestream's final sync, and a new pod with an empty PVC
// restores it from MinIO before it is ready.

const shardDataDir = '/var/lib/hostplane'; // the chart's PVC mount for the shards
const shardName = `image-shard-${randomBytes(3).toString('hex')}`;

describe('the image as a replicating sqlite shard (Litestream from its image, PostgreSQL, MinIO)', () => {
  let dir = '';
  let bundle = '';
  let litestreamBin = '';
  let env: Record<string, string> = {};
  let container: Container | undefined;
  let port = 0;
  let apiKey = '';
  let token = '';

  /** A pod of the shard: a fresh PVC folder, the same shard name, database and bucket. */
  async function startPod(pvc: string): Promise<Container> {
    await hardenBundle(bundle, {
      args: [...imageRecipe.entrypoint, 'serve'],
      env,
      binds: [
        [litestreamBin, litestreamBinDir, true],
        [await podVolume(path.join(dir, pvc)), shardDataDir, false],
      ],
    });
    const started = runContainer(bundle, `hp-shard-${process.pid}-${pvc}`);
    await waitUntilReady(
      'the shard in the image',
      started.child,
      started.output,
      async () => (await rawRequest(port, '/readyz', {})).status === 200,
      90_000,
    );
    return started;
  }

  const sqlite = async (route: string, json?: unknown) => {
    const headers = { 'x-sqlite-token': token, origin: `http://image.localhost:${port}` };
    const { res, body } = await jsonRequest(port, `/api/v1/sqlite/${route}`, {
      method: json === undefined ? 'GET' : 'POST',
      host: `localhost:${port}`,
      headers,
      json,
    });
    return { status: res.status, body };
  };

  beforeAll(async () => {
    await requireRuncAndImage(hostplaneArchive);
    await requireRuncAndImage(litestreamArchive);
    dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-image-shard-'));
    const s3 = inject('s3');
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(inject('postgresUrl')),
      createBucket(s3),
    ]);
    litestreamBin = await runLitestreamInit(litestreamArchive, dir);
    bundle = await unpackBundle(hostplaneArchive, path.join(dir, 'hostplane'));
    port = await freePort();
    const shard = replicatedShardEnv(s3, databaseUrl, bucket, shardName);
    env = {
      ...(Object.fromEntries(Object.entries(shard).filter(([, v]) => v !== undefined)) as Record<
        string,
        string
      >),
      HOST: '127.0.0.1',
      PORT: String(port),
      HOSTPLANE_METRICS_PORT: '0',
      HOSTPLANE_BASE_URL: `http://localhost:${port}`,
      HOSTPLANE_DATA_DIR: shardDataDir,
      // As templates/sqlite.yaml sets them.
      HOSTPLANE_LITESTREAM_BIN: `${litestreamBinDir}/${path.basename(litestreamValues.binaryPath)}`,
      SSL_CERT_FILE: `${litestreamBinDir}/${path.basename(litestreamValues.caBundlePath)}`,
    };
    container = await startPod('pvc-a');
  }, 240_000);

  afterAll(async () => {
    if (container) await removeContainer(container);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs the migrate Job's command (args: [migrate]) against PostgreSQL", async () => {
    const migrated = await execIn(container!.id, [...imageRecipe.entrypoint, 'migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
  });

  it('replicates a database written through the API with the copied Litestream', async () => {
    const created = await execIn(container!.id, [
      ...imageRecipe.entrypoint,
      'admin',
      'create-site',
      '--slug',
      'image',
      '--email',
      'shard@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    const { res, body } = await jsonRequest(port, '/api/v1/sqlite/auth/install', {
      method: 'POST',
      host: `localhost:${port}`,
      headers: { 'x-api-key': apiKey },
      json: { path: 'data/app.sqlite', name: 'app', requireUserAuth: false },
    });
    expect(res.status, JSON.stringify(body)).toBe(200);
    token = body.token as string;
    for (const sql of ['CREATE TABLE notes (body TEXT)', "INSERT INTO notes VALUES ('survives the pod')"]) {
      const exec = await sqlite('exec', { sql });
      expect(exec.status, JSON.stringify(exec.body)).toBe(200);
    }
    // Litestream runs as the shard's child, from the emptyDir.
    const ps = await execIn(container!.id, ['sh', '-c', 'cat /proc/[0-9]*/cmdline']);
    expect(ps.stdout).toContain(`${litestreamBinDir}/litestream`);
  });

  it('stops cleanly on SIGTERM, and a new pod with an empty PVC restores the database from MinIO', async () => {
    const stopping = container!;
    container = undefined;
    const code = await stopContainer(stopping, 'TERM');
    expect(code, stopping.output()).toBe(0);

    container = await startPod('pvc-b');
    const query = await sqlite('query', { sql: 'SELECT body FROM notes' });
    expect(query.status, JSON.stringify(query.body)).toBe(200);
    expect(query.body.rows).toEqual([{ body: 'survives the pod' }]);
  });
});
