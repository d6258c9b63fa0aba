/**
 * The story's start: the node (or the one HOSTPLANE_TEST_NODE names), the images imported,
 * PostgreSQL, MinIO and Mailpit on the node's host address, a fresh namespace with the Secrets,
 * and the release's values (test-sized: small requests, two api pods, two controllers, two shards).
 */
import { expect } from 'vitest';
import { startNode } from '../../support/kube/node.js';
import { startMailpit } from '../../support/mailpit.js';
import { createBucket, startMinio } from '../../support/minio.js';
import { startPostgres } from '../../support/postgres.js';
import { buildImages } from '../images.js';
import { API_HOST, NS, SITES_DOMAIN, type Story } from './context.js';
import { createWildcardSecret, WILDCARD_SECRET } from './tls.js';

export async function setUpStory(story: Story, extra: { sqlite: Record<string, unknown> }): Promise<void> {
  story.node = await startNode();
  const host = story.nodeEnv('HOST_IP');
  [story.images, story.postgres, story.minio, story.mailpit] = await Promise.all([
    buildImages(),
    startPostgres({ host }),
    startMinio({ host }),
    startMailpit({ host }),
  ]);
  const { node, images, postgres, minio, mailpit } = story;
  await node.importImage(images.hostplane.archive, images.hostplane.ref);
  await node.importImage(images.litestream.archive, images.litestream.ref);
  const bucket = await createBucket(minio);

  const secret = (name: string, data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS },
    stringData: data,
  });
  await story.freshNamespace();
  for (const s of [
    secret('hostplane-database', { DATABASE_URL: postgres.url }),
    secret('hostplane-s3', {
      AWS_ACCESS_KEY_ID: minio.accessKeyId,
      AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
    }),
    secret('hostplane-smtp', { SMTP_URL: mailpit.smtpUrl }),
  ]) {
    const res = await story.kube('POST', `/api/v1/namespaces/${NS}/secrets`, s);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  // The operator's certificate for *.<sites domain>, from a CA of the story's own.
  story.operatorCa = await createWildcardSecret(story);

  const [repository, tag] = splitRef(images.hostplane.ref);
  const [lsRepository, lsTag] = splitRef(images.litestream.ref);
  const small = { requests: { cpu: '10m', memory: '64Mi' } };
  story.values = {
    image: { repository, tag, pullPolicy: 'Never' },
    config: {
      baseUrl: `http://${API_HOST}`,
      sitesDomain: SITES_DOMAIN,
      trustProxy: 'off',
      resyncSeconds: 30,
    },
    s3: { bucket, endpoint: minio.endpoint, region: minio.region, forcePathStyle: true },
    smtp: { existingSecret: 'hostplane-smtp' },
    // The API host is reached through its Service; the site hosts through Traefik on the node's
    // address (their Ingresses: the slug hosts with the wildcard Secret, each verified custom domain
    // with a certificate cert-manager gets from the node's ClusterIssuer, Pebble).
    ingress: { enabled: false },
    sites: {
      ingressClassName: story.nodeEnv('INGRESS_CLASS'),
      tls: {
        wildcardSecret: WILDCARD_SECRET,
        issuer: { kind: 'ClusterIssuer', name: story.nodeEnv('CLUSTER_ISSUER') },
      },
    },
    routing: { mode: 'ingress' },
    api: { replicaCount: 2, resources: small, preStopSleepSeconds: 1 },
    edge: { replicaCount: 1, autoscaling: { enabled: false }, resources: small, preStopSleepSeconds: 1 },
    controller: { replicaCount: 2, resources: small },
    sqlite: {
      // Two shards: one is lost for good in the failover step.
      replicas: 2,
      resources: small,
      persistence: { storageClassName: story.nodeEnv('STORAGE_CLASS'), size: '1Gi' },
      litestream: {
        image: { repository: lsRepository, tag: lsTag, pullPolicy: 'Never' },
        caBundlePath: images.litestream.caBundlePath,
      },
      ...extra.sqlite,
    },
  };
}

function splitRef(ref: string): [string, string] {
  const at = ref.lastIndexOf(':');
  return [ref.slice(0, at), ref.slice(at + 1)];
}
