import { z } from 'zod';
import { AppError } from '../errors/index.js';
import { describeIssue } from '../http/index.js';
import { MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS } from '../passwords/index.js';
import { HOSTNAME_PATTERN } from './domains.js';
import { SLUG_PATTERN } from './slug.js';

// Request and response schemas of the account API (/api/v1/account/…): they validate requests
// and write the OpenAPI document.

// RFC 5321's limits: a local part of at most 64 characters, 254 in all.
/** Whether the server sends mail: the console says so instead of promising a mail that never comes. */
const mailField = z
  .boolean()
  .describe(
    'Whether this server sends mail (its operator set SMTP_URL). false: no link, verification or notification is mailed; the console says so.',
  );

export const emailField = z
  .email({ error: 'must be an email address' })
  .max(254)
  .refine((v) => v.lastIndexOf('@') <= 64, 'must be an email address (at most 64 characters before the @)')
  .describe('An email address');
/** A password being checked (sign-in, the current one): any length up to the bound. */
export const passwordField = z.string().min(1).max(MAX_PASSWORD_CHARS).describe('The password');
/** A password being set: the policy's length (the common-password list is checked on the server). */
export const newPasswordField = z
  .string()
  .min(MIN_PASSWORD_CHARS)
  .max(MAX_PASSWORD_CHARS)
  .describe('At least 8 characters (at most 256), not on the common-password list');
/**
 * The token of a mailed link of `kind`: `hp_<kind>_` and 43 base64url characters, as newSecret
 * mints them (secrets.ts). Checked, so the document says exactly which tokens can be right: one of
 * that shape the server does not know (or that expired or was used) is 401 INVALID_TOKEN.
 */
const linkNames = { invite: 'an invitation', verify: 'a verification', reset: 'a password reset' };
export const mailedToken = (kind: keyof typeof linkNames) =>
  z
    .string()
    .regex(
      new RegExp(`^hp_${kind}_[A-Za-z0-9_-]{43}$`),
      `is not the token of ${linkNames[kind]} link: copy the whole link (its token starts hp_${kind}_)`,
    )
    .describe(`The token of the mailed link (after \`#token=\`): hp_${kind}_ and 43 characters`);
const sessionMode = z
  .enum(['bearer', 'cookie'])
  .default('bearer')
  .describe('bearer: answer a token for `Authorization: Bearer`; cookie: set the browser session cookie');

export const signInBody = z.object({ email: emailField, password: passwordField, session: sessionMode });
export const signUpBody = z.object({ email: emailField, password: newPasswordField });
export const acceptInviteBody = z.object({
  token: mailedToken('invite'),
  password: newPasswordField,
  session: sessionMode,
});
export const verifyBody = z.object({ token: mailedToken('verify') });
export const resetRequestBody = z.object({ email: emailField });
export const resetConfirmBody = z.object({ token: mailedToken('reset'), password: newPasswordField });
export const changePasswordBody = z.object({
  current_password: passwordField,
  new_password: newPasswordField,
});

export const messageResponse = z.object({ success: z.boolean(), message: z.string() });
export const sessionResponse = z.object({
  success: z.boolean(),
  session: z.enum(['bearer', 'cookie']),
  token: z.string().optional().describe('bearer only: the session token (shown once)'),
  csrf_token: z.string().optional().describe('cookie only: send it as X-CSRF-Token on every write'),
  expires_at: z.iso.datetime(),
});

const limited = z.object({
  used: z.number().int(),
  limit: z.number().int().nullable().describe('null: unlimited'),
});

export const siteSchema = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  url: z.string(),
  created_at: z.iso.datetime(),
  files: limited,
  storage_bytes: limited,
  custom_domains: z.array(z.string()),
});

export const meResponse = z.object({
  success: z.boolean(),
  email: z.string(),
  email_verified: z.boolean(),
  created_at: z.iso.datetime(),
  plan: z.object({ type: z.string(), name: z.string() }),
  usage: z.object({
    sites: z.array(
      z.object({
        id: z.number().int(),
        slug: z.string(),
        files: limited,
        storage_bytes: limited,
        rollback_bytes: limited.describe(
          'Bytes only the deploys kept for rollback hold (blobs outside the live deploy, each once), outside storage_bytes; retention prunes the oldest beyond the limit',
        ),
      }),
    ),
    forms: limited,
    submissions_this_month: limited.extend({ resets_at: z.iso.datetime() }),
    sqlite_databases: limited,
    sqlite_database_bytes: z.object({
      largest: z.number().int(),
      limit: z.number().int().nullable().describe('Cap of one database; null: unlimited'),
    }),
    sqlite_users_per_database: z.object({ largest: z.number().int(), limit: z.number().int().nullable() }),
  }),
  upgrade_url: z
    .string()
    .describe('The console page that shows the plans (a plan is changed by the operator)'),
  signup: z.enum(['invite', 'open']),
  mail: mailField,
  csrf_token: z.string().optional().describe('Cookie sessions: the X-CSRF-Token of this session'),
});

export const sessionsResponse = z.object({
  success: z.boolean(),
  sessions: z.array(
    z.object({
      id: z.number().int(),
      kind: z.enum(['bearer', 'browser']),
      user_agent: z.string().nullable(),
      created_at: z.iso.datetime(),
      last_used_at: z.iso.datetime().nullable(),
      expires_at: z.iso.datetime(),
      current: z.boolean(),
    }),
  ),
});

export const createSiteBody = z.object({
  // The pattern is documented, not checked here: a slug that breaks it answers the slug rule's
  // own 400 (INVALID_SLUG), as `hostplane admin create-site` does.
  slug: z
    .string()
    .min(1)
    .max(63)
    .meta({ pattern: SLUG_PATTERN.source })
    .describe(
      '1-63 lower-case letters, digits or hyphens, not at either end and never two in a row (`--` is reserved for preview hosts); the site’s subdomain',
    ),
  name: z
    .string()
    .min(1)
    .max(200)
    .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters')
    .meta({ pattern: '^[^\\u0000]*$' })
    .optional()
    .describe('A display name (default: the slug)'),
});

/** A positive 32-bit id in the path (`:siteId`, `:keyId`, …): anything else is a 400. */
export function pathIdOf(params: Record<string, unknown>, name: string): number {
  const raw = String(params[name] ?? '');
  const id = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(id >= 1 && id <= 2_147_483_647))
    throw new AppError('INVALID_REQUEST', { message: `${name} must be a whole number from 1 to 2147483647` });
  return id;
}

export const siteResponse = z.object({ success: z.boolean(), site: siteSchema });
export const createdSiteResponse = siteResponse.extend({
  api_key: z.string().describe('The site’s first permanent key (shown once)'),
});
export const sitesResponse = z.object({ success: z.boolean(), sites: z.array(siteSchema) });

const keySchema = z.object({
  id: z.number().int(),
  prefix: z.string().describe('The first 12 characters, to recognise the key'),
  created_at: z.iso.datetime(),
  last_used_at: z.iso.datetime().nullable(),
});
export const keysResponse = z.object({ success: z.boolean(), keys: z.array(keySchema) });
export const temporaryKeysResponse = z.object({
  success: z.boolean(),
  temporary_keys: z.array(
    keySchema.extend({
      expires_at: z.iso.datetime(),
      minted_by: z
        .object({
          session_id: z.number().int().describe('The session (GET /api/v1/account/sessions)'),
          kind: z
            .enum(['browser', 'bearer', 'operator'])
            .describe('browser: a console; bearer: a session token; operator: `hostplane admin session`'),
          user_agent: z.string().nullable(),
          current: z.boolean().describe('Minted by the session making this call'),
        })
        .describe('The session that minted the key: the key dies with it'),
    }),
  ),
});
export const createdKeyResponse = z.object({
  success: z.boolean(),
  key: keySchema,
  api_key: z.string().describe('The key itself (shown once; only its hash is stored)'),
});

export const domainBody = z.object({
  hostname: z.string().min(1).max(253).meta({ pattern: HOSTNAME_PATTERN }).describe('e.g. www.example.com'),
});
const domainSchema = z.object({
  hostname: z.string(),
  status: z.enum(['active', 'pending']),
  verification: z
    .object({ type: z.literal('TXT'), name: z.string(), value: z.string() })
    .optional()
    .describe('pending: the DNS TXT record to create, then POST …/verify'),
});
export const domainResponse = z.object({ success: z.boolean(), domain: domainSchema });
export const domainsResponse = z.object({ success: z.boolean(), domains: z.array(domainSchema) });

export const notificationBody = z.object({
  notification_email: emailField.nullable().describe('null: the account’s email'),
});
export const notificationResponse = z.object({
  success: z.boolean(),
  form_id: z.number().int(),
  notification_email: z.string().nullable(),
  effective_email: z
    .string()
    .describe(
      'The address submissions go to: the form’s, or the account’s (once confirmed: see notification_email_status)',
    ),
  notification_email_status: z
    .enum(['confirmed', 'pending'])
    .describe(
      'pending: a new address waits for its owner to follow the link mailed to it; until then submissions are stored but not mailed (nor later). The account’s own verified email is confirmed at once',
    ),
  notification_email_message: z.string().describe('The state in words, for people'),
});

/**
 * `common` and exactly one of the two `choices`: a z.xor, which the document renders as `oneOf`
 * of one branch per choice, each requiring its field and forbidding the other (`not: {}`), so a
 * body with both (or neither) is schema-invalid there as it is here.
 */
export function exactlyOneOf<C extends z.ZodRawShape, A extends string, B extends string>(
  common: C,
  [a, aSchema]: readonly [A, z.ZodType<string>],
  [b, bSchema]: readonly [B, z.ZodType<string>],
) {
  const absent = z.never().optional();
  const either = `send either \`${a}\` or \`${b}\``;
  return z.xor(
    [
      z.object({
        ...common,
        ...({ [a]: aSchema, [b]: absent } as Record<A, typeof aSchema> & Record<B, typeof absent>),
      }),
      z.object({
        ...common,
        ...({ [b]: bSchema, [a]: absent } as Record<B, typeof bSchema> & Record<A, typeof absent>),
      }),
    ],
    {
      error: (issue) => {
        const input = (issue.input ?? {}) as Record<string, unknown>;
        const [hasA, hasB] = [input[a] !== undefined, input[b] !== undefined];
        if (hasA && hasB) return `${either}, not both`;
        if (!hasA && !hasB) return either;
        // One of them is there: what is wrong with the body that chose it (a missing common field, …).
        const branch = 'errors' in issue ? issue.errors[hasA ? 0 : 1] : undefined;
        return branch?.length ? branch.map((i) => describeIssue(i, 'body')).join('; ') : either;
      },
    },
  );
}

// TOTP second factor and the second step of a sign-in.
const totpCode = z
  .string()
  .min(1)
  .max(12)
  .meta({ pattern: '^[0-9 ]+$' })
  .describe('The current 6-digit code of the authenticator app');
const recoveryCode = z.string().min(1).max(40).describe('One unused recovery code (`xxxxx-xxxxx`)');
/** A current code or a recovery code: exactly one of them. */
const code = ['code', totpCode] as const;
const recovery = ['recovery_code', recoveryCode] as const;

export const challengeResponse = z.object({
  success: z.boolean(),
  second_factor: z.literal('totp').describe('The password was right; a code must follow'),
  challenge: z.string().describe('Send it to POST /api/v1/account/sign-in/totp within 5 minutes (once)'),
  expires_at: z.iso.datetime(),
});
export const signInResponse = z.union([sessionResponse, challengeResponse]);
export const totpSignInBody = exactlyOneOf(
  { challenge: z.string().min(1).max(200).describe('From the first step') },
  code,
  recovery,
);
export const passwordCheckBody = z.object({ password: passwordField });
export const totpConfirmBody = z.object({ code: totpCode });
export const totpProofBody = exactlyOneOf({ password: passwordField }, code, recovery);
export const totpStatusResponse = z.object({
  success: z.boolean(),
  enabled: z.boolean(),
  recovery_codes_left: z.number().int(),
});
export const totpSetupResponse = z.object({
  success: z.boolean(),
  secret: z.string().describe('Base32, for entering by hand'),
  otpauth_uri: z.string().describe('The otpauth:// URI an authenticator app reads (as a QR code)'),
});
export const recoveryCodesResponse = z.object({
  success: z.boolean(),
  recovery_codes: z.array(z.string()).describe('Shown once: each works once in place of a code'),
});

export const signupModeResponse = z.object({
  success: z.boolean(),
  signup: z
    .enum(['invite', 'open'])
    .describe('open: anyone may sign up; invite: accounts come by invitation'),
  mail: mailField,
});
const planLimits = z.object({
  files_per_site: z.number().int().nullable(),
  storage_bytes_per_site: z.number().int().nullable(),
  sites: z.number().int().describe('Sites an account can create from the account API (every plan)'),
  forms: z.number().int(),
  submissions_per_month: z.number().int(),
  sqlite_databases: z.number().int().nullable(),
  sqlite_database_bytes: z.number().int().nullable(),
  sqlite_users_per_database: z.number().int().nullable(),
  deploys_kept: z
    .number()
    .int()
    .describe('Published deploys kept per site for rollback (the live one besides)'),
  drafts_kept: z.number().int().describe('Finalized draft deploys kept per site'),
});
export const plansResponse = z.object({
  success: z.boolean(),
  current: z.string().describe('The account’s plan type'),
  plans: z.array(z.object({ type: z.string(), name: z.string(), limits: planLimits })),
  note: z.string(),
  contact: z
    .string()
    .nullable()
    .describe(
      'Where to ask for a bigger plan: an http(s) URL or a mailto: address the operator set (HOSTPLANE_PLANS_CONTACT); null: none set',
    ),
});
