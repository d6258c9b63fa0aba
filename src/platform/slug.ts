/** The one slug rule: a DNS label (it becomes `<slug>.<sites domain>`). */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const SLUG_RULE =
  'slug must be 1-63 lower-case letters, digits or hyphens, not starting or ending with a hyphen';

export const isValidSlug = (slug: string): boolean => SLUG_PATTERN.test(slug);
