import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Controller } from '../../../controllers/runtime/controller.js';
import { ExponentialBackoffRateLimiter } from '../../../controllers/runtime/workqueue.js';
import { createLogger } from '../../../src/observability/logger.js';
import { withSpan } from '../../../src/observability/tracing.js';
import {
  apiKeyHeader,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';

// This file registers a global tracer provider; vitest runs each file in its own process.
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();

let hp: TestHostplane;
let site: TestSite;
beforeAll(async () => {
  hp = await startHostplane('pglite+fs');
  site = await hp.createSite('traced');
});
afterAll(async () => {
  await hp?.stop();
  await provider.shutdown();
});

it('records a server span per request with database and blob spans nested in it', async () => {
  await upload(hp, site, 'index.html', '<p>traced</p>');
  exporter.reset();
  const res = await hp.request('/api/v1/files/get?path=index.html', { headers: apiKeyHeader(site) });
  expect(res.status).toBe(200);
  const spans = exporter.getFinishedSpans();
  const server = spans.find((s) => s.name === 'GET /api/v1/files/get');
  expect(server, spans.map((s) => s.name).join(', ')).toBeDefined();
  const traceId = server!.spanContext().traceId;
  const children = spans.filter((s) => s.spanContext().traceId === traceId && s !== server);
  expect(children.map((s) => s.name)).toEqual(
    expect.arrayContaining(['db.authenticate_key', 'db.find_file', 'blob.get_buffer']),
  );
  expect(server!.attributes['http.response.status_code']).toBe(200);
});

it('records a SQLite call on the fast path with its engine span nested in the request span', async () => {
  const sqlite = sqliteApi(hp, site);
  const token = await sqlite.token({ path: 'data/traced.sqlite', name: 'traced', requireUserAuth: false });
  exporter.reset();
  const res = await sqlite.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1 AS one' });
  expect(res.status).toBe(200);
  const spans = exporter.getFinishedSpans();
  const server = spans.find((s) => s.name === 'POST /api/v1/sqlite/query');
  expect(server, spans.map((s) => s.name).join(', ')).toBeDefined();
  const engine = spans.find((s) => s.name === 'sqlite.query');
  expect(engine?.spanContext().traceId).toBe(server!.spanContext().traceId);
  expect(engine?.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
});

it('records a reconcile span per controller pass, with its inner spans and failures', async () => {
  exporter.reset();
  let calls = 0;
  const controller = new Controller({
    name: 'traced',
    logger: createLogger('silent'),
    rateLimiter: new ExponentialBackoffRateLimiter(10, 100),
    reconciler: {
      async reconcile() {
        calls++;
        await withSpan('inner', {}, async () => undefined);
        if (calls === 1) throw new Error('first pass fails');
      },
    },
  });
  controller.start();
  controller.enqueue('ns/one');
  const deadline = Date.now() + 5_000;
  while (calls < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await controller.stop();
  const passes = exporter.getFinishedSpans().filter((s) => s.name === 'reconcile');
  expect(passes).toHaveLength(2);
  expect(passes.map((s) => s.attributes['hostplane.key'])).toEqual(['ns/one', 'ns/one']);
  expect(passes[0]!.attributes['hostplane.controller']).toBe('traced');
  expect(passes[0]!.status.code).toBe(SpanStatusCode.ERROR);
  expect(passes[1]!.status.code).not.toBe(SpanStatusCode.ERROR);
  const inner = exporter.getFinishedSpans().filter((s) => s.name === 'inner');
  expect(inner.map((s) => s.parentSpanContext?.spanId)).toEqual(passes.map((s) => s.spanContext().spanId));
});
