// Spam scoring of a form submission: independent signals, each adding points, summed and clamped
// to 0-100; 70 or more is spam (spec section 8). Pure: the caller supplies the counts it looked up
// (identical recent submissions, recent submissions from the same IP) and the clock.

export type FieldType = 'text' | 'email' | 'tel' | 'number' | 'url' | 'textarea' | 'select';

export interface SpamInput {
  /** Field values by field name. */
  data: Record<string, string>;
  /** The type of each field of the form, by name; values of other keys are not looked at. */
  fieldTypes: Record<string, FieldType>;
  /** `_t_trap`, the honeypot: a person never sees it, so it stays empty. */
  trap: string | undefined;
  /** `_t_start` in Unix seconds; undefined when missing or not a number. */
  startedAt: number | undefined;
  /** Whether the body carried `_t_start` at all (even empty, as a form posted without JavaScript does). */
  startSent: boolean;
  /** Now, in Unix milliseconds. */
  now: number;
  /** Submissions to the same form with the same content in the last 24 hours (this one excluded). */
  identicalRecentCount: number;
  /** Submissions to the same form from the same IP in the last 10 minutes (this one excluded). */
  ipRecentCount: number;
}

export interface SpamScore {
  /** 0-100, an integer. */
  score: number;
  /** score >= SPAM_THRESHOLD */
  isSpam: boolean;
  /** The reason of every signal that added points, in table order. */
  reasons: string[];
}

export const SPAM_THRESHOLD = 70;
/** Sooner than this after the form was shown is a bot (spec section 8). */
export const MIN_FILL_SECONDS = 3;
/** A `_t_start` this far ahead of the server's clock is not clock skew. */
export const FUTURE_TOLERANCE_SECONDS = 60;

/**
 * Phrases typical of unsolicited mail sent through contact forms, matched case-insensitively as
 * whole words in free-text fields. Kept short on purpose: each one is rare in genuine messages.
 */
export const SPAM_PHRASES: readonly string[] = [
  'viagra',
  'cialis',
  'casino',
  'payday loan',
  'crypto investment',
  'bitcoin investment',
  'forex signals',
  'seo services',
  'backlinks',
  'first page of google',
  'rank your website',
  'guest post',
  'make money fast',
  'work from home',
  'limited time offer',
  'click here',
  'buy now',
  '100% free',
  'no credit check',
  'porn',
];

export interface SpamFacts {
  input: SpamInput;
  /** Values of the text and textarea fields, where people write and spammers paste. */
  freeText: string[];
}

export interface SpamSignal {
  /** Stable identifier, stored in `spam_reasons`. */
  reason: string;
  /** What triggers it and how many points it adds (for the README). */
  description: string;
  /** Points this signal adds for the input, 0 when it does not apply. */
  points(facts: SpamFacts): number;
}

const URL_PATTERN = /\bhttps?:\/\/[^\s<>"']+|\bwww\.[a-z0-9-]+\.[^\s<>"']+|\[url[=\]]|<a\s[^>]*href/gi;

/** How many links the free text holds. */
export function countLinks(text: string): number {
  return text.match(URL_PATTERN)?.length ?? 0;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PHRASE_PATTERNS = SPAM_PHRASES.map(
  (phrase) => new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(phrase)}($|[^\\p{L}\\p{N}])`, 'iu'),
);

/** Which of SPAM_PHRASES the text contains. */
export function matchSpamPhrases(text: string): string[] {
  return SPAM_PHRASES.filter((_, i) => PHRASE_PATTERNS[i]!.test(text));
}

/** 20 letters or more, 90 % of them capitals. */
function isShouting(text: string): boolean {
  const letters = text.replace(/[^\p{L}]/gu, '');
  const upper = letters.replace(/[^\p{Lu}]/gu, '').length;
  return letters.length >= 20 && upper / letters.length >= 0.9;
}

/** Points by the first tier whose minimum `value` reaches; tiers sorted by descending minimum. */
const tier = (value: number, tiers: Array<[min: number, points: number]>): number =>
  tiers.find(([min]) => value >= min)?.[1] ?? 0;

/** The signals, independent of each other; their points add up. */
export const SPAM_SIGNALS: readonly SpamSignal[] = [
  {
    reason: 'honeypot_filled',
    description: 'the hidden `_t_trap` field is not empty: 100',
    points: ({ input }) => (input.trap !== undefined && input.trap !== '' ? 100 : 0),
  },
  {
    // The embedded form always posts both (empty without JavaScript): a post with neither was
    // written by a script that never loaded the form.
    reason: 'no_anti_spam_fields',
    description: 'neither `_t_trap` nor `_t_start` was sent (not posted from the embedded form): 70',
    points: ({ input }) => (input.trap === undefined && !input.startSent ? 70 : 0),
  },
  {
    reason: 'no_start_time',
    description: '`_t_start` is missing or not a number (also a browser with JavaScript off): 40',
    points: ({ input }) => (input.startedAt === undefined ? 40 : 0),
  },
  {
    reason: 'start_time_in_future',
    description: `\`_t_start\` more than ${FUTURE_TOLERANCE_SECONDS} s ahead of the server's clock (beyond clock skew): 50 more`,
    points: ({ input }) =>
      input.startedAt !== undefined && input.startedAt * 1000 > input.now + FUTURE_TOLERANCE_SECONDS * 1000
        ? 50
        : 0,
  },
  {
    reason: 'submitted_too_fast',
    // Any start time in the future counts too (with the future signal on top beyond the
    // tolerance), so a start time further ahead never scores lower than a nearer one.
    description: `sent less than ${MIN_FILL_SECONDS} s after the form was shown, or with a start time in the future: 80`,
    points: ({ input }) =>
      input.startedAt !== undefined && input.now - input.startedAt * 1000 < MIN_FILL_SECONDS * 1000 ? 80 : 0,
  },
  {
    reason: 'links',
    description: 'links in the text fields: 1 → 10, 2 → 20, 3-5 → 35, 6 or more → 50',
    points: ({ freeText }) =>
      tier(
        freeText.reduce((n, text) => n + countLinks(text), 0),
        [
          [6, 50],
          [3, 35],
          [2, 20],
          [1, 10],
        ],
      ),
  },
  {
    reason: 'spam_phrases',
    description: 'phrases of SPAM_PHRASES in the text fields: 1 → 25, 2 or more → 45',
    points: ({ freeText }) =>
      tier(new Set(freeText.flatMap(matchSpamPhrases)).size, [
        [2, 45],
        [1, 25],
      ]),
  },
  {
    reason: 'all_caps',
    description: 'a text field holds 20 letters or more, 90 % of them capitals: 15',
    points: ({ freeText }) => (freeText.some(isShouting) ? 15 : 0),
  },
  {
    reason: 'repeated_submission',
    description: 'the same content sent to the form in the last 24 h: once → 20, 3 times or more → 45',
    points: ({ input }) =>
      tier(input.identicalRecentCount, [
        [3, 45],
        [1, 20],
      ]),
  },
  {
    reason: 'burst_from_ip',
    description: 'submissions to the form from the same IP in the last 10 min: 5 → 30, 20 or more → 50',
    points: ({ input }) =>
      tier(input.ipRecentCount, [
        [20, 50],
        [5, 30],
      ]),
  },
];

/** Scores a submission against every signal of SPAM_SIGNALS. */
export function scoreSubmission(input: SpamInput): SpamScore {
  const freeText = Object.entries(input.data)
    .filter(([name]) => input.fieldTypes[name] === 'text' || input.fieldTypes[name] === 'textarea')
    .map(([, value]) => value);
  // A NaN or infinite start time is as good as none.
  const startedAt = Number.isFinite(input.startedAt) ? input.startedAt : undefined;
  const facts: SpamFacts = { input: { ...input, startedAt }, freeText };
  let total = 0;
  const reasons: string[] = [];
  for (const signal of SPAM_SIGNALS) {
    const points = signal.points(facts);
    if (points > 0) {
      total += points;
      reasons.push(signal.reason);
    }
  }
  const score = Math.min(100, Math.max(0, Math.round(total)));
  return { score, isSpam: score >= SPAM_THRESHOLD, reasons };
}
