import { Router } from 'express';
import type { RouteRegistry } from '../http/index.js';
import type { AccountHooks } from './account-hooks.js';
import * as s from './account-schemas.js';
import { planFor, plans, planTypes } from './plans.js';
import type { Platform } from './service.js';

const tags = ['Account'];

/** What the console shows around the account: the sign-up mode (signed out) and the plans. */
export function accountInfoRoutes(deps: {
  platform: Platform;
  hooks: AccountHooks;
  registry: RouteRegistry;
}): Router {
  const { platform, hooks, registry } = deps;
  const router = Router();

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/signup-mode',
    summary: 'Whether anyone may sign up here, or accounts come by invitation',
    description:
      'For the signed-out console (its sign-up link, and whether a reset link can be mailed). `HOSTPLANE_SIGNUP`: `open` or `invite` (the default); `mail`: whether this server sends mail (SMTP_URL is set).',
    tags,
    auth: 'none',
    responses: {
      200: {
        description: 'The mode',
        schema: s.signupModeResponse,
        example: { success: true, signup: 'invite', mail: true },
      },
    },
    handler: ({ res }) => {
      res.json({ success: true, signup: hooks.signup, mail: hooks.mail });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/plans',
    summary: 'The plans and their limits, with the account’s own',
    description:
      'What `upgrade_url` shows. null: unlimited. A plan is changed by the operator of the server (`hostplane admin invite --plan` or the database), not here.',
    tags,
    auth: 'session',
    responses: {
      200: {
        description: 'The plans',
        schema: s.plansResponse,
        example: {
          success: true,
          current: 'free',
          plans: [
            {
              type: 'free',
              name: 'Free',
              limits: {
                files_per_site: 200,
                storage_bytes_per_site: 524288000,
                sites: 10,
                forms: 2,
                submissions_per_month: 100,
                sqlite_databases: 1,
                sqlite_database_bytes: 5242880,
                sqlite_users_per_database: 3,
                deploys_kept: 10,
                drafts_kept: 5,
              },
            },
          ],
          note: 'A plan is changed by the operator of this server.',
          contact: 'mailto:hosting@example.com',
        },
      },
    },
    handler: async ({ req, res }) => {
      const profile = await platform.accounts.profile(req.principal!.accountId);
      res.json({
        success: true,
        current: planFor(profile?.plan ?? 'free').type,
        plans: planTypes.map((type) => {
          const plan = plans[type];
          return {
            type,
            name: plan.name,
            limits: {
              files_per_site: plan.maxFiles,
              storage_bytes_per_site: plan.maxStorageBytes,
              sites: hooks.maxSitesPerAccount,
              forms: plan.maxForms,
              submissions_per_month: plan.maxSubmissionsPerMonth,
              sqlite_databases: plan.maxSqliteDatabases,
              sqlite_database_bytes: plan.maxSqliteBytes,
              sqlite_users_per_database: plan.maxSqliteUsers,
              deploys_kept: hooks.deployRetention(type).deploys,
              drafts_kept: hooks.deployRetention(type).drafts,
            },
          };
        }),
        note: 'A plan is changed by the operator of this server.',
        contact: hooks.plansContact ?? null,
      });
    },
  });
  return router;
}
