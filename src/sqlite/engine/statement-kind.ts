/**
 * The statements a database over its size cap still runs: those that start (after comments and
 * white space) with DELETE or DROP. They can only free space, save through a tenant trigger that
 * inserts, and there `max_page_count` (cap plus a margin) stops the growth with SQLITE_FULL.
 */
export function freesSpace(sql: unknown): boolean {
  if (typeof sql !== 'string') return false;
  const body = sql.replace(/^(\s+|--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/)*/, '');
  return /^(DELETE|DROP)\b/i.test(body);
}
