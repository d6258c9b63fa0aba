import type { Config } from '../config/index.js';
import type { DomainModule, UploadAdmission } from '../http/index.js';
import type { Platform } from '../platform/index.js';
import { filesRoutes } from './routes.js';
import type { DeploysService } from './deploys.js';
import type { FilesService } from './service.js';

// The files domain's public face: the per-site file index, its bytes, folders and videos.
export { FilesService, MAX_FILE_BYTES, MAX_VIDEO_BYTES, type FileRecord } from './service.js';
export { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, namesDatabaseFile, normalizeSitePath } from './paths.js';
// What `hostplane deploy` checks before sending a manifest (the rules of deploys.ts).
export {
  EXTRA_FILE_TYPES,
  fileTypesWith,
  specFileTypes,
  uploadExtensions,
  videoExtensions,
  type FileTypes,
} from './file-types.js';
export { MAX_DEPLOY_FILES, MAX_DEPLOY_MESSAGE } from './deploys.js';
// What one bulk upload of deploy blobs may carry (POST /api/v1/deploys/{id}/files).
export { MAX_BULK_BYTES, MAX_BULK_PARTS } from './deploy-bulk-parts.js';
export { databasePath } from './schemas.js';
export { contentTypeFor } from './file-types.js';
export { DeploysService, DEPLOY_ID, DEPLOY_RETENTION, DRAFT_RETENTION, type PreviewRow } from './deploys.js';
export { ROLLBACK_STORAGE_FACTOR, rollbackLimit } from './deploy-retention.js';

const HOUR = 3_600_000;

/** The files domain as a module of the app: its routes and the orphan-blob sweep. */
export function filesModule(deps: {
  config: Config;
  platform: Platform;
  files: FilesService;
  deploys: DeploysService;
  uploads: UploadAdmission;
}): DomainModule {
  return {
    name: 'files',
    routes: (registry) => filesRoutes({ ...deps, registry }),
    sweeps: [
      { name: 'orphan_blobs', everyMs: HOUR, run: () => deps.files.sweepOrphanBlobs(HOUR) },
      {
        name: 'abandoned_deploys',
        everyMs: deps.deploys.sweepEveryMs,
        run: () => deps.deploys.sweepAbandoned(),
      },
      {
        name: 'counter_recount',
        everyMs: deps.config.counterRecount.everyMs,
        run: () => deps.files.recountCounters(deps.config.counterRecount.batch),
      },
    ],
  };
}
