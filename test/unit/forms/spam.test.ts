import { describe, expect, it } from 'vitest';
import {
  countLinks,
  matchSpamPhrases,
  scoreSubmission,
  SPAM_PHRASES,
  SPAM_SIGNALS,
  SPAM_THRESHOLD,
  type SpamInput,
} from '../../../src/forms/spam.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const nowSeconds = NOW / 1000;

/** A clean submission: a person who took 30 s to write a short message. */
function input(overrides: Partial<SpamInput> = {}): SpamInput {
  return {
    data: { name: 'Ada Lovelace', email: 'ada@example.com', message: 'Hello, I would like a quote.' },
    fieldTypes: { name: 'text', email: 'email', message: 'textarea' },
    trap: '',
    startedAt: nowSeconds - 30,
    startSent: true,
    now: NOW,
    identicalRecentCount: 0,
    ipRecentCount: 0,
    ...overrides,
  };
}

const withMessage = (message: string, overrides: Partial<SpamInput> = {}): SpamInput =>
  input({ data: { ...input().data, message }, ...overrides });

describe('scoreSubmission: a clean submission', () => {
  it('scores 0 with no reasons', () => {
    expect(scoreSubmission(input())).toEqual({ score: 0, isSpam: false, reasons: [] });
  });

  it('treats an absent honeypot (undefined) as empty', () => {
    expect(scoreSubmission(input({ trap: undefined })).score).toBe(0);
  });

  it('exactly 3 s after display is not too fast', () => {
    expect(scoreSubmission(input({ startedAt: nowSeconds - 3 })).reasons).toEqual([]);
  });

  it('a start time within the clock-skew tolerance is not "in the future"', () => {
    // 60 s ahead: the visitor's clock runs fast; elapsed is negative but within tolerance → too fast.
    expect(scoreSubmission(input({ startedAt: nowSeconds + 60 })).reasons).toEqual(['submitted_too_fast']);
  });
});

describe('scoreSubmission: each signal alone', () => {
  it.each<[string, Partial<SpamInput> | (() => SpamInput), number, boolean]>([
    ['honeypot_filled', { trap: 'http://spam.example' }, 100, true],
    ['honeypot_filled', { trap: ' ' }, 100, true],
    ['no_start_time', { startedAt: undefined }, 40, false],
    ['submitted_too_fast', { startedAt: nowSeconds }, 80, true],
    ['submitted_too_fast', { startedAt: nowSeconds - 2.999 }, 80, true],
    ['submitted_too_fast', { startedAt: nowSeconds - 2 }, 80, true],
    ['links', () => withMessage('see https://a.example'), 10, false],
    ['links', () => withMessage('see https://a.example and www.b.example/x'), 20, false],
    ['links', () => withMessage('http://a.example http://b.example [url=http://c]'), 35, false],
    ['links', () => withMessage('<a href="x">1</a> ' + 'https://z.example '.repeat(5)), 50, false],
    ['spam_phrases', () => withMessage('Cheap VIAGRA today'), 25, false],
    ['spam_phrases', () => withMessage('Our SEO services bring backlinks'), 45, false],
    ['all_caps', () => withMessage('PLEASE CALL ME BACK AS SOON AS POSSIBLE'), 15, false],
    ['repeated_submission', { identicalRecentCount: 1 }, 20, false],
    ['repeated_submission', { identicalRecentCount: 2 }, 20, false],
    ['repeated_submission', { identicalRecentCount: 3 }, 45, false],
    ['burst_from_ip', { ipRecentCount: 5 }, 30, false],
    ['burst_from_ip', { ipRecentCount: 19 }, 30, false],
    ['burst_from_ip', { ipRecentCount: 20 }, 50, false],
  ])('%s → %i points', (reason, overrides, score, isSpam) => {
    const submission = typeof overrides === 'function' ? overrides() : input(overrides);
    expect(scoreSubmission(submission)).toEqual({ score, isSpam, reasons: [reason] });
  });

  it('honeypot filled and too fast each reach the threshold alone', () => {
    expect(scoreSubmission(input({ trap: 'x' })).score).toBeGreaterThanOrEqual(SPAM_THRESHOLD);
    expect(scoreSubmission(input({ startedAt: nowSeconds - 1 })).score).toBeGreaterThanOrEqual(
      SPAM_THRESHOLD,
    );
  });

  it('all caps counts from 20 letters in one field', () => {
    expect(scoreSubmission(withMessage('HELLO THERE GOOD PEOPLE!')).reasons).toEqual(['all_caps']); // 20 letters
    expect(scoreSubmission(withMessage('HELLO THERE GOOD PEOPL!')).reasons).toEqual([]); // 19 letters
  });

  it('below each tier nothing is added', () => {
    expect(scoreSubmission(input({ ipRecentCount: 4 })).reasons).toEqual([]);
    expect(scoreSubmission(withMessage('PLEASE CALL')).reasons).toEqual([]); // under 20 letters
    expect(
      scoreSubmission(input({ data: { name: 'ADA LOVELACE', message: 'SOME SHOUTING' } })).reasons,
    ).toEqual([]); // 20 letters, but not in one field
    expect(scoreSubmission(withMessage('Please CALL ME BACK AS SOON AS POSSIBLE')).reasons).toEqual([]);
  });

  it('looks at text and textarea fields only', () => {
    const submission = input({
      data: { site: 'https://a.example', pick: 'casino', email: 'VIAGRA@EXAMPLE.COM', message: 'Hi' },
      fieldTypes: { site: 'url', pick: 'select', email: 'email', message: 'textarea' },
    });
    expect(scoreSubmission(submission).reasons).toEqual([]);
  });

  it('ignores values of keys that are not fields of the form', () => {
    const submission = input({ data: { ...input().data, extra: 'viagra https://x.example' } });
    expect(scoreSubmission(submission).reasons).toEqual([]);
  });

  it('matches phrases as whole words, not inside other words', () => {
    expect(matchSpamPhrases('I study casinos? No: occasional casino-night')).toEqual(['casino']);
    expect(matchSpamPhrases('occasino')).toEqual([]);
    expect(matchSpamPhrases('click here: buy now')).toEqual(['click here', 'buy now']);
  });

  it('counts links of several shapes', () => {
    expect(countLinks('none here, just example.com')).toBe(0);
    expect(countLinks('HTTPS://A.EXAMPLE/x http://b www.c.example')).toBe(3);
  });
});

describe('scoreSubmission: a post without the form’s anti-spam fields', () => {
  const scripted = (overrides: Partial<SpamInput> = {}) =>
    input({ trap: undefined, startedAt: undefined, startSent: false, ...overrides });

  it('neither `_t_trap` nor `_t_start` (a naive bot) is spam on its own', () => {
    const result = scoreSubmission(scripted());
    expect(result.isSpam).toBe(true);
    expect(result.reasons).toEqual(['no_anti_spam_fields', 'no_start_time']);
    // The signal alone reaches the threshold (here with a valid start time so no other applies).
    const alone = scoreSubmission(scripted({ startedAt: nowSeconds - 30 }));
    expect(alone).toEqual({ score: SPAM_THRESHOLD, isSpam: true, reasons: ['no_anti_spam_fields'] });
  });

  it('the embedded form without JavaScript (both sent, `_t_start` empty) is not spam', () => {
    const noScript = scoreSubmission(input({ trap: '', startedAt: undefined, startSent: true }));
    expect(noScript).toEqual({ score: 40, isSpam: false, reasons: ['no_start_time'] });
  });

  it('either field alone is the form’s (an empty honeypot, or a start time)', () => {
    expect(scoreSubmission(scripted({ trap: '' })).isSpam).toBe(false);
    expect(scoreSubmission(scripted({ startedAt: nowSeconds - 30, startSent: true })).score).toBe(0);
  });
});

describe('scoreSubmission: start times in the future', () => {
  it('a start time further in the future never scores lower', () => {
    let previous = 0;
    for (let ahead = -10; ahead <= 86_400; ahead += ahead < 300 ? 1 : 997) {
      const { score } = scoreSubmission(input({ startedAt: nowSeconds + ahead }));
      expect(score, `${ahead} s ahead`).toBeGreaterThanOrEqual(previous);
      previous = score;
    }
    const near = scoreSubmission(input({ startedAt: nowSeconds + 30 }));
    const far = scoreSubmission(input({ startedAt: nowSeconds + 120 }));
    expect(near).toEqual({ score: 80, isSpam: true, reasons: ['submitted_too_fast'] });
    expect(far).toEqual({
      score: 100,
      isSpam: true,
      reasons: ['start_time_in_future', 'submitted_too_fast'],
    });
  });
});

describe('scoreSubmission: combinations that cross the threshold', () => {
  it.each<[string, SpamInput, string[], number]>([
    [
      'no start time + 3 links',
      withMessage('http://a.x http://b.x http://c.x', { startedAt: undefined }),
      ['no_start_time', 'links'],
      75,
    ],
    [
      'start in the future + spam phrases',
      withMessage('casino bonus, click here', { startedAt: nowSeconds + 3600 }),
      ['start_time_in_future', 'submitted_too_fast', 'spam_phrases'],
      100,
    ],
    [
      'repeated 3 times + burst from the IP',
      input({ identicalRecentCount: 3, ipRecentCount: 5 }),
      ['repeated_submission', 'burst_from_ip'],
      75,
    ],
    [
      'no start time + spam phrase + all caps',
      withMessage('CHEAP VIAGRA DELIVERED TO YOUR DOOR', { startedAt: undefined }),
      ['no_start_time', 'spam_phrases', 'all_caps'],
      80,
    ],
    [
      'links + phrases',
      withMessage('Get backlinks and SEO services: http://a.x http://b.x http://c.x'),
      ['links', 'spam_phrases'],
      80,
    ],
    [
      'a burst of 20 + a repeat',
      input({ ipRecentCount: 20, identicalRecentCount: 1 }),
      ['repeated_submission', 'burst_from_ip'],
      70,
    ],
  ])('%s', (_, submission, reasons, score) => {
    expect(scoreSubmission(submission)).toEqual({ score, isSpam: true, reasons });
  });

  it('just under: no start time + 2 links is 60, not spam', () => {
    const result = scoreSubmission(withMessage('http://a.x http://b.x', { startedAt: undefined }));
    expect(result).toEqual({ score: 60, isSpam: false, reasons: ['no_start_time', 'links'] });
  });
});

describe('scoreSubmission: clamping', () => {
  it('clamps the sum to 100 and keeps every reason', () => {
    const result = scoreSubmission(
      withMessage('VIAGRA CASINO HTTP://A.X HTTP://B.X HTTP://C.X HTTP://D.X HTTP://E.X HTTP://F.X', {
        trap: 'bot',
        startedAt: nowSeconds,
        identicalRecentCount: 10,
        ipRecentCount: 50,
      }),
    );
    expect(result.score).toBe(100);
    expect(result.isSpam).toBe(true);
    expect(result.reasons).toEqual([
      'honeypot_filled',
      'submitted_too_fast',
      'links',
      'spam_phrases',
      'all_caps',
      'repeated_submission',
      'burst_from_ip',
    ]);
  });

  it('is an integer between 0 and 100 for any input', () => {
    for (const startedAt of [undefined, -1e12, 0, nowSeconds - 0.5, nowSeconds + 1e9, NaN]) {
      const { score } = scoreSubmission(input({ startedAt }));
      expect(Number.isInteger(score)).toBe(true);
      expect(score).toBeGreaterThanOrEqual(0);
      expect(score).toBeLessThanOrEqual(100);
    }
  });
});

describe('the signal table', () => {
  it('has unique, stable reasons and a description for each', () => {
    const reasons = SPAM_SIGNALS.map((s) => s.reason);
    expect(new Set(reasons).size).toBe(reasons.length);
    expect(reasons).toEqual([
      'honeypot_filled',
      'no_anti_spam_fields',
      'no_start_time',
      'start_time_in_future',
      'submitted_too_fast',
      'links',
      'spam_phrases',
      'all_caps',
      'repeated_submission',
      'burst_from_ip',
    ]);
    for (const signal of SPAM_SIGNALS) expect(signal.description.length).toBeGreaterThan(10);
  });

  it('every listed phrase is detected', () => {
    for (const phrase of SPAM_PHRASES)
      expect(matchSpamPhrases(`x ${phrase.toUpperCase()} y`)).toEqual([phrase]);
  });
});
