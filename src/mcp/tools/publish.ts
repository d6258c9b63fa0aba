import { z } from 'zod';
import { result } from '../results.js';
import { tool } from '../tool.js';

export const publishTools = [
  tool({
    name: 'publish_page',
    feature: 'publish',
    title: 'Publish one HTML page for 60 minutes',
    description:
      'Publishes one complete HTML page (doctype, html, head, body; at most 1 MB) at a public URL that is deleted ' +
      'after 60 minutes. Needs no API key: the rules and per-address rate limit of POST /ai/publish apply. ' +
      'For a lasting site use deploy_files (needs the site API key).',
    access: 'write',
    anonymous: true,
    input: {
      html: z.string().min(1).max(1_100_000).describe('The full HTML page (at most 1 MB of UTF-8)'),
    },
    output: {
      url: z.string().describe('Where the page is served'),
      expires_in_minutes: z.int(),
    },
    run: async ({ html }, api) => {
      const answer = await api.call<{ url: string }>('POST', '/ai/publish', { json: { html } });
      return result('the address of the published page', { url: answer.url, expires_in_minutes: 60 });
    },
  }),
];
