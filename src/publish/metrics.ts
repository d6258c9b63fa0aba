import client from 'prom-client';
import { registry } from '../observability/index.js';

export const tempPagesSweptTotal = new client.Counter({
  name: 'hostplane_temp_pages_swept_total',
  help: 'Expired temporary pages deleted by the sweeper.',
  registers: [registry],
});
