// The files domain's size and count limits: plain numbers, no imports, so that a client (the
// `hostplane deploy` command, through client.ts) checks them without loading the service.

/** A file's bytes at most (files API, a deploy's non-video path). */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** A video's bytes at most (videos API, a deploy's path every one of whose names is a video). */
export const MAX_VIDEO_BYTES = 50 * 1024 * 1024;
/** A manifest holds at most this many files (and its body at most MAX_MANIFEST_BYTES). */
export const MAX_DEPLOY_FILES = 100_000;
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
/** The longest message a deploy keeps (`hostplane deploy --message`). */
export const MAX_DEPLOY_MESSAGE = 500;
/** Parts (blobs) one bulk request may carry. */
export const MAX_BULK_PARTS = 1000;
/** Bytes one bulk request may carry (the multipart framing included). */
export const MAX_BULK_BYTES = 50 * 1024 * 1024;
