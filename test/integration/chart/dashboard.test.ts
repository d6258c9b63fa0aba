import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireTool } from '../../support/kube/envtest.js';
import { PROMTOOL_BIN } from '../../support/prometheus.js';
import { findObject, renderChart } from '../../support/kube/helm.js';
import {
  DASHBOARD,
  dashboardQueries,
  family,
  hostplaneMetricNames,
  metricsRead,
} from './monitoring-support.js';
import { litestreamMetricNames } from './sqlite-support.js';

// The Grafana dashboard the chart ships (files/dashboards/hostplane.json): a ConfigMap for
// Grafana's sidecar when asked for, and queries over series that exist, valid PromQL for the real
// promtool. (The real node's story runs each query against its Prometheus.)

const PROMTOOL = PROMTOOL_BIN;
type ConfigMap = {
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  data: Record<string, string>;
};

describe('the Grafana dashboard', () => {
  it('is off by default; on, a ConfigMap with the sidecar label holds the repository file', async () => {
    const off = await renderChart({ namespace: 'hostplane' });
    expect(off.filter((o) => o.kind === 'ConfigMap' && o.metadata?.name?.endsWith('-dashboard'))).toEqual([]);
    const on = await renderChart({
      namespace: 'hostplane',
      values: {
        monitoring: { grafanaDashboard: { enabled: true, annotations: { grafana_folder: 'Hostplane' } } },
      },
    });
    const map = findObject<ConfigMap>(on, 'ConfigMap', 'hostplane-dashboard');
    expect(map.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(map.data['hostplane.json']!)).toEqual(JSON.parse(await readFile(DASHBOARD, 'utf8')));
  });

  it('shows requests, latency, cache, uploads, deploys, forms, SQLite, replication and reconciles', async () => {
    const queries = (await dashboardQueries('hostplane')).map((q) => q.expr).join('\n');
    for (const metric of [
      'hostplane_http_requests_total',
      'hostplane_http_request_duration_seconds_bucket',
      'hostplane_edge_cache_events_total',
      'hostplane_uploads_in_flight_bytes',
      'hostplane_deploy_events_total',
      'hostplane_form_submissions_total',
      'hostplane_sqlite_statements_total',
      'hostplane_sqlite_replication_lag_seconds',
      'hostplane_sqlite_restores_total',
      'hostplane_controller_reconcile_total',
    ])
      expect(queries).toContain(metric);
  });

  it('every query reads metrics Hostplane or the pinned Litestream export, and parses as PromQL', async () => {
    requireTool(PROMTOOL);
    const known = new Set([...(await hostplaneMetricNames()), ...(await litestreamMetricNames())]);
    const queries = await dashboardQueries('hostplane');
    for (const { panel, expr } of queries)
      for (const name of metricsRead(expr)) expect(known, `${panel}: ${name}`).toContain(family(name, known));
    // promtool parses each query as a recording rule's expression.
    const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-dashboard-'));
    try {
      const rules = queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: q.expr }));
      await writeFile(path.join(dir, 'queries.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const output = await new Promise<string>((resolve) =>
        execFile(PROMTOOL, ['check', 'rules', 'queries.yaml'], { cwd: dir }, (err, stdout, stderr) =>
          resolve(`${err ? 'FAILED ' : ''}${stdout}${stderr}`),
        ),
      );
      expect(output).not.toContain('FAILED');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
