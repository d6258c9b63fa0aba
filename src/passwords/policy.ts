import { adjacencyGraphs } from '@zxcvbn-ts/language-common';

// NIST SP 800-63B 3.1.1.2: refuse passwords that are repetitive ("aaaaaaaa", "abababab"),
// sequential ("abcdefgh", "12345678", keyboard runs like "qwertyui") or context-specific (the
// service's name, the email, the site), with their simple variations: case, a few characters
// added, common letter-for-symbol swaps. Small pure checks (zxcvbn-ts's matchers live in
// @zxcvbn-ts/core, which is not a dependency; its keyboard layouts come from language-common).

/** The service's own name: never a good part of a password for it. */
export const SERVICE_WORDS = ['hostplane'] as const;

export type WeakRule = 'repetitive' | 'sequential' | 'context';

export interface Weakness {
  rule: WeakRule;
  /** Says which rule failed, never the password. */
  message: string;
}

const MESSAGES: Record<WeakRule, string> = {
  repetitive:
    'This password is a repeated character or pattern (like aaaaaaaa or abababab): choose one that is harder to guess.',
  sequential:
    'This password is a sequence (like abcdefgh or 12345678) or a keyboard run (like qwertyui): choose one that is harder to guess.',
  context:
    'This password is built on the email address, the site’s name or the service’s name: choose one that is not.',
};

/** At least this many characters must be outside every pattern. */
const MIN_FREE_CHARS = 4;
/** Context words are found from this length on (shorter ones match too much by chance). */
const MIN_WORD_CHARS = 4;

type Span = [start: number, end: number];

/**
 * The rule a password breaks, if any. `context`: the email, the site's slug or host names (any
 * strings: they are split into words here). Lower-cased before the checks.
 */
export function passwordWeakness(password: string, context: readonly string[] = []): Weakness | undefined {
  const chars = [...password.toLowerCase()];
  const found: Record<WeakRule, Span[]> = {
    context: contextSpans(chars, contextWords(context)),
    repetitive: repeatSpans(chars),
    sequential: [...sequenceSpans(chars), ...keyboardSpans(chars)],
  };
  const covered = (spans: Span[]) => coverage(chars.length, spans);
  // Built on a context word: the word is (about) half of it or more.
  if (covered(found.context) * 2 >= chars.length) return weakness('context');
  const all = [...found.context, ...found.repetitive, ...found.sequential];
  if (chars.length - covered(all) >= MIN_FREE_CHARS) return undefined;
  // Mostly patterns: name the one that covers the most.
  const rules: WeakRule[] = ['repetitive', 'sequential', 'context'];
  const worst = rules.reduce((a, b) => (covered(found[b]) > covered(found[a]) ? b : a));
  return weakness(worst);
}

const weakness = (rule: WeakRule): Weakness => ({ rule, message: MESSAGES[rule] });

function coverage(length: number, spans: Span[]): number {
  const marked = new Uint8Array(length);
  for (const [start, end] of spans) marked.fill(1, start, end);
  return marked.reduce((n, m) => n + m, 0);
}

/** The words of the context: each string, its parts between punctuation, an email's local part. */
export function contextWords(context: readonly string[]): string[] {
  const words = new Set<string>(SERVICE_WORDS);
  for (const raw of context) {
    const value = raw.trim().toLowerCase();
    if (!value) continue;
    words.add(value);
    const at = value.indexOf('@');
    if (at > 0) words.add(value.slice(0, at));
    for (const part of value.split(/[^\p{L}\p{N}]+/u)) words.add(part);
  }
  return [...words].filter((w) => [...w].length >= MIN_WORD_CHARS);
}

// Characters commonly typed for a letter ("h0stpl@ne").
const LEET: Record<string, string> = {
  '0': 'o',
  '1': 'il',
  '!': 'il',
  '|': 'il',
  '3': 'e',
  '4': 'a',
  '@': 'a',
  '5': 's',
  $: 's',
  '7': 't',
  '+': 't',
  '8': 'b',
  '9': 'g',
};
const sameLetter = (typed: string, letter: string) =>
  typed === letter || (LEET[typed]?.includes(letter) ?? false);

/** Where each context word (or its reverse) occurs, with letter-for-symbol swaps. */
function contextSpans(chars: string[], words: string[]): Span[] {
  const spans: Span[] = [];
  for (const word of words) {
    const letters = [...word];
    for (const candidate of [letters, [...letters].reverse()])
      for (let i = 0; i + candidate.length <= chars.length; i++)
        if (candidate.every((c, j) => sameLetter(chars[i + j]!, c))) spans.push([i, i + candidate.length]);
  }
  return spans;
}

/**
 * Runs of a repeated unit of 1 to 4 characters ("aaa", "abab", "abcabc"), and the whole password
 * repeating a unit shorter than the minimum length ("hello1hello1": as weak as "hello1").
 */
function repeatSpans(chars: string[]): Span[] {
  const spans: Span[] = [];
  const n = chars.length;
  const longest = Math.floor(n / 2);
  for (let unit = 1; unit <= longest; unit++) {
    let start = 0; // the run of positions i with chars[i] === chars[i - unit] starts at start + unit
    for (let i = unit; i <= n; i++) {
      if (i < n && chars[i] === chars[i - unit]) continue;
      const length = i - start; // characters from start to i (exclusive) repeat with period `unit`
      const whole = start === 0 && i === n && n % unit === 0 && unit < 8;
      if ((unit <= 4 && length >= Math.max(2 * unit, 3)) || whole) spans.push([start, i]);
      start = i + 1 - unit;
    }
  }
  return spans;
}

const CLASSES = [/[a-z]/, /[0-9]/];
const sameClass = (a: string, b: string) => CLASSES.some((c) => c.test(a) && c.test(b));

/** Runs of at least 3 letters or digits going up or down by one ("abc", "4321"). */
function sequenceSpans(chars: string[]): Span[] {
  const spans: Span[] = [];
  let start = 0;
  let step = 0;
  for (let i = 1; i <= chars.length; i++) {
    const delta =
      i < chars.length && sameClass(chars[i]!, chars[i - 1]!)
        ? chars[i]!.codePointAt(0)! - chars[i - 1]!.codePointAt(0)!
        : 0;
    if (Math.abs(delta) === 1 && (i - start === 1 || delta === step)) {
      step = delta;
      continue;
    }
    if (i - start >= 3 && step !== 0) spans.push([start, i]);
    // A broken run may start a new one at the previous character.
    start = Math.abs(delta) === 1 ? i - 1 : i;
    step = Math.abs(delta) === 1 ? delta : 0;
  }
  return spans;
}

type Graph = Record<string, (string | null)[]>;
const GRAPHS: Graph[] = [
  adjacencyGraphs.qwerty,
  adjacencyGraphs.qwertz,
  adjacencyGraphs.azerty,
  adjacencyGraphs.keypad,
] as Graph[];

/** The direction (the neighbour's index) from `a` to `b` on a keyboard, if they are neighbours. */
const direction = (graph: Graph, a: string, b: string): number =>
  graph[a]?.findIndex((keys) => keys?.includes(b) ?? false) ?? -1;

/** Straight runs of at least 4 neighbouring keys ("qwer", "asdf", "!@#$", "poiu"). */
function keyboardSpans(chars: string[]): Span[] {
  const spans: Span[] = [];
  for (const graph of GRAPHS) {
    let start = 0;
    let heading = -1;
    for (let i = 1; i <= chars.length; i++) {
      const d = i < chars.length ? direction(graph, chars[i - 1]!, chars[i]!) : -1;
      if (d >= 0 && (i - start === 1 || d === heading)) {
        heading = d;
        continue;
      }
      if (i - start >= 4 && heading >= 0) spans.push([start, i]);
      start = d >= 0 ? i - 1 : i;
      heading = d;
    }
  }
  return spans;
}
