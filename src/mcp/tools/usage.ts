import { z } from 'zod';
import { result } from '../results.js';
import { tool } from '../tool.js';

type Json = Record<string, unknown>;

export const usageTools = [
  tool({
    name: 'get_usage',
    feature: 'usage',
    title: "The site's address, plan, storage and forms usage",
    description:
      "One call for the site's address (hosting info), its plan with file count and storage against the plan's " +
      "limits (warnings at 80%), and the account's forms and monthly submissions against their limits.",
    access: 'read',
    input: {},
    output: {
      site: z.looseObject({ subdomain: z.string(), base_url: z.string() }),
      plan: z.looseObject({ name: z.string(), type: z.string() }),
      storage: z.looseObject({}),
      warnings: z.looseObject({}),
      forms: z.looseObject({}),
    },
    run: async (_args, api) => {
      const [info, limits, forms] = await Promise.all([
        api.call<Json>('GET', '/api/v1/hosting-info'),
        api.call<Json>('GET', '/api/v1/files/storage-limits'),
        api.call<Json>('GET', '/api/v1/forms/usage'),
      ]);
      return result("the site's address, plan and usage", {
        site: { subdomain: info.subdomain, base_url: info.base_url, storage_usage: info.storage_usage },
        plan: limits.plan,
        storage: limits.usage,
        warnings: limits.warnings,
        forms: { forms: forms.forms, submissions: forms.submissions },
      });
    },
  }),
];
