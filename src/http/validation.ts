import type { z } from 'zod';

// zod's own wording ("Invalid input: expected int, received number"); a schema's custom message
// (e.g. "must be a whole number") is kept as written.
const ZOD_DEFAULT = /^(Invalid (input|option|URL|string|email|uuid)|Too (small|big)|Unrecognized key)/;

const typeWords: Record<string, string> = {
  int: 'a whole number',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'a list',
};

const received = (input: unknown): string =>
  input === null
    ? 'null'
    : Array.isArray(input)
      ? 'a list'
      : typeof input === 'object'
        ? 'an object'
        : typeof input;

/** One issue in words: "path is required", "per_page must be at most 100", … */
export function describeIssue(issue: z.core.$ZodIssue, where: string): string {
  const field = issue.path.length ? issue.path.join('.') : where;
  // A union with its own words names its fields itself (exactlyOneOf: "send either `a` or `b`").
  if (issue.code === 'invalid_union' && !ZOD_DEFAULT.test(issue.message)) return issue.message;
  if (!ZOD_DEFAULT.test(issue.message)) return `${field} ${issue.message}`;
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return `${field} is required`;
      const expected = typeWords[issue.expected] ?? issue.expected;
      if (issue.expected === 'int' && typeof issue.input === 'number')
        return `${field} must be a whole number within ±${Number.MAX_SAFE_INTEGER}`;
      return `${field} must be ${expected}, not ${received(issue.input)}`;
    }
    case 'too_small':
      return issue.origin === 'string'
        ? Number(issue.minimum) === 1
          ? `${field} must not be empty`
          : `${field} must be at least ${issue.minimum} characters long`
        : issue.origin === 'array'
          ? `${field} must have at least ${issue.minimum} items`
          : `${field} must be ${issue.inclusive ? 'at least' : 'more than'} ${issue.minimum}`;
    case 'too_big':
      return issue.origin === 'string'
        ? `${field} must be at most ${issue.maximum} characters long`
        : issue.origin === 'array'
          ? `${field} must have at most ${issue.maximum} items`
          : `${field} must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return `${field} must be a valid ${issue.format === 'regex' ? 'value' : issue.format}`;
    case 'unrecognized_keys':
      return `${where} has unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
    default:
      return `${field} is not valid`;
  }
}

/** The first few issues of a failed parse, in words, joined for one error message. */
export function describeIssues(error: z.ZodError, where: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => describeIssue(issue, where))
    .join('; ');
}
