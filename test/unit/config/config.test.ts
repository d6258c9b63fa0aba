import { describe, expect, it } from 'vitest';
import { loadConfig, siteUrl } from '../../../src/config/config.js';

/** The registry code of an invalid configuration (exit 2 from the CLI). */
const configInvalid = expect.objectContaining({ name: 'AppError', code: 'CONFIG_INVALID' });

describe('configuration', () => {
  it('uses the embedded defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      baseUrl: 'http://localhost:8080',
      sitesDomain: 'localhost',
      databaseUrl: undefined,
      s3: undefined,
      trustProxy: false,
      logLevel: 'info',
    });
    expect(config.dataDir.endsWith('/data')).toBe(true);
  });

  it('leaves cluster mode off by default and fills it from the environment when on', () => {
    expect(loadConfig({}).kubernetes).toBeUndefined();
    const config = loadConfig({
      HOSTPLANE_KUBERNETES: 'true',
      HOSTPLANE_SITES_DOMAIN: 'Sites.Example.com',
      HOSTPLANE_NAMESPACE: 'hosting',
      HOSTPLANE_POD_NAME: 'hostplane-controller-7d9f',
      HOSTPLANE_INGRESS_CLASS: 'nginx',
      HOSTPLANE_EDGE_SERVICE: 'hp-edge',
      HOSTPLANE_EDGE_SERVICE_PORT: '8080',
      HOSTPLANE_RESYNC_SECONDS: '60',
      HOSTPLANE_KUBE_REQUEST_TIMEOUT_SECONDS: '5',
    });
    expect(config.kubernetes).toEqual({
      namespace: 'hosting',
      podName: 'hostplane-controller-7d9f',
      ingressClass: 'nginx',
      edgeService: { name: 'hp-edge', port: 8080 },
      clusterOwnerEmail: 'admin@sites.example.com',
      leaseName: 'hostplane-controller',
      resyncMs: 60_000,
      requestTimeoutMs: 5_000,
    });
  });

  it('reads the site TLS and Gateway API routing settings (none unless set)', () => {
    const cluster = { HOSTPLANE_KUBERNETES: 'true', HOSTPLANE_NAMESPACE: 'hosting' };
    expect(loadConfig(cluster).kubernetes).not.toHaveProperty('tls');
    expect(loadConfig(cluster).kubernetes).not.toHaveProperty('routing');
    const config = loadConfig({
      ...cluster,
      HOSTPLANE_TLS_ISSUER_NAME: 'pebble',
      HOSTPLANE_TLS_ISSUER_KIND: 'Issuer',
      HOSTPLANE_TLS_WILDCARD_SECRET: 'sites-wildcard',
      HOSTPLANE_ROUTING_MODE: 'gateway',
      HOSTPLANE_GATEWAY_NAME: 'hostplane-sites',
      HOSTPLANE_GATEWAY_SECTION: 'https',
      HOSTPLANE_GATEWAY_LISTENERS: 'true',
      HOSTPLANE_GATEWAY_HTTPS_PORT: '8443',
    });
    expect(config.kubernetes).toMatchObject({
      tls: { issuer: { kind: 'Issuer', name: 'pebble' }, wildcardSecret: 'sites-wildcard' },
      routing: {
        mode: 'gateway',
        parentRef: { name: 'hostplane-sites', namespace: 'hosting', sectionName: 'https' },
        listeners: { httpsPort: 8443 },
      },
    });
    // A Gateway of another namespace, no listeners of the controller's.
    expect(
      loadConfig({
        ...cluster,
        HOSTPLANE_ROUTING_MODE: 'gateway',
        HOSTPLANE_GATEWAY_NAME: 'shared',
        HOSTPLANE_GATEWAY_NAMESPACE: 'infra',
      }).kubernetes?.routing,
    ).toEqual({ mode: 'gateway', parentRef: { name: 'shared', namespace: 'infra' } });
    // Gateway mode needs its Gateway; the mode and the issuer kind are closed lists.
    expect(() => loadConfig({ ...cluster, HOSTPLANE_ROUTING_MODE: 'gateway' })).toThrow(
      /HOSTPLANE_GATEWAY_NAME/,
    );
    expect(() => loadConfig({ ...cluster, HOSTPLANE_ROUTING_MODE: 'istio' })).toThrow(configInvalid);
    expect(() => loadConfig({ ...cluster, HOSTPLANE_TLS_ISSUER_KIND: 'Vault' })).toThrow(configInvalid);
  });

  it('refuses cluster settings that are not Kubernetes names', () => {
    expect(() =>
      loadConfig({ HOSTPLANE_KUBERNETES: 'true', HOSTPLANE_EDGE_SERVICE: 'Edge_Service' }),
    ).toThrow(/HOSTPLANE_EDGE_SERVICE: must be a Service name/);
    expect(() => loadConfig({ HOSTPLANE_NAMESPACE: '../etc' })).toThrow(configInvalid);
    expect(() => loadConfig({ HOSTPLANE_RESYNC_SECONDS: '1' })).toThrow(configInvalid);
  });

  it('selects PostgreSQL and S3 when their variables are set', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@db:5432/hostplane',
      S3_BUCKET: 'files',
      S3_ENDPOINT: 'http://minio:9000',
      S3_FORCE_PATH_STYLE: 'true',
    });
    expect(config.databaseUrl).toBe('postgres://u:p@db:5432/hostplane');
    expect(config.s3).toEqual({
      bucket: 'files',
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      forcePathStyle: true,
    });
  });

  it('passes trust-proxy settings to Express: off, loopback, hop counts and address lists', () => {
    expect(loadConfig({ HOSTPLANE_TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadConfig({ HOSTPLANE_TRUST_PROXY: 'loopback' }).trustProxy).toBe('loopback');
    expect(loadConfig({ HOSTPLANE_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ HOSTPLANE_TRUST_PROXY: '10.0.0.0/8, fd00::/8' }).trustProxy).toBe(
      '10.0.0.0/8, fd00::/8',
    );
    expect(() => loadConfig({ HOSTPLANE_TRUST_PROXY: 'everyone' })).toThrow(/HOSTPLANE_TRUST_PROXY/);
  });

  it('sets request deadlines and derives a site share of the upload byte budget from the budget unless set', () => {
    expect(loadConfig({}).requests).toEqual({
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 300_000,
      body: { windowMs: 20_000, minBytesPerSecond: 1024 },
    });
    const MiB = 1024 * 1024;
    expect(loadConfig({}).uploads).toEqual({ maxBytes: 128 * MiB, maxSiteBytes: 32 * MiB });
    expect(loadConfig({ HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '16' }).uploads.maxSiteBytes).toBe(4 * MiB);
    expect(loadConfig({ HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '2' }).uploads.maxSiteBytes).toBe(MiB);
    expect(loadConfig({ HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '1' }).uploads.maxSiteBytes).toBe(MiB);
    expect(loadConfig({ HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '3' }).uploads.maxSiteBytes).toBe(3 * MiB);
    expect(loadConfig({ HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '' }).uploads.maxSiteBytes).toBe(32 * MiB);
    // A share above the budget is the budget.
    expect(
      loadConfig({ HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '8', HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '64' })
        .uploads.maxSiteBytes,
    ).toBe(8 * MiB);
    const custom = loadConfig({
      HOSTPLANE_BODY_TIMEOUT_SECONDS: '1.5',
      HOSTPLANE_BODY_MIN_RATE: '0',
      HOSTPLANE_HEADERS_TIMEOUT_SECONDS: '5',
      HOSTPLANE_REQUEST_TIMEOUT_SECONDS: '600',
    }).requests;
    expect(custom).toEqual({
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 600_000,
      body: { windowMs: 1_500, minBytesPerSecond: 0 },
    });
    expect(() =>
      loadConfig({ HOSTPLANE_HEADERS_TIMEOUT_SECONDS: '60', HOSTPLANE_REQUEST_TIMEOUT_SECONDS: '30' }),
    ).toThrow(/HOSTPLANE_HEADERS_TIMEOUT_SECONDS: must not exceed HOSTPLANE_REQUEST_TIMEOUT_SECONDS/);
    expect(() => loadConfig({ HOSTPLANE_BODY_TIMEOUT_SECONDS: '0' })).toThrow(configInvalid);
  });

  it('refuses invalid values with a message naming each variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', HOSTPLANE_TRUST_PROXY: 'always' })).toThrow(configInvalid);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ HOSTPLANE_BASE_URL: 'not a url' })).toThrow(/HOSTPLANE_BASE_URL/);
    expect(() => loadConfig({ HOSTPLANE_SITES_DOMAIN: 'bad domain/' })).toThrow(/HOSTPLANE_SITES_DOMAIN/);
  });

  it('fails a lost SQLite shard over after 20 s unless set; 0 turns it off; a whole number of ms', () => {
    expect(loadConfig({}).sqliteShard.failoverAfterMs).toBe(20_000);
    expect(loadConfig({ HOSTPLANE_SQLITE_FAILOVER_AFTER_MS: '0' }).sqliteShard.failoverAfterMs).toBe(0);
    expect(loadConfig({ HOSTPLANE_SQLITE_FAILOVER_AFTER_MS: '45000' }).sqliteShard.failoverAfterMs).toBe(
      45_000,
    );
    for (const bad of ['-1', '2.5', 'soon'])
      expect(() => loadConfig({ HOSTPLANE_SQLITE_FAILOVER_AFTER_MS: bad })).toThrow(
        /HOSTPLANE_SQLITE_FAILOVER_AFTER_MS/,
      );
  });

  it('caps the databases placed on one SQLite shard: 1000 unless set, a positive integer', () => {
    expect(loadConfig({}).sqliteShard.maxDatabases).toBe(500);
    expect(loadConfig({ HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD: '250' }).sqliteShard.maxDatabases).toBe(
      250,
    );
    for (const bad of ['0', '-1', '2.5', 'many'])
      expect(() => loadConfig({ HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD: bad })).toThrow(
        /HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD/,
      );
  });

  it('builds site URLs from the sites domain and the base URL scheme and port', () => {
    expect(siteUrl(loadConfig({}), 'demo')).toBe('http://demo.localhost:8080');
    const prod = loadConfig({
      HOSTPLANE_BASE_URL: 'https://api.example.com',
      HOSTPLANE_SITES_DOMAIN: 'sites.example.com',
    });
    expect(siteUrl(prod, 'demo')).toBe('https://demo.sites.example.com');
  });
});
