import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, siteUrl } from '../../src/config/config.js';

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

  it('refuses invalid values with a message naming each variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', HOSTPLANE_TRUST_PROXY: 'always' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ HOSTPLANE_BASE_URL: 'not a url' })).toThrow(/HOSTPLANE_BASE_URL/);
    expect(() => loadConfig({ HOSTPLANE_SITES_DOMAIN: 'bad domain/' })).toThrow(/HOSTPLANE_SITES_DOMAIN/);
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
