// The files domain's second face, for clients (`hostplane deploy`): the limits, path rules and
// file types a deploy is checked against before anything is sent. Leaf modules only, never the
// service or its routes: loading those (drizzle, the database drivers, the S3 SDK, express) cost
// a short-lived CLI process more than deploying a small site (test/e2e/cli-deploy-fixed-costs.test.ts).
export {
  MAX_BULK_BYTES,
  MAX_BULK_PARTS,
  MAX_DEPLOY_FILES,
  MAX_DEPLOY_MESSAGE,
  MAX_FILE_BYTES,
  MAX_VIDEO_BYTES,
} from './limits.js';
export { namesDatabaseFile, normalizeSitePath } from './paths.js';
export { specFileTypes, type FileTypes } from './extensions.js';
