import { Router } from 'express';
import type { Config } from '../config/index.js';
import type { DomainModule } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import type { NotificationAddresses } from './addresses.js';
import { publicFormRoutes } from './public-routes.js';
import { formsRoutes } from './routes.js';
import type { FormsService } from './service.js';
import type { Submissions } from './submissions.js';

// The forms domain's public face: forms and their fields, public submissions with spam scoring,
// the monthly submission quota, embed snippets.
export type { FormRow } from './tables.js';
export { ClusterFormsService, type FormResourceTarget } from './cluster.js';
export {
  FormsService,
  type FormLink,
  type FormScope,
  type FormsHooks,
  type NewForm,
  type PurgeHook,
  type ResourceFields,
} from './service.js';
export { Submissions, monthOf, type Notify, type SubmissionNotice } from './submissions.js';
export { SUBMIT_RATE_LIMIT } from './public-routes.js';
export {
  ADDRESS_MAIL_LIMITS,
  NotificationAddresses,
  addressMessage,
  type AddressConfirmation,
  type AddressState,
  type ConfirmMailer,
} from './addresses.js';
export { FORM_CAPS, fieldTypes, type FieldInput } from './definitions.js';
export { submissionUrl } from './format.js';

/** The forms domain as a module of the app: the forms API and the public submission endpoint. */
export function formsModule(deps: {
  config: Config;
  platform: Platform;
  forms: FormsService;
  submissions: Submissions;
  addresses: NotificationAddresses;
  limiter: RateLimiter;
  logger: Logger;
}): DomainModule {
  return {
    name: 'forms',
    routes: (registry) => {
      const router = Router();
      router.use(publicFormRoutes({ ...deps, registry }));
      router.use(formsRoutes({ ...deps, registry }));
      return router;
    },
  };
}
