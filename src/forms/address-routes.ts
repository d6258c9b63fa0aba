import { Router } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { jsonBody, pathId, requireJsonType, type RouteRegistry } from '../http/index.js';
import { addressMessage, type NotificationAddresses } from './addresses.js';
import { addressJson } from './format.js';
import * as s from './schemas.js';
import type { FormsService } from './service.js';
import { formId, scopeOf } from './submission-routes.js';

/**
 * Confirmation of notification addresses: the public route the mailed link's page posts to, and
 * a new link on the owner's request.
 */
export function addressRoutes(deps: {
  forms: FormsService;
  addresses: NotificationAddresses;
  registry: RouteRegistry;
}): Router {
  const { forms, addresses, registry } = deps;
  const router = Router();
  const tags = ['Forms'];

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms/notification-confirm',
    summary: 'Confirm a notification address with the mailed token',
    description:
      'The page of the link mailed to a new notification address (`/console/confirm-notification#token=…`) posts its token here. ' +
      'The address is then confirmed for the account that set it (all of its forms); another account that set the same address needs its own link. ' +
      'A link works once, for 7 days; a used, expired or replaced one is 401 `INVALID_TOKEN` with a `reason` (a token of another shape is a 400). JSON only (a cross-site page cannot send it without a preflight); no session needed.',
    tags,
    auth: 'none',
    middleware: [requireJsonType, jsonBody('4kb')],
    body: s.confirmAddressBody,
    errors: ['NOTIFICATION_LINK_INVALID', 'RATE_LIMITED', 'UNSUPPORTED_MEDIA_TYPE'],
    responses: { 200: { description: 'Confirmed', schema: s.confirmAddressResponse } },
    handler: async ({ req, res, body }) => {
      const { email } = await addresses.confirm(body.token, ipKeyGenerator(req.ip ?? 'unknown', 56));
      res.json({
        success: true,
        message: `${email} is confirmed: the form's submissions are mailed to it from now on.`,
        email,
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms/:id/notification-email/resend',
    params: { id: pathId('The form') },
    summary: 'Mail a new confirmation link to the form’s notification address',
    description:
      'Earlier links to the address stop working. Nothing is sent when the address is already confirmed (200). ' +
      'At most 3 links an hour per address and 20 a day per account (429 with Retry-After); 409 when the server sends no mail.',
    tags,
    auth: 'apiKeyOrSession',
    errors: ['NOT_FOUND', 'RATE_LIMITED', 'NOTIFICATION_MAIL_OFF'],
    responses: {
      200: { description: 'Already confirmed: nothing sent', schema: s.resendAddressResponse },
      202: { description: 'A new link is on its way', schema: s.resendAddressResponse },
    },
    handler: async ({ req, res }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      const state = await addresses.request(form, 'resend');
      res.status(state.status === 'confirmed' ? 200 : 202).json({
        success: true,
        message: addressMessage(state),
        notification_email: state.email,
        ...addressJson(state),
      });
    },
  });
  return router;
}
