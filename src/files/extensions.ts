// The spec's file types (a leaf module: the CLI checks a folder against them through client.ts,
// without mime-types; file-types.ts adds the operator's extras and the Content-Types).

/** Extensions accepted by POST /api/v1/files/upload (spec 4.2): the default list. */
export const uploadExtensions: ReadonlySet<string> = new Set([
  'html', 'css', 'js', 'json', 'xml', 'txt',
  'jpg', 'jpeg', 'png', 'gif', 'svg', 'webp', 'ico',
  'pdf',
  'woff', 'woff2', 'ttf', 'otf',
]); // prettier-ignore

/** Extensions accepted by POST /api/v1/videos/upload (spec 4.4). */
export const videoExtensions: ReadonlySet<string> = new Set(['mp4', 'webm', 'ogg', 'mov']);

/** The file types one server accepts: the spec's lists and what its operator added. */
export interface FileTypes {
  /** What files/upload, file renames and a deploy's non-video paths accept. */
  upload: ReadonlySet<string>;
  /** What videos/upload accepts (a deploy's video paths: 50 MB each). */
  video: ReadonlySet<string>;
  /** The operator's additions to `upload`, in the order given. */
  extra: readonly string[];
}

export const specFileTypes: FileTypes = { upload: uploadExtensions, video: videoExtensions, extra: [] };
