/**
 * How deep a JSON request body may nest (objects and arrays). No body of the API needs more than a
 * few levels; a deep one costs every recursive step after the parse (validation, structured clone
 * to a worker thread, serialisation) stack, and about 5,000 levels overflowed it (issue 16).
 */
export const MAX_JSON_DEPTH = 64;

export const jsonTooDeepMessage = `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether the JSON text in `bytes` (UTF-8: every byte of a multi-byte character is ≥ 0x80, so the
 * ASCII scan is exact) opens more than `max` objects or arrays inside each other. A scan of the raw
 * bytes before JSON.parse, strings skipped: a malformed text is JSON.parse's to refuse.
 */
export function jsonNestsDeeper(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = bytes.length;
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      // Skip the string: to the next quote not escaped by an odd run of backslashes.
      for (i++; i < n; i++) {
        const c = bytes[i];
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) break;
      }
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
