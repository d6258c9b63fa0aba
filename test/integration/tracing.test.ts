import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  apiKeyHeader,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../support/hostplane.js';

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
