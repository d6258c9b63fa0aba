import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { chooseLogFormat } from '../../../src/config/logging.js';

// Issue 33, "Logs a person can read": readable lines on a terminal, JSON everywhere else.
describe('the log format', () => {
  it('is auto by default: pretty on a terminal, JSON into a pipe or file', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
  });

  it('follows an explicit HOSTPLANE_LOG_FORMAT whatever the stream', () => {
    expect(loadConfig({ HOSTPLANE_LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ HOSTPLANE_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });

  it('refuses any other value at start-up, in the configuration error listing', () => {
    expect(() => loadConfig({ HOSTPLANE_LOG_FORMAT: 'text' })).toThrow(
      expect.objectContaining({ name: 'AppError', code: 'CONFIG_INVALID' }),
    );
    expect(() => loadConfig({ HOSTPLANE_LOG_FORMAT: 'JSON' })).toThrow(/HOSTPLANE_LOG_FORMAT: /);
  });
});
