import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { findObject, renderChart } from '../../support/kube/helm.js';
import { requireTool } from '../../support/kube/envtest.js';
import { PROMTOOL_BIN } from '../../support/prometheus.js';
import { family, hostplaneMetricNames, metricsRead } from './monitoring-support.js';
import { litestreamMetricNames } from './sqlite-support.js';

// Every alert of the chart's PrometheusRule against the real `promtool` (the pin of
// test/tools/prometheus, built by test/tools/build.sh): the rules as the chart renders them must load, and
// each alert has a case that fires on the series that should fire it and one that stays quiet.

const PROMTOOL = PROMTOOL_BIN;
const TESTS = fileURLToPath(new URL('../../monitoring/alerts.test.yaml', import.meta.url));

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
interface RuleGroup {
  name: string;
  rules: Rule[];
}
interface AlertCase {
  alertname: string;
  exp_alerts: unknown[];
}
interface TestFile {
  tests: { name: string; alert_rule_test?: AlertCase[] }[];
}

function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(PROMTOOL, args, { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? Number(err.code) : 0, output: `${stdout}${stderr}` });
    });
  });
}

let dir: string;
let groups: RuleGroup[];

beforeAll(async () => {
  requireTool(PROMTOOL);
  const objects = await renderChart({
    namespace: 'hostplane',
    releaseName: 'hostplane',
    values: { monitoring: { prometheusRule: { enabled: true } } },
  });
  groups = findObject<{ kind: string; spec: { groups: RuleGroup[] } }>(objects, 'PrometheusRule').spec.groups;
  dir = await mkdtemp(path.join(tmpdir(), 'hostplane-rules-'));
  await writeFile(path.join(dir, 'rules.yaml'), stringify({ groups }));
  await copyFile(TESTS, path.join(dir, 'alerts.test.yaml'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the chart's alert rules in promtool", () => {
  it('load as Prometheus rules', async () => {
    const { code, output } = await promtool(['check', 'rules', 'rules.yaml'], dir);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('pass their unit tests (test/monitoring/alerts.test.yaml)', async () => {
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yaml'], dir);
    expect(output, output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('every alert has a case that fires and a case that stays quiet', async () => {
    const file = parse(await readFile(TESTS, 'utf8')) as TestFile;
    const cases = file.tests.flatMap((t) => t.alert_rule_test ?? []);
    const alerts = groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
    expect(alerts.length).toBeGreaterThan(0);
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} never fires in a test`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} is never quiet in a test`,
      ).toBe(true);
    }
    // No case for an alert the chart does not have (a renamed alert leaves none behind).
    for (const c of cases) expect(alerts).toContain(c.alertname);
  });

  it('take the range of every rate() from values (a short window resolves soon after the failure ends)', async () => {
    const objects = await renderChart({
      namespace: 'hostplane',
      releaseName: 'hostplane',
      values: {
        monitoring: {
          prometheusRule: {
            enabled: true,
            reconcileErrors: { window: '31s' },
            http5xx: { window: '32s' },
            edgeLatency: { window: '33s' },
            litestreamSyncErrors: { window: '34s' },
          },
        },
      },
    });
    const rules = findObject<{ kind: string; spec: { groups: RuleGroup[] } }>(objects, 'PrometheusRule')
      .spec.groups.flatMap((g) => g.rules)
      .filter((r) => r.expr.includes('rate('));
    const windows = Object.fromEntries(
      rules.map((r) => [r.alert, [...r.expr.matchAll(/\[(\w+)\]/g)].map((m) => m[1])]),
    );
    expect(windows).toEqual({
      HostplaneControllerReconcileErrors: ['31s'],
      HostplaneHighHttp5xxRatio: ['32s', '32s'],
      HostplaneEdgeHighLatency: ['33s'],
      HostplaneLitestreamSyncErrors: ['34s'],
    });
  });

  it('read only series Hostplane or the pinned Litestream export (no rule over a series that does not exist)', async () => {
    const known = new Set([...(await hostplaneMetricNames()), ...(await litestreamMetricNames())]);
    for (const rule of groups.flatMap((g) => g.rules))
      for (const name of metricsRead(rule.expr))
        expect(known, `${rule.alert ?? rule.record}: ${name}`).toContain(family(name, known));
  });
});
