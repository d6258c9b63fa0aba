/**
 * The one slug rule: a DNS label (it becomes `<slug>.<sites domain>`) without two hyphens in a
 * row. `--` is reserved, as IDNA reserves `xn--`: a preview host is `<deploy id>--<slug>`, so no
 * slug may spell one (edge/cache.ts answers preview-shaped hosts only with a deploy's preview).
 */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SLUG_MAX_LENGTH = 63;
export const SLUG_RULE =
  'slug must be 1-63 lower-case letters, digits or hyphens, not starting or ending with a hyphen, without two hyphens in a row ("--" is reserved for preview hosts)';

export const isValidSlug = (slug: string): boolean =>
  slug.length <= SLUG_MAX_LENGTH && SLUG_PATTERN.test(slug);
