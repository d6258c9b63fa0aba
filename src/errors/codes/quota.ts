import { define, quotaCommon, quotaCommonOf, type PlanParams, type WithMessage } from '../define.js';

/** A limit on a count (files, folders): what the account has and what its plan allows. */
type CountLimit = WithMessage & PlanParams & { current: number; limit: number };

/**
 * Codes of a plan's file, folder and storage limits: each body tells the account what it has, what
 * the plan allows and where to upgrade (spec section 7).
 */
export const quotaErrors = {
  FILE_LIMIT: define<CountLimit>({
    status: 403,
    error: 'File limit exceeded',
    message: (p) => p.message,
    extra: (p) => ({
      current_file_count: p.current,
      file_limit: p.limit,
      ...quotaCommonOf(p),
    }),
    extraSchema: (z) => ({
      current_file_count: z.int(),
      file_limit: z.int(),
      ...quotaCommon(z),
    }),
    description: "The plan's file limit would be exceeded",
  }),
  FOLDER_LIMIT: define<CountLimit>({
    status: 403,
    error: 'Folder limit exceeded',
    message: (p) => p.message,
    extra: (p) => ({
      current_folder_count: p.current,
      folder_limit: p.limit,
      ...quotaCommonOf(p),
    }),
    extraSchema: (z) => ({ current_folder_count: z.int(), folder_limit: z.int(), ...quotaCommon(z) }),
    description: "Folders are capped at the plan's file limit",
  }),
  STORAGE_LIMIT: define<
    WithMessage &
      PlanParams & {
        current: number;
        limit: number;
        limitFormatted: string;
        currentFormatted: string;
        available: number;
        availableFormatted: string;
      }
  >({
    status: 403,
    error: 'Storage limit exceeded',
    message: (p) => p.message,
    extra: (p) => ({
      current_storage: p.current,
      storage_limit: p.limit,
      storage_limit_formatted: p.limitFormatted,
      current_storage_formatted: p.currentFormatted,
      available_storage: p.available,
      available_storage_formatted: p.availableFormatted,
      ...quotaCommonOf(p),
    }),
    extraSchema: (z) => ({
      current_storage: z.int(),
      storage_limit: z.int(),
      storage_limit_formatted: z.string(),
      current_storage_formatted: z.string(),
      available_storage: z.int(),
      available_storage_formatted: z.string(),
      ...quotaCommon(z),
    }),
    description: "The plan's storage limit would be exceeded",
  }),
} as const;
