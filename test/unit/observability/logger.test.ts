import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';

// The logger's own stream decides `auto` (admin-local logs to stderr: pretty only when stderr is a
// terminal, whatever stdout is); redaction happens in pino, before the pretty printer sees a line.

function stream(isTTY: boolean) {
  let text = '';
  const out = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString('utf8');
        done();
      },
    }),
    { isTTY },
  );
  return { out, text: () => text.replace(/\x1b\[[0-9;]*m/g, '') }; // eslint-disable-line no-control-regex
}

const secrets = { apiKey: 'AK-secret', token: 'TK-secret', user: { password: 'PW-secret' } };

describe('createLogger', () => {
  it('auto: readable lines into a terminal stream, secrets still [redacted]', () => {
    const { out, text } = stream(true);
    createLogger('info', out, 'auto').info(secrets, 'hello');
    expect(text()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello\n {4}apiKey: "\[redacted\]"\n/);
    expect(text()).not.toMatch(/AK-secret|TK-secret|PW-secret|service|pid|hostname/);
  });

  it('auto: JSON into any other stream; json and pretty whatever the stream', () => {
    const pipe = stream(false);
    createLogger('info', pipe.out, 'auto').info(secrets, 'hello');
    expect(JSON.parse(pipe.text())).toMatchObject({ level: 30, msg: 'hello', token: '[redacted]' });

    const json = stream(true);
    createLogger('info', json.out, 'json').info('hello');
    expect(JSON.parse(json.text())).toMatchObject({ level: 30, msg: 'hello', service: 'hostplane' });

    const pretty = stream(false);
    createLogger('info', pretty.out, 'pretty').warn(secrets, 'careful');
    expect(pretty.text()).toMatch(/^\[[\d:.]+\] WARN: careful\n/);
    expect(pretty.text()).not.toContain('TK-secret');
  });
});
