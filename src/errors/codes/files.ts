import { define, type WithMessage } from '../define.js';

/**
 * Codes of the files domain: site paths, file types and contents, sizes, and uploads (files and videos).
 */
export const fileErrors = {
  INVALID_PATH: define<WithMessage>({
    status: 400,
    error: 'Invalid path',
    message: (p) => p.message,
    description:
      'A site path is empty, absolute, has `.`/`..` or empty segments, or forbidden characters; or a new path has a folder named like an SQLite database file',
  }),
  INVALID_FILE_TYPE: define<WithMessage>({
    status: 400,
    error: 'Invalid file type',
    message: (p) => p.message,
    description: 'The extension is not one of the allowed ones',
  }),
  INVALID_CONTENT: define<WithMessage>({
    status: 400,
    error: 'Invalid content',
    message: (p) => p.message,
    description: 'The content is not valid for its encoding',
  }),
  FILE_TOO_LARGE: define<{ maxBytes: number; what: 'file' | 'read'; path?: string }>({
    status: 400,
    error: 'File too large',
    message: (p) =>
      p.what === 'read'
        ? `File is larger than ${p.maxBytes} bytes and is not returned inline; download it from its url`
        : p.path !== undefined
          ? `${p.path} is not a video: files can be at most ${p.maxBytes} bytes (10 MB), whatever other path names the same bytes.`
          : `Files can be at most ${p.maxBytes} bytes (10 MB).`,
    extra: (p) => ({ max_size_bytes: p.maxBytes }),
    extraSchema: (z) => ({ max_size_bytes: z.int().describe('The largest size accepted, in bytes') }),
    description: 'The file is over the size limit (10 MB)',
  }),
  DEPLOY_FILES_TOO_LARGE: define<{ files: Array<{ path: string; size: number; maxBytes: number }> }>({
    status: 400,
    error: 'File too large',
    message: (p) => {
      const named = p.files
        .slice(0, 20)
        .map((f) => `${f.path} (${f.size} bytes, at most ${f.maxBytes / 1024 / 1024} MB)`);
      const more = p.files.length > named.length ? ` and ${p.files.length - named.length} more` : '';
      return `${p.files.length} file${p.files.length === 1 ? ' is' : 's are'} over the size limit of ${p.files.length === 1 ? 'its' : 'their'} type: ${named.join(', ')}${more}. Nothing was created.`;
    },
    extra: (p) => ({
      files: p.files.map((f) => ({ path: f.path, size: f.size, max_size_bytes: f.maxBytes })),
    }),
    extraSchema: (z) => ({
      files: z
        .array(z.object({ path: z.string(), size: z.int(), max_size_bytes: z.int() }))
        .describe('Every file over its limit (10 MB; 50 MB for a video), by path'),
    }),
    description: "A deploy's declared sizes name files over their type's limit (10 MB, 50 MB for videos)",
  }),
  VIDEO_TOO_LARGE: define<{ maxBytes: number }>({
    status: 400,
    error: 'File too large',
    message: (p) => `Videos can be at most ${p.maxBytes} bytes (50 MB).`,
    extra: (p) => ({ max_size: p.maxBytes }),
    extraSchema: (z) => ({ max_size: z.int().describe('The largest video accepted, in bytes') }),
    description: 'The video is over 50 MB',
  }),
  MISSING_PATH: define<WithMessage>({
    status: 400,
    error: 'Missing path',
    message: (p) => p.message,
    description: 'The multipart `path` field is missing or empty',
  }),
  NO_FILE: define<WithMessage>({
    status: 400,
    error: 'No file provided',
    message: (p) => p.message,
    description: 'The multipart body has no `file` part',
  }),
  UPLOAD_ABORTED: define<WithMessage>({
    status: 404, // spec 4.4
    error: 'Upload aborted',
    message: (p) => p.message,
    description: 'The client stopped sending before the upload completed (nothing was stored)',
  }),
  HASH_MISMATCH: define<{ expected: string; actual: string; received?: string[] }>({
    status: 400,
    error: 'Hash mismatch',
    message: (p) =>
      p.received === undefined
        ? `The body's SHA-256 is ${p.actual}, not ${p.expected}: nothing was stored.`
        : `The part named ${p.expected} hashes to ${p.actual}: it was not stored, nor anything after it; the ${p.received.length} blob${p.received.length === 1 ? '' : 's'} before it in this request ${p.received.length === 1 ? 'was' : 'were'} (received).`,
    extra: (p) => ({
      expected: p.expected,
      actual: p.actual,
      ...(p.received === undefined ? {} : { received: p.received }),
    }),
    extraSchema: (z) => ({
      expected: z.string().describe("The hash in the URL (a bulk upload: the part's name)"),
      actual: z.string().describe('The SHA-256 of the bytes received'),
      received: z
        .array(z.string())
        .optional()
        .describe('A bulk upload: the blobs this request stored before the refused part'),
    }),
    description: 'A deploy blob whose bytes do not hash to the SHA-256 it was sent under',
  }),
  IDEMPOTENCY_KEY_REUSED: define<{ deployId: string }>({
    status: 422, // draft-ietf-httpapi-idempotency-key-header, section 2.7
    error: 'Idempotency key reused',
    message: (p) =>
      `This Idempotency-Key was used for a different request (it made deploy ${p.deployId}): send a new key with a new request.`,
    extra: (p) => ({ deploy_id: p.deployId }),
    extraSchema: (z) => ({ deploy_id: z.string().describe('The deploy the key was first used for') }),
    description: 'A deploy create whose Idempotency-Key made a deploy of the site from another request body',
  }),
  UPLOAD_FAILED: define({
    status: 500,
    error: 'Upload failed',
    message: () => 'The video could not be stored; try again.',
    description: 'The upload failed on our side (the cause is logged, not sent)',
  }),
} as const;
